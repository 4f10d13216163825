"""Measure the fast loop: the tests it runs and the wall time it takes here, the figures docs/development.md quotes.

usage: python -m scripts.fast_loop [--runs N]

It runs exactly the documented fast-loop command (tests/test_readme.py holds the two equal) and prints one line per
run, then the median: "fast loop: N tests, S s wall (median of R runs)".
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARKS = "not jax and not slow and not realenv and not integration"
COMMAND = ["-m", "pytest", "-q", "-n", "auto", "-m", MARKS]


def run_once() -> tuple[int, float]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, *COMMAND], cwd=ROOT, capture_output=True, text=True, check=False)
    took = time.monotonic() - started
    found = re.search(r"(\d+) passed", done.stdout)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"fast loop failed (exit {done.returncode}):\n{done.stdout[-2000:]}")
    return int(found[1]), took


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    counts, times = [], []
    for number in range(1, args.runs + 1):
        count, took = run_once()
        counts.append(count)
        times.append(took)
        print(f"run {number}: {count} tests, {took:.1f} s wall", flush=True)
    print(f"fast loop: {counts[-1]} tests, {statistics.median(times):.1f} s wall (median of {args.runs} runs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
