"""Calibrates the precision classes of envaudit's judge (envaudit/model/metrics.toml): the largest default-precision
error each probe shows when the operands of default-precision matmuls and convolutions are rounded as a TF32 tensor
core (10-bit mantissa) or a bfloat16 pass (7 bits) rounds them, over many seeds, against each class's bound.

The rounding is tests/faults/default_precision (HIGHEST is left exact, as on a GPU). For each probe and mantissa,
the worst error over seeds 0 .. RUNS-1 is printed with the margin to the class bound (bound / worst): a margin
above 1 means a healthy machine of that class passes with room; the float32 column (no rounding) shows the margin
above float32 rounding that lets the CPU's float32 class catch TF32-like rounding.

Usage: python -m scripts.bench_precision_classes [--python PYTHON] [--runs 20] [--nt] [--record FILE]
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path
from typing import Any

from scripts._bench import RECORD_HELP, Bench
from scripts.bench_sensitivity import spawn  # its --child mode runs probes in-process, a JSON line each

ROOT = Path(__file__).resolve().parents[1]
PROBES = ("dense_chain", "conv_chain", "ntk", "matmul_precision")
MANTISSAS = {"float32": None, "tf32": 10, "bf16": 7}
COMPARES = (
    "worst default-precision error under TF32-like and bfloat16-like rounding (20 seeds) against each class bound"
)
TARGET = "> 1"


def default_errors(result: dict[str, Any]) -> list[float]:
    """The default-precision errors of a result, as the judge's table names them (rel_*_default)."""
    metrics = result.get("metrics", {})
    return [float(v) for k, v in metrics.items() if k.startswith("rel_") and k.endswith("_default")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--python", default=sys.executable, help="interpreter whose jax is measured")
    parser.add_argument("--runs", type=int, default=20, help="seeds per probe and mantissa")
    parser.add_argument("--nt", action="store_true", help="include ntk_nt (needs neural-tangents)")
    parser.add_argument("--record", type=Path, metavar="FILE", help=RECORD_HELP)
    args = parser.parse_args(argv)
    bench = Bench(__file__, COMPARES, TARGET, args.record, python=args.python)
    probes = [*PROBES, *(["ntk_nt"] if args.nt else [])]
    with (ROOT / "envaudit" / "model" / "metrics.toml").open("rb") as handle:
        bounds = {name: spec["bound"] for name, spec in tomllib.load(handle)["class"].items()}
    worst: dict[str, dict[str, float]] = {p: {} for p in probes}
    for cls, mantissa in MANTISSAS.items():
        extra = {"ENVAUDIT_FAULT_MANTISSA": str(mantissa)} if mantissa is not None else {}
        fault = "default_precision" if mantissa is not None else None
        for result in spawn(args.python, probes, list(range(args.runs)), fault, None, **extra):
            errors = default_errors(result)
            if errors:
                worst[result["name"]][cls] = max(worst[result["name"]].get(cls, 0.0), *errors)
    print(f"worst default-precision error over seeds 0..{args.runs - 1}; margin = class bound / worst\n")
    print("| probe | " + " | ".join(f"{c} worst | {c} margin (bound {bounds[c]:g})" for c in MANTISSAS) + " |")
    print("|---|" + "---|---|" * len(MANTISSAS))
    for p in probes:
        cells = []
        for cls in MANTISSAS:
            value = worst[p].get(cls)
            cells += (
                [f"{value:.3g}", f"{bounds[cls] / value:.3g}" if value else "-"] if value is not None else ["-", "-"]
            )
        print(f"| {p} | " + " | ".join(cells) + " |")
    tf32 = max(worst[p].get("tf32", 0.0) for p in probes)
    print(
        f"\nTF32-like rounding on the CPU (class float32, bound {bounds['float32']:g}): smallest error "
        f"{min(worst[p].get('tf32', 1.0) for p in probes):.3g}, largest {tf32:.3g}"
    )
    for cls, name in (("tf32", "TF32"), ("bf16", "bfloat16")):
        largest = max(worst[p].get(cls, 0.0) for p in probes)
        bench.figure(name, largest, "")
        bench.figure(f"{name} margin to {bounds[cls]:g}", bounds[cls] / largest if largest else None, "", target="> 1")
    bench.save(args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
