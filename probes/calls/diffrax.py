"""diffrax: dy/dt = -y solved with Tsit5, as diffrax's README shows it (https://github.com/patrick-kidger/diffrax#quick-example):
`term = ODETerm(f)`, `solver = Tsit5()`, `sol = diffeqsolve(term, solver, t0=0, t1=1, dt0=0.1, y0=1)`; then with
Kvaerno5 and a PIDController on a vector state, what diffrax's "How to choose a solver" tells users to take for stiff
problems (https://docs.kidger.site/diffrax/usage/how-to-choose-a-solver/): an implicit solver, whose steps solve linear
systems with lineax. That path is where lineax 0.0.8 fails under jax 0.8.2 (its LU state's Python bool `transpose`
traced: TracerBoolConversionError; lineax#187, fixed in lineax 0.1.0), while the explicit solve and lineax's own
`linear_solve` work (measured here with diffrax 0.7.0, lineax 0.0.8, jax 0.8.2); and the gradient of the Tsit5 solve
with respect to its start (backpropagation through the solver, a feature diffrax's README lists).

Measured: 1.3 s after the import for Tsit5, compiling included (0.67 s called again) (diffrax 0.7.2, jax 0.10.1, a
2-core CPU); Kvaerno5 about 2.5 s more (diffrax 0.7.2, lineax 0.1.1).
"""

from __future__ import annotations

DISTRIBUTION = "diffrax"
CALL = "diffrax.diffeqsolve"


def run() -> None:
    import math

    import diffrax
    import jax
    import jax.numpy as jnp

    term = diffrax.ODETerm(lambda t, y, args: -y)
    explicit = diffrax.diffeqsolve(term, diffrax.Tsit5(), t0=0.0, t1=1.0, dt0=0.1, y0=jnp.asarray(1.0))
    controller = diffrax.PIDController(rtol=1e-5, atol=1e-5)
    start = jnp.asarray([1.0, 2.0])  # a vector state: a scalar one does not reach lineax's failing path
    implicit = diffrax.diffeqsolve(
        term, diffrax.Kvaerno5(), t0=0.0, t1=1.0, dt0=0.1, y0=start, stepsize_controller=controller
    )
    # backpropagation through the solve, what diffrax's README lists among its features ("multiple adjoint methods
    # for backpropagation"; the default, RecursiveCheckpointAdjoint, runs equinox's checkpointed loop, which equinox
    # 0.11.7 broke under jax 0.4.34's tangent checks: diffrax#508, #514): d y(1) / d y0 = e^-1
    slope = jax.grad(lambda y0: diffrax.diffeqsolve(term, diffrax.Tsit5(), t0=0.0, t1=1.0, dt0=0.1, y0=y0).ys[-1])
    for solver, found in (
        ("Tsit5", float(explicit.ys[-1])),
        ("Kvaerno5", float(implicit.ys[-1][1]) / 2),
        ("Tsit5's gradient", float(slope(jnp.asarray(1.0)))),
    ):
        if abs(found - math.exp(-1.0)) > 1e-3:  # loosely: a smoke call, not a known answer
            raise AssertionError(f"{solver}: y(1) = {found}, not about e^-1")
