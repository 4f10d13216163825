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

import sys

import _kit as kit
import numpy as np

NAME = "matmul_precision"
# Expected seconds on a 2-core CPU, cold compilation cache, one device (envaudit's per-probe bound is at least
# twice it, and `health` runs what fits its total bound).
COST_S = 0.2
PLATFORM_COST_S = {"tpu": 0.2}  # TPU v5e, jax 0.10.2, cold, after another probe compiled (12-08): 0.08, 0.09 s
NUMERIC = True  # a numeric probe, as envaudit/files/probefiles.numeric says
M, K, N = 64, 256, 64
FIX = 'jax.config.update("jax_default_matmul_precision", "float32") or JAX_DEFAULT_MATMUL_PRECISION=float32'


def run(precision: str = "auto", seed: int = 0) -> dict[str, object]:
    import jax
    import jax.numpy as jnp
    from jax import lax

    dtype = kit.resolve(precision)
    rng = np.random.default_rng(seed)
    a_np, b_np = (rng.standard_normal(shape).astype(np.float32) for shape in ((M, K), (K, N)))
    ref = a_np.astype(np.float64) @ b_np.astype(np.float64)
    metrics: dict[str, object] = {
        "precision": dtype,
        "default_matmul_precision": str(getattr(jax.config, "jax_default_matmul_precision", None)),
    }
    with kit.x64(dtype == "float64"):
        a, b = jax.device_put(np.asarray(a_np, dtype=dtype)), jax.device_put(np.asarray(b_np, dtype=dtype))
        # both products in one program: on the CPU, compiling costs more than computing them
        both = jax.jit(lambda x, y: (jnp.matmul(x, y), jnp.matmul(x, y, precision=lax.Precision.HIGHEST)))(a, b)
        results = {"default": np.asarray(both[0]), "highest": np.asarray(both[1])}
    for kind, out in results.items():
        err = float(np.linalg.norm(out.astype(np.float64) - ref) / np.linalg.norm(ref))
        metrics[f"rel_err_{kind}"] = err
        metrics[f"effective_bits_{kind}"] = kit.bits(err, dtype)
    metrics["output_dtype"] = str(results["default"].dtype)
    tol = kit.TOLERANCE[dtype]
    thresholds: dict[str, object] = {"rel_err_highest": tol}  # bits: docstring; the default run is reported
    thresholds["output_dtype"] = dtype  # a float64 request must not come out float32
    bad = kit.judge(metrics, thresholds)
    message = "; ".join(bad) if bad else f"{dtype} matmul keeps {metrics['effective_bits_default']} bits by default"
    if not bad and float(metrics["rel_err_default"]) > tol:  # type: ignore[arg-type]
        message += f" (reduced precision by default; for float32: {FIX})"
    return kit.result(NAME, "fail" if bad else "pass", metrics, thresholds, message)


def main(argv: list[str] | None = None) -> int:
    return kit.main(NAME, __doc__, run, argv)


if __name__ == "__main__":
    sys.exit(main())
