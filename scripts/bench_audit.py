"""Benchmark: the full audit (default probes) against `python -c "import jax; jax.print_environment_info()"`,
with a cold jax compilation cache (emptied before every audit run) and with a warm one.

Targets (issue: probes): ratio <= 3.0 cold, <= 2.0 warm. With `--variants`, the same two again under
JAX_ENABLE_X64=1 ("x64 cold", "x64 warm") and the cold one under JAX_DEFAULT_MATMUL_PRECISION=float32
("float32 cold"), each side by side with print_environment_info under the same variables (issue 56's goals: x64
<= 1.5 cold, <= 1.2 warm; float32 <= 1.5 cold).
usage: python -m scripts.bench_audit [RUNS] [--variants] [--record FILE]
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from scripts._bench import ENVAUDIT, JAX_INFO, Bench, compare, env

COMPARES = "full audit (every probe at HIGHEST and at the default precision) / `jax.print_environment_info()`"
TARGET = "≤ 2.0 warm, ≤ 3.0 cold"


# (figure-name prefix, the variables, whether the warm run is measured too, cold target, warm target)
VARIANTS = (
    ("x64 ", {"JAX_ENABLE_X64": "1"}, True, "target <= 1.5", "target <= 1.2"),
    ("float32 ", {"JAX_DEFAULT_MATMUL_PRECISION": "float32"}, False, "target <= 1.5", ""),
)


def main() -> None:
    bench, argv = Bench.start(__file__, COMPARES, TARGET, sys.argv[1:])
    variants = "--variants" in argv
    argv = [a for a in argv if a != "--variants"]
    runs = int(argv[0]) if argv else 5
    print(f"runs each: {runs}")
    measure(bench, runs, "", {}, True, "target <= 3.0", "target <= 2.0")
    for prefix, variables, warm, cold_target, warm_target in VARIANTS if variants else ():
        measure(bench, runs, prefix, variables, warm, cold_target, warm_target)
    bench.save(runs)


def measure(
    bench: Bench, runs: int, prefix: str, variables: dict[str, str], warm: bool, cold_target: str, warm_target: str
) -> None:
    """The audit against print_environment_info under these variables, cold (the compilation cache emptied before
    each audit), then warm where asked; the figures named with the prefix."""
    cache = Path(tempfile.mkdtemp(prefix="envaudit-bench-"))
    environ = env(ENVAUDIT_CACHE_DIR=str(cache), **variables)
    audit = [*ENVAUDIT, "--format", "json"]
    said = f" ({' '.join(f'{k}={v}' for k, v in variables.items())})" if variables else ""

    def cold() -> None:
        shutil.rmtree(cache / "jax-compilation-cache", ignore_errors=True)

    a, b = compare(audit, JAX_INFO, runs, environ, before_a=cold)
    bench.report(
        f"full audit, cold compilation cache{said}",
        a,
        "jax.print_environment_info()",
        b,
        cold_target,
        name=f"{prefix}cold",
    )
    if warm:
        a, b = compare(audit, JAX_INFO, runs, environ)
        bench.report(
            f"full audit, warm compilation cache{said}",
            a,
            "jax.print_environment_info()",
            b,
            warm_target,
            name=f"{prefix}warm",
        )
    shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
