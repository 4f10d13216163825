"""Benchmark: the full audit (default probes) against `python -c "import jax; jax.print_environment_info()"`,
with a cold jax compilation cache (emptied before every audit run) and with a warm one.

Targets (issue: probes): ratio <= 3.0 cold, <= 2.0 warm.   usage: python -m scripts.bench_audit [RUNS]
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from scripts._bench import ENVAUDIT, JAX_INFO, compare, env, report


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    cache = Path(tempfile.mkdtemp(prefix="envaudit-bench-"))
    environ = env(ENVAUDIT_CACHE_DIR=str(cache))
    audit = [*ENVAUDIT, "--format", "json"]

    def cold() -> None:
        shutil.rmtree(cache / "jax-compilation-cache", ignore_errors=True)

    print(f"runs each: {runs}")
    a, b = compare(audit, JAX_INFO, runs, environ, before_a=cold)
    report("full audit, cold compilation cache", a, "jax.print_environment_info()", b, "target <= 3.0")
    a, b = compare(audit, JAX_INFO, runs, environ)
    report("full audit, warm compilation cache", a, "jax.print_environment_info()", b, "target <= 2.0")
    shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
