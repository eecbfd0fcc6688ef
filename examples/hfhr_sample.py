"""Sample a Bayesian logistic regression with HFHR and check convergence with ArviZ."""
import numpy as np

import arviz as az
from inertia.mcmc import sample
from inertia.targets import logistic_regression

rng = np.random.default_rng(0)
X = rng.normal(size=(200, 2))
y = (rng.random(200) < 1 / (1 + np.exp(-X @ np.array([1.0, -2.0])))).astype(float)
target = logistic_regression(X, y)  # intercept + 2 slopes, prior N(0, I)

res = sample(target, "hfhr", num_chains=4, num_steps=1000, seed=0)
idata = res.to_arviz()
print(az.summary(idata))
assert float(np.max(np.asarray(az.rhat(idata)["x"]))) < 1.05
