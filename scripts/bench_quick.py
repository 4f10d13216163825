"""Benchmark: `envaudit --quick --format json` against `python -c "import jax; jax.print_environment_info()"`.

Target (issue: foundation): ratio of medians <= 0.25.   usage: python -m scripts.bench_quick [RUNS]
"""

from __future__ import annotations

import sys

from scripts._bench import ENVAUDIT, JAX_INFO, compare, env, report


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    quick, info = compare([*ENVAUDIT, "--quick", "--format", "json"], JAX_INFO, runs, env())
    print(f"runs each: {runs}")
    report("envaudit --quick --format json", quick, "import jax; jax.print_environment_info()", info, "target <= 0.25")


if __name__ == "__main__":
    main()
