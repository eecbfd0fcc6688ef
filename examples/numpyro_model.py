"""Fit a NumPyro model with inertia's accelerated Gaussian VI and read the result with ArviZ."""
import jax
import numpy as np
import numpyro
import numpyro.distributions as dist

import arviz as az
from inertia import vi
from inertia.arviz_io import to_arviz_draws
from inertia.targets.numpyro import from_numpyro


def model(x, y=None):
    w = numpyro.sample("w", dist.Normal(0.0, 1.0).expand([x.shape[1]]).to_event(1))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    numpyro.sample("y", dist.Normal(x @ w, sigma), obs=y)


rng = np.random.default_rng(0)
x = rng.normal(size=(100, 2))
y = x @ np.array([1.0, -0.5]) + 0.3 * rng.normal(size=100)

# V(u) in NumPyro's unconstrained space (here u = (log sigma, w)); alpha/beta bound its curvature
target = from_numpyro(model, x, y, alpha=1.0, beta=2000.0)
fit = vi.fit(target, "paired-proj", batch_size=8, num_steps=1200, seed=0, checkpoint_every=1200)

draws = fit.sample(jax.random.PRNGKey(1), 1000)[None]      # (chain, draw, d), unconstrained
sites = target.info["constrain"](draws)                     # {"sigma": (1, 1000), "w": (1, 1000, 2)}
print(az.summary(to_arviz_draws(sites), kind="stats"))
assert abs(float(np.mean(sites["sigma"])) - 0.3) < 0.05
assert np.allclose(np.mean(sites["w"], axis=(0, 1)), [1.0, -0.5], atol=0.1)
