"""neural-tangents: a stax Dense/Relu network's empirical NTK and its infinite-width kernel on 2x3 inputs, as
neural-tangents' README shows it (https://github.com/google/neural-tangents#5-minute-intro):
`init_fn, apply_fn, kernel_fn = stax.serial(stax.Dense(...), stax.Relu(), stax.Dense(1))`,
`kernel_fn(x1, x2, 'ntk')`, `nt.empirical_ntk_fn(apply_fn)(x1, x2, params)`.

Measured: 4.5 s after the import, compiling included (0.16 s called again) (neural-tangents 0.6.5, jax 0.4.30,
a 2-core CPU; its import fails with jax 0.10.1).
"""

from __future__ import annotations

DISTRIBUTION = "neural-tangents"
CALL = "neural_tangents.empirical_ntk_fn"


def run() -> None:
    import jax
    import jax.numpy as jnp
    import neural_tangents as nt
    from neural_tangents import stax

    init_fn, apply_fn, kernel_fn = stax.serial(stax.Dense(8), stax.Relu(), stax.Dense(1))
    x = jax.random.normal(jax.random.PRNGKey(0), (2, 3))
    _, params = init_fn(jax.random.PRNGKey(1), x.shape)
    empirical = nt.empirical_ntk_fn(apply_fn)(x, x, params)
    exact = kernel_fn(x, x, "ntk")
    if empirical.shape != (2, 2) or exact.shape != (2, 2) or not bool(jnp.all(jnp.isfinite(exact))):
        raise AssertionError(f"the NTK is {empirical}, its limit {exact}")
