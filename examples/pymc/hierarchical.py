"""A hierarchical PyMC model with a positive, a simplex and a deterministic variable, whose posterior
is known in closed form (normal-gamma and Dirichlet-multinomial conjugacy):

prec ~ Gamma(2, 2); mu ~ N(0, 1 / (s0 prec)); theta[j] ~ N(mu, 1 / (k prec));
y[i] ~ N(theta[group[i]], 1 / prec); w ~ Dirichlet(1, 1, 1); counts ~ Multinomial(n, w);
sigma = 1 / sqrt(prec).

    inertia sample --model examples/pymc/hierarchical.py:model --data examples/pymc/hierarchical.json
"""
import numpy as np
import pymc as pm


def model(y, group, J, counts, s0, k):
    coords = {"group": [f"g{j}" for j in range(J)], "category": ["a", "b", "c"]}
    with pm.Model(coords=coords) as m:
        prec = pm.Gamma("prec", alpha=2.0, beta=2.0)
        mu = pm.Normal("mu", 0.0, sigma=1.0 / pm.math.sqrt(s0 * prec))
        theta = pm.Normal("theta", mu, sigma=1.0 / pm.math.sqrt(k * prec), dims="group")
        pm.Normal("y", theta[group], sigma=1.0 / pm.math.sqrt(prec), observed=y)
        w = pm.Dirichlet("w", a=np.ones(3), dims="category")
        pm.Multinomial("counts", n=int(np.sum(counts)), p=w, observed=counts)
        pm.Deterministic("sigma", 1.0 / pm.math.sqrt(prec))
    return m
