"""flax: a linen Dense model's init and apply, and one gradient step through it, as flax's README shows it
(https://github.com/google/flax#what-does-flax-look-like): `model = MLP(...)`, `params = model.init(key, x)`,
`y = model.apply(params, x)`, with `jax.value_and_grad` of a loss over `model.apply`, each under `jax.jit` as a
train step is (one compilation each, not one per operation). Every flax release has linen
(0.12 too); a release without it would fail here, not pass.

Measured: 2.6 s after the import, compiling included (2.0 s called again) (flax 0.12.8, jax 0.10.1, a 2-core CPU).
"""

from __future__ import annotations

from typing import Any

DISTRIBUTION = "flax"
CALL = "flax.linen.Module.init/apply"


def run() -> None:
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x: jax.Array) -> jax.Array:
            return nn.Dense(2)(nn.relu(nn.Dense(4)(x)))

    model: Any = MLP()
    x = jnp.ones((2, 3))
    params = jax.jit(model.init)(jax.random.PRNGKey(0), x)
    loss, grads = jax.jit(jax.value_and_grad(lambda p: jnp.mean(model.apply(p, x) ** 2)))(params)
    leaves = jax.tree_util.tree_leaves(grads)
    if jax.eval_shape(model.apply, params, x).shape != (2, 2) or not bool(jnp.isfinite(loss)) or not leaves:
        raise AssertionError(f"flax gave loss {loss} and {len(leaves)} gradients")
