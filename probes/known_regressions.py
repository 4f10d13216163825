"""Probe known_regressions: upstream wrong-numbers bugs of specific jaxlib releases, each as its own small repro.

A version rule says "this release is known to be affected"; this probe says whether it is, on this machine, and
whether a workaround flag set in XLA_FLAGS works. Each case is the upstream reproducer, cut to what still
triggers the bug, with an answer numpy knows exactly. A case runs on the jaxlib releases from the first one it was
measured wrong on up to the release that fixed it (to the newest, when no fix is known): elsewhere it would cost
compilation time to learn nothing; ENVAUDIT_ALL_REGRESSIONS=1 runs every case anyway (the tests do, and a bug
report can). With no case to run, the probe is a skip that says so. The cases share one budget (COST_S), so
`health` includes or skips them together.

Cases:
- jax39103 (https://github.com/jax-ml/jax/issues/39103): on the CPU, jit(vmap(lambda row: sum((I @ row) ** 2)))
  over rows (k, 0, 0) must give k**2 for every k. Measured on this 2-core x86-64 CPU: jaxlib 0.10.2 returns
  1065369600 instead of 32768**2 = 1073741824 for the last of 32769 float32 rows (the issue: 16 rows off for
  16385 float64 rows); jaxlib 0.10.1 is exact; with XLA_FLAGS=--xla_cpu_experimental_ynn_fusion_type= (YNN
  fusion off) 0.10.2 is exact too. Sizes are the issue's: float32 32769 rows, float64 16385 (a tail effect:
  smaller batches are right). Whether 0.11.x is affected was not measured here (no wheel for this Python).
- xla13054 (https://github.com/openxla/xla/issues/13054, fixed by openxla/xla#13301, in jaxlib 0.4.29: "Fixed a
  bug where XLA:CPU miscompiled certain matmul fusions"): the jit gradient of mean(vmap(f)) with
  f(y) = (y - x) . w + ((y - x) @ 0) . (y - x) must be -w. The issue's program uses 10**6 rows of 3 (12 MB); the
  oneDNN rewrite behind it needs a dot of at least 2**24 flops, which 2048 rows of 64 reach in 0.5 MB. Measured
  here in float32: jaxlib 0.4.24 to 0.4.28 give every entry -1, not -w (rel_err 0.98-0.9995), 0.4.23 and 0.4.29
  give -w, and XLA_FLAGS=--xla_disable_hlo_passes=onednn-matmul-rewriter gives -w on 0.4.26 to 0.4.28. oneDNN
  rewrites float32 dots only, so the float64 run is a check of the case, not of the bug.

- jax29537 (https://github.com/jax-ml/jax/issues/29537, "[regression] JAX 0.6.2 breaks `xp.exp(x * xp.nan)` inside
  jax.jit"): on the CPU, float64, jit(lambda x: exp(x * jnp.nan)) must be NaN. Measured here: jaxlib 0.6.1 NaN,
  0.6.2 4.7e-322 (a number), 0.7.0, 0.7.1 and 0.7.2 NaN. Run in float64 whatever the precision asked; its metric
  is the share of results that are not NaN.

Known answer: each case's exact result, computed by numpy in float64 (integers below 2**53). Threshold: the kit's
norm-wise tolerance for the dtype asked for, on rel_err_<case> = max|got - want| / max|want|: a healthy float32 run
only rounds k**2 to 24 bits (2.9e-8 measured), float64 is exact; the bug is off by 2.0e-3 to 7.8e-3, depending on
the CPU (7.8e-3 in either dtype on a 2-core AMD EPYC; 2.0e-3 on a 13-core TPU host, as in the issue's report).

Metrics: rel_err_<case> (no matmul precision is involved: the identity's products are exact at any precision);
output_dtype. Each case runs on the CPU, whatever the default device (these are XLA:CPU bugs; an accelerator's
result is not their question); without a CPU backend (JAX_PLATFORMS=cuda) the probe is a skip that says so.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import _kit as kit
import numpy as np
from numpy.typing import NDArray

NAME = "known_regressions"
# Expected seconds on a 2-core CPU, cold compilation cache, where a case applies (measured: jax39103 32-65 ms,
# xla13054 77-194 ms); where none applies the probe returns at once.
COST_S = 0.3
PLATFORM_COST_S = {"tpu": 0.2}  # TPU v5e, jax 0.10.2, cold, after another probe compiled (12-08): 0.08, 0.10 s
ROWS = {"float32": 32_769, "float64": 16_385}  # the sizes of jax#39103's report


def jax39103(dtype: str) -> tuple[Callable[..., Any], tuple[Any, ...], NDArray[Any]]:
    """vmapped identity matvec, squared and summed: row (k, 0, 0) gives k**2."""
    import jax
    import jax.numpy as jnp

    n = ROWS[dtype]
    k = np.arange(n, dtype=dtype)
    rows = np.stack((k, np.zeros_like(k), np.zeros_like(k)), axis=1)
    eye = np.eye(3, dtype=dtype)

    def f(x: Any, m: Any) -> Any:
        return jax.vmap(lambda row: jnp.sum((m @ row) ** 2))(x)

    return jax.jit(f), (rows, eye), np.arange(n, dtype=np.float64) ** 2


def xla13054(dtype: str) -> tuple[Callable[..., Any], tuple[Any, ...], NDArray[Any]]:
    """The gradient of a mean over a vmapped dot that a zero quadratic term must not change: -w. The rows and w are
    constants of the program, as in the issue: passed as arguments, jaxlib 0.4.24 and 0.4.25 fuse them otherwise
    and compute right."""
    import jax
    import jax.numpy as jnp

    dim, n = 64, 2048
    w = jnp.arange(1, dim + 1, dtype=dtype)
    ys = jnp.ones((n, dim), dtype)

    def f(x: Any, y: Any) -> Any:
        diff = y - x
        return jnp.dot(diff, w) + jnp.dot(jnp.dot(diff, jnp.zeros((dim, dim), dtype)), diff)

    grad = jax.grad(lambda x: jnp.mean(jax.vmap(lambda y: f(x, y))(ys)))
    return jax.jit(grad), (np.ones(dim, dtype),), -np.arange(1, dim + 1, dtype=np.float64)


def jax29537(dtype: str) -> tuple[Callable[..., Any], tuple[Any, ...], NDArray[Any]]:
    """exp(x * nan) with the NaN a constant, jitted, in float64 (the issue's own program): NaN, not a number. A
    float64 bug (`FLOAT64_ONLY`): the float32 answer is the ieee_special probe's question."""
    import jax
    import jax.numpy as jnp

    del dtype
    x = np.asarray([0.123, 1.0, -2.5], dtype=np.float64)
    return jax.jit(lambda v: jnp.exp(v * jnp.nan)), (x,), np.full(x.shape, np.nan)


CASES = {"jax39103": jax39103, "xla13054": xla13054, "jax29537": jax29537}
# Where each case runs: from the first jaxlib measured wrong, to the first fixed one (None: no fix known).
RELEASES: dict[str, tuple[tuple[int, ...], tuple[int, ...] | None]] = {
    "jax39103": ((0, 10, 2), None),
    "xla13054": ((0, 4, 24), (0, 4, 29)),
    "jax29537": ((0, 6, 2), (0, 7, 0)),
}
FLOAT64_ONLY = frozenset({"jax29537"})  # run in float64 whatever the precision asked: the bug is float64's


def numbers(version: str) -> tuple[int, ...]:
    """A version's leading dotted numbers, as jax compares them: 0.4.25+cuda12 -> (0, 4, 25); 0.5.0rc1 -> (0, 5, 0)."""
    found: list[int] = []
    for part in version.split("+")[0].split("."):
        digits = part[: len(part) - len(part.lstrip("0123456789"))]
        if not digits:
            break
        found.append(int(digits))
        if digits != part:
            break
    return tuple(found)


def applicable(jaxlib: str) -> list[str]:
    """The cases to run with this jaxlib (every case when ENVAUDIT_ALL_REGRESSIONS is 1)."""
    if os.environ.get("ENVAUDIT_ALL_REGRESSIONS") == "1":
        return list(CASES)
    here = numbers(jaxlib)
    return [name for name, (first, fixed) in RELEASES.items() if first <= here and (fixed is None or here < fixed)]


def run(precision: str = "auto", seed: int = 0) -> dict[str, object]:
    import jax

    del seed  # the inputs are the reports' own, not random
    from importlib.metadata import version

    dtype = kit.resolve(precision)
    jaxlib = version("jaxlib")
    cases = applicable(jaxlib)
    if not cases:
        return kit.result(NAME, "skip", {}, {}, f"no known regression applies to jaxlib {jaxlib}")
    try:
        cpu = jax.devices("cpu")[0]
    except RuntimeError as exc:  # JAX_PLATFORMS without cpu: jax has no CPU backend to ask
        return kit.result(NAME, "skip", {}, {}, f"no CPU backend in this process ({exc}): these are XLA:CPU bugs")
    metrics: dict[str, object] = {}
    for name in cases:
        asked = "float64" if name in FLOAT64_ONLY else dtype
        with kit.x64(asked == "float64"), jax.default_device(cpu):
            fn, args, want = CASES[name](asked)
            got = np.asarray(fn(*(jax.device_put(a, cpu) for a in args)))
        if np.isnan(want).any():  # a NaN to keep: the share of the results that are not NaN where they must be
            metrics[f"rel_err_{name}"] = float(np.mean(np.isnan(got) != np.isnan(want)))
        else:
            metrics[f"rel_err_{name}"] = kit.rel(got, want)
        if name not in FLOAT64_ONLY:
            metrics["output_dtype"] = str(got.dtype)
    thresholds: dict[str, object] = {k: kit.TOLERANCE[dtype] for k in metrics if k.startswith("rel_err_")}
    if "output_dtype" in metrics:
        thresholds["output_dtype"] = dtype
    return kit.finish(NAME, metrics, thresholds, f"known regression(s) {', '.join(cases)} absent in {dtype}")


def main(argv: list[str] | None = None) -> int:
    return kit.main(NAME, __doc__, run, argv)


if __name__ == "__main__":
    sys.exit(main())
