"""How small a batched-path error the known-answer probes catch in float32, and how often they cry wolf.

For each probe that a scale fault applies to, the fault (``tests/faults/<fault>/sitecustomize.py``: results of
batched matmuls or convolutions multiplied by 1 + delta, batch-1 results untouched) is injected into a child
process for each delta from 1e-3 down to 1e-8, and the smallest delta at which the probe fails -- with every
larger delta failing too -- is reported. Healthy runs use seeds 0 .. RUNS-1 (different inputs and weights each)
with no fault; any failure there is a false alarm. The worst healthy metric/threshold ratio shows the margin.

Usage: python -m scripts.bench_sensitivity [--python PYTHON] [--runs 20] [--nt] [--record FILE]
(``--nt`` adds ntk_nt, which needs an interpreter where neural-tangents imports: --python .venv-nt/bin/python.)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FAULTS = ROOT / "tests" / "faults"
# probe -> the scale fault that perturbs what it measures: its batched path, or (eager_jit) its eager path, (linalg)
# its eigenvalues (ieee_special's fault, nan_exp_finite, has no size: tests/probes/test_behaviour.py)
APPLIES = {
    "dense_chain": "dense_batch_scale",
    "conv_chain": "conv_batch_scale",
    "ntk": "dense_batch_scale",
    "ntk_nt": "conv_batch_scale",
    "fft": "fft_batch_scale",
    "eager_jit": "eager_sqrt",
    "linalg": "eigh_scale",
}
DELTAS = (1e-3, 3e-4, 1e-4, 3e-5, 1e-5, 3e-6, 1e-6, 3e-7, 1e-7, 3e-8, 1e-8)
CLEARED = ("PYTHONPATH", "JAX_ENABLE_X64", "JAX_DEFAULT_MATMUL_PRECISION", "ENVAUDIT_FAULT_DELTA", "XLA_FLAGS")
COMPARES = "smallest injected batch-dependent error flagged at HIGHEST, false alarms in 20 healthy runs"
TARGET = "≤ 1e-5, 0"


def worst_ratio(result: dict[str, Any]) -> float:
    """The largest metric/threshold ratio over the numeric thresholds (> 1 means failing)."""
    ratios = [0.0]
    for key, bound in result["thresholds"].items():
        value = result["metrics"].get(key)
        if isinstance(bound, (int, float)) and not isinstance(bound, bool) and bound > 0:
            ratios.append(float(value) / bound if isinstance(value, (int, float)) else float("inf"))
    return max(ratios)


def tripped(result: dict[str, Any]) -> list[str]:
    out = []
    for key, bound in result["thresholds"].items():
        value = result["metrics"].get(key)
        ok = value == bound if isinstance(bound, str) else isinstance(value, (int, float)) and value <= bound
        if not ok:
            out.append(key)
    return out


def child(probes: list[str], seeds: list[int]) -> None:
    """Run the probes in this process (one jax import), one JSON line per (probe, seed)."""
    sys.path.insert(0, str(ROOT / "probes"))  # their kit
    for name in probes:
        spec = importlib.util.spec_from_file_location(f"probe_{name}", ROOT / "probes" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for seed in seeds:
            start = time.perf_counter()
            result: dict[str, Any] = module.run("float32", seed=seed)
            result["seconds"] = round(time.perf_counter() - start, 3)
            print(json.dumps(result), flush=True)


def spawn(
    python: str, probes: list[str], seeds: list[int], fault: str | None, delta: float | None, **extra: str
) -> list[dict[str, Any]]:
    """The probes' results from one child (see `child`), with the fault (its size `delta`, more variables in
    `extra`) on its PYTHONPATH; the caller's numerics variables are cleared."""
    env = {k: v for k, v in os.environ.items() if k not in (*CLEARED, "ENVAUDIT_FAULT_MANTISSA")}
    if fault is not None:
        env["PYTHONPATH"] = str(FAULTS / fault)
        env |= {"ENVAUDIT_FAULT_DELTA": repr(delta)} if delta is not None else {}
    env |= extra
    cmd = [python, __file__, "--child", ",".join(probes), "--seeds", ",".join(map(str, seeds))]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--python", default=sys.executable, help="interpreter whose jax is measured")
    parser.add_argument("--runs", type=int, default=20, help="healthy runs (seeds) per probe")
    parser.add_argument("--nt", action="store_true", help="include ntk_nt")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--seeds", default="0", help=argparse.SUPPRESS)
    parser.add_argument("--record", type=Path, metavar="FILE", help="also keep the result as one record in FILE")
    args = parser.parse_args(argv)
    if args.child:
        child(args.child.split(","), [int(s) for s in args.seeds.split(",")])
        return 0
    # not at the top: the child runs by path, maybe in an environment without envaudit, and imports no scripts module
    from scripts._bench import Bench

    bench = Bench(__file__, COMPARES, TARGET, args.record, python=args.python)

    probes = [p for p in APPLIES if p != "ntk_nt" or args.nt]
    flagged: dict[str, dict[float, dict[str, Any]]] = {p: {} for p in probes}
    for fault in sorted({APPLIES[p] for p in probes}):
        group = [p for p in probes if APPLIES[p] == fault]
        for delta in DELTAS:
            for result in spawn(args.python, group, [0], fault, delta):
                flagged[result["name"]][delta] = result
    healthy = spawn(args.python, probes, list(range(args.runs)), None, 0.0)

    print(f"float32, faults scale batched results by (1 + delta); healthy runs: seeds 0..{args.runs - 1}\n")
    print("delta    " + "".join(f"{p:>22}" for p in probes))
    for delta in DELTAS:
        cells = []
        for p in probes:
            r = flagged[p][delta]
            cells.append(f"{r['status']} {worst_ratio(r):9.3g}x" if r["status"] != "skip" else "skip")
        print(f"{delta:<9.0e}" + "".join(f"{c:>22}" for c in cells))
    print("(each cell: status, worst metric/threshold ratio)\n")
    header = (
        "probe",
        "fault",
        "smallest delta",
        "metrics tripped there",
        "runs",
        "false alarms",
        "worst ratio",
        "s/run",
    )
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for p in probes:
        smallest = None
        for delta in DELTAS:  # largest to smallest: stop at the first miss
            if flagged[p][delta]["status"] != "fail":
                break
            smallest = delta
        runs = [r for r in healthy if r["name"] == p]
        alarms = sum(r["status"] == "fail" for r in runs)
        worst = max((worst_ratio(r) for r in runs), default=float("nan"))
        where = ", ".join(tripped(flagged[p][smallest])) if smallest is not None else "-"
        seconds = sum(r["seconds"] for r in runs) / max(len(runs), 1)
        row = (
            p,
            APPLIES[p],
            f"{smallest:.0e}" if smallest else "none",
            where,
            str(len(runs)),
            str(alarms),
            f"{worst:.3g}",
            f"{seconds:.2f}",
        )
        print("| " + " | ".join(row) + " |")
        bench.figure(p, smallest, "", target="smallest delta flagged <= 1e-5")
    alarms = sum(r["status"] == "fail" for r in healthy)
    bench.figure("false alarms", alarms, "", target=f"0 in {args.runs} healthy runs per probe")
    bench.save(args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
