"""Probe linalg: solve, cholesky, eigh, svd and qr in float32 against float64 NumPy on a well-conditioned matrix.

Each decomposition is a library call chosen per platform (LAPACK on the CPU, cuSOLVER or a jax implementation on
GPUs, matmul-based algorithms on TPUs): a wrong kernel, workspace or batched path gives wrong factors with no error.
Computation, jitted at HIGHEST matmul precision (the algorithms' inner matmuls included), on every device: A = Q
diag(s) Q^T of size N with s spread in [1, 4] (condition number 4: a healthy float32 result is a few float32 ulps
from the answer), Q orthogonal, and a right-hand side b, drawn by NumPy from a fixed seed. (The default-precision
run is left out: each decomposition costs 0.1-0.25 s to compile on the CPU.)

Known answer: NumPy (LAPACK) in float64 from the same float32 values cast exactly: solve, cholesky's factor,
eigenvalues and singular values. Eigenvectors and singular vectors are defined up to sign, so they are judged by
residuals computed in float64: |A V - V diag(w)|, |U diag(s) V^T - A|, |Q R - A|, |Q^T Q - I|.

Metrics (Frobenius norms relative to the answer's, or to |A| for residuals): rel_err_solve, rel_err_cholesky,
rel_err_eigh_values, rel_residual_eigh, rel_err_svd_values, rel_residual_svd, rel_residual_qr,
rel_err_qr_orthogonality (|Q^T Q - I| / sqrt(N)); output_dtype.

Thresholds: measured on a 2-core CPU (jax 0.10.1, 20 seeds): every error and residual 2.6e-8 to 9.4e-7 (the svd
residual the worst); float64 below 2e-15. Measured on a TPU v5e (jax 0.10.2, 4 seeds, HIGHEST): errors of solve,
cholesky, eigenvalues and singular values at most 2.3e-7, the qr residual 2e-7, but the eigh and svd residuals
9.7e-6 (its matmul-based algorithms): so errors have the float32 bound of every probe, 1e-5 (float64: 1e-12), and
the residuals (rel_residual_*) the platform's ([platform_error] in envaudit/model/metrics.toml; a probe alone:
kit.APPROXIMATE on an accelerator).
"""

from __future__ import annotations

import sys
from typing import Any

import _kit as kit
import numpy as np
from numpy.typing import NDArray

NAME = "linalg"
# Expected seconds on a 2-core CPU, cold compilation cache, one device (measured in a cold audit: 0.57 s, each
# decomposition 0.1-0.25 s to compile; 0.27 s with the cache warm; envaudit's per-probe bound is at least twice it,
# and `health` runs what fits its total bound).
COST_S = 0.6
PLATFORM_COST_S = {"tpu": 1.8}  # TPU v5e, jax 0.10.2, cold, after another probe compiled (12-08): 0.89, 1.25, 1.73 s
COMPILES_FIRST = True  # run() reaches kit.compile_all before any work of its own: compiled ahead where slow
N = 32


def inputs(seed: int) -> tuple[NDArray[Any], NDArray[Any]]:
    """A symmetric positive definite float32 matrix of condition number about 4, and a right-hand side."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((N, N)))
    a = (q * np.linspace(1.0, 4.0, N)) @ q.T
    a = ((a + a.T) / 2).astype(np.float32)
    return a, rng.standard_normal((N, 1)).astype(np.float32)


def run(precision: str = "auto", seed: int = 0) -> dict[str, object]:
    import jax
    import jax.numpy as jnp

    dtype = kit.native(precision)  # float32 on a TPU under x64: kit.native
    a_np, b_np = inputs(seed)
    a64, b64 = a_np.astype(np.float64), b_np.astype(np.float64)
    ref_solve = np.linalg.solve(a64, b64)
    ref_chol = np.linalg.cholesky(a64)
    ref_w = np.linalg.eigvalsh(a64)
    ref_s = np.linalg.svd(a64, compute_uv=False)
    eye = np.eye(N)

    def decompositions(a: jax.Array, b: jax.Array) -> dict[str, Any]:
        w, v = jnp.linalg.eigh(a)
        u, s, vt = jnp.linalg.svd(a)
        q, r = jnp.linalg.qr(a)
        return {"solve": jnp.linalg.solve(a, b), "cholesky": jnp.linalg.cholesky(a), "eigh": (w, v)} | {
            "svd": (u, s, vt),
            "qr": (q, r),
        }

    worst: dict[str, float] = {}
    out_dtype = ""
    with kit.x64(dtype == "float64"):
        args = (np.asarray(a_np, dtype), np.asarray(b_np, dtype))
        checked = kit.highest(decompositions)
        program = kit.compile_all({"all": (checked, jax.device_put(args, kit.devices()[0]))})["all"]  # kit.runner
        for device in kit.devices():
            got = jax.device_get(kit.runner(checked, program, device)(*jax.device_put(args, device)))
            w, v = (np.asarray(t, np.float64) for t in got["eigh"])
            u, s, vt = (np.asarray(t, np.float64) for t in got["svd"])
            q, r = (np.asarray(t, np.float64) for t in got["qr"])
            found = {
                "rel_err_solve": kit.frob(got["solve"], ref_solve),
                "rel_err_cholesky": kit.frob(got["cholesky"], ref_chol),
                "rel_err_eigh_values": kit.frob(w, ref_w),
                "rel_residual_eigh": float(np.linalg.norm(a64 @ v - v * w) / np.linalg.norm(a64)),
                "rel_err_svd_values": kit.frob(s, ref_s),
                "rel_residual_svd": kit.frob((u * s) @ vt, a64),
                "rel_residual_qr": kit.frob(q @ r, a64),
                "rel_err_qr_orthogonality": float(np.linalg.norm(q.T @ q - eye) / np.sqrt(N)),
            }
            worst = {k: max(worst.get(k, 0.0), value) if value == value else value for k, value in found.items()}
            out_dtype = str(np.asarray(got["solve"]).dtype)
    metrics: dict[str, object] = {"precision": dtype, "n": N, **worst, "output_dtype": out_dtype}
    tol = kit.TOLERANCE[dtype]
    approx = kit.platform_tolerance(dtype)  # residuals of a TPU's matmul-based eigh and svd: docstring
    thresholds: dict[str, object] = {k: approx if k.startswith("rel_residual_") else tol for k in worst}
    thresholds["output_dtype"] = dtype
    good = f"{dtype} solve, cholesky, eigh, svd and qr within {tol:g} of float64 LAPACK"
    return kit.finish(NAME, metrics, thresholds, good)


def main(argv: list[str] | None = None) -> int:
    return kit.main(NAME, __doc__, run, argv)


if __name__ == "__main__":
    sys.exit(main())
