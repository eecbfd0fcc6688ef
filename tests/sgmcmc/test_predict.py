"""Exact identities of the predictions: momentum, the corrected B.7 and B.8, IAT, autocorrelations."""
import math

import numpy as np
import pytest

import inertia  # noqa: F401
from inertia.sgmcmc import predict, tuning


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


def test_theories_agree_in_the_small_step_limit(linear_problem):
    """All four theories coincide as Lambda -> 0 (relative to Sigma), diverge at large steps."""
    _, c = linear_problem
    errs = {}
    for lam in (1e-5, 0.3):
        L = lam * np.linalg.inv(c.H)
        ref = predict.theory_cov(c, L, "dq-exact", batch_size=8)
        for th in ("ct",):
            errs[(lam, th)] = np.linalg.norm(predict.theory_cov(c, L, th, batch_size=8) - ref) \
                / np.linalg.norm(ref)
    assert errs[(1e-5, "ct")] < 1e-3 and errs[(0.3, "ct")] > 0.05
