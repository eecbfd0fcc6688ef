"""Shared small problems for the sgmcmc tests (sizes kept tiny: few compilations, short runs)."""
import numpy as np
import pytest

import inertia  # noqa: F401  (float64)
from inertia.sgmcmc import models, offline


def hetero_linear(n=300, d=3, seed=0):
    """Misspecified heteroskedastic linear regression (Fig. 1 / Table 2 design, small)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    theta = rng.normal(size=d)
    y = X @ theta + rng.normal(size=n) * np.sqrt(1.0 + np.sum(X ** 2, axis=1))
    return X, y


@pytest.fixture(scope="session")
def make_hetero():
    """The `hetero_linear(n, d, seed)` data generator."""
    return hetero_linear


@pytest.fixture(scope="session")
def linear_problem():
    X, y = hetero_linear()
    m = models.linear_regression(X, y)
    return m, offline.offline(m)


@pytest.fixture(scope="session")
def poisson_problem():
    rng = np.random.default_rng(1)
    n, d = 300, 3
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    theta = rng.normal(size=d)
    y = rng.poisson(np.exp(X @ theta))
    m = models.poisson_regression(X, y, prior_precision=0.5 * np.eye(d))
    return m, offline.offline(m)


@pytest.fixture(scope="session")
def aniso_problem():
    """Heteroskedastic linear regression with unequal covariate scales: J, I, S do not commute."""
    rng = np.random.default_rng(0)
    n, d = 300, 3
    X = rng.normal(size=(n, d)) * np.array([1.0, 2.0, 0.5])
    y = X @ rng.normal(size=d) + rng.normal(size=n) * np.sqrt(1.0 + np.sum(X ** 2, axis=1))
    m = models.linear_regression(X, y)
    return m, offline.offline(m)
