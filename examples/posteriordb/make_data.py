"""Write the synthetic data sets of the posteriordb examples (seeded; rerunning rewrites them).

The shapes and kinds are those of posteriordb's data for the models (arK: K = 5, T = 200; garch11:
T = 200 with sigma1; diamonds: a design matrix with K = 25 columns); the values are simulated here.
"""
import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent


def ar_k(rng, K=5, T=200):
    beta, y = np.array([0.4, -0.2, 0.15, 0.1, -0.05]), np.zeros(T)
    for t in range(T):
        past = y[max(t - K, 0):t][::-1]
        y[t] = 0.3 + past @ beta[:past.size] + 0.5 * rng.normal()
    return {"K": K, "T": T, "y": np.round(y, 4).tolist()}


def garch11(rng, T=200, mu=0.1, a0=0.05, a1=0.2, b1=0.7, sigma1=0.5):
    y, var = np.zeros(T), sigma1 ** 2
    for t in range(T):
        if t:
            var = a0 + a1 * (y[t - 1] - mu) ** 2 + b1 * var
        y[t] = mu + np.sqrt(var) * rng.normal()
    return {"T": T, "y": np.round(y, 4).tolist(), "sigma1": sigma1}


def diamonds(rng, N=150, K=25):
    Z = rng.normal(size=(N, K - 1)) @ np.linalg.cholesky(0.5 * np.eye(K - 1) + 0.5)
    X = np.column_stack([np.ones(N), Z])
    b = rng.normal(0.0, 0.5, K - 1)
    Y = 7.8 + Z @ b + 0.8 * rng.normal(size=N)
    return {"N": N, "Y": np.round(Y, 4).tolist(), "K": K, "X": np.round(X, 4).tolist(),
            "prior_only": 0}


if __name__ == "__main__":
    rng = np.random.default_rng(20260)
    for name, make in (("arK", ar_k), ("garch11", garch11), ("diamonds", diamonds)):
        (HERE / f"{name}.json").write_text(json.dumps(make(rng)) + "\n")
