"""Probe determinism: the same compiled computation, run again on the same input, must give the same bits.

Seed 000: "GPUs tend to do stochastic reductions so even running the same forward pass twice gives different
results". Reductions whose order depends on thread scheduling -- atomics in scatter-add and in some GPU sums,
cuDNN's backward convolution algorithms -- make reruns differ in the last bits, and those differences then grow
through anything sensitive (eigenvalues, long chains, training runs).

Known answer: run 0 of each computation. Every later run of the same jitted function on the same device array
must reproduce it bit for bit. Threshold: 0 for every difference -- same executable, same input, same device;
measured on a 2-core CPU (jax 0.4.25 and 0.10.2): every computation is bit-identical in float32 and float64.

Computations (inputs drawn by NumPy from a fixed seed, in the precision asked for):
- mlp_batch: tanh(x W1) W2 on a (64, 256) batch (dense_chain, conv_chain and ntk rerun their batched programs too);
- big_sum: the sum of 2^20 values (a long reduction);
- scatter_add: the same 2^20 values added into 1000 buckets at random indices (many collisions: GPU atomics);
- conv_grad: the gradient of a 3x3 convolution's squared output with respect to its kernel (a backward
  convolution: cuDNN picks possibly nondeterministic algorithms), in flax's NHWC / HWIO layout, at the default
  precision whatever jax's configuration says (a float32 one made XLA:TPU compile it for 16 s).

Metrics: rerun_rel_diff_<computation> = max over REPEATS - 1 reruns of max|run_k - run_0| / max|run_0|
(threshold 0: bitwise); output_dtype. On GPUs XLA documents scatter, select-and-scatter, GEMMs and convolutions as
possibly nondeterministic unless deterministic ops are requested (XLA_FLAGS=--xla_gpu_deterministic_ops=true, or
--xla_gpu_exclude_nondeterministic_ops=true from jaxlib 0.4.29), so there a difference in scatter_add or conv_grad
is by design, and envaudit judges it so; on a CPU, and with deterministic ops, every rerun must be bitwise.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import _kit as kit
import numpy as np
from numpy.typing import NDArray

NAME = "determinism"
# Expected seconds on a 2-core CPU, cold compilation cache, one device (envaudit's per-probe bound is at least
# twice it, and `health` runs what fits its total bound).
COST_S = 0.5
PLATFORM_COST_S = {"tpu": 1.5}  # TPU v5e, jax 0.10.2, cold, after another probe compiled (12-08): 0.95, 1.42, 0.93 s
NUMERIC = True  # a numeric probe, as envaudit/files/probefiles.numeric says
REPEATS = 3
BITWISE = 0.0  # a rerun of the same executable on the same input must give the same bits
FIX = "XLA_FLAGS=--xla_gpu_deterministic_ops=true; before jaxlib 0.7.2 it could corrupt scatters: jax-ml/jax#27796"


def _computations(dtype: str, seed: int) -> tuple[Callable[..., dict[str, Any]], tuple[Any, ...]]:
    """One jitted function computing every named computation, and its device-array arguments. One program, not
    one each: on the CPU compiling dominates this probe, and a rerun is judged per output all the same."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    rng = np.random.default_rng(seed)

    def arr(*shape: int, scale: float = 1.0) -> NDArray[Any]:
        return np.asarray(rng.standard_normal(shape) * scale, dtype=dtype)

    def mlp(x: jax.Array, w1: jax.Array, w2: jax.Array) -> jax.Array:
        return jnp.tanh(x @ w1) @ w2

    def conv_grad(x: jax.Array, k: jax.Array) -> jax.Array:
        def loss(k: jax.Array) -> jax.Array:
            # at the default precision whatever the configuration says: reruns are what is measured, and under
            # JAX_DEFAULT_MATMUL_PRECISION=float32 XLA:TPU compiled this backward convolution for 16.2 s, against
            # 1.6 s so (TPU v5e, jax 0.10.2); the configured precision is the chains' and matmul_precision's to judge
            out = lax.conv_general_dilated(
                x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"), precision=lax.Precision.DEFAULT
            )
            return jnp.sum(out**2)

        grad: jax.Array = jax.grad(loss)(k)
        return grad

    @jax.jit
    def everything(*a: jax.Array) -> dict[str, jax.Array]:
        x, w1, w2, vals, idx, images, kernel = a
        return {
            "mlp_batch": mlp(x, w1, w2),
            "big_sum": jnp.sum(vals),
            "scatter_add": jnp.zeros(1000, dtype=vals.dtype).at[idx].add(vals),
            "conv_grad": conv_grad(images, kernel),
        }

    x, w1, w2 = arr(64, 256), arr(256, 256, scale=1 / 16), arr(256, 16, scale=1 / 16)
    vals, idx = arr(2**20), rng.integers(0, 1000, 2**20).astype(np.int32)
    args = (x, w1, w2, vals, idx, arr(8, 28, 28, 4), arr(3, 3, 4, 16, scale=1 / 6))
    # converted on the host and put on the device once: every run then reads the very same device buffers
    return everything, tuple(jax.device_put(a) for a in args)


def run(precision: str = "auto", seed: int = 0) -> dict[str, object]:
    dtype = kit.native(precision)  # float32 on a TPU under x64: kit.native
    metrics: dict[str, object] = {"precision": dtype}
    dtypes: set[str] = set()
    with kit.x64(dtype == "float64"):
        fn, args = _computations(dtype, seed)
        outputs = [fn(*args) for _ in range(REPEATS)]
        for name in outputs[0]:
            runs = [np.asarray(out[name]) for out in outputs]
            scale = float(np.max(np.abs(runs[0]))) or 1.0
            diff = max(float(np.max(np.abs(r.astype(np.float64) - runs[0]))) for r in runs[1:]) / scale
            metrics[f"rerun_rel_diff_{name}"] = diff
            dtypes.add(str(runs[0].dtype))
    metrics["output_dtype"] = ",".join(sorted(dtypes))
    thresholds: dict[str, object] = {
        k: BITWISE for k in metrics if k.startswith("rerun_rel_diff")
    }  # bitwise: any difference between reruns is nondeterminism (docstring)
    thresholds["output_dtype"] = dtype  # a float64 request must not come out float32
    bad = kit.judge(metrics, thresholds)
    message = f"reruns of {len(thresholds) - 1} computations are bit-identical"
    if bad:
        message = f"reruns differ (on GPUs: {FIX}): " + "; ".join(bad)
    return kit.result(NAME, "fail" if bad else "pass", metrics, thresholds, message)


def main(argv: list[str] | None = None) -> int:
    return kit.main(NAME, __doc__, run, argv)


if __name__ == "__main__":
    sys.exit(main())
