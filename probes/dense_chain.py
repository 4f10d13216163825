"""Probe dense_chain: ten 256x256 dense layers, batched vs per-example vs chunked vs a float64 NumPy answer.

The computation is jheek's reduction of flax issue 1588 / seed 000: x (64, 256) multiplied by ten
lecun-normal-scaled 256x256 matrices (N(0, 1/256), drawn with NumPy from a fixed seed; no nonlinearity).

Known answer: the same product computed by NumPy in float64 from the very same float32 input and weight values
(cast exactly to float64). In float32 the JAX result may differ from it only by float32 rounding.

Two precisions. The checks run at HIGHEST matmul precision (``jax.default_matmul_precision("float32")``: true
float32 on GPUs, six bfloat16 passes on TPUs), where a healthy machine of any kind gives float32 rounding; the batch
is also run at the user's default precision, which on NVIDIA GPUs of compute capability >= 8.0 is TF32 and on TPUs
bfloat16 by design: that run is reported, not judged here (envaudit judges it against the precision class the
machine's facts explain; this file alone cannot know them).

Metrics (each relative error is norm-wise, max|result - ref| / max|ref|):
- rel_err_batched / rel_err_per_example / rel_err_chunked: the whole batch at once, each row alone (batch 1),
  chunks of 7 rows (the last chunk is shorter), each against the float64 answer, at HIGHEST.
- rel_diff_batched_vs_per_example, rel_diff_batched_vs_chunked: the results against each other, at HIGHEST.
- rerun_rel_diff: the batched run again, same executable and input, against the first: bitwise (threshold 0).
- bitwise_equal_batched_per_example: reported, not judged (the CPU gives bit-identical rows; GPUs and TPUs
  legitimately reorder reductions per batch shape).
- output_dtype: what came out (must be the dtype asked for).
- rel_err_batched_default, effective_bits_default (-log2 of it: the bits the chain keeps end to end) and
  rerun_rel_diff_default: the batch at the default precision (reported).

Thresholds (measured on a 2-core CPU with jax 0.5.3 and 0.10.2): a healthy float32 chain is 8e-7 from the float64
answer, float64 is 2e-15. Operands rounded to a 10-bit mantissa (TF32-like) give 8e-4, bfloat16 6e-3. So 1e-5
for float32 and 1e-12 for float64 separate healthy from faulty with a margin of 10x below and 80x above.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import _kit as kit
import numpy as np
from numpy.typing import NDArray

NAME = "dense_chain"
# Expected seconds on a 2-core CPU, cold compilation cache, one device (envaudit's per-probe bound is at least
# twice it, and `health` runs what fits its total bound).
COST_S = 0.5
PLATFORM_COST_S = {"tpu": 0.4}  # TPU v5e, jax 0.10.2, cold, after another probe compiled (12-08): 0.31, 0.29, 0.28 s
COMPILES_FIRST = True  # run() reaches kit.compile_all before any work of its own: compiled ahead where slow
NUMERIC = True  # a numeric probe, as envaudit/files/probefiles.numeric says
BATCH, WIDTH, DEPTH, CHUNK = 64, 256, 10, 7


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
    from jax import lax

    dtype = kit.resolve(precision)
    x_np, w_np = inputs(seed)
    with kit.x64(dtype == "float64"):
        # Weights are an argument, not closed-over constants: constants are baked into every executable (2.4 MB
        # each, compiled and cached once per batch shape). Rows are sliced on the host: slicing a device array
        # compiles a program per slice.
        stacked = np.stack([np.asarray(w, dtype=dtype) for w in w_np])
        ws = jax.device_put(stacked)

        def chain(x: jax.Array, ws: jax.Array) -> jax.Array:
            # the layers as a loop, not unrolled: the same products in the same order, one body to compile (XLA:TPU
            # emulates float64: three unrolled float64 programs compiled in 20 s there, looped in 1.3 s at once)
            out, _ = lax.scan(lambda h, w: (h @ w, None), x, ws)
            return out

        def both(x: jax.Array, ws: jax.Array) -> tuple[jax.Array, jax.Array]:
            return kit.highest(chain)(x, ws), chain(x, ws)  # HIGHEST and the default precision, one program

        rows = [x_np[i : i + 1] for i in range(BATCH)]
        chunks = [x_np[i : i + CHUNK] for i in range(0, BATCH, CHUNK)]
        # the batch and every row count a slice has, compiled at once (kit.compile_all)
        programs = kit.compile_all(
            {
                "batch": (both, (np.zeros((BATCH, WIDTH), dtype), ws)),
                **{n: (kit.highest(chain), (np.zeros((n, WIDTH), dtype), ws)) for n in {len(c) for c in rows + chunks}},
            }
        )
        batch = programs["batch"]
        parts = jax.device_put([np.asarray(p, dtype=dtype) for p in [x_np, *rows, *chunks]])  # one transfer
        # every call dispatched before the first result is waited for
        outputs = [batch(parts[0], ws), batch(parts[0], ws), *(programs[p.shape[0]](p, ws) for p in parts[1:])]
        ref = reference(x_np, w_np)  # NumPy computes the answer while the device computes the chains
        runs = jax.device_get(outputs)
        (batched, default), (rerun, rerun_default) = runs[0], runs[1]
        per_example, chunked = np.concatenate(runs[2 : 2 + BATCH]), np.concatenate(runs[2 + BATCH :])
        found = kit.each_device(chain, (np.asarray(x_np, dtype=dtype), stacked), ref)
    metrics: dict[str, object] = {
        "precision": dtype,
        **kit.batch_metrics(ref, batched, per_example, rerun, default, rerun_default, dtype),
        "rel_err_chunked": kit.rel(chunked, ref),
        "rel_diff_batched_vs_chunked": kit.rel(batched, chunked.astype(np.float64)),
    }
    tol = kit.TOLERANCE[dtype]
    thresholds = kit.chain_thresholds(metrics, dtype)
    good = f"{dtype} chain within {tol:g} of the float64 answer; {metrics['effective_bits_default']} bits by default"
    return kit.finish(NAME, metrics, thresholds, good, found, tol)


def main(argv: list[str] | None = None) -> int:
    return kit.main(NAME, __doc__, run, argv)


if __name__ == "__main__":
    sys.exit(main())
