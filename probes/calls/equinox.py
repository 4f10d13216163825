"""equinox: a small eqx.nn.MLP called under eqx.filter_jit, as equinox's README shows it
(https://github.com/patrick-kidger/equinox#quick-example): a model built from `eqx.nn` layers, and
`@eqx.filter_jit` over a function of it.

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
