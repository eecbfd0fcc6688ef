"""Calibrate constant-step SGD / SGLD on your data so its draws have the posterior's covariance."""
import numpy as np

from inertia.sgmcmc import calibrate

rng = np.random.default_rng(0)
X = rng.normal(size=(500, 3))
y = X @ np.array([0.5, -1.0, 2.0]) + rng.normal(size=500)

res = calibrate("linear", (X, y), batch_size=25, num_steps=3000, seed=0, num_chains=2)
print("preconditioner Lambda:\n", np.round(res.Lambda, 4))
print("target covariance (diag):   ", np.round(np.diag(res.target_cov), 5))
print("empirical covariance (diag):", np.round(np.diag(res.empirical_cov), 5))
print("relative error vs prediction:", round(res.to_json()["cov_error_vs_predicted"], 3))
assert res.to_json()["cov_error_vs_predicted"] < 0.5
