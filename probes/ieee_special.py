"""Probe ieee_special: IEEE 754 special values (NaN, infinities, signed zeros, subnormals) under jit against NumPy.

A compiler that assumes finite math (fast-math) turns a NaN into a number: jax-ml/jax#29537, where XLA:CPU in jax
0.6.2 made ``exp(x * nan)`` finite. Computation, jitted, on every device, on float32 arguments (so nothing is
folded away at trace time): the operands SPECIALS (NaN, +-inf, +-0, 1, -1, 2, 1000, the smallest normal and a
negative subnormal) and two ordinary values; exp, log, sqrt, tanh, negative and abs of each; add, subtract,
multiply, divide, maximum, minimum and copysign of every ordered pair; exp(x * nan) with the NaN an argument; sum
and max of the vector (which holds a NaN). And jax#29537's own repro, ``exp(x * jnp.nan)`` with the NaN a constant,
in float64.

Known answer: NumPy's float32 result of the same case on the same values. Where a subnormal is an operand or the
answer, a platform that flushes subnormals to zero by design (XLA:CPU, TPUs: both measured) gives the answer with
subnormal operands and results flushed; either answer is right. maximum and minimum of two zeros may return either
(IEEE 754-2008 leaves the sign open), and under flushing a subnormal operand counts as a zero.

Metrics: wrong_nan, wrong_inf, wrong_signed_zero, wrong_finite: how many results (over every device) are not of
the class NumPy's answer is of (NaN; an infinity of its sign; a zero of its sign; else within 1e-3: a TPU's
transcendentals are approximations, their accuracy is eager_jit's to judge), counted by that class;
wrong_subnormal: results that are neither NumPy's nor the flushed answer; wrong_cases names them all;
subnormals_flushed (reported, not a failure: flushing is a platform's documented choice);
float32_exp_nan_constant_finite: float32 ``exp(x * jnp.nan)`` with the constant NaN came out finite -- reported, not
judged: jaxlib 0.10.1 on this CPU still gives finite values there (measured; jax#29537 closed with float64 fixed),
0.4.25 too, a TPU v5e gives NaN; a rule that names the releases would make it a finding.

Thresholds: every count 0. Measured on a 2-core CPU (jaxlib 0.10.1, 20 seeds; 0.4.25) and a TPU v5e (jax 0.10.2):
every count 0; subnormals flushed on both.
"""

from __future__ import annotations

import sys
from typing import Any

import _kit as kit
import numpy as np

NAME = "ieee_special"
# Expected seconds on a 2-core CPU, cold compilation cache, one device (measured in a cold audit: 0.37 s; 0.11 s
# with the cache warm; envaudit's per-probe bound is at least twice it, and `health` runs what fits its total bound).
COST_S = 0.4
PLATFORM_COST_S = {"tpu": 1.5}  # TPU v5e, jax 0.10.2, cold, after another probe compiled (12-08): 1.48, 1.50, 1.47 s
COMPILES_FIRST = True  # run() reaches kit.compile_all before any work of its own: compiled ahead where slow
TINY = float(np.finfo(np.float32).tiny)  # the smallest normal float32
# The special operands: every binary operation runs on every ordered pair of them, every unary one on each.
SPECIALS = (float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1.0, -1.0, 2.0, 1000.0, TINY, -TINY / 8)
UNARY = ("log", "sqrt", "tanh", "negative", "abs")  # and exp (with exp(x * nan)); sin's accuracy is eager_jit's
BINARY = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "copysign")
CATEGORIES = ("nan", "inf", "signed_zero", "finite", "subnormal")


def compute(xp: Any, x: Any, nan: Any) -> list[Any]:
    """Every case, in vectors: exp of x and of x * nan (one exp: XLA:CPU compiles each transcendental's code, most of
    the probe's time), the other unary functions of x, the binary operations of every pair (x_i, x_j), and the sum
    and max of x (which holds a NaN). `xp` is NumPy or jax.numpy; `nan` an argument, not a constant (see the
    docstring for the constant). Separate outputs: concatenated, the program took 0.3 s more to compile."""
    a, b = x[:, None], x[None, :]
    parts = [xp.exp(xp.concatenate([x, x * nan]))] + [getattr(xp, f)(x) for f in UNARY]
    return parts + [getattr(xp, f)(a, b) for f in BINARY] + [xp.sum(x), xp.max(x)]


def labels(x: Any) -> list[str]:
    """What each element of `compute`'s vector is, to name a wrong one."""
    v = [repr(float(e)) for e in x]
    out = [f"exp({a})" for a in v] + [f"exp({a}*nan)" for a in v] + [f"{f}({a})" for f in UNARY for a in v]
    return out + [f"{f}({a}, {b})" for f in BINARY for a in v for b in v] + ["sum(with nan)", "max(with nan)"]


def flat(parts: list[Any]) -> Any:
    return np.concatenate([np.ravel(np.asarray(p, np.float32)) for p in parts])


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
        ieee = flat(compute(np, x_np, nan))
        ftz = flush(flat(compute(np, flush(x_np), nan)))  # the answer with subnormal inputs and outputs flushed
    names = labels(x_np)
    subnormal_case = (ieee != ftz) & ~(np.isnan(ieee) & np.isnan(ftz))
    # maximum and minimum of two zeros may return either (IEEE 754-2008's maxNum/minNum leave the sign open), and with
    # subnormal operands flushed (DAZ) a subnormal equals a zero, so either operand may come back (jaxlib 0.4.25)
    zero = flush(x_np) == 0
    pair = np.logical_and.outer(zero, zero).ravel()
    start = {f: (2 + len(UNARY)) * x_np.size + k * pair.size for k, f in enumerate(BINARY)}
    sign_free = np.zeros(ieee.size, bool)
    for f in ("maximum", "minimum"):
        sign_free[start[f] : start[f] + pair.size] = pair

    def constant(v: Any) -> Any:
        return jnp.exp(v * jnp.nan)  # the NaN a constant, as users write it (and jax#29537's repro)

    counts = dict.fromkeys(CATEGORIES, 0)
    wrong: list[str] = []
    flushed, constant_finite = False, False
    with kit.x64(False):  # the cases are float32's: float64 has the same semantics and no other code path here

        def cases(x: Any, n: Any) -> list[Any]:
            return compute(jnp, x, n)

        first = kit.devices()[0]  # compiled for it (kit.runner)
        here = jax.device_put([x_np, nan], first)
        compiled = kit.compile_all({"cases": (cases, (here[0], here[1])), "const": (constant, (here[0],))})
        with kit.x64(True):  # jax#29537's own repro is float64
            x64_here = jax.device_put(x_np[5:].astype(np.float64), first)
            constant64 = kit.compile_all({"c": (constant, (x64_here,))})["c"]
        for device in kit.devices():
            got, folded = jax.device_get(
                (
                    kit.runner(cases, compiled["cases"], device)(*jax.device_put([x_np, nan], device)),
                    kit.runner(constant, compiled["const"], device)(jax.device_put(x_np, device)),
                )
            )
            with kit.x64(True):
                wide = jax.device_put(x_np[5:].astype(np.float64), device)
                folded64 = np.asarray(kit.runner(constant, constant64, device)(wide))
            constant_finite = constant_finite or not np.all(np.isnan(folded))
            if not np.all(np.isnan(folded64)):
                counts["nan"] += 1
                wrong.append(f"exp(x*nan) float64={folded64[:2].tolist()}")
            for i, value in enumerate(flat(got)):
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
