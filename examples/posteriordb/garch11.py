"""GARCH(1,1) volatility, posteriordb's `garch11` (Stan):
sigma[1] = sigma1, sigma[t]^2 = alpha0 + alpha1 (y[t-1] - mu)^2 + beta1 sigma[t-1]^2, y ~ normal(mu, sigma).

Data (garch11.json): T (int), y (T reals), sigma1 (a real scalar). As in the Stan model the
priors are flat on the constraints: mu real, alpha0 > 0, 0 < alpha1 < 1, 0 < beta1 < 1 - alpha1
(beta1 = (1 - alpha1) u with u uniform on (0, 1); the factor adds the Jacobian of that map, so the
density on (mu, alpha0, alpha1, beta1) is the Stan model's).
"""
import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints


def model(T, y, sigma1):
    mu = numpyro.sample("mu", dist.ImproperUniform(constraints.real, (), ()))
    alpha0 = numpyro.sample("alpha0", dist.ImproperUniform(constraints.positive, (), ()))
    alpha1 = numpyro.sample("alpha1", dist.Uniform(0.0, 1.0))
    u = numpyro.sample("beta1_unit", dist.Uniform(0.0, 1.0))
    beta1 = numpyro.deterministic("beta1", (1.0 - alpha1) * u)
    numpyro.factor("beta1_bound", jnp.log1p(-alpha1))

    def step(var_prev, y_prev):
        var = alpha0 + alpha1 * (y_prev - mu) ** 2 + beta1 * var_prev
        return var, var

    _, var = jax.lax.scan(step, jnp.asarray(sigma1, dtype=y.dtype) ** 2, y[:T - 1])
    sigma = jnp.concatenate([jnp.reshape(sigma1, (1,)).astype(y.dtype), jnp.sqrt(var)])
    numpyro.sample("y", dist.Normal(mu, sigma), obs=y)
