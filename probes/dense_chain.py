"""Probe dense_chain: ten 256x256 dense layers, batched vs per-example vs chunked vs a float64 NumPy answer.

The computation is jheek's reduction of flax issue 1588 / seed 000: x (64, 256) multiplied by ten
lecun-normal-scaled 256x256 matrices (N(0, 1/256), drawn with NumPy from a fixed seed; no nonlinearity).

Known answer: the same product computed by NumPy in float64 from the very same float32 input and weight values
(cast exactly to float64). In float32 the JAX result may differ from it only by float32 rounding.

Metrics (each relative error is norm-wise, max|result - ref| / max|ref|):
- rel_err_batched / rel_err_per_example / rel_err_chunked: the whole batch at once, each row alone (batch 1),
  chunks of 7 rows (the last chunk is shorter), each against the float64 answer.
- rel_diff_batched_vs_per_example, rel_diff_batched_vs_chunked: the results against each other.
- max_abs_diff_rerun: the batched run again, same executable and input: bitwise (threshold 0), as determinism.
- bitwise_equal_batched_per_example: reported, not judged (the CPU gives bit-identical rows; GPUs and TPUs
  legitimately reorder reductions per batch shape).
- output_dtype: what came out (must be the dtype asked for).

Thresholds (measured on a 2-core CPU with jax 0.5.3 and 0.10.2): a healthy float32 chain is 8e-7 from the float64
answer, float64 is 2e-15. Operands rounded to a 10-bit mantissa (TF32-like) give 8e-4, bfloat16 6e-3. So 1e-5
for float32 and 1e-12 for float64 separate healthy from faulty with a margin of 10x below and 80x above.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
import traceback
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
from numpy.typing import NDArray

NAME = "dense_chain"
BATCH, WIDTH, DEPTH, CHUNK = 64, 256, 10, 7
# Norm-wise bound on every error and difference; see the module docstring for the measurements behind them.
TOLERANCE = {"float32": 1e-5, "float64": 1e-12}
EXIT_CODES = {"pass": 0, "fail": 1, "skip": 77}


def _x64(on: bool) -> AbstractContextManager[Any]:
    """A context manager turning jax_enable_x64 on or off, restoring it on exit (jax 0.4.2x to 0.10)."""
    import jax

    state = getattr(jax, "enable_x64", None)  # jax >= 0.7: a config State, callable as a context manager
    if state is not None:
        return state(on)  # type: ignore[no-any-return]
    experimental: Any = importlib.import_module("jax.experimental")  # jax < 0.7

    return experimental.enable_x64() if on else experimental.disable_x64()  # type: ignore[no-any-return]


def _resolve(precision: str) -> str:
    import jax

    if precision == "auto":
        return "float64" if jax.dtypes.canonicalize_dtype(np.float64) == np.float64 else "float32"
    if precision not in TOLERANCE:
        raise ValueError(f"precision must be float32, float64 or auto, not {precision!r}")
    return precision


def _rel(a: NDArray[Any], ref: NDArray[Any]) -> float:
    return float(np.max(np.abs(np.asarray(a, np.float64) - ref)) / np.max(np.abs(ref)))


def _judge(metrics: dict[str, object], thresholds: dict[str, object]) -> list[str]:
    bad = []
    for key, bound in thresholds.items():
        value = metrics[key]
        if isinstance(bound, str):
            if value != bound:
                bad.append(f"{key}={value} (expected {bound})")
        elif not (isinstance(value, (int, float)) and isinstance(bound, (int, float)) and value <= bound):
            bad.append(f"{key}={value:.3g} > {bound:.3g}" if isinstance(value, float) else f"{key}={value}")
    return bad


def _finite(metrics: dict[str, object]) -> dict[str, object]:
    """NaN and infinities as strings, so the JSON printed is strict JSON."""
    return {k: repr(v) if isinstance(v, float) and not math.isfinite(v) else v for k, v in metrics.items()}


def inputs(seed: int) -> tuple[NDArray[Any], list[NDArray[Any]]]:
    """The float32 input batch and weight matrices: the known-answer inputs, fixed by ``seed``."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((BATCH, WIDTH)).astype(np.float32)
    weights = [(rng.standard_normal((WIDTH, WIDTH)) / math.sqrt(WIDTH)).astype(np.float32) for _ in range(DEPTH)]
    return x, weights


def reference(x: NDArray[Any], weights: list[NDArray[Any]]) -> NDArray[Any]:
    """The known answer: the chain in float64 NumPy from the same values."""
    out = x.astype(np.float64)
    for w in weights:
        out = out @ w.astype(np.float64)
    return out


def run(precision: str = "auto", seed: int = 0) -> dict[str, object]:
    import jax

    dtype = _resolve(precision)
    x_np, w_np = inputs(seed)
    ref = reference(x_np, w_np)
    with _x64(dtype == "float64"):
        # Weights are arguments, not closed-over constants: constants are baked into every executable (2.4 MB
        # each, compiled and cached once per batch shape). Rows are sliced on the host: slicing a device array
        # compiles a program per slice.
        ws = [jax.device_put(np.asarray(w, dtype=dtype)) for w in w_np]

        @jax.jit
        def chain(x: jax.Array, ws: list[jax.Array]) -> jax.Array:
            for w in ws:
                x = x @ w
            return x

        def apply(parts: list[NDArray[Any]]) -> NDArray[Any]:
            """The chain on each part, then the results stacked: one transfer each way for all the parts, and
            every call dispatched before the first result is waited for."""
            inputs = jax.device_put([np.asarray(part, dtype=dtype) for part in parts])
            return np.concatenate(jax.device_get([chain(part, ws) for part in inputs]))

        batched, rerun = apply([x_np]), apply([x_np])
        per_example = apply([x_np[i : i + 1] for i in range(BATCH)])
        chunked = apply([x_np[i : i + CHUNK] for i in range(0, BATCH, CHUNK)])
    metrics: dict[str, object] = {
        "precision": dtype,
        "rel_err_batched": _rel(batched, ref),
        "rel_err_per_example": _rel(per_example, ref),
        "rel_err_chunked": _rel(chunked, ref),
        "rel_diff_batched_vs_per_example": _rel(batched, per_example.astype(np.float64)),
        "rel_diff_batched_vs_chunked": _rel(batched, chunked.astype(np.float64)),
        "max_abs_diff_rerun": float(np.max(np.abs(rerun.astype(np.float64) - batched))),
        "bitwise_equal_batched_per_example": bool(np.array_equal(batched, per_example)),
        "output_dtype": str(batched.dtype),
    }
    tol = TOLERANCE[dtype]
    thresholds: dict[str, object] = {
        key: tol for key in metrics if key.startswith(("rel_err", "rel_diff"))
    }  # all norm-wise errors share the dtype's bound (docstring)
    thresholds["max_abs_diff_rerun"] = 0.0  # same executable, same input: the same bits
    thresholds["output_dtype"] = dtype  # a float64 request must not come out float32
    bad = _judge(metrics, thresholds)
    return {
        "name": NAME,
        "status": "fail" if bad else "pass",
        "metrics": _finite(metrics),
        "thresholds": thresholds,
        "message": "; ".join(bad) if bad else f"{dtype} chain within {tol:g} of the float64 answer",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else NAME)
    parser.add_argument("--precision", choices=("auto", "float32", "float64"), default="auto")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        result = run(args.precision, seed=args.seed)
    except Exception:  # the probe could not run at all: no JSON, a traceback, a distinct exit code
        traceback.print_exc()
        return 3
    print(json.dumps(result, allow_nan=False))
    return EXIT_CODES[str(result["status"])]


if __name__ == "__main__":
    sys.exit(main())
