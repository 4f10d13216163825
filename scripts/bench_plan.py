"""Benchmark: `envaudit plan --no-build` (the tables' answer) on the seed-002 environment, median wall time (target
<= 0.3 s), and its ratio to `python -c pass` measured alongside, which shows how much of it is the interpreter's own
start-up. A plan that builds its stack is scripts/bench_build.py's.

usage: python -m scripts.bench_plan [RUNS]
"""

from __future__ import annotations

import sys

from scripts._bench import ENVAUDIT, compare, env, report

PLAN = [
    *ENVAUDIT,
    "plan",
    "jax==0.2.19",
    "jaxlib==0.1.70+cuda102",
    "flax==0.3.4",
    "neural-tangents==0.3.7",
    "--driver",
    "440.33.01",
    "--gpus",
    "1",
    "--compute-capability",
    "7.0",
    "--format",
    "json",
    "--no-build",
]


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    plan, bare = compare(PLAN, [sys.executable, "-c", "pass"], runs, env())
    print(f"runs each: {runs}")
    report("envaudit plan (seed 002)", plan, "python -c pass", bare, "plan target: median <= 0.3 s")


if __name__ == "__main__":
    main()
