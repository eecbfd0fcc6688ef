"""AR(K) time series, posteriordb's `arK` (Stan): y[t] ~ normal(alpha + sum_k beta[k] y[t-k], sigma).

Data (arK.json): K (int, the order, used as a shape), T (int), y (T reals). Priors as in the Stan
model: alpha, beta ~ normal(0, 10), sigma ~ half-Cauchy(0, 2.5).
"""
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def model(K, T, y):
    alpha = numpyro.sample("alpha", dist.Normal(0.0, 10.0))
    beta = numpyro.sample("beta", dist.Normal(0.0, 10.0).expand([K]).to_event(1))
    sigma = numpyro.sample("sigma", dist.HalfCauchy(2.5))
    lags = jnp.stack([y[K - k:T - k] for k in range(1, K + 1)], axis=1)  # (T - K, K): y[t-k]
    numpyro.sample("y", dist.Normal(alpha + lags @ beta, sigma), obs=y[K:])
