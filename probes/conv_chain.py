"""Probe conv_chain: a chain of 3x3 SAME convolutions, batched vs per-example vs a float64 NumPy answer.

The computation is the reduction of flax issue 1588 / seed 000 (marcvanzee's repro, made finite):
``lax.conv_general_dilated`` from 1 to 32 channels, 3x3, stride 1, SAME, on N 28 x 28 images with one channel,
then a chain of 32 -> 32 convolutions; weights N(0, 1/fan_in) (fan_in = in_channels * 9) so the activations stay
of order one; no nonlinearity. Inputs and weights are drawn by NumPy from a fixed seed. The layout is NHWC / HWIO,
flax's (``nn.Conv``): the seed's NCHW makes XLA:CPU compile layout transposes around the chain, which took 80-100
ms per program against 7 ms (measured, jax 0.10.2), and a probe compiles two programs.

Known answer: the same chain computed in float64 by a 9-term NumPy cross-correlation (``_np_conv``: XLA
convolutions do not flip the kernel) from the same float32 values cast exactly to float64.

Two precisions. The checks run at HIGHEST precision (``jax.default_matmul_precision("float32")``: true float32 on
GPUs, where cuDNN would otherwise use TF32 at compute capability >= 8.0), where a healthy machine of any kind gives
float32 rounding; the batch also runs at the user's default precision, reported here and judged by envaudit
against the precision class the machine's facts explain.

Metrics (norm-wise relative errors, max|result - ref| / max|ref|): rel_err_batched and rel_err_per_example (each
example alone, batch 1) against the float64 answer; rel_diff_batched_vs_per_example; rerun_rel_diff (the batched
run again, same executable and input: bitwise, threshold 0); bitwise_equal_batched_per_example (reported only:
GPUs and TPUs legitimately reorder reductions per batch shape); output_dtype; all at HIGHEST. At the default
precision: rel_err_batched_default, effective_bits_default (-log2 of it), rerun_rel_diff_default.

Thresholds (measured on a 2-core CPU, jax 0.5.3 and 0.10.2): a healthy float32 chain (128 examples, depth 10 or
30) is 8e-7 to 1e-6 from the float64 answer, float64 is 2e-15; batched and per-example are bit-identical on the
CPU. Reduced-precision operands give 8e-4 (TF32-like) to 6e-3 (bfloat16). Bounds: 1e-5 for float32, 1e-12 for
float64. float64 convolutions are 25-50x slower on the CPU, so the float64 run uses fewer examples and layers.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import _kit as kit
import numpy as np
from numpy.typing import NDArray

NAME = "conv_chain"
# Expected seconds on a 2-core CPU, cold compilation cache, one device (envaudit's per-probe bound is at least
# twice it, and `health` runs what fits its total bound).
COST_S = 0.5
PLATFORM_COST_S = {"tpu": 3.6}  # TPU v5e, jax 0.10.2, cold, after another probe compiled (12-08): 3.56, 3.36, 2.62 s
COMPILES_FIRST = True  # run() reaches kit.compile_all before any work of its own: compiled ahead where slow
NUMERIC = True  # a numeric probe, as envaudit/files/probefiles.numeric says
CHANNELS, SIZE = 32, 28
LAYOUT = ("NHWC", "HWIO", "NHWC")  # flax's; see the docstring
# (examples, 32->32 layers after the first conv) per precision. Depth is what makes a per-convolution error add
# up (10 convolutions: 10x); each example costs float64 reference time (8 ms at depth 10); float64 convolutions are
# 25-50x slower on the CPU (docstring). Batch 4 against batch 1 is what the batched-vs-per-example check needs.
SHAPE = {"float32": (4, 9), "float64": (4, 4)}


def inputs(seed: int, examples: int, depth: int) -> tuple[NDArray[Any], list[NDArray[Any]]]:
    """The float32 images (NHWC) and kernels (HWIO): the known-answer inputs, fixed by ``seed``."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((examples, SIZE, SIZE, 1)).astype(np.float32)
    kernels = [(rng.standard_normal((3, 3, 1, CHANNELS)) / 3.0).astype(np.float32)]
    for _ in range(depth):
        w = rng.standard_normal((3, 3, CHANNELS, CHANNELS)) / math.sqrt(CHANNELS * 9)
        kernels.append(w.astype(np.float32))
    return x, kernels


def _np_conv(x: NDArray[Any], w: NDArray[Any]) -> NDArray[Any]:
    """3x3 stride-1 SAME cross-correlation, NHWC x HWIO -> NHWC, in the dtype given (float64 here): the nine shifted
    views stacked (im2col) and one matrix product by NumPy's BLAS, computed independently of XLA."""
    n, h, wd, c = x.shape
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    cols = np.stack([xp[:, i : i + h, j : j + wd, :] for i in range(3) for j in range(3)], axis=3)
    out: NDArray[Any] = cols.reshape(n * h * wd, 9 * c) @ w.reshape(9 * c, w.shape[3])
    return out.reshape(n, h, wd, w.shape[3])


def reference(x: NDArray[Any], kernels: list[NDArray[Any]]) -> NDArray[Any]:
    """The known answer: the chain in float64 NumPy from the same values."""
    out = x.astype(np.float64)
    for w in kernels:
        out = _np_conv(out, w.astype(np.float64))
    return out


def run(precision: str = "auto", seed: int = 0) -> dict[str, object]:
    import jax
    from jax import lax

    dtype = kit.native(precision)  # float32 on a TPU under x64: kit.native
    examples, depth = SHAPE[dtype]
    x_np, k_np = inputs(seed, examples, depth)
    with kit.x64(dtype == "float64"):
        # Kernels are arguments, not closed-over constants (constants are baked into every executable); examples
        # are sliced on the host (slicing a device array compiles a program per slice).
        first, stacked = np.asarray(k_np[0], dtype=dtype), np.stack([np.asarray(k, dtype=dtype) for k in k_np[1:]])
        ks = jax.device_put((first, stacked))

        def conv(x: jax.Array, k: jax.Array) -> jax.Array:
            return lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=LAYOUT)

        def chain(x: jax.Array, ks: tuple[jax.Array, jax.Array]) -> jax.Array:
            # the 32 -> 32 layers as a loop, not unrolled: the same convolutions in the same order (bit-identical
            # on a TPU v5e), one body to compile (there: 2.0 s for the three programs at once, 5.0 s unrolled)
            out, _ = lax.scan(lambda h, k: (conv(h, k), None), conv(x, ks[0]), ks[1])
            return out

        shape = {n: np.zeros((n, SIZE, SIZE, 1), dtype) for n in (examples, 1)}  # only shapes matter
        # HIGHEST and the default precision as two programs, compiled at once with the per-example one
        programs = kit.compile_all(
            {
                "batch": (kit.highest(chain), (shape[examples], ks)),
                "default": (chain, (shape[examples], ks)),
                "one": (kit.highest(chain), (shape[1], ks)),
            }
        )
        batch, default_run, single = programs["batch"], programs["default"], programs["one"]

        # one transfer for all inputs; every call dispatched before any result is waited for
        images = [x_np, *(x_np[i : i + 1] for i in range(examples))]
        parts = jax.device_put([np.asarray(p, dtype=dtype) for p in images])
        outputs = [
            batch(parts[0], ks),
            default_run(parts[0], ks),
            batch(parts[0], ks),
            default_run(parts[0], ks),
            *(single(p, ks) for p in parts[1:]),
        ]
        ref = reference(x_np, k_np)  # NumPy computes the answer while the device computes the chains
        batched, default, rerun, rerun_default, *rows = jax.device_get(outputs)
        per_example = np.concatenate(rows)
        found = kit.each_device(chain, (np.asarray(x_np, dtype=dtype), (first, stacked)), ref)
    metrics: dict[str, object] = {
        "precision": dtype,
        "examples": examples,
        "convolutions": depth + 1,
        **kit.batch_metrics(ref, batched, per_example, rerun, default, rerun_default, dtype),
    }
    tol = kit.TOLERANCE[dtype]
    thresholds = kit.chain_thresholds(metrics, dtype)
    good = (
        f"{dtype} conv chain within {tol:g} of the float64 answer; {metrics['effective_bits_default']} bits by default"
    )
    return kit.finish(NAME, metrics, thresholds, good, found, tol)


def main(argv: list[str] | None = None) -> int:
    return kit.main(NAME, __doc__, run, argv)


if __name__ == "__main__":
    sys.exit(main())
