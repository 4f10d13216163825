"""equinox: a small eqx.nn.MLP called under eqx.filter_jit, as equinox's README shows it
(https://github.com/patrick-kidger/equinox#quick-example): a model built from `eqx.nn` layers, and
`@eqx.filter_jit` over a function of it; then the README's `loss_fn`, a model's gradient under `jax.jit(jax.grad(...))`.

Measured: 1.8 s after the import, compiling included (0.1 s called again) (equinox 0.13.8, jax 0.10.1, a 2-core CPU).
"""

from __future__ import annotations

DISTRIBUTION = "equinox"
CALL = "equinox.filter_jit"


def run() -> None:
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    model = eqx.nn.MLP(in_size=3, out_size=2, width_size=4, depth=1, key=jax.random.PRNGKey(0))
    y = eqx.filter_jit(lambda m, x: m(x))(model, jnp.ones(3))
    if y.shape != (2,) or not bool(jnp.all(jnp.isfinite(y))):
        raise AssertionError(f"the MLP gave {y}")

    # the README's loss: a model's gradient under jax.jit(jax.grad(...)), over a vmapped batch (eqx.nn.Linear: its
    # leaves are arrays, as the README's own Linear's are; the MLP's activation is not, for jax.jit)
    @jax.jit
    @jax.grad
    def loss_fn(model: eqx.nn.Linear, x: jax.Array, y: jax.Array) -> jax.Array:
        return jnp.mean((y - jax.vmap(model)(x)) ** 2)

    linear = eqx.nn.Linear(3, 2, key=jax.random.PRNGKey(1))
    grads = loss_fn(linear, jnp.ones((8, 3)), jnp.zeros((8, 2)))
    if grads.weight.shape != (2, 3) or not bool(jnp.all(jnp.isfinite(grads.weight))):
        raise AssertionError(f"the README's gradient of a Linear gave {grads.weight}")
