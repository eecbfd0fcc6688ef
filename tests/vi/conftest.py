"""Small targets shared by the VI tests."""
import jax
import jax.numpy as jnp
import numpy as np

from inertia.targets import Target, logistic_regression


def small_logistic(n=40, p=2, seed=0):
    """Synthetic Bayesian logistic regression (d = p + 1) with exact quadrature expectations."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    w = rng.normal(size=p + 1)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(w[0] + X @ w[1:])))).astype(float)
    return logistic_regression(X, y)


def counting_target(d=4, seed=0):
    """Non-quadratic target V = x^T P x / 2 + sum log cosh x whose grad / HVP calls are counted."""
    rng = np.random.default_rng(seed)
    M = rng.normal(size=(d, d))
    P = jnp.asarray(M @ M.T / d + np.eye(d))
    counts = {"grad": 0, "hvp": 0}

    def bump(name):
        def cb(_):
            counts[name] += 1
        return cb

    def potential(x):
        return 0.5 * x @ P @ x + jnp.sum(jnp.log(jnp.cosh(x)))

    def grad(x):
        jax.debug.callback(bump("grad"), x)
        return P @ x + jnp.tanh(x)

    def hvp(x, v):
        jax.debug.callback(bump("hvp"), (x, v))
        return P @ v + (1 - jnp.tanh(x) ** 2) * v

    ev = np.linalg.eigvalsh(np.asarray(P))
    t = Target(dim=d, potential=potential, grad=grad, hvp=hvp, alpha=float(ev[0]),
               beta=float(ev[-1] + 1), name="counting")
    return t, counts


import pytest  # noqa: E402


@pytest.fixture(scope="module")
def logistic3():
    return small_logistic()


@pytest.fixture
def counting():
    return counting_target()
