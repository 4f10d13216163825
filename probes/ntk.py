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

import math
import sys
from typing import Any

import _kit as kit
import numpy as np
from numpy.typing import NDArray

NAME = "ntk"
# Expected seconds on a 2-core CPU, cold compilation cache, one device (envaudit's per-probe bound is at least
# twice it, and `health` runs what fits its total bound).
COST_S = 0.5
PLATFORM_COST_S = {"tpu": 0.6}  # TPU v5e, jax 0.10.2, cold, after another probe compiled (12-08): 0.32, 0.29, 0.53 s
COMPILES_FIRST = True  # run() reaches kit.compile_all before any work of its own: compiled ahead where slow
NUMERIC = True  # a numeric probe, as envaudit/files/probefiles.numeric says
POINTS, D_IN, HIDDEN = 16, 8, 128
CHUNKS = (1, 4)  # nt.batch batch sizes; each divides POINTS, as nt.batch requires


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

    dtype = kit.native(precision)  # float32 on a TPU under x64: kit.native
    x_np, w_np, v_np = inputs(seed)
    ref = reference(x_np, w_np, v_np)
    with kit.x64(dtype == "float64"):

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
            return kit.highest(gram)(params, x), gram(params, x)  # HIGHEST and the default precision, one program

        params = (jax.device_put(np.asarray(w_np, dtype=dtype)), jax.device_put(np.asarray(v_np, dtype=dtype)))
        shape = {b: np.zeros((b, D_IN), dtype) for b in (POINTS, *CHUNKS)}  # only shapes matter
        programs = kit.compile_all(
            {
                "full": (both, (params, shape[POINTS])),
                "contract": (kit.highest(lambda j: j @ j.T), (np.zeros((POINTS, HIDDEN * (D_IN + 1)), dtype),)),
                **{b: (kit.highest(jac), (params, shape[b])) for b in CHUNKS},
            }
        )
        xj = jax.device_put(np.asarray(x_np, dtype=dtype))
        first, again = programs["full"](params, xj), programs["full"](params, xj)
        chunks = {
            b: jax.device_put([np.asarray(x_np[i : i + b], dtype=dtype) for i in range(0, POINTS, b)]) for b in CHUNKS
        }  # cut on the host: slicing a device array compiles a program per slice
        jacobians = jax.device_get({b: [programs[b](params, part) for part in parts] for b, parts in chunks.items()})
        (full, default), (rerun, rerun_default) = jax.device_get([first, again])
        # K[I, J] = J_I J_J^T for every pair of chunks, as nt.batch assembles it: the chunks' Jacobians, stacked
        chunked = {b: np.asarray(programs["contract"](np.concatenate(js))) for b, js in jacobians.items()}
        host = (np.asarray(w_np, dtype=dtype), np.asarray(v_np, dtype=dtype))
        found = kit.each_device(gram, (host, np.asarray(x_np, dtype=dtype)), ref)
    k64 = full.astype(np.float64)
    eig = np.linalg.eigvalsh((k64 + k64.T) / 2)
    metrics: dict[str, object] = {"precision": dtype, "rel_err_full": kit.frob(full, ref)}
    for b, k in chunked.items():
        metrics[f"rel_err_chunked_{b}"] = kit.frob(k, ref)
        metrics[f"rel_diff_chunked_{b}"] = kit.frob(k, k64)
    metrics.update(
        rel_asymmetry=float(np.max(np.abs(k64 - k64.T)) / np.max(np.abs(k64))),
        min_eigenvalue=float(eig[0]),
        max_eigenvalue=float(eig[-1]),
        min_eigenvalue_ref=float(np.linalg.eigvalsh(ref)[0]),
        neg_eig_rel=float(max(0.0, -eig[0]) / eig[-1]),
        rerun_rel_diff=kit.rel(rerun, k64),
        output_dtype=str(full.dtype),
        rel_err_full_default=kit.frob(default, ref),
        rerun_rel_diff_default=kit.rel(rerun_default, default.astype(np.float64)),
    )
    metrics["effective_bits_default"] = kit.bits(float(metrics["rel_err_full_default"]), dtype)  # type: ignore[arg-type]
    tol = kit.TOLERANCE[dtype]
    thresholds: dict[str, object] = {
        key: tol for key in metrics if key.startswith(("rel_", "neg_eig")) and not key.endswith("_default")
    }  # one norm-wise bound per dtype for errors, differences and negative eigenvalues at HIGHEST (docstring)
    thresholds.update({key: 0.0 for key in metrics if key.startswith("rerun_")})  # same executable: same bits
    thresholds["output_dtype"] = dtype  # a float64 request must not come out float32
    good = f"{dtype} NTK within {tol:g} of its closed form, no negative eigenvalue"
    return kit.finish(
        NAME, metrics, thresholds, f"{good}; {metrics['effective_bits_default']} bits by default", found, tol
    )


def main(argv: list[str] | None = None) -> int:
    return kit.main(NAME, __doc__, run, argv)


if __name__ == "__main__":
    sys.exit(main())
