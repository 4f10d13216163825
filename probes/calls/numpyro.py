"""numpyro: two NUTS warmup steps and two samples of a one-parameter model, as numpyro's README shows it
(https://github.com/pyro-ppl/numpyro#a-simple-example---8-schools):
`mcmc = MCMC(NUTS(model), num_warmup=..., num_samples=...)`, `mcmc.run(rng_key, ...)`, `mcmc.get_samples()`.

Measured: 8.0 to 16.6 s after the import, compiling included (2.9 to 7.9 s called again) (numpyro 0.22.0, jax
0.10.1, a 2-core CPU shared with other work): compiling the sampler dominates.
"""

from __future__ import annotations

DISTRIBUTION = "numpyro"
CALL = "numpyro.infer.MCMC(NUTS(model)).run"


def run() -> None:
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import MCMC, NUTS

    def model(y: jax.Array) -> None:
        mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
        numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)

    mcmc = MCMC(NUTS(model), num_warmup=2, num_samples=2, num_chains=1, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(0), jnp.asarray([0.1, -0.2, 0.3]))
    mu = mcmc.get_samples()["mu"]
    if mu.shape != (2,) or not bool(jnp.all(jnp.isfinite(mu))):
        raise AssertionError(f"NUTS gave {mu}")
