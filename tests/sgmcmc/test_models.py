"""Closed-form per-observation derivatives equal autodiff; beta-divergence limit; bad input."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import inertia  # noqa: F401
from inertia.sgmcmc import models, offline


def _data(kind, n=7, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if kind == "poisson":
        y = rng.poisson(2.0, size=n).astype(float)
    elif kind == "logistic":
        y = (rng.random(n) < 0.4).astype(float)
    else:
        y = 3.0 * rng.normal(size=n)
    return X, y, rng.normal(size=d) * 0.5


CASES = [
    ("log", lambda X, y: models.linear_regression(X, y, sigma=1.7)),
    ("beta", lambda X, y: models.linear_regression(X, y, loss="beta", beta_div=1.5, sigma=1.7)),
    ("beta-steep", lambda X, y: models.linear_regression(X, y, loss="beta", beta_div=3.0, sigma=0.9)),
    ("poisson", lambda X, y: models.poisson_regression(X, y)),
    ("logistic", lambda X, y: models.logistic_regression(X, y)),
]


@pytest.mark.parametrize("name,make", CASES, ids=[c[0] for c in CASES])
def test_closed_form_derivatives_equal_autodiff(name, make):
    X, y, theta = _data(name.split("-")[0] if name in ("poisson", "logistic") else "linear")
    m = make(X, y)
    th = jnp.asarray(theta)
    G = np.asarray(m.example_grads(th))
    Hn = np.asarray(m.example_hessians(th))
    G_ad = np.asarray(jax.vmap(jax.grad(m.loss), (None, 0))(th, m.data))
    H_ad = np.asarray(jax.vmap(jax.hessian(m.loss), (None, 0))(th, m.data))
    np.testing.assert_allclose(G, G_ad, rtol=1e-10, atol=1e-10 * np.abs(G_ad).max())
    np.testing.assert_allclose(Hn, H_ad, rtol=1e-10, atol=1e-10 * np.abs(H_ad).max())
    # O(N D^2) curvature sum equals the mean of per-example Hessians
    np.testing.assert_allclose(np.asarray(m.mean_hessian(th)), H_ad.mean(0), rtol=1e-12,
                               atol=1e-14)
    # the generic autodiff path (from_loss) gives the same model quantities
    g = models.from_loss(m.loss, m.data, m.dim)
    np.testing.assert_allclose(np.asarray(g.example_grads(th)), G, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(float(g.objective(th)), float(m.objective(th)), rtol=1e-13)


def test_beta_divergence_tends_to_log_loss():
    X, y, theta = _data("linear")
    log = models.linear_regression(X, y, sigma=1.3)
    th = jnp.asarray(theta)
    errs = []
    for b in (1 + 1e-3, 1 + 1e-6):
        beta = models.linear_regression(X, y, loss="beta", beta_div=b, sigma=1.3)
        for f in ("example_grads", "example_hessians"):
            a, r = np.asarray(getattr(beta, f)(th)), np.asarray(getattr(log, f)(th))
            errs.append(np.abs(a - r).max() / np.abs(r).max())
        errs.append(abs(float(beta.objective(th)) - float(log.objective(th))))
    assert max(errs[3:]) < 1e-5  # beta_div - 1 = 1e-6
    assert max(errs[:3]) > 10 * max(errs[3:])  # and the gap shrinks with beta_div - 1


def test_glm_curvature_operator_matches_per_example_hessians(poisson_problem):
    m, c = poisson_problem
    Jn = np.asarray(m.example_hessians(jnp.asarray(c.theta_hat)))
    S = np.random.default_rng(3).normal(size=(m.dim, m.dim))
    S = S @ S.T
    direct = np.einsum("nab,bc,ncd->ad", Jn, S, Jn) / m.num_obs
    np.testing.assert_allclose(c.quad(S), direct, rtol=1e-12)
    from inertia.sgmcmc._linalg import hessian_fourth_moment_matrix, unvech, vech
    K = c.quad_matrix()
    np.testing.assert_allclose(unvech(K @ vech(S), m.dim), direct, rtol=1e-11)
    np.testing.assert_allclose(hessian_fourth_moment_matrix(Jn), K, rtol=1e-11, atol=1e-14)


def test_map_reaches_gradient_tolerance(poisson_problem, linear_problem):
    for m, c in (poisson_problem, linear_problem):
        assert c.grad_norm <= 1e-10
        g = np.asarray(m.full_grad(jnp.asarray(c.theta_hat)))
        assert np.linalg.norm(g) <= 1e-10


def test_bad_inputs():
    X, y, _ = _data("linear")
    with pytest.raises(ValueError, match="labels in"):
        models.logistic_regression(X, y)
    with pytest.raises(ValueError, match="beta_div must be > 1"):
        models.linear_regression(X, y, loss="beta", beta_div=1.0)
    with pytest.raises(ValueError, match="non-negative counts"):
        models.poisson_regression(X, y)
    with pytest.raises(ValueError, match="rows"):
        models.linear_regression(X, y[:-1])
    Xc = np.hstack([X, X[:, :1]])  # collinear column: J singular
    m = models.linear_regression(Xc, y, sigma=1.0)
    with pytest.raises(ValueError, match="singular curvature J"):
        offline.offline(m).target_cov
