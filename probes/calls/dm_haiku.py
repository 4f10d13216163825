"""dm-haiku: an MLP under hk.transform, initialised and applied, as haiku's README shows it
(https://github.com/google-deepmind/dm-haiku#quickstart): `forward = hk.transform(forward_fn)`,
`params = forward.init(rng, x)`, `forward.apply(params, rng, x)`.

Measured: 2.0 s after the import, compiling included (0.01 s called again) (dm-haiku 0.0.17, jax 0.10.1, a 2-core CPU).
"""

from __future__ import annotations

DISTRIBUTION = "dm-haiku"
CALL = "haiku.transform(...).init/apply"


def run() -> None:
    import haiku as hk
    import jax
    import jax.numpy as jnp

    def forward(x: jax.Array) -> jax.Array:
        return hk.nets.MLP([4, 2])(x)  # type: ignore[no-any-return]

    model = hk.transform(forward)
    key = jax.random.PRNGKey(0)
    x = jnp.ones((2, 3))
    y = model.apply(model.init(key, x), key, x)
    if y.shape != (2, 2) or not bool(jnp.all(jnp.isfinite(y))):
        raise AssertionError(f"the MLP gave {y}")
