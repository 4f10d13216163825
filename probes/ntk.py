"""Probe ntk: the empirical NTK of a 2-layer tanh MLP, full and chunked like ``nt.batch``, vs its closed form.

The network (seed 000's use case, made small): f(x) = v . tanh(W x / sqrt(d)) / sqrt(n) with W (n x d), v (n),
n = 128 hidden units, d = 8 inputs, 16 inputs x, all drawn by NumPy from a fixed seed. The empirical NTK is
K = J J^T with J the Jacobian of f over the batch with respect to (W, v), computed by pure JAX (``jax.jacobian``,
then the contraction), once for the whole batch and once chunk by chunk the way ``neural_tangents.batch`` chunks it
(K[I, J] = J_I J_J^T from the Jacobians of chunk I and chunk J, computed per chunk), for chunk sizes 1 and 4.

Known answer: for this network the parameter Jacobian has a closed form, with h = W x / sqrt(d), t = tanh(h),
s = 1 - t^2: df/dv_i = t_i / sqrt(n), df/dW_ij = v_i s_i x_j / sqrt(n d). Hence
K(x, x') = (sum_i t_i t'_i + (x . x' / d) sum_i v_i^2 s_i s'_i) / n, evaluated in float64 NumPy from the same
float32 values. An NTK Gram matrix is positive semi-definite (here: definite, 16 points, 1152 parameters), so a
negative eigenvalue -- seed 000's symptom, -1.5 -- is a wrong answer.

Two precisions. Every check runs at HIGHEST precision (``jax.default_matmul_precision("float32")``), where a
healthy machine of any kind gives float32 rounding; the full kernel also runs at the user's default precision
(TF32 on NVIDIA GPUs of compute capability >= 8.0, bfloat16 on TPUs by design), reported here and judged by
envaudit against the precision class the machine's facts explain.

Metrics: rel_err_full, rel_err_chunked_<b> (Frobenius norm of K - K_ref over that of K_ref); rel_diff_chunked_<b>
(chunked vs full); rel_asymmetry (max|K - K^T| / max|K|); min_eigenvalue, max_eigenvalue and
min_eigenvalue_ref (of the float64 answer); neg_eig_rel = max(0, -min_eigenvalue) / max_eigenvalue;
rerun_rel_diff (the full kernel again, same executable and input: bitwise, threshold 0); output_dtype; all at
HIGHEST. At the default precision: rel_err_full_default, effective_bits_default (-log2 of it),
rerun_rel_diff_default.

Thresholds (measured on a 2-core CPU): healthy float32 1.8e-7 to 3.7e-7, float64 3e-16. Bounds 1e-5 (float32)
and 1e-12 (float64) for every relative error and for neg_eig_rel: an eigenvalue of a matrix perturbed by E moves
by at most ||E||_2, so a healthy kernel cannot show a negative eigenvalue below -1e-5 of the largest.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
from numpy.typing import NDArray

NAME = "ntk"
POINTS, D_IN, HIDDEN = 16, 8, 128
CHUNKS = (1, 4)  # nt.batch batch sizes; each divides POINTS, as nt.batch requires
# Norm-wise bound on every error, difference and neg_eig_rel; see the module docstring for the measurements.
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


def _bits(err: float, dtype: str) -> float:
    """-log2 of a relative error: about the mantissa bits that survive; an exact result counts as all of them."""
    cap = float(np.finfo(dtype).nmant + 1)
    return round(min(-math.log2(err), cap), 2) if err > 0 else cap


def _highest(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` traced at HIGHEST matmul precision whatever the user's default (the checks judge the arithmetic).
    "float32" is HIGHEST's name that every jax since 0.4 accepts here ("highest" only from 0.4.31)."""
    import jax

    def at_highest(*args: Any, **kwargs: Any) -> Any:
        with jax.default_matmul_precision("float32"):
            return fn(*args, **kwargs)

    return at_highest


def _finite(metrics: dict[str, object]) -> dict[str, object]:
    """NaN and infinities as strings, so the JSON printed is strict JSON."""
    return {k: repr(v) if isinstance(v, float) and not math.isfinite(v) else v for k, v in metrics.items()}


def _frob(a: NDArray[Any], ref: NDArray[Any]) -> float:
    return float(np.linalg.norm(np.asarray(a, np.float64) - ref) / np.linalg.norm(ref))


def _compile_all(calls: dict[Any, tuple[Callable[..., Any], tuple[Any, ...]]]) -> dict[Any, Any]:
    """key -> its function compiled ahead of time for its arguments (only their shapes and dtypes matter), the
    compilations in parallel threads: XLA compiles without holding the GIL, and on the CPU compiling is most of a
    cold probe's time (two conv chains: 0.18 s one after the other, 0.12 s at once). Each is the very executable
    ``jax.jit(fn)(*args)`` would compile and run."""
    import jax

    lowered = {key: jax.jit(fn).lower(*args) for key, (fn, args) in calls.items()}  # traced here: config is per thread
    with ThreadPoolExecutor(max_workers=len(lowered)) as pool:
        return dict(zip(lowered, pool.map(lambda low: low.compile(), lowered.values()), strict=True))


def inputs(seed: int) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any]]:
    """Inputs x (POINTS x D_IN), W (HIDDEN x D_IN), v (HIDDEN): float32, fixed by ``seed``."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((POINTS, D_IN)).astype(np.float32)
    w = rng.standard_normal((HIDDEN, D_IN)).astype(np.float32)
    v = rng.standard_normal(HIDDEN).astype(np.float32)
    return x, w, v


def reference(x: NDArray[Any], w: NDArray[Any], v: NDArray[Any]) -> NDArray[Any]:
    """The known answer: the closed-form NTK of this finite network, in float64."""
    x, w, v = (a.astype(np.float64) for a in (x, w, v))
    t = np.tanh(x @ w.T / math.sqrt(D_IN))
    s = 1.0 - t**2
    k: NDArray[Any] = (t @ t.T + (x @ x.T / D_IN) * ((s * v**2) @ s.T)) / HIDDEN
    return k


def run(precision: str = "auto", seed: int = 0) -> dict[str, object]:
    import jax
    import jax.numpy as jnp

    dtype = _resolve(precision)
    x_np, w_np, v_np = inputs(seed)
    ref = reference(x_np, w_np, v_np)
    with _x64(dtype == "float64"):

        def f(params: tuple[jax.Array, jax.Array], x: jax.Array) -> jax.Array:
            w, v = params
            return jnp.tanh(x @ w.T / math.sqrt(D_IN)) @ v / math.sqrt(HIDDEN)

        def jac(params: tuple[jax.Array, jax.Array], x: jax.Array) -> jax.Array:
            jw, jv = jax.jacobian(f)(params, x)
            return jnp.concatenate([jw.reshape(x.shape[0], -1), jv], axis=1)

        def gram(params: tuple[jax.Array, jax.Array], x: jax.Array) -> jax.Array:
            j = jac(params, x)
            return j @ j.T

        def both(params: tuple[jax.Array, jax.Array], x: jax.Array) -> tuple[jax.Array, jax.Array]:
            return _highest(gram)(params, x), gram(params, x)  # HIGHEST and the default precision, one program

        params = (jax.device_put(np.asarray(w_np, dtype=dtype)), jax.device_put(np.asarray(v_np, dtype=dtype)))
        shape = {b: np.zeros((b, D_IN), dtype) for b in (POINTS, *CHUNKS)}  # only shapes matter
        programs = _compile_all(
            {
                "full": (both, (params, shape[POINTS])),
                "contract": (_highest(lambda j: j @ j.T), (np.zeros((POINTS, HIDDEN * (D_IN + 1)), dtype),)),
                **{b: (_highest(jac), (params, shape[b])) for b in CHUNKS},
            }
        )
        xj = jax.device_put(np.asarray(x_np, dtype=dtype))
        first, again = programs["full"](params, xj), programs["full"](params, xj)
        chunks = {b: jax.device_put([np.asarray(x_np[i : i + b], dtype=dtype) for i in range(0, POINTS, b)])
                  for b in CHUNKS}  # fmt: skip  # cut on the host: slicing a device array compiles a program per slice
        jacobians = jax.device_get({b: [programs[b](params, part) for part in parts] for b, parts in chunks.items()})
        (full, default), (rerun, rerun_default) = jax.device_get([first, again])
        # K[I, J] = J_I J_J^T for every pair of chunks, as nt.batch assembles it: the chunks' Jacobians, stacked
        chunked = {b: np.asarray(programs["contract"](np.concatenate(js))) for b, js in jacobians.items()}
    k64 = full.astype(np.float64)
    eig = np.linalg.eigvalsh((k64 + k64.T) / 2)
    metrics: dict[str, object] = {"precision": dtype, "rel_err_full": _frob(full, ref)}
    for b, k in chunked.items():
        metrics[f"rel_err_chunked_{b}"] = _frob(k, ref)
        metrics[f"rel_diff_chunked_{b}"] = _frob(k, k64)
    metrics.update(
        rel_asymmetry=float(np.max(np.abs(k64 - k64.T)) / np.max(np.abs(k64))),
        min_eigenvalue=float(eig[0]),
        max_eigenvalue=float(eig[-1]),
        min_eigenvalue_ref=float(np.linalg.eigvalsh(ref)[0]),
        neg_eig_rel=float(max(0.0, -eig[0]) / eig[-1]),
        rerun_rel_diff=_rel(rerun, k64),
        output_dtype=str(full.dtype),
        rel_err_full_default=_frob(default, ref),
        rerun_rel_diff_default=_rel(rerun_default, default.astype(np.float64)),
    )
    metrics["effective_bits_default"] = _bits(float(metrics["rel_err_full_default"]), dtype)  # type: ignore[arg-type]
    tol = TOLERANCE[dtype]
    thresholds: dict[str, object] = {
        key: tol for key in metrics if key.startswith(("rel_", "neg_eig")) and not key.endswith("_default")
    }  # one norm-wise bound per dtype for errors, differences and negative eigenvalues at HIGHEST (docstring)
    thresholds.update({key: 0.0 for key in metrics if key.startswith("rerun_")})  # same executable: same bits
    thresholds["output_dtype"] = dtype  # a float64 request must not come out float32
    bad = _judge(metrics, thresholds)
    good = f"{dtype} NTK within {tol:g} of its closed form, no negative eigenvalue"
    bits = f"{metrics['effective_bits_default']} bits at the default precision"
    return {
        "name": NAME,
        "status": "fail" if bad else "pass",
        "metrics": _finite(metrics),
        "thresholds": thresholds,
        "message": "; ".join(bad) if bad else f"{good}; {bits}",
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
