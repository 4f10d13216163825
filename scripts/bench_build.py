"""Benchmark: `envaudit plan` that builds its stack here (uv, a throwaway environment, the imports probe there), warm,
repeated and cold: the median wall time of RUNS plans built anew on uv's own cache (warm: its wheels are there;
ENVAUDIT_REBUILD), of RUNS plans of the same stack again (repeat: what its build measured is remembered), then one
on an empty cache of its own (cold: every wheel downloaded), each with what its report says the build and the
imports took. Goals (issue: speed 2): warm median <= 5 s, repeat <= 1 s.

usage: python -m scripts.bench_build [RUNS] [REQUIREMENT...] [--record FILE]   (default: 5 runs of flax 0.10.2, jax
and jaxlib 0.5.0)
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from scripts._bench import ENVAUDIT, Bench, env

STACK = ["flax==0.10.2", "jax==0.5.0", "jaxlib==0.5.0"]  # jax-ai-stack 2025.2.5's: a healthy plan, one build
COMPARES = "`envaudit plan` that builds flax 0.10.2 and jax 0.5.0 here: uv's cache warm, then empty"
TARGET = "seconds warm"


def planned(stack: list[str], environ: dict[str, str]) -> tuple[float, dict[str, Any]]:
    """One plan's wall time and its report's build section."""
    start = time.perf_counter()
    done = subprocess.run([*ENVAUDIT, "plan", *stack, "--format", "json", "-q"], env=environ, capture_output=True)
    took = time.perf_counter() - start
    build: dict[str, Any] = json.loads(done.stdout).get("build") or {}
    return took, build


def said(build: dict[str, Any]) -> str:
    one = build.get("planned") or {}
    return f"{one.get('status')}: build {one.get('build_s', 0):.1f} s, imports {one.get('probe_s', 0):.1f} s"


def main() -> None:
    bench, argv = Bench.start(__file__, COMPARES, TARGET, sys.argv[1:], measures_jax=False)  # jax: the stack's
    runs = int(argv[0]) if argv else 5
    stack = argv[1:] or STACK
    environ = env()
    environ.pop("ENVAUDIT_NO_BUILD", None)
    planned(stack, environ)  # the warm-up fills uv's cache with this stack, as any earlier plan of it would
    warm = [planned(stack, {**environ, "ENVAUDIT_REBUILD": "1"}) for _ in range(runs)]
    again = [planned(stack, environ) for _ in range(runs)]
    print(f"stack: {' '.join(stack)}; runs: {runs}")
    print(f"warm    median {statistics.median(t for t, _ in warm):.2f} s ({said(warm[-1][1])})")
    reused = again[-1][1].get("planned", {}).get("reused")
    print(f"repeat  median {statistics.median(t for t, _ in again):.2f} s (its measurement remembered: {reused})")
    with tempfile.TemporaryDirectory(prefix="envaudit-bench-uv-") as cache:
        took, build = planned(stack, {**environ, "UV_CACHE_DIR": cache})
    print(f"cold    {took:.2f} s ({said(build)})")
    bench.figure("warm", statistics.median(t for t, _ in warm), "s", target="<= 5 s")
    bench.figure("repeat", statistics.median(t for t, _ in again), "s", target="<= 1 s")
    bench.figure("cold", took, "s")
    bench.save(runs, note=f"stack {' '.join(stack)}" if stack != STACK else None)


if __name__ == "__main__":
    main()
