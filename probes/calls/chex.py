"""chex: chex.assert_shape on an array, as chex's README shows it (https://github.com/google-deepmind/chex#assertions):
`chex.assert_shape(x, (2, 3))`, and that a wrong shape raises.

Measured: 0.45 s after the import, compiling included (0.001 s called again) (chex 0.1.92, jax 0.10.1, a 2-core CPU).
"""

from __future__ import annotations

DISTRIBUTION = "chex"
CALL = "chex.assert_shape"


def run() -> None:
    import chex
    import jax.numpy as jnp

    x = jnp.zeros((2, 3))
    chex.assert_shape(x, (2, 3))
    try:
        chex.assert_shape(x, (3, 2))
    except AssertionError:
        return
    raise AssertionError("chex.assert_shape accepted a wrong shape")
