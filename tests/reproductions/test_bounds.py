"""Plug-in constants of Theorem 4.5 / Corollary 4.6 and the measured SGD-proxy W2 (reproductions/bounds.py)."""
import sys

import jax.numpy as jnp
import numpy as np
import pytest

import inertia  # noqa: F401  (float64)
from inertia.sgmcmc import from_loss, linear_regression, poisson_regression
from reproductions import bounds
from inertia.sgmcmc.offline import fit_map


def _poisson_data(n, d, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    theta = rng.normal(size=d)
    return X, rng.poisson(np.exp(X @ theta)).astype(float)


def test_linear_regression_constants_closed_form_and_proxy_exact():
    """Linear regression: third derivatives vanish (M = 0), so the bound is 0 and the proxy is the
    algorithm itself: coupled SGD and proxy iterates agree to rounding."""
    rng = np.random.default_rng(0)
    n, d, sigma = 200, 3, 1.3
    X = rng.normal(size=(n, d)) * np.array([1.0, 2.0, 0.5])
    y = X @ rng.normal(size=d) + rng.normal(size=n) * np.sqrt(1 + np.sum(X ** 2, axis=1))
    gamma = 0.7 * np.eye(d)
    m = linear_regression(X, y, sigma=sigma, prior_precision=gamma)
    th = fit_map(m).theta
    c = bounds.constants(m, th)
    ev = np.linalg.eigvalsh(X.T @ X / (n * sigma ** 2) + gamma / n)
    assert c.L == pytest.approx(ev[-1], rel=1e-12)
    assert c.mu == pytest.approx(ev[0], rel=1e-12)
    assert c.M_bar == 0.0 and c.M2_bar == 0.0
    g = -(y - X @ th)[:, None] * X / sigma ** 2
    g = g - g.mean(0)  # = g_n + Gamma theta_hat / N
    sq = np.sum(g * g, axis=1)
    assert c.tau2_sq == pytest.approx(sq.mean(), rel=1e-12)
    assert c.tau4_4 == pytest.approx(np.mean(sq ** 2), rel=1e-12)
    assert c.L_obs == pytest.approx(np.max(np.sum(X ** 2, axis=1)) / sigma ** 2, rel=1e-12)
    assert bounds.corollary_constant(c) == 0.0
    assert bounds.w2_bound(c, 0.3 / c.L, 8) == 0.0
    assert bounds.theorem_bound(c, 0.3 / c.L, 1.0) == 0.0

    dr = bounds.coupled_sample(m, th, 0.5 / c.L, batch_size=8, num_draws=60, block=5,
                               burn_in=50, num_chains=2, seed=0)
    spread = np.sqrt(dr.psi_m2.mean())
    assert spread > 1e-3  # the chains do move
    assert np.sqrt(dr.sq_dist.max()) <= 1e-10 * spread
    est = bounds.estimate_w2(dr, ot=False)
    assert est.coupled <= 1e-10 * spread and est.mean_gap <= 1e-10 * spread
    # SGLD (beta = N): both chains receive the same injected noise, still equal to rounding
    dr = bounds.coupled_sample(m, th, 0.5 / c.L, batch_size=8, num_draws=60, block=5,
                               burn_in=50, num_chains=2, seed=1, temperature=n)
    assert np.sqrt(dr.sq_dist.max()) <= 1e-10 * np.sqrt(dr.psi_m2.mean())


def test_third_derivative_norms_autodiff_equals_glm_closed_form():
    """M_n from the (D, D, D) autodiff tensor equals |f'''(eta)| ||x||^3 = exp(eta) ||x||^3 (Poisson)."""
    X, y = _poisson_data(25, 3, 1)
    glm = poisson_regression(X, y)
    th = fit_map(glm).theta

    def loss(theta, datum):
        x, yy = datum
        eta = x @ theta
        return jnp.exp(eta) - yy * eta

    generic = from_loss(loss, (X, y), 3)
    exact = np.exp(X @ th) * np.linalg.norm(X, axis=1) ** 3
    np.testing.assert_allclose(bounds.third_derivative_norms(glm, th), exact, rtol=1e-12)
    np.testing.assert_allclose(bounds.third_derivative_norms(generic, th, chunk=10), exact,
                               rtol=1e-10)
    cg, cc = bounds.constants(glm, th), bounds.constants(generic, th)
    for a, b in zip(cg, cc):
        assert a == pytest.approx(b, rel=1e-9)
    # first-order mean shift: autodiff of tr(J_n Sigma) equals mean_n exp(eta_n) (x^T S x) x_n
    S = np.array([[0.3, 0.1, 0.0], [0.1, 0.2, -0.05], [0.0, -0.05, 0.4]])
    w = np.exp(X @ th)
    t3 = (X.T * (w * np.einsum("na,ab,nb->n", X, S, X))) @ np.ones(25) / 25
    exact = -0.5 * np.linalg.solve((X.T * w) @ X / 25, t3)
    np.testing.assert_allclose(bounds.mean_shift(glm, th, S), exact, rtol=1e-10)
    np.testing.assert_allclose(bounds.mean_shift(generic, th, S), exact, rtol=1e-9)


def test_coupled_w2_linear_in_step_over_batch_poisson():
    """Poisson regression inside Corollary 4.6's regime: the coupled W2 grows linearly in lambda/B.

    To first order the SGD stationary mean moves by -H^-1 E[grad^3 L][Sigma] / 2 with Sigma of order
    lambda / B, so W2 ~ lambda / B and the log-log slope is 1 + O(sqrt(lambda)). Over a factor 8 in
    lambda / B the weighted slope has a Monte Carlo standard error of about 0.04 (four chains,
    20 relaxation times 1 / (lambda mu) each at the smallest step); we accept [0.85, 1.15].
    """
    X, y = _poisson_data(300, 3, 3)
    m = poisson_regression(X, y)
    th = fit_map(m).theta
    c = bounds.constants(m, th)
    B = 8
    ratios = np.array([0.000125, 0.00035, 0.001])
    relax = 1.0 / (ratios[0] * B * c.mu)
    blocks = 100
    block = int(np.ceil(20 * relax / blocks))
    rows = []
    for q in ratios:
        r = bounds.measure(m, th, q * B, batch_size=B, num_steps=block * blocks,
                           burn_in=int(3 * relax), num_chains=4, num_blocks=blocks, seed=0,
                           ot=False, constants_=c)
        assert r["in_corollary_regime"]
        rows.append(r)
    coupled = np.array([r["coupled"] for r in rows])
    se = np.array([r["coupled_se"] for r in rows])
    slope, slope_se = bounds.loglog_slope(ratios, coupled, se)
    assert slope_se < 0.07
    assert 0.85 <= slope <= 1.15
    for r in rows:
        assert r["mean_gap"] <= r["coupled"]
        # first-order mean shift predicts the gap (Monte Carlo error of the gap ~ 6 %)
        assert abs(r["gap_predicted"] / r["mean_gap"] - 1) < 0.25
        assert r["coupled"] <= r["bound_theorem_m4_measured"] <= r["bound"]  # the bounds hold
        assert r["psi_m4"] <= r["m4_lemma"]  # Lemma F.2's fourth-moment bound holds

    # same static configuration (no new compilation): on the block-end draws, the exact OT lies
    # between the distance of the means and the coupling's root-mean-square distance
    dr = bounds.coupled_sample(m, th, ratios[-1] * B, batch_size=B, num_draws=blocks,
                               block=block, burn_in=int(3 * relax), num_chains=4, seed=1)
    a, b = dr.theta.reshape(-1, 3), dr.psi.reshape(-1, 3)
    w = bounds.ot_w2(a, b, max_points=None)
    gap, rms = np.linalg.norm((a - b).mean(0)), np.sqrt(np.mean(np.sum((a - b) ** 2, 1)))
    assert 0 < gap <= w * (1 + 1e-9) and w <= rms * (1 + 1e-9)
    with pytest.raises(FloatingPointError, match="diverged"):
        bounds.coupled_sample(m, th, 50.0, batch_size=B, num_draws=blocks, block=block,
                              burn_in=int(3 * relax), num_chains=4, seed=1)


def test_ot_one_dimensional_order_statistics():
    """In 1-D the optimal plan between equal-size samples matches order statistics."""
    rng = np.random.default_rng(0)
    x, z = rng.normal(size=(40, 1)), 0.5 + 2 * rng.normal(size=(40, 1))
    exact = np.sqrt(np.mean((np.sort(x[:, 0]) - np.sort(z[:, 0])) ** 2))
    assert bounds.ot_w2(x, z) == pytest.approx(exact, rel=1e-10)


def test_ot_without_pot_names_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "ot", None)
    with pytest.raises(ImportError, match="pip install pot"):
        bounds.ot_w2(np.zeros((3, 2)), np.ones((3, 2)))


def test_bound_algebra_and_regime():
    c = bounds.BoundConstants(L=2.0, mu=0.5, M_bar=1.0, M2_bar=3.0, tau2_sq=2.0, tau4_4=9.0,
                              L_obs=10.0, dim=4, num_obs=100)
    C0 = (2 / 0.5) * (3.0 / 16 + 1.0 / 2)
    assert bounds.corollary_constant(c) == pytest.approx(np.sqrt(96 * C0 * 9.0 / 0.25))
    assert bounds.w2_bound(c, 0.02, 16) == pytest.approx(bounds.corollary_constant(c) * 0.02 / 16)
    assert bounds.corollary_constant(c, temperature=1e3) >= bounds.corollary_constant(c)
    reg = bounds.regime(c, 0.001, 16)
    assert reg["corollary_limit"] == pytest.approx(min(16 * 0.5 / 800, 1 / 8))
    assert reg["corollary"] and reg["theorem"]
    assert not bounds.regime(c, 0.3, 16)["theorem"]
    assert bounds.theorem_bound(c, 0.3, 1.0) == np.inf
    m4 = bounds.fourth_moment_bound(c, 0.01, 16)
    assert m4 == pytest.approx(96 * 1e-4 * 9.0 / (0.25 * 256))
    assert bounds.theorem_bound(c, 0.01, m4) <= bounds.w2_bound(c, 0.01, 16)


def test_bad_input():
    X, y = _poisson_data(50, 2, 0)
    m = poisson_regression(X, y)
    th = np.zeros(2)
    c = bounds.BoundConstants(1.0, 0.5, 1.0, 1.0, 1.0, 1.0, 1.0, 2, 50)
    with pytest.raises(ValueError, match="lambda > 0"):
        bounds.w2_bound(c, 0.0, 8)
    with pytest.raises(ValueError, match="inverse temperature"):
        bounds.w2_bound(c, 0.1, 8, temperature=-1)
    with pytest.raises(ValueError, match="symmetric positive-definite"):
        bounds.coupled_sample(m, th, np.array([[0.1, 0.05], [0.0, 0.1]]), batch_size=4,
                              num_draws=2, temperature=10.0)
    with pytest.raises(ValueError, match="batch size"):
        bounds.coupled_sample(m, th, 0.1, batch_size=51, num_draws=2)
    with pytest.raises(ValueError, match="shape"):
        bounds.coupled_sample(m, th, np.ones(3), batch_size=4, num_draws=2)
    with pytest.raises(ValueError, match="dimensions"):
        bounds.ot_w2(np.zeros((3, 2)), np.zeros((3, 1)))
