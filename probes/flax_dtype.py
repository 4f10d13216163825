"""Probe flax_dtype: which dtypes a flax ``nn.Dense`` really computes in, and whether its NTK is right.

Seed 000's trap: with ``jax_enable_x64`` on, flax modules still create float32 parameters (``param_dtype``
defaults to float32 in flax 0.10 and 0.12, measured), outputs follow the input dtype, and a Jacobian with respect
to the parameters has the parameters' dtype -- so an "x64" empirical NTK is silently float32.

The probe builds ``nn.Dense(FEATURES)`` twice: with flax's defaults, and with ``param_dtype`` (and ``dtype``) set
to the precision asked for; inputs (5 x 7) are drawn by NumPy from a fixed seed; the parameters' dtypes and shapes
are what flax's ``init`` gives (abstractly evaluated, ``jax.eval_shape``), their values are drawn by NumPy.

Known answers: y = x W + b, computed in float64 NumPy from the same parameter values; and, because dy_k/dW_jk =
x_j and dy_k/db_k = 1, the NTK of a dense layer is exactly K[i, i', k, k'] = (x_i . x_i' + 1) delta_kk'
(independent of W). The probe compares J J^T from ``jax.jacobian`` with that closed form.

Metrics: default_param_dtype, default_output_dtype, default_jacobian_dtype; explicit_param_dtype,
explicit_output_dtype, explicit_jacobian_dtype; rel_err_output and rel_err_ntk (explicit module, norm-wise:
max|d| / max|ref|).

The output and the NTK are computed at HIGHEST matmul precision (``jax.default_matmul_precision("float32")``), so
they are float32-exact on GPUs too, where the default would be TF32.

Thresholds: every dtype must be the precision asked for. For float64 (``--precision float64``, or "auto" with x64
on) that includes the defaults: a healthy flax fails here, by design -- the user asked for float64 and the
Jacobian is float32; the message names the fix (``param_dtype=jnp.float64``), and the explicit_* metrics show
whether the fix works. For float32 every dtype must stay float32. rel_err_* bounds: 1e-5 (float32; one dense
layer is ~1e-7 from the float64 answer) and 1e-12 (float64; ~1e-16): the same bounds as the other probes.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any

import _kit as kit
import numpy as np

NAME = "flax_dtype"
# Expected seconds on a 2-core CPU, cold compilation cache, one device (envaudit's per-probe bound is at least
# twice it, and `health` runs what fits its total bound).
COST_S = 0.5  # most of it is importing flax
REQUIRES = ("flax",)  # distributions beside jax: without them the probe is skipped, not failed
POINTS, D_IN, FEATURES = 5, 7, 3
FIX = "pass param_dtype=jnp.float64 (and dtype=jnp.float64) to every flax module"


def run(precision: str = "auto", seed: int = 0) -> dict[str, object]:
    import jax

    dtype = kit.resolve(precision)
    if importlib.util.find_spec("flax") is None:
        return kit.result(NAME, "skip", {}, {}, "flax is not installed")
    import flax.linen as nn

    x_np = np.random.default_rng(seed).standard_normal((POINTS, D_IN)).astype(dtype)
    metrics: dict[str, object] = {"precision": dtype}
    with kit.x64(dtype == "float64"):
        x = jax.device_put(x_np)

        modules = {"default": nn.Dense(FEATURES), "explicit": nn.Dense(FEATURES, dtype=dtype, param_dtype=dtype)}
        rng = np.random.default_rng(seed)

        def init(module: Any) -> Any:
            """The variables as flax's ``init`` makes them: dtypes and shapes by abstract evaluation (a jitted
            ``init`` would compile the RNG as well), values drawn by NumPy."""
            shapes = jax.eval_shape(lambda x: module.init(jax.random.PRNGKey(seed), x), x)
            return jax.tree_util.tree_map(lambda s: rng.standard_normal(s.shape).astype(s.dtype), shapes)

        # one program for both modules, as a model would run (eager operations compile one each), at HIGHEST
        # precision: the numbers judge flax's arithmetic, not the precision of the user's default (TF32 on GPUs)
        @jax.jit
        @kit.highest
        def outputs(variables: dict[str, Any], x: jax.Array) -> dict[str, tuple[Any, Any]]:
            return {
                kind: (m.apply(variables[kind], x), jax.jacobian(m.apply)(variables[kind], x)["params"])
                for kind, m in modules.items()
            }

        all_variables = {kind: init(m) for kind, m in modules.items()}
        results = outputs(all_variables, x)
        for kind, (y, jac) in results.items():
            metrics[f"{kind}_param_dtype"] = str(all_variables[kind]["params"]["kernel"].dtype)
            metrics[f"{kind}_output_dtype"] = str(y.dtype)
            metrics[f"{kind}_jacobian_dtype"] = str(jac["kernel"].dtype)
        # the numbers are judged on the explicit module: its dtype is the one asked for
        variables, (y, jac) = all_variables["explicit"], results["explicit"]
        kernel = np.asarray(variables["params"]["kernel"], np.float64)
        bias = np.asarray(variables["params"]["bias"], np.float64)
        flat = [np.asarray(jac[k], np.float64).reshape(POINTS, FEATURES, -1) for k in ("kernel", "bias")]
    x64 = x_np.astype(np.float64)
    y_ref = x64 @ kernel + bias
    j = np.concatenate(flat, axis=2)
    ntk = np.einsum("iap,jbp->ijab", j, j)
    ntk_ref = np.einsum("ij,ab->ijab", x64 @ x64.T + 1.0, np.eye(FEATURES))
    metrics["rel_err_output"] = float(np.max(np.abs(np.asarray(y, np.float64) - y_ref)) / np.max(np.abs(y_ref)))
    metrics["rel_err_ntk"] = float(np.max(np.abs(ntk - ntk_ref)) / np.max(np.abs(ntk_ref)))
    # Every dtype must be the one asked for; under float64 that includes flax's float32 default (docstring).
    thresholds: dict[str, object] = {k: dtype for k in metrics if k.endswith("_dtype")}
    tol = kit.TOLERANCE[dtype]
    thresholds.update(rel_err_output=tol, rel_err_ntk=tol)  # the other probes' bounds (docstring)
    bad = kit.judge(metrics, thresholds)
    message = "; ".join(bad) if bad else f"flax nn.Dense computes in {dtype}; output and NTK match their closed forms"
    if dtype == "float64" and metrics["default_jacobian_dtype"] != dtype:
        message = f"flax's default params are float32 under x64, so Jacobians/NTKs are float32: {FIX}; {message}"
    return kit.result(NAME, "fail" if bad else "pass", metrics, thresholds, message)


def main(argv: list[str] | None = None) -> int:
    return kit.main(NAME, __doc__, run, argv)


if __name__ == "__main__":
    sys.exit(main())
