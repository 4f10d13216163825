"""Probe ntk_nt: seed 002's computation -- neural-tangents' empirical NTK, full and through ``nt.batch`` -- on a
small flax CNN, for implementations 1, 2 and 3, against a float64 J J^T.

Seed 002 (neural-tangents issue): ``nt.batch(nt.empirical_kernel_fn(model.apply, vmap_axes=0, implementation=2,
trace_axes=()), batch_size=...)`` gave NTK Gram matrices 1e-1 apart for different batch sizes (an old CUDA); the
same computation should agree to float32 rounding whatever the batch size and implementation.

The model (smaller than the seed's LeNet so that the probe is quick): Conv(4, 3x3, SAME) - relu - avg_pool 2x2 -
Conv(8, 3x3) - relu - Dense(16) - relu - Dense(1), on 8 NHWC inputs 8 x 8 x 3 drawn by NumPy from a fixed seed;
parameters from ``init`` with a fixed key (``param_dtype`` float64 for the float64 run).

Known answer: K = J J^T with J = the Jacobian of ``model.apply`` with respect to all parameters, taken by
``jax.jacobian`` in float64 for each example alone (batch 1) on the same parameter values and contracted in
float64 NumPy: the simplest path, sharing no code with neural-tangents' implementations or batching (the ntk
probe checks JAX's float64 Jacobians against a closed form, conv_chain its convolutions against NumPy).

Two precisions. neural-tangents takes no precision argument, so every kernel is traced inside
``jax.default_matmul_precision("float32")`` (true float32 on GPUs, whose default is TF32 at compute capability >=
8.0); implementation 1's full kernel also runs at the user's default precision: rel_err_impl1_default and
effective_bits_default, reported here and judged by envaudit against the precision class of the machine.

Metrics: rel_err_impl<i> (Frobenius, vs the answer), rel_err_impl<i>_batch<b> (``nt.batch`` with batch size b),
rel_diff_impl<i>_batch<b> (batched vs full), bitwise_equal_impl<i>_batch<b> (reported only), seconds_impl<i>;
error_impl<i> when an implementation raises (its error text; that is a failure); versions.

Thresholds (measured on a 2-core CPU, LeNet-style model, 50 examples): implementations 1 and 2 are 1.0e-7 to
1.4e-7 from the float64 answer in float32, 3.4e-16 in float64; batch sizes 50 and 10 bit-identical. Bounds: 1e-5
(float32) and 1e-12 (float64), as in the other probes. A neural-tangents that is installed but does not import
(0.6.5 with jax >= 0.6: ``cannot import name 'Jaxpr' from 'jax.core'``) fails with metric import_error; one that
is not installed, or a missing flax, skips.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import sys
import time
from typing import Any

import _kit as kit
import numpy as np

NAME = "ntk_nt"
# Expected seconds on a 2-core CPU, cold compilation cache, one device (envaudit's per-probe bound is at least
# twice it, and `health` runs what fits its total bound).
COST_S = 25.0  # measured 14.6 s alone (jax 0.4.25, neural-tangents 0.6.5, cold): TensorFlow imports, 3 impls
REQUIRES = ("neural-tangents", "flax")  # distributions beside jax: without them the probe is skipped, not failed
POINTS = 8
IMPLEMENTATIONS = (1, 2, 3)
BATCH_SIZES = (4, 1)  # nt.batch batch sizes; each divides POINTS, as nt.batch requires


def _error_text(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"[:300]


def _result(status: str, metrics: dict[str, object], thresholds: dict[str, object], message: str) -> dict[str, object]:
    return kit.result(NAME, status, metrics, thresholds, message)


def run(precision: str = "auto", seed: int = 0) -> dict[str, object]:
    import jax

    dtype = kit.native(precision)  # float32 on a TPU under x64: kit.native
    for missing in ("neural_tangents", "flax"):
        if importlib.util.find_spec(missing) is None:
            return _result("skip", {}, {}, f"{missing} is not installed")
    try:
        nt_version = importlib.metadata.version("neural-tangents")
    except importlib.metadata.PackageNotFoundError:  # importable without metadata (a source checkout)
        nt_version = "unknown"
    versions = {"jax": jax.__version__, "neural_tangents": nt_version}
    try:
        import neural_tangents as nt
    except Exception as exc:  # installed but broken against this jax: a finding, not a skip
        metrics: dict[str, object] = {"import_error": _error_text(exc), **versions}
        return _result(
            "fail",
            metrics,
            {},
            f"neural-tangents {versions['neural_tangents']} does not import with "
            f"jax {versions['jax']}: {metrics['import_error']}",
        )
    import flax.linen as nn
    import jax.numpy as jnp

    pool: Any = nn.avg_pool  # untyped in some flax releases

    def cnn(param_dtype: Any) -> Any:
        # No dataclass fields: a field annotation would make dataclasses look the defining module up in
        # sys.modules, which fails when the runner loads this file by path without registering it.
        class CNN(nn.Module):
            @nn.compact
            def __call__(self, x: jax.Array) -> jax.Array:
                x = nn.relu(nn.Conv(4, (3, 3), padding="SAME", param_dtype=param_dtype)(x))
                x = pool(x, window_shape=(2, 2), strides=(2, 2))
                x = nn.relu(nn.Conv(8, (3, 3), padding="SAME", param_dtype=param_dtype)(x))
                x = nn.relu(nn.Dense(16, param_dtype=param_dtype)(x.reshape((x.shape[0], -1))))
                out: jax.Array = nn.Dense(1, param_dtype=param_dtype)(x)
                return out

        return CNN()

    metrics = {"precision": dtype, **versions}
    x_np = np.random.default_rng(seed).standard_normal((POINTS, 8, 8, 3))
    with kit.x64(dtype == "float64"):
        model = cnn(jnp.dtype(dtype))
        x = jax.device_put(np.asarray(x_np, dtype=dtype))
        params = model.init(jax.random.PRNGKey(seed), x)
    with kit.x64(True):  # the known answer: float64 J J^T from the same parameter values
        p64 = jax.tree_util.tree_map(lambda a: jnp.asarray(np.asarray(a, np.float64)), params)
        jac_fn = jax.jit(jax.jacobian(cnn(jnp.float64).apply))
        x64 = jnp.asarray(np.asarray(x, np.float64))
        jacs = [jac_fn(p64, x64[n : n + 1]) for n in range(POINTS)]  # each example alone: the simplest path
        j = np.stack([np.concatenate([np.ravel(a) for a in jax.tree_util.tree_leaves(jn)]) for jn in jacs])
    ref = j @ j.T
    bad: list[str] = []
    with kit.x64(dtype == "float64"):
        for i in IMPLEMENTATIONS:
            start = time.perf_counter()
            try:
                kernel_fn = nt.empirical_kernel_fn(model.apply, vmap_axes=0, implementation=i, trace_axes=())
                if i == 1:  # the user's default precision, once
                    default = np.asarray(kernel_fn(x, None, "ntk", params)).reshape(POINTS, POINTS)
                    metrics["rel_err_impl1_default"] = err = kit.frob(default, ref)
                    metrics["effective_bits_default"] = kit.bits(err, dtype)
                full = np.asarray(kit.highest(kernel_fn)(x, None, "ntk", params)).reshape(POINTS, POINTS)
                metrics[f"rel_err_impl{i}"] = kit.frob(full, ref)
                for b in BATCH_SIZES:
                    # device_count=0: no pmap, one device. With all devices (-1) nt.batch requires their number to
                    # divide the batch, so a healthy node with 3, 5, 6 or 7 devices raised here.
                    batched_fn = nt.batch(kernel_fn, batch_size=b, device_count=0, store_on_device=False)
                    batched_fn = kit.highest(batched_fn)  # traced when called: at HIGHEST
                    k = np.asarray(batched_fn(x, None, "ntk", params)).reshape(POINTS, POINTS)
                    metrics[f"rel_err_impl{i}_batch{b}"] = kit.frob(k, ref)
                    metrics[f"rel_diff_impl{i}_batch{b}"] = kit.frob(k, full.astype(np.float64))
                    metrics[f"bitwise_equal_impl{i}_batch{b}"] = bool(np.array_equal(k, full))
                metrics[f"output_dtype_impl{i}"] = str(full.dtype)
            except Exception as exc:  # an implementation that raises is a wrong answer; say which and why
                metrics[f"error_impl{i}"] = _error_text(exc)
                bad.append(f"implementation {i} raised {metrics[f'error_impl{i}']}")
            metrics[f"seconds_impl{i}"] = round(time.perf_counter() - start, 3)
    tol = kit.TOLERANCE[dtype]
    thresholds: dict[str, object] = {
        k: tol for k in metrics if k.startswith("rel_") and not k.endswith("_default")
    }  # one Frobenius bound per dtype for every error and difference at HIGHEST (docstring)
    thresholds.update({k: dtype for k in metrics if k.startswith("output_dtype")})  # float64 must stay float64
    bad += kit.judge(metrics, thresholds)
    message = "; ".join(bad) if bad else f"implementations {IMPLEMENTATIONS} agree with the float64 J J^T"
    return _result("fail" if bad else "pass", metrics, thresholds, message)


def main(argv: list[str] | None = None) -> int:
    return kit.main(NAME, __doc__, run, argv)


if __name__ == "__main__":
    sys.exit(main())
