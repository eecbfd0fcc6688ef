"""fit(target) on an uncentred year regression (kappa ~ 5e10) and the automatic method choice on
targets that are not log-concave."""
import types
import warnings

import numpy as np
import pytest

from inertia.targets.gaussian import gaussian
from inertia.vi import fit
from inertia.variational.auto import FALLBACK_METHOD, choose_method


def test_indefinite_hessian_at_laplace_draws_chooses_the_natural_gradient_method():
    t = gaussian(np.zeros(2), np.eye(2)).replace(alpha=1.0, beta=2.0)
    concave = types.SimpleNamespace(log_concave_at_points=True, lambda_min=[0.5, 0.7])
    indefinite = types.SimpleNamespace(log_concave_at_points=False, lambda_min=[0.5, -3.0])
    assert choose_method(t, concave) is None
    ev = choose_method(t, indefinite)
    assert ev["method"] == FALLBACK_METHOD and "not log-concave" in ev["reason"]


def test_year_regression_with_known_noise_is_fitted_exactly():
    numpyro = pytest.importorskip("numpyro")
    import numpyro.distributions as dist
    from inertia.targets.numpyro import from_numpyro

    x = np.arange(1952.0, 2014.0)
    y = -60.7 + 0.035 * x + np.random.default_rng(0).normal(0.0, 1.13, x.size)

    def model(x, y):
        a = numpyro.sample("a", dist.Normal(0.0, 1e4))
        b = numpyro.sample("b", dist.Normal(0.0, 10.0))
        numpyro.sample("y", dist.Normal(a + b * x, 1.13), obs=y)

    # exact posterior, computed in coordinates centred by the covariate (a' = a + b c)
    c = x.mean()
    T = np.array([[1.0, -c], [0.0, 1.0]])
    Xc = np.c_[np.ones_like(x), x - c]
    P = Xc.T @ Xc / 1.13**2 + T.T @ np.diag([1e-8, 1e-2]) @ T
    m = np.linalg.solve(P, Xc.T @ y / 1.13**2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = fit(from_numpyro(model, x, y))
    assert res.converged
    Ti = np.linalg.inv(T)  # q in centred coordinates: KL is invariant under the affine map
    mq, Lq = Ti @ res.mean, Ti @ res.factor
    Lp_inv = np.linalg.cholesky(P).T  # N(m, P^-1): whitening by chol(P)^T
    A, r = Lp_inv @ Lq, Lp_inv @ (mq - m)
    kl = 0.5 * (np.sum(A * A) + r @ r - 2 - 2 * np.linalg.slogdet(A)[1])
    assert kl < 1e-3
