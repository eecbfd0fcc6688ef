"""Test-loss prediction for ridge regression (sgmcmc.test_loss, App. E.3)."""
import jax
import numpy as np
import pytest

import inertia  # noqa: F401  (float64)
from inertia.sgmcmc import kernels, theory_cov
from reproductions import test_loss
from inertia.sgmcmc.offline import offline


def _hetero(n, d, seed, theta):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, X @ theta + rng.normal(size=n) * np.sqrt(1 + np.sum(X ** 2, axis=1))


@pytest.fixture(scope="module")
def ridge_problem():
    theta = np.random.default_rng(9).normal(size=3)
    X, y = _hetero(300, 3, 0, theta)
    Xt, yt = _hetero(4000, 3, 1, theta)
    model = test_loss.ridge(X, y, 0.5 * 300)
    return model, offline(model), Xt, yt


def test_decomposition_equals_test_loss_of_gaussian_samples(ridge_problem):
    """E.11: residual at theta_hat + mean x^T Sigma x is the mean test loss of theta ~ N(theta_hat, Sigma);
    iid draws, so the Monte Carlo standard error is std / sqrt(n); tolerance 4 s.e."""
    model, curv, Xt, yt = ridge_problem
    Sigma = theory_cov(curv, 0.1, "dq-exact", batch_size=4) * 50  # a visible spread
    dec = test_loss.decompose(curv.theta_hat, Sigma, Xt, yt)
    n = 40_000
    draws = np.random.default_rng(0).multivariate_normal(curv.theta_hat, Sigma, size=n)
    losses = test_loss.per_draw(draws, Xt, yt)
    se = losses.std() / np.sqrt(n)
    assert dec.spread > 20 * se  # the spread term is resolved by the check
    assert abs(losses.mean() - dec.total) < 4 * se
    assert dec.total == pytest.approx(dec.residual + dec.spread)
    assert dec.residual == pytest.approx(np.mean((yt - Xt @ curv.theta_hat) ** 2))
    # per-draw losses are the direct computation
    direct = np.mean((yt[None, :] - draws[:5] @ Xt.T) ** 2, axis=1)
    np.testing.assert_allclose(losses[:5], direct, rtol=1e-10)


def test_sgd_test_loss_matches_exact_discrete_theory(ridge_problem):
    """SGD iterates (Lambda = 0.1 I, B = 4): the dq-exact prediction is within 4 ESS-based s.e. of
    the empirical test loss, while the constant-noise theory misses by more than 10 s.e."""
    model, curv, Xt, yt = ridge_problem
    B, lam = 4, 0.1
    pred = test_loss.predicted(curv, Xt, yt, lam, batch_size=B)
    run = kernels.make_sampler(model, batch_size=B, num_draws=5000, thin=2, burn_in=200)
    draws = np.asarray(run(jax.random.key(0), lam * np.eye(3), np.tile(curv.theta_hat, (4, 1))))
    emp = test_loss.empirical(draws, Xt, yt)
    assert emp.ess > 1000
    assert abs(pred["dq-exact"].total - emp.mean) < 4 * emp.se
    assert emp.mean - pred["dq-const"].total > 10 * emp.se
    assert set(pred) == set(test_loss.THEORIES)


def test_unstable_step_has_no_prediction(ridge_problem):
    model, curv, Xt, yt = ridge_problem
    pred = test_loss.predicted(curv, Xt, yt, 5.0, batch_size=4)
    assert all(v is None for v in pred.values())


def test_bad_input(ridge_problem):
    model, curv, Xt, yt = ridge_problem
    with pytest.raises(ValueError, match="columns"):
        test_loss.decompose(curv.theta_hat, np.eye(3), Xt[:, :2], yt)
    with pytest.raises(ValueError, match="rows"):
        test_loss.per_draw(np.zeros((2, 3)), Xt, yt[:10])
    with pytest.raises(ValueError, match="weight decay"):
        test_loss.ridge(Xt, yt, -1.0)
