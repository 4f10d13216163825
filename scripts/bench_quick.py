"""Benchmark: `envaudit --quick --format json` against `python -c "import jax; jax.print_environment_info()"`.

Target (issue: foundation): ratio of medians <= 0.25.   usage: python -m scripts.bench_quick [RUNS] [--record FILE]
"""

from __future__ import annotations

import sys

from scripts._bench import ENVAUDIT, JAX_INFO, Bench, compare, env

COMPARES = '`envaudit --quick --format json` / `python -c "import jax; jax.print_environment_info()"`'
TARGET = "≤ 0.25"


def main() -> None:
    bench, argv = Bench.start(__file__, COMPARES, TARGET, sys.argv[1:])
    runs = int(argv[0]) if argv else 15
    quick, info = compare([*ENVAUDIT, "--quick", "--format", "json"], JAX_INFO, runs, env())
    print(f"runs each: {runs}")
    bench.report(
        "envaudit --quick --format json",
        quick,
        "import jax; jax.print_environment_info()",
        info,
        "target <= 0.25",
        name="",
    )
    bench.save(runs)


if __name__ == "__main__":
    main()
