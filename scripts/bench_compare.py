"""Benchmark: `envaudit compare` over 100 and 1,000 generated node reports (real audit JSON, varied host names,
one planted drift), alternated in one run. Prints both medians, their ratio (start-up included) and the marginal
cost per report, (t1000 - t100) / 900, which is what linear means here.
Target (issue: cluster health): 1,000 reports in <= 2 s.   usage: python -m scripts.bench_compare [RUNS] [--record FILE]
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from scripts._bench import ENVAUDIT, Bench, compare, env

COMPARES = "`envaudit compare` over 1,000 reports"
TARGET = "≤ 2 s"


def fleet(directory: Path, count: int, template: dict[str, object]) -> Path:
    directory.mkdir()
    for i in range(count):
        data = json.loads(json.dumps(template))
        data["host"] = {"hostname": f"node{i:04d}"}
        if i == count // 2:
            data["facts"]["packages"]["jaxlib"] = "0.0.1"
        (directory / f"node{i:04d}.json").write_text(json.dumps(data))
    return directory


def main() -> None:
    bench, argv = Bench.start(__file__, COMPARES, TARGET, sys.argv[1:], measures_jax=False)
    runs = int(argv[0]) if argv else 5
    environ = env()
    made = subprocess.run([*ENVAUDIT, "--format", "json"], env=environ, capture_output=True, text=True, check=False)
    template = json.loads(made.stdout)
    tmp = Path(tempfile.mkdtemp(prefix="envaudit-compare-"))
    small, large = fleet(tmp / "small", 100, template), fleet(tmp / "large", 1000, template)
    print(f"runs each: {runs}; report size {len(made.stdout)} bytes")
    a, b = compare([*ENVAUDIT, "compare", str(large)], [*ENVAUDIT, "compare", str(small)], runs, environ)
    target = "start-up included; target: 1,000 in <= 2 s"
    sides = bench.report("compare 1,000 reports", a, "compare 100 reports", b, target, name=None)
    print(f"marginal cost per report {(a - b) / 900 * 1000:.3f} ms")
    shutil.rmtree(tmp, ignore_errors=True)
    bench.figure("1,000 reports", a, "s", target="<= 2 s", medians=sides)
    bench.figure("per report", (a - b) / 900 * 1000, "ms", medians=sides)
    bench.save(runs)


if __name__ == "__main__":
    main()
