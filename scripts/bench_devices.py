"""Benchmark: what probing every device costs. The audit of the per-device probes with N simulated CPU devices
(XLA_FLAGS=--xla_force_host_platform_device_count=N) against the same audit with one device, side by side, warm
compilation cache; and `health` (all its default probes) on a simulated 8-device node against one device.

Target (issue: every device probed): each extra device adds <= 10 % on this CPU.
usage: python -m scripts.bench_devices [RUNS] [N] [--record FILE]
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from scripts._bench import ENVAUDIT, Bench, compare, env

PER_DEVICE = ["--probe", "dense_chain", "--probe", "conv_chain", "--probe", "ntk"]
COMPARES = "the per-device probes with 4 simulated CPU devices / with 1; `health` with 8 / with 1"
TARGET = "≤ +10 % per device"


def devices(n: int, argv: list[str]) -> list[str]:
    return ["env", f"XLA_FLAGS=--xla_force_host_platform_device_count={n}", *argv]


def main() -> None:
    bench, argv = Bench.start(__file__, COMPARES, TARGET, sys.argv[1:])
    runs = int(argv[0]) if argv else 5
    n = int(argv[1]) if len(argv) > 1 else 4
    cache = Path(tempfile.mkdtemp(prefix="envaudit-bench-"))
    environ = env(ENVAUDIT_CACHE_DIR=str(cache))
    print(f"runs each: {runs}")
    audit = [*ENVAUDIT, "audit", "--format", "json", *PER_DEVICE]
    a, b = compare(devices(n, audit), devices(1, audit), runs, environ)
    sides = bench.report(
        f"audit (per-device probes), {n} devices", a, "the same, 1 device", b, f"{n - 1} extra devices", name=None
    )
    print(f"per extra device: +{(a / b - 1) / (n - 1) * 100:.1f} % (target <= 10 %)")
    bench.figure(f"per extra device ({n} devices)", (a / b - 1) / (n - 1) * 100, "%", target="<= 10 %", medians=sides)
    health = [*ENVAUDIT, "health", "--prometheus-dir", str(cache)]
    a, b = compare(devices(8, health), devices(1, health), runs, environ)
    sides = bench.report(
        "health, 8 devices", a, "health, 1 device", b, "Slurm's HealthCheckProgram limit is 60 s", name=None
    )
    print(f"per extra device: +{(a / b - 1) / 7 * 100:.1f} %")
    shutil.rmtree(cache, ignore_errors=True)
    bench.figure("health, per extra device (8 devices)", (a / b - 1) / 7 * 100, "%", medians=sides)
    bench.save(runs, note="warm compilation cache")


if __name__ == "__main__":
    main()
