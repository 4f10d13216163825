"""Shared by the benchmark scripts: whole-process wall times of commands, alternated A B A B in one run so that a
noisy machine's drift hits both sides alike. Medians and their ratio are what the scripts print."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENVAUDIT = [sys.executable, "-m", "envaudit"]
JAX_INFO = [sys.executable, "-c", "import jax; jax.print_environment_info()"]


def env(**extra: str) -> dict[str, str]:
    base = {**os.environ, **extra}
    base["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return base


def wall(cmd: list[str], environ: dict[str, str], before: Callable[[], None] | None = None) -> float:
    if before is not None:
        before()
    start = time.perf_counter()
    subprocess.run(cmd, env=environ, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def compare(
    a: list[str], b: list[str], runs: int, environ: dict[str, str], before_a: Callable[[], None] | None = None
) -> tuple[float, float]:
    """Median wall time of a and of b over `runs` alternated runs each, after one warm-up of each."""
    wall(a, environ, before_a), wall(b, environ)
    times_a, times_b = [], []
    for _ in range(runs):
        times_a.append(wall(a, environ, before_a))
        times_b.append(wall(b, environ))
    return statistics.median(times_a), statistics.median(times_b)


def report(label_a: str, a: float, label_b: str, b: float, target: str) -> None:
    width = max(len(label_a), len(label_b))
    print(f"{label_a.ljust(width)}  median {a:.3f} s")
    print(f"{label_b.ljust(width)}  median {b:.3f} s")
    print(f"ratio {a / b:.3f} ({target})")
