"""Benchmark: the full audit (default probes) against `python -c "import jax; jax.print_environment_info()"`,
with a cold jax compilation cache (emptied before every audit run) and with a warm one.

Targets (issue: probes): ratio <= 3.0 cold, <= 2.0 warm.   usage: python -m scripts.bench_audit [RUNS] [--record FILE]
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from scripts._bench import ENVAUDIT, JAX_INFO, Bench, compare, env

COMPARES = "full audit (every probe at HIGHEST and at the default precision) / `jax.print_environment_info()`"
TARGET = "≤ 2.0 warm, ≤ 3.0 cold"


def main() -> None:
    bench, argv = Bench.start(__file__, COMPARES, TARGET, sys.argv[1:])
    runs = int(argv[0]) if argv else 5
    cache = Path(tempfile.mkdtemp(prefix="envaudit-bench-"))
    environ = env(ENVAUDIT_CACHE_DIR=str(cache))
    audit = [*ENVAUDIT, "--format", "json"]

    def cold() -> None:
        shutil.rmtree(cache / "jax-compilation-cache", ignore_errors=True)

    print(f"runs each: {runs}")
    a, b = compare(audit, JAX_INFO, runs, environ, before_a=cold)
    bench.report(
        "full audit, cold compilation cache", a, "jax.print_environment_info()", b, "target <= 3.0", name="cold"
    )
    a, b = compare(audit, JAX_INFO, runs, environ)
    bench.report(
        "full audit, warm compilation cache", a, "jax.print_environment_info()", b, "target <= 2.0", name="warm"
    )
    shutil.rmtree(cache, ignore_errors=True)
    bench.save(runs)


if __name__ == "__main__":
    main()
