"""Probe conv_chain: a chain of 3x3 SAME convolutions, batched vs per-example vs a float64 NumPy answer.

The computation is the reduction of flax issue 1588 / seed 000 (marcvanzee's repro, made finite):
``lax.conv_general_dilated`` from 1 to 32 channels, 3x3, stride 1, SAME, on N x 1 x 28 x 28 (NCHW / OIHW),
then a chain of 32 -> 32 convolutions; weights N(0, 1/fan_in) (fan_in = in_channels * 9) so the activations stay
of order one; no nonlinearity. Inputs and weights are drawn by NumPy from a fixed seed.

Known answer: the same chain computed in float64 by a 9-term NumPy cross-correlation (``_np_conv``: XLA
convolutions do not flip the kernel) from the same float32 values cast exactly to float64.

Metrics (norm-wise relative errors, max|result - ref| / max|ref|): rel_err_batched and rel_err_per_example (each
example alone, batch 1) against the float64 answer; rel_diff_batched_vs_per_example; bitwise_equal_batched_per_
example (reported only: GPUs and TPUs legitimately reorder reductions per batch shape); output_dtype.

Thresholds (measured on a 2-core CPU, jax 0.5.3 and 0.10.2): a healthy float32 chain (128 examples, depth 10 or
30) is 8e-7 to 1e-6 from the float64 answer, float64 is 2e-15; batched and per-example are bit-identical on the
CPU. Reduced-precision operands give 8e-4 (TF32-like) to 6e-3 (bfloat16). Bounds: 1e-5 for float32, 1e-12 for
float64. float64 convolutions are 25-50x slower on the CPU, so the float64 run uses fewer examples and layers.
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

NAME = "conv_chain"
CHANNELS, SIZE = 32, 28
# (examples, 32->32 layers after the first conv) per precision: float64 convs are slow on the CPU (docstring).
SHAPE = {"float32": (16, 9), "float64": (4, 4)}
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


def inputs(seed: int, examples: int, depth: int) -> tuple[NDArray[Any], list[NDArray[Any]]]:
    """The float32 images (NCHW) and kernels (OIHW): the known-answer inputs, fixed by ``seed``."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((examples, 1, SIZE, SIZE)).astype(np.float32)
    kernels = [(rng.standard_normal((CHANNELS, 1, 3, 3)) / 3.0).astype(np.float32)]
    for _ in range(depth):
        w = rng.standard_normal((CHANNELS, CHANNELS, 3, 3)) / math.sqrt(CHANNELS * 9)
        kernels.append(w.astype(np.float32))
    return x, kernels


def _np_conv(x: NDArray[Any], w: NDArray[Any]) -> NDArray[Any]:
    """3x3 stride-1 SAME cross-correlation, NCHW x OIHW -> NCHW, in the dtype given (float64 here): the nine shifted
    views stacked (im2col) and one batched matrix product, a direct sum in a different order from XLA's."""
    n, c, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    cols = np.stack([xp[:, :, i : i + h, j : j + wd] for i in range(3) for j in range(3)], axis=2)
    out: NDArray[Any] = np.matmul(w.reshape(w.shape[0], c * 9), cols.reshape(n, c * 9, h * wd))
    return out.reshape(n, w.shape[0], h, wd)


def reference(x: NDArray[Any], kernels: list[NDArray[Any]]) -> NDArray[Any]:
    """The known answer: the chain in float64 NumPy from the same values."""
    out = x.astype(np.float64)
    for w in kernels:
        out = _np_conv(out, w.astype(np.float64))
    return out


def run(precision: str = "auto", seed: int = 0) -> dict[str, object]:
    import jax
    from jax import lax

    dtype = _resolve(precision)
    examples, depth = SHAPE[dtype]
    x_np, k_np = inputs(seed, examples, depth)
    ref = reference(x_np, k_np)
    with _x64(dtype == "float64"):
        ks = [jax.device_put(np.asarray(k, dtype=dtype)) for k in k_np]

        @jax.jit
        def chain(x: jax.Array) -> jax.Array:
            for k in ks:
                x = lax.conv_general_dilated(x, k, window_strides=(1, 1), padding="SAME")
            return x

        xj = jax.device_put(np.asarray(x_np, dtype=dtype))
        batched = np.asarray(chain(xj))
        per_example = np.concatenate([np.asarray(chain(xj[i : i + 1])) for i in range(examples)])
    metrics: dict[str, object] = {
        "precision": dtype,
        "examples": examples,
        "convolutions": depth + 1,
        "rel_err_batched": _rel(batched, ref),
        "rel_err_per_example": _rel(per_example, ref),
        "rel_diff_batched_vs_per_example": _rel(batched, per_example.astype(np.float64)),
        "bitwise_equal_batched_per_example": bool(np.array_equal(batched, per_example)),
        "output_dtype": str(batched.dtype),
    }
    tol = TOLERANCE[dtype]
    thresholds: dict[str, object] = {
        key: tol for key in metrics if key.startswith(("rel_err", "rel_diff"))
    }  # all norm-wise errors share the dtype's bound (docstring)
    thresholds["output_dtype"] = dtype  # a float64 request must not come out float32
    bad = _judge(metrics, thresholds)
    return {
        "name": NAME,
        "status": "fail" if bad else "pass",
        "metrics": _finite(metrics),
        "thresholds": thresholds,
        "message": "; ".join(bad) if bad else f"{dtype} conv chain within {tol:g} of the float64 answer",
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
