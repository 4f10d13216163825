"""Benchmark: what the imports probe costs, side by side in one run: the full audit with it and without it
(`--skip-probe imports`), `health` with it and without it, and the full audit against
`python -c "import jax; jax.print_environment_info()"` (warm compilation cache).

Targets (issue 23): the full audit <= 2.0x jax.print_environment_info() warm, the imports probe included.
usage: python -m scripts.bench_imports [RUNS] [--python PATH] [--record FILE]   (PATH: another environment's
interpreter, audited with --python; its jax.print_environment_info() is run there)
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from scripts._bench import ENVAUDIT, Bench, compare, env

COMPARES = (
    "full audit and `health` with the imports probe / without it; the full audit / `jax.print_environment_info()`"
)
TARGET = "≤ 2.0"


def main(argv: list[str]) -> None:
    bench, argv = Bench.start(__file__, COMPARES, TARGET, argv)
    python = argv[argv.index("--python") + 1] if "--python" in argv else sys.executable
    bench.python = python
    numbers = [a for a in argv if a.isdigit()]
    runs = int(numbers[0]) if numbers else 5
    cache = Path(tempfile.mkdtemp(prefix="envaudit-bench-"))
    environ = env(ENVAUDIT_CACHE_DIR=str(cache))
    outside = ["--python", python] if python != sys.executable else []
    audit = [*ENVAUDIT, "--format", "json", *outside]
    (cache / "prom").mkdir()  # health writes its textfile there; it refuses a directory that is not there
    health = [*ENVAUDIT, "health", "--prometheus-dir", str(cache / "prom"), *outside]
    info = [python, "-c", "import jax; jax.print_environment_info()"]
    print(f"runs each: {runs}; audited: {python}")
    a, b = compare(audit, [*audit, "--skip-probe", "imports"], runs, environ)
    bench.report(
        "full audit",
        a,
        "full audit --skip-probe imports",
        b,
        "the imports probe's share",
        name="audit / without imports",
    )
    a, b = compare(health, [*health, "--skip-probe", "imports"], runs, environ)
    bench.report(
        "health", a, "health --skip-probe imports", b, "the imports probe's share", name="health / without imports"
    )
    a, b = compare(audit, info, runs, environ)
    bench.report(
        "full audit (imports included)",
        a,
        "jax.print_environment_info()",
        b,
        "target <= 2.0",
        name="audit / print_environment_info",
    )
    bench.save(runs, note="warm compilation cache")


if __name__ == "__main__":
    main(sys.argv[1:])
