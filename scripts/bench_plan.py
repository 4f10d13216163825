"""Benchmark: `envaudit plan --no-build` (the tables' answer) on the seed-002 environment, median wall time (target
<= 0.3 s), and its ratio to `python -c pass` measured alongside, which shows how much of it is the interpreter's own
start-up. A plan that builds its stack is scripts/bench_build.py's.

usage: python -m scripts.bench_plan [RUNS] [--record FILE]
"""

from __future__ import annotations

import sys

from scripts._bench import ENVAUDIT, Bench, compare, env

COMPARES = "`envaudit plan --no-build` of the seed-002 pins"
TARGET = "≤ 0.3 s"

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
    bench, argv = Bench.start(__file__, COMPARES, TARGET, sys.argv[1:], measures_jax=False)  # the tables' answer
    runs = int(argv[0]) if argv else 15
    plan, bare = compare(PLAN, [sys.executable, "-c", "pass"], runs, env())
    print(f"runs each: {runs}")
    sides = bench.report(
        "envaudit plan (seed 002)", plan, "python -c pass", bare, "plan target: median <= 0.3 s", name=None
    )
    bench.figure("", plan, "s", target="median <= 0.3 s", medians=sides)
    bench.save(runs)


if __name__ == "__main__":
    main()
