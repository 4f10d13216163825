"""Probe ntk: the empirical NTK of a 2-layer tanh MLP, full and chunked like ``nt.batch``, vs its closed form.

The network (seed 000's use case, made small): f(x) = v . tanh(W x / sqrt(d)) / sqrt(n) with W (n x d), v (n),
n = 128 hidden units, d = 8 inputs, 16 inputs x, all drawn by NumPy from a fixed seed. The empirical NTK is
K = J J^T with J the Jacobian of f over the batch with respect to (W, v), computed by pure JAX (``jax.jacobian``,
then the contraction), once for the whole batch and once block by block the way ``neural_tangents.batch``
chunks it (K[I, J] from the Jacobians of chunk I and chunk J), for chunk sizes 1 and 4.

Known answer: for this network the parameter Jacobian has a closed form, with h = W x / sqrt(d), t = tanh(h),
s = 1 - t^2: df/dv_i = t_i / sqrt(n), df/dW_ij = v_i s_i x_j / sqrt(n d). Hence
K(x, x') = (sum_i t_i t'_i + (x . x' / d) sum_i v_i^2 s_i s'_i) / n, evaluated in float64 NumPy from the same
float32 values. An NTK Gram matrix is positive semi-definite (here: definite, 16 points, 1152 parameters), so a
negative eigenvalue -- seed 000's symptom, -1.5 -- is a wrong answer.

Metrics: rel_err_full, rel_err_chunked_<b> (Frobenius norm of K - K_ref over that of K_ref); rel_diff_chunked_<b>
(chunked vs full); rel_asymmetry (max|K - K^T| / max|K|); min_eigenvalue, max_eigenvalue and
min_eigenvalue_ref (of the float64 answer); neg_eig_rel = max(0, -min_eigenvalue) / max_eigenvalue;
max_abs_diff_rerun (the full kernel again, same executable and input: bitwise, threshold 0); output_dtype.

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


def _finite(metrics: dict[str, object]) -> dict[str, object]:
    """NaN and infinities as strings, so the JSON printed is strict JSON."""
    return {k: repr(v) if isinstance(v, float) and not math.isfinite(v) else v for k, v in metrics.items()}


def _frob(a: NDArray[Any], ref: NDArray[Any]) -> float:
    return float(np.linalg.norm(np.asarray(a, np.float64) - ref) / np.linalg.norm(ref))


def _compile_all(fn: Callable[..., Any], calls: dict[Any, tuple[Any, ...]]) -> dict[Any, Any]:
    """key -> ``fn`` compiled ahead of time for that call's arguments (only their shapes and dtypes matter), the
    compilations in parallel threads: XLA compiles without holding the GIL, and on the CPU compiling is most of a
    cold probe's time (two conv chains: 0.18 s one after the other, 0.12 s at once). Each is the very executable
    ``jax.jit(fn)(*args)`` would compile and run."""
    import jax

    lowered = {key: jax.jit(fn).lower(*args) for key, args in calls.items()}  # traced here: x64 is thread-local
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

        def kernel(params: tuple[jax.Array, jax.Array], x1: jax.Array, x2: jax.Array) -> jax.Array:
            return jac(params, x1) @ jac(params, x2).T

        params = (jax.device_put(np.asarray(w_np, dtype=dtype)), jax.device_put(np.asarray(v_np, dtype=dtype)))
        # the full kernel's program and one per chunk size, each for (b, D_IN) x (b, D_IN) blocks
        shapes = {b: (params, *[np.zeros((b, D_IN), dtype)] * 2) for b in (POINTS, *CHUNKS)}  # only shapes matter
        programs = _compile_all(kernel, shapes)
        xj = jax.device_put(np.asarray(x_np, dtype=dtype))
        full_j, rerun_j = programs[POINTS](params, xj, xj), programs[POINTS](params, xj, xj)
        full, rerun = np.asarray(full_j), np.asarray(rerun_j)
        chunked = {}
        for b in CHUNKS:  # chunks cut on the host (slicing a device array compiles a program per slice)
            parts = jax.device_put([np.asarray(x_np[i : i + b], dtype=dtype) for i in range(0, POINTS, b)])
            blocks = [[programs[b](params, p, q) for q in parts] for p in parts]  # all dispatched, then fetched
            chunked[b] = np.block(jax.device_get(blocks))
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
        max_abs_diff_rerun=float(np.max(np.abs(rerun.astype(np.float64) - k64))),
        output_dtype=str(full.dtype),
    )
    tol = TOLERANCE[dtype]
    thresholds: dict[str, object] = {
        key: tol for key in metrics if key.startswith(("rel_", "neg_eig"))
    }  # one norm-wise bound per dtype for errors, differences and negative eigenvalues (docstring)
    thresholds["max_abs_diff_rerun"] = 0.0  # same executable, same input: the same bits
    thresholds["output_dtype"] = dtype  # a float64 request must not come out float32
    bad = _judge(metrics, thresholds)
    return {
        "name": NAME,
        "status": "fail" if bad else "pass",
        "metrics": _finite(metrics),
        "thresholds": thresholds,
        "message": "; ".join(bad) if bad else f"{dtype} NTK within {tol:g} of its closed form, no negative eigenvalue",
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
