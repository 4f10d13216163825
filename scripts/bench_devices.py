"""Benchmark: what probing every device costs. The audit of the per-device probes with N simulated CPU devices
(XLA_FLAGS=--xla_force_host_platform_device_count=N) against the same audit with one device, side by side, warm
compilation cache; and `health` (all its default probes) on a simulated 8-device node against one device.

Target (issue: every device probed): each extra device adds <= 10 % on this CPU.
usage: python -m scripts.bench_devices [RUNS] [N]
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from scripts._bench import ENVAUDIT, compare, env, report

PER_DEVICE = ["--probe", "dense_chain", "--probe", "conv_chain", "--probe", "ntk"]


def devices(n: int, argv: list[str]) -> list[str]:
    return ["env", f"XLA_FLAGS=--xla_force_host_platform_device_count={n}", *argv]


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    cache = Path(tempfile.mkdtemp(prefix="envaudit-bench-"))
    environ = env(ENVAUDIT_CACHE_DIR=str(cache))
    print(f"runs each: {runs}")
    audit = [*ENVAUDIT, "audit", "--format", "json", *PER_DEVICE]
    a, b = compare(devices(n, audit), devices(1, audit), runs, environ)
    report(f"audit (per-device probes), {n} devices", a, "the same, 1 device", b, f"{n - 1} extra devices")
    print(f"per extra device: +{(a / b - 1) / (n - 1) * 100:.1f} % (target <= 10 %)")
    health = [*ENVAUDIT, "health", "--prometheus-dir", str(cache)]
    a, b = compare(devices(8, health), devices(1, health), runs, environ)
    report("health, 8 devices", a, "health, 1 device", b, "Slurm's HealthCheckProgram limit is 60 s")
    print(f"per extra device: +{(a / b - 1) / 7 * 100:.1f} %")
    shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
