"""jaxopt: OptaxSolver's run for three iterations of a quadratic, as jaxopt's documentation shows it
(https://jaxopt.github.io/stable/stochastic.html#optax-solvers): `solver = OptaxSolver(opt=optax.adam(1e-3),
fun=fun)`, `params, state = solver.run(init_params)`.

Measured: 1.7 s after the import, compiling included (0.32 s called again) (jaxopt 0.8.5, jax 0.10.1, a 2-core CPU).
"""

from __future__ import annotations

DISTRIBUTION = "jaxopt"
CALL = "jaxopt.OptaxSolver.run"


def run() -> None:
    import jax
    import jax.numpy as jnp
    import jaxopt
    import optax

    def fun(w: jax.Array) -> jax.Array:
        return jnp.sum((w - 1.0) ** 2)

    solver = jaxopt.OptaxSolver(opt=optax.sgd(1e-1), fun=fun, maxiter=3)
    w, _ = solver.run(jnp.zeros(3))
    if w.shape != (3,) or not bool(jnp.all((w > 0.0) & (w < 1.0))):  # three steps towards 1
        raise AssertionError(f"OptaxSolver gave {w}")
