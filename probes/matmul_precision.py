"""Probe matmul_precision: how many mantissa bits a float32 matmul really keeps, at default and HIGHEST precision.

On NVIDIA GPUs of compute capability >= 8.0 XLA may run float32 matmuls on TF32 tensor cores at the default
precision (operands rounded to a 10-bit mantissa); TPUs use bfloat16 passes (7-bit mantissa). Both are 1e3-1e4
times less accurate than float32 -- the size of seed 000's batched-vs-per-example gaps. The CPU ignores every
precision setting (measured: DEFAULT, HIGH, HIGHEST are bit-identical), so on the CPU both runs must be float32.

Computation: A (64 x 256) @ B (256 x 64), standard normal entries drawn by NumPy from a fixed seed, once with
``precision=None`` (what ``jax_default_matmul_precision`` gives) and once with ``lax.Precision.HIGHEST``.

Known answer: A @ B in float64 NumPy from the same float32 values cast exactly to float64.

Metrics: rel_err_default, rel_err_highest (Frobenius norm of the error over that of the answer);
effective_bits_default and effective_bits_highest = -log2(rel_err), an estimate of the mantissa bits that
survive (measured on the CPU with operands rounded the stated way: float32 ~21, TF32-like 10-bit ~11.7,
bfloat16 ~8.7; float64 ~50); default_matmul_precision (the config value); output_dtype.

Thresholds: rel_err_highest <= 1e-5 in float32 (about 16.6 bits: between float32's ~21 and TF32's ~12) and
<= 1e-12 in float64 (about 40 bits): HIGHEST is true float32 on every platform. The default run is reported, not
judged here: reduced precision by default is documented on NVIDIA GPUs of compute capability >= 8.0 (TF32) and on
TPUs (bfloat16), and only the machine's facts say which applies; envaudit judges it against that precision class.
To get float32 by default: jax.config.update("jax_default_matmul_precision", "float32") or
JAX_DEFAULT_MATMUL_PRECISION=float32 ("float32" is HIGHEST's name in every jax since 0.4; "highest" from 0.4.31).
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

NAME = "matmul_precision"
M, K, N = 64, 256, 64
# Bound on the Frobenius relative error of both runs; see the docstring for the bits behind it.
TOLERANCE = {"float32": 1e-5, "float64": 1e-12}
EXIT_CODES = {"pass": 0, "fail": 1, "skip": 77}
FIX = 'jax.config.update("jax_default_matmul_precision", "float32") or JAX_DEFAULT_MATMUL_PRECISION=float32'


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


def _bits(err: float, dtype: str) -> float:
    """-log2 of a relative error: about the mantissa bits that survive; an exact result counts as all of them."""
    cap = float(np.finfo(dtype).nmant + 1)
    return round(min(-math.log2(err), cap), 2) if err > 0 else cap


def _finite(metrics: dict[str, object]) -> dict[str, object]:
    """NaN and infinities as strings, so the JSON printed is strict JSON."""
    return {k: repr(v) if isinstance(v, float) and not math.isfinite(v) else v for k, v in metrics.items()}


def run(precision: str = "auto", seed: int = 0) -> dict[str, object]:
    import jax
    import jax.numpy as jnp
    from jax import lax

    dtype = _resolve(precision)
    rng = np.random.default_rng(seed)
    a_np, b_np = (rng.standard_normal(shape).astype(np.float32) for shape in ((M, K), (K, N)))
    ref = a_np.astype(np.float64) @ b_np.astype(np.float64)
    metrics: dict[str, object] = {
        "precision": dtype,
        "default_matmul_precision": str(getattr(jax.config, "jax_default_matmul_precision", None)),
    }
    with _x64(dtype == "float64"):
        a, b = jax.device_put(np.asarray(a_np, dtype=dtype)), jax.device_put(np.asarray(b_np, dtype=dtype))
        # both products in one program: on the CPU, compiling costs more than computing them
        both = jax.jit(lambda x, y: (jnp.matmul(x, y), jnp.matmul(x, y, precision=lax.Precision.HIGHEST)))(a, b)
        results = {"default": np.asarray(both[0]), "highest": np.asarray(both[1])}
    for kind, out in results.items():
        err = float(np.linalg.norm(out.astype(np.float64) - ref) / np.linalg.norm(ref))
        metrics[f"rel_err_{kind}"] = err
        metrics[f"effective_bits_{kind}"] = _bits(err, dtype)
    metrics["output_dtype"] = str(results["default"].dtype)
    tol = TOLERANCE[dtype]
    thresholds: dict[str, object] = {"rel_err_highest": tol}  # bits: docstring; the default run is reported
    thresholds["output_dtype"] = dtype  # a float64 request must not come out float32
    bad = _judge(metrics, thresholds)
    message = "; ".join(bad) if bad else f"{dtype} matmul keeps {metrics['effective_bits_default']} bits by default"
    if not bad and float(metrics["rel_err_default"]) > tol:  # type: ignore[arg-type]
        message += f" (reduced precision by default; for float32: {FIX})"
    return {
        "name": NAME,
        "status": "fail" if bad else "pass",
        "metrics": _finite(metrics),
        "thresholds": thresholds,
        "message": message,
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
