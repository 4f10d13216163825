"""Probe fft: batched FFTs (fft, ifft, rfft) vs the same rows one at a time vs lax.map chunks vs complex128 NumPy.

A batched FFT takes a different library plan from a single one (cuFFT and the TPU's FFT pick one per batch shape),
so a wrong plan shows only at some batch sizes (jax-ml/jax#27591: batched FFTs on GPUs wrong where single ones were
right). Computation: rows of N = 512 complex values (standard normal real and imaginary parts, drawn by NumPy from
a fixed seed), transformed by ``jnp.fft.fft``, ``ifft`` and ``rfft`` (of the real parts) along the last axis, in
one jitted program per batch size in BATCHES (1, 8, 128 and 1024: one row, small, medium and a batch large enough
for a library to choose another plan), on every device; the largest batch also through ``lax.map`` over chunks of
CHUNK rows (a loop of smaller batched FFTs, as a memory-bounded user writes it).

Known answer: NumPy's FFT (pocketfft) in complex128 of the same complex64 values cast exactly.

Metrics (norm-wise, max|result - ref| / max|ref| over the whole batch, worst over batch sizes and devices):
rel_err_fft, rel_err_ifft, rel_err_rfft against the complex128 answer; rel_diff_batched_vs_single (the first row
of every batch against batch 1, that row alone; worst of the three transforms);
rel_diff_batched_vs_map (the largest batch against its lax.map chunks); output_dtype (of the real parts).

Thresholds: measured on a 2-core CPU (jax 0.10.1, 20 seeds): complex64 errors 1.3e-7 to 2.0e-7, batched vs
single 1.3e-7 to 1.8e-7 (the CPU's batch-1 plan rounds differently), batched and lax.map chunks bit-identical; on
a TPU v5e (the issue's figure: 2.3e-7 at every batch size, batched == single; with this probe, jax 0.10.2, 4
seeds: at most 3.8e-7, batched, single and chunked bit-identical). An FFT's rounding grows as log2(N) ulps; the
float32 bound of every probe, 1e-5, is 26x the worst healthy value (50x on the CPU); float64: 1e-12.
"""

from __future__ import annotations

import sys
from typing import Any

import _kit as kit
import numpy as np
from numpy.typing import NDArray

NAME = "fft"
# Expected seconds on a 2-core CPU, cold compilation cache, one device (measured in a cold audit: 0.34 s, 0.78 s
# with the CPU shared; 0.23 s with the cache warm; envaudit's per-probe bound is at least twice it, and `health`
# runs what fits its total bound).
COST_S = 0.4
PLATFORM_COST_S = {"tpu": 4.9}  # TPU v5e, jax 0.10.2, cold, after another probe compiled (12-08): 4.89, 4.32, 4.83 s
COMPILES_FIRST = True  # run() reaches kit.compile_all before any work of its own: compiled ahead where slow
N = 512
BATCHES = (1, 8, 128, 1024)
CHUNK = 64  # rows per lax.map step for the largest batch
OPS = ("fft", "ifft", "rfft")


def inputs(seed: int, rows: int) -> NDArray[Any]:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((rows, N)) + 1j * rng.standard_normal((rows, N))).astype(np.complex64)


def reference(x: NDArray[Any]) -> dict[str, NDArray[Any]]:
    """The known answer: each transform in complex128 NumPy from the same complex64 values."""
    wide = x.astype(np.complex128)
    return {"fft": np.fft.fft(wide), "ifft": np.fft.ifft(wide), "rfft": np.fft.rfft(wide.real)}


def rel_c(a: NDArray[Any], ref: NDArray[Any]) -> float:
    """kit.rel for complex values: max|a - ref| / max|ref|."""
    return float(np.max(np.abs(np.asarray(a, np.complex128) - ref)) / np.max(np.abs(ref)))


def run(precision: str = "auto", seed: int = 0) -> dict[str, object]:
    import jax
    import jax.numpy as jnp
    from jax import lax

    dtype = kit.native(precision)  # float32 on a TPU under x64: kit.native
    cdtype = np.complex64 if dtype == "float32" else np.complex128
    x_np = inputs(seed, max(BATCHES))
    big = max(BATCHES)

    def transforms(x: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        return jnp.fft.fft(x), jnp.fft.ifft(x), jnp.fft.rfft(jnp.real(x))

    def chunked(x: jax.Array) -> jax.Array:
        """The largest batch's fft as a loop over chunks (a loop costs 0.1 s to compile on the CPU: fft alone)."""
        out: jax.Array = lax.map(jnp.fft.fft, x.reshape(big // CHUNK, CHUNK, N))
        return out.reshape(big, N)

    def everything(batches: list[jax.Array]) -> list[tuple[jax.Array, jax.Array, jax.Array]]:
        """Every batch size in one program (compiling is most of the probe's time on the CPU: 13 ms an FFT): each
        FFT is still its own operation on its own batch shape, so its own library plan; batch 1 is the row alone."""
        return [transforms(b) for b in batches]

    with kit.x64(dtype == "float64"):
        ref = reference(x_np)
        metrics: dict[str, object] = {"precision": dtype, "n": N, "batches": ",".join(map(str, BATCHES))}
        worst: dict[str, float] = {f"rel_err_{op}": 0.0 for op in OPS}
        worst |= {"rel_diff_batched_vs_single": 0.0, "rel_diff_batched_vs_map": 0.0}
        # sliced on the host (slicing a device array compiles a program per slice), one transfer per device
        parts = [np.asarray(x_np[:n], cdtype) for n in BATCHES]
        here = jax.device_put(parts, kit.devices()[0])  # compiled for the first device (kit.runner)
        programs = kit.compile_all({"all": (everything, (here,)), "map": (chunked, (here[-1],))})
        out_dtype = ""
        for device in kit.devices():
            placed = jax.device_put(parts, device)
            every, loop = (kit.runner(f, programs[k], device) for f, k in ((everything, "all"), (chunked, "map")))
            got, mapped = jax.device_get((every(placed), loop(placed[-1])))
            alone = got[BATCHES.index(1)]
            for n, outs in zip(BATCHES, got, strict=True):
                for op, value, single in zip(OPS, outs, alone, strict=True):
                    worst[f"rel_err_{op}"] = max(worst[f"rel_err_{op}"], rel_c(value, ref[op][:n]))
                    diff = rel_c(value[:1], single.astype(np.complex128))
                    worst["rel_diff_batched_vs_single"] = max(worst["rel_diff_batched_vs_single"], diff)
            diff = rel_c(got[-1][0], mapped.astype(np.complex128))
            worst["rel_diff_batched_vs_map"] = max(worst["rel_diff_batched_vs_map"], diff)
            out_dtype = str(np.real(got[-1][0]).dtype)
    metrics |= worst | {"output_dtype": out_dtype}
    tol = kit.TOLERANCE[dtype]
    thresholds: dict[str, object] = dict.fromkeys(worst, tol) | {"output_dtype": dtype}
    good = f"{np.dtype(cdtype).name} FFTs within {tol:g} of NumPy's at batches {metrics['batches']}"
    good += "; batched, single and chunked agree"
    return kit.finish(NAME, metrics, thresholds, good)


def main(argv: list[str] | None = None) -> int:
    return kit.main(NAME, __doc__, run, argv)


if __name__ == "__main__":
    sys.exit(main())
