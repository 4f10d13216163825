"""Probe ieee_special: IEEE 754 special values under jit against NumPy: NaN and infinity propagation, signed zeros,
subnormals.

A compiler that assumes finite math (fast-math) turns a NaN into a number: jax-ml/jax#29537, where XLA:CPU in jax
0.6.2 made ``exp(x * nan)`` finite. Computation, jitted, on every device, each case a function of float32 arguments
(so nothing is folded away at trace time) and, for NaN through exp, of a closed-over constant as users write it:

- nan: exp(x * nan), nan + 1, nan * 0, sqrt(-1), log(-1), 0 / 0, inf - inf, inf * 0, sum and max of a vector
  with one NaN, maximum(nan, 1) (jnp's maximum propagates NaN, as NumPy's does);
- inf: 1 / 0, -1 / 0, exp(1000), log(0), exp(-inf), tanh(inf), inf + 1, -inf * 2;
- signed zero: -0.0 * 1, -0.0 + -0.0, 1 / -0.0 (-inf), sqrt(-0.0), -(0.0), 0.0 * -1, copysign(1, -0.0);
- subnormal: the smallest normal float32 halved, and a subnormal times 1.5: IEEE gives subnormals; a platform that
  flushes them to zero by design (XLA:CPU measured here, TPUs) gives 0.

Known answer: NumPy's float32 result of the same case on the same values.

Metrics: wrong_nan, wrong_inf, wrong_signed_zero: how many results (over every device) are not of the class NumPy
gives (NaN; an infinity of its sign; a zero of its sign; else a number within 1e-6 of NumPy's): each must be 0;
wrong_cases names them; subnormals_flushed (true where subnormal results came out zero: reported, not a failure,
as flushing is a platform's documented choice) and wrong_subnormal (results that are neither NumPy's subnormal nor
a flushed zero: must be 0).

Thresholds: exact. Measured on a 2-core CPU (jax 0.10.x) and on a TPU v5e: every count 0.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import _kit as kit
import numpy as np

NAME = "ieee_special"
# Expected seconds on a 2-core CPU, cold compilation cache, one device (three small programs compiled at once;
# measured 0.1-0.2 s after jax's start; envaudit's per-probe bound is at least twice it).
COST_S = 0.2
TINY = float(np.finfo(np.float32).tiny)  # the smallest normal float32
# The special operands: every binary operation runs on every ordered pair of them, every unary one on each.
SPECIALS = (float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1.0, -1.0, 2.0, 1000.0, TINY, -TINY / 8)
UNARY = ("exp", "log", "sqrt", "tanh", "sin", "negative", "abs")
BINARY = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "copysign")
CATEGORIES = ("nan", "inf", "signed_zero", "finite", "subnormal")


def compute(xp: Any, x: Any, nan: Any) -> Any:
    """Every case as one float32 vector: unary functions of x, binary operations of every pair (x_i, x_j), exp(x *
    nan), and the sum and max of x (which holds a NaN). `xp` is NumPy or jax.numpy; `nan` an argument, not a
    constant (see the docstring for the constant)."""
    a, b = x[:, None], x[None, :]
    parts = [getattr(xp, f)(x) for f in UNARY] + [xp.ravel(getattr(xp, f)(a, b)) for f in BINARY]
    parts += [xp.exp(x * nan), xp.reshape(xp.sum(x), (1,)), xp.reshape(xp.max(x), (1,))]
    return xp.concatenate(parts)


def labels(x: Any) -> list[str]:
    """What each element of `compute`'s vector is, to name a wrong one."""
    v = [repr(float(e)) for e in x]
    out = [f"{f}({a})" for f in UNARY for a in v] + [f"{f}({a}, {b})" for f in BINARY for a in v for b in v]
    return out + [f"exp({a}*nan)" for a in v] + ["sum(with nan)", "max(with nan)"]


def flush(v: Any) -> Any:
    """Subnormals replaced by zeros of their sign: what a flush-to-zero platform holds."""
    v = np.array(v, np.float32)
    small = (v != 0) & (np.abs(v) < TINY)
    v[small] = np.copysign(np.float32(0), v[small])
    return v


def category(ref: float) -> str:
    if np.isnan(ref):
        return "nan"
    if np.isinf(ref):
        return "inf"
    return "signed_zero" if ref == 0 else "finite"


def same(a: float, b: float) -> bool:
    """Of the IEEE class `b` is of: NaN, an infinity of its sign, a zero of its sign, else within 1e-3 (a TPU's
    transcendentals are approximations: the finite values are a sanity check, not an accuracy test)."""
    if np.isnan(a) or np.isnan(b):
        return bool(np.isnan(a) and np.isnan(b))
    if np.isinf(a) or np.isinf(b) or a == 0 or b == 0:
        return bool(a == b and np.signbit(a) == np.signbit(b))
    return bool(abs(a - b) <= 1e-3 * abs(b))


def run(precision: str = "auto", seed: int = 0) -> dict[str, object]:
    import jax
    import jax.numpy as jnp

    dtype = kit.resolve(precision)
    rng = np.random.default_rng(seed)
    x_np = np.array([*SPECIALS, *rng.uniform(-2.0, 2.0, 2)], np.float32)  # and two ordinary values
    nan = np.float32(np.nan)
    with np.errstate(all="ignore"):
        ieee = compute(np, x_np, nan)
        ftz = flush(compute(np, flush(x_np), nan))  # the answer with subnormal inputs and outputs flushed
    names = labels(x_np)
    subnormal_case = (ieee != ftz) & ~(np.isnan(ieee) & np.isnan(ftz))
    # maximum and minimum of two zeros may return either (IEEE 754-2008's maxNum/minNum leave the sign open), and with
    # subnormal operands flushed (DAZ) a subnormal equals a zero, so either operand may come back (jaxlib 0.4.25)
    zero = flush(x_np) == 0
    pair = np.logical_and.outer(zero, zero).ravel()
    start = {f: len(UNARY) * x_np.size + k * pair.size for k, f in enumerate(BINARY)}
    sign_free = np.zeros(ieee.size, bool)
    for f in ("maximum", "minimum"):
        sign_free[start[f] : start[f] + pair.size] = pair

    def constant(v: Any) -> Any:
        return jnp.exp(v * jnp.nan)  # the NaN a constant, as users write it (and jax#29537's repro)

    counts = dict.fromkeys(CATEGORIES, 0)
    wrong: list[str] = []
    flushed, constant_finite = False, False
    with kit.x64(False):  # the cases are float32's: float64 has the same semantics and no other code path here
        compiled = kit.compile_all({"cases": (lambda x, n: compute(jnp, x, n), (x_np, nan)), "const": (constant, (x_np,))})
        with kit.x64(True):  # jax#29537's own repro is float64
            constant64 = kit.compile_all({"c": (constant, (x_np[5:].astype(np.float64),))})["c"]
        for device in kit.devices():
            got, folded = jax.device_get(
                (compiled["cases"](*jax.device_put([x_np, nan], device)), compiled["const"](jax.device_put(x_np, device)))
            )
            with kit.x64(True):
                folded64 = np.asarray(constant64(jax.device_put(x_np[5:].astype(np.float64), device)))
            constant_finite = constant_finite or not np.all(np.isnan(folded))
            if not np.all(np.isnan(folded64)):
                counts["nan"] += 1
                wrong.append(f"exp(x*nan) float64={folded64[:2].tolist()}")
            for i, value in enumerate(np.asarray(got, np.float32)):
                if same(float(value), float(ieee[i])) or (sign_free[i] and flush([value])[0] == 0):
                    continue
                if subnormal_case[i]:
                    if same(float(value), float(ftz[i])):
                        flushed = True  # a documented platform choice: reported
                        continue
                    counts["subnormal"] += 1
                else:
                    counts[category(float(ieee[i]))] += 1
                wrong.append(f"{names[i]}={float(value)!r} (numpy {float(ieee[i])!r})")
    metrics: dict[str, object] = {"precision": dtype}
    metrics |= {f"wrong_{c}": n for c, n in counts.items()}
    metrics |= {"wrong_cases": ", ".join(sorted(set(wrong))) or "none", "subnormals_flushed": flushed}
    metrics["float32_exp_nan_constant_finite"] = constant_finite  # reported, not judged: docstring
    thresholds: dict[str, object] = {f"wrong_{c}": 0 for c in CATEGORIES}
    good = "NaN, infinities and signed zeros as IEEE 754 and NumPy give them" + (
        "; subnormals flushed to zero" if flushed else "; subnormals kept"
    )
    return kit.finish(NAME, metrics, thresholds, good)


def main(argv: list[str] | None = None) -> int:
    return kit.main(NAME, __doc__, run, argv)


if __name__ == "__main__":
    sys.exit(main())
