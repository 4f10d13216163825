"""Benchmark: `envaudit --quick --format json` against `python -c "import jax; jax.print_environment_info()"`.

Both are timed as whole processes, alternating A B A B in one run so that drift of a noisy machine hits both
alike; prints each median and the ratio of medians. Target (issue: foundation): ratio <= 0.25.
usage: python scripts/bench_quick.py [RUNS]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUICK = [sys.executable, "-m", "envaudit", "--quick", "--format", "json"]
JAX_INFO = [sys.executable, "-c", "import jax; jax.print_environment_info()"]


def wall(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def compare(a: list[str], b: list[str], runs: int) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    wall(a, env), wall(b, env)  # warm-up: file cache, .pyc files
    times_a, times_b = [], []
    for _ in range(runs):
        times_a.append(wall(a, env))
        times_b.append(wall(b, env))
    return statistics.median(times_a), statistics.median(times_b)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    quick, info = compare(QUICK, JAX_INFO, runs)
    print(f"runs each: {runs}")
    print(f"envaudit --quick --format json          median {quick:.3f} s")
    print(f"import jax; jax.print_environment_info() median {info:.3f} s")
    print(f"ratio {quick / info:.3f} (target <= 0.25)")


if __name__ == "__main__":
    main()
