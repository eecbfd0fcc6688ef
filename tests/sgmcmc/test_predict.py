"""Exact identities of the predictions: momentum, the corrected B.7 and B.8, IAT, autocorrelations."""
import math

import numpy as np
import pytest

import inertia  # noqa: F401
from inertia.sgmcmc import models, offline, predict, tuning


def _b7_printed_residual(c, L, S, kappa, beta, B):
    """Relative residual of eq. B.7 as printed in the paper."""
    H, C = c.H, c.noise_cov(S, B)
    lhs = (1 - kappa) * (L @ H @ S + S @ H @ L) + kappa / (1 - kappa ** 2) * (
        L @ H @ L @ H @ S + S @ H @ L @ H @ L)
    rhs = L @ C @ L + (1 + kappa ** 2) / (1 - kappa ** 2) * L @ H @ S @ H @ L
    if math.isfinite(beta):
        rhs = rhs + (1 + kappa ** 2) * 2 * L / beta
    return np.abs(lhs - rhs).max() / np.abs(L @ H @ S).max()


def test_momentum_augmented_solve(linear_problem):
    _, c = linear_problem
    B = 16
    L = tuning.tune(c, batch_size=B).Lambda
    # kappa -> 0 recovers the plain solve
    s0 = predict.stationary_cov(c, L, batch_size=B)
    s1 = predict.stationary_cov(c, L, batch_size=B, momentum=1e-9)
    np.testing.assert_allclose(s1, s0, rtol=1e-7)
    for beta in (math.inf, 900.0):
        st = predict.stationary(c, 0.6 * L, batch_size=B, momentum=0.4, temperature=beta)
        # our Sigma-only equation holds exactly; the printed B.7 only at beta = inf
        r = tuning.momentum_residual(c, 0.6 * L, st.cov, batch_size=B, momentum=0.4,
                                     temperature=beta)
        assert np.abs(r).max() < 1e-12 * np.abs(st.cov).max()
        b7 = _b7_printed_residual(c, 0.6 * L, st.cov, 0.4, beta, B)
        assert (b7 < 1e-12) if beta == math.inf else (b7 > 0.05)


def test_iat_autocorrelation_and_iterate_average_identities(linear_problem):
    _, c = linear_problem
    B = 16
    L = tuning.tune(c, batch_size=B).Lambda
    for kappa in (0.0, 0.5):
        st = predict.stationary(c, (1 - kappa) * L, batch_size=B, momentum=kappa)
        lags = np.arange(0, 4000)
        rho = predict.autocorrelation(st, lags[:3])
        np.testing.assert_allclose(rho[0], 1.0)
        # tau_i = 1 + 2 sum_k rho_k (Prop. 4.4) by brute-force summation
        T, Z, d = st.transition, st.joint_cov, c.dim
        Xi, acc = Z, np.zeros(d)
        for _ in lags[1:]:
            Xi = T @ Xi
            acc += np.diag(Xi[:d, :d]) / np.diag(st.cov)
        tau = predict.iat(st)
        np.testing.assert_allclose(tau.per_coord, 1 + 2 * acc, rtol=1e-9)
        assert tau.worst >= tau.per_coord.max() - 1e-9
        if kappa == 0.0:
            assert tau.worst >= tau.worst_paper * (1 - 1e-9)
            mu = np.linalg.eigvals(L @ c.H).real.min()
            np.testing.assert_allclose(tau.worst_paper, 2 / mu - 1, rtol=1e-10)
        # corrected B.8 (weights k - j) against the double sum over pairs
        for k in (1, 2, 7):
            Xis = [Z]
            for _ in range(k):
                Xis.append(T @ Xis[-1])
            tot = sum(Xis[abs(a - b)][:d, :d] if a >= b else Xis[abs(a - b)][:d, :d].T
                      for a in range(k) for b in range(k))
            np.testing.assert_allclose(predict.iterate_average_cov(st, k), tot / k ** 2,
                                       rtol=1e-10, atol=1e-16)
        # large k: Sigma^(k) -> (2 W - Sigma) sym / k, the long-run variance
        k = 10 ** 6
        W = np.linalg.solve(np.eye(T.shape[0]) - T, Z)[:d, :d]
        np.testing.assert_allclose(predict.iterate_average_cov(st, k) * k, W + W.T - st.cov,
                                   rtol=1e-4)


def test_printed_b8_differs(linear_problem):
    """B.8 as printed (no (k - j) weights) is not the covariance of the average."""
    _, c = linear_problem
    st = predict.stationary(c, tuning.tune(c, batch_size=16).Lambda, batch_size=16)
    k, F, S = 50, st.transition, st.cov
    printed = (k * S + 2 * sum(np.linalg.matrix_power(F, j) @ S for j in range(1, k))) / k ** 2
    ours = predict.iterate_average_cov(st, k)
    assert np.abs(printed - ours).max() > 0.1 * np.abs(ours).max()


def _homoskedastic_linear(n=300, d=3, s=1.3, seed=0):
    """Well-specified to second order: residuals exactly +-s, orthogonal to X, so theta_hat is the
    generating theta, the mean squared residual is s^2 and, with sigma = s, I_hat = J_hat exactly."""
    rng = np.random.default_rng(seed)
    r = s * rng.choice([-1.0, 1.0], size=n)
    X = rng.normal(size=(n, d))
    X -= np.outer(r, r @ X) / (r @ r)
    return models.linear_regression(X, X @ rng.normal(size=d) + r, sigma=s)


@pytest.mark.parametrize("fixture", ["well-specified", "misspecified"])
def test_which_theories_agree_in_the_small_step_limit(linear_problem, fixture):
    """With Lambda = lam H^-1 (no prior, H = J) each theory tends, as lam -> 0, to the continuous
    Lyapunov solution with its own noise at the mode, Sigma = lam H^-1 C0 H^-1 / 2:
    dq-exact and ct share C0 = I_hat / B, so both -> lam S / (2B) (S = J^-1 I J^-1, the sandwich);
    ct equals it at every lam. dq-const (C0 = J / B) -> lam J^-1 / (2B); lr-ws
    (C0 = s2 A / (B sigma^4), J = A / sigma^2) -> (s2 / sigma^2) lam J^-1 / (2B). So dq-const and
    lr-ws agree with dq-exact in the limit only where S = J^-1 (and s2 = sigma^2); under
    misspecification they stay off by ||J^-1 - S|| / ||S|| (the posterior-vs-sandwich gap).
    At large steps ct leaves dq-exact on both fixtures."""
    c = offline.offline(_homoskedastic_linear()) if fixture == "well-specified" else linear_problem[1]
    B = 8
    S, Jinv = c.sandwich, np.linalg.inv(c.J)
    ratio = c.residual_var / c.sigma ** 2  # 1 well specified; (N - D) / N with the OLS sigma
    limit = {"dq-exact": S, "ct": S, "dq-const": Jinv, "lr-ws": ratio * Jinv}

    def rel(a, b):
        return np.linalg.norm(a - b) / np.linalg.norm(b)

    cov = {lam: {th: predict.theory_cov(c, lam * Jinv, th, batch_size=B) for th in limit}
           for lam in (1e-4, 1e-5, 0.3)}
    for lam in (1e-4, 1e-5):
        for th, lim in limit.items():  # each theory's own limit, to O(lam)
            assert rel(cov[lam][th], lam * lim / (2 * B)) < 2 * lam, (lam, th)
        np.testing.assert_allclose(cov[lam]["ct"], lam * S / (2 * B), rtol=1e-9)
    # dq-exact -> ct at rate lam: the O(lam) term shrinks tenfold with lam
    e4, e5 = (rel(cov[lam]["ct"], cov[lam]["dq-exact"]) for lam in (1e-4, 1e-5))
    assert 1e-7 < e5 < 2e-5 and e4 / e5 == pytest.approx(10, rel=0.01)
    gap = rel(Jinv, S)
    if fixture == "well-specified":
        assert gap < 1e-12 and ratio == pytest.approx(1.0, rel=1e-12)
        for th in ("dq-const", "lr-ws"):
            assert rel(cov[1e-5][th], cov[1e-5]["dq-exact"]) < 2e-5
    else:  # the disagreement is real and does not shrink with lam (0.461 and 0.466 here)
        assert gap > 0.3 and ratio == pytest.approx(1 - c.dim / c.num_obs, rel=1e-12)
        for lam in (1e-4, 1e-5):
            assert rel(cov[lam]["dq-const"], cov[lam]["dq-exact"]) == pytest.approx(gap, rel=1e-3)
            assert rel(cov[lam]["lr-ws"], cov[lam]["dq-exact"]) == pytest.approx(
                rel(ratio * Jinv, S), rel=1e-3)
    assert rel(cov[0.3]["ct"], cov[0.3]["dq-exact"]) > 0.1  # 0.22 on both fixtures
