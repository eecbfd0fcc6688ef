"""Tuned Lambda: symmetric PD, forward solve returns Sigma*, agrees with a generic root solve."""
import math

import numpy as np
import pytest
import scipy.optimize

import inertia  # noqa: F401
from inertia.sgmcmc import models, offline, predict, tuning
from inertia.sgmcmc._linalg import unvech, vech


def _sym_pd(L):
    return np.allclose(L, L.T, rtol=0, atol=1e-14 * np.abs(L).max()) and np.linalg.eigvalsh(L)[0] > 0


@pytest.mark.parametrize("kw", [
    dict(batch_size=16),
    dict(batch_size=150, replacement=False),
    dict(batch_size=16, temperature=2000.0),
    dict(batch_size=32, momentum=0.5),
    dict(batch_size=32, momentum=0.3, temperature=2000.0, replacement=False),
], ids=["sgd", "without-replacement", "sgld", "momentum", "momentum-sgld-worep"])
def test_dq_exact_is_symmetric_pd_and_forward_exact(linear_problem, kw):
    _, c = linear_problem
    t = tuning.tune(c, method="dq-exact", **kw)
    assert _sym_pd(t.Lambda)
    assert t.forward_error < 1e-10
    np.testing.assert_allclose(t.forward_cov, c.target_cov, rtol=0,
                               atol=1e-10 * np.abs(c.target_cov).max())


def test_dq_exact_with_prior_poisson(poisson_problem):
    _, c = poisson_problem
    assert np.linalg.norm(c.g) > 0  # the prior term of eq. 16 is active
    for B in (8, 150):
        t = tuning.tune(c, method="dq-exact", batch_size=B)
        assert _sym_pd(t.Lambda) and t.forward_error < 1e-10


def test_baselines(linear_problem):
    _, c = linear_problem
    for method in ("dq-const", "lr-ws"):
        t = tuning.tune(c, method=method, batch_size=16)
        assert _sym_pd(t.Lambda)
        assert t.forward_error > 1e-3  # a baseline does not hit Sigma* under misspecification
    t = tuning.tune(c, method="ct", batch_size=16)
    # eq. 7 equals (2B/N) J^-1-type scaling when the matrices commute; here it is close, not exact
    assert 1e-4 < t.forward_error < 0.5


def test_closed_form_equals_generic_root_solve(linear_problem, poisson_problem):
    """scipy.optimize.root (Powell hybrid, the paper's solver) on eq. 15-16 over symmetric Lambda."""
    for _, c in (linear_problem, poisson_problem):
        S = c.target_cov
        B = 16

        def F(x):
            L = unvech(x, c.dim)
            H, C = c.H, c.noise_cov(S, B)
            R = L @ H @ S + S @ H @ L - L @ (C + H @ S @ H) @ L
            return vech(R) / np.abs(S).max()

        x0 = vech(2 * B / c.num_obs * np.linalg.inv(c.H))
        sol = scipy.optimize.root(F, x0, method="hybr", tol=1e-14)
        L_root = unvech(sol.x, c.dim)
        L_cf = tuning.lambda_dq_exact(c, S, batch_size=B)
        np.testing.assert_allclose(L_root, L_cf, rtol=1e-8, atol=1e-12 * np.abs(L_cf).max())


def test_paper_code_closed_form_is_not_exact(aniso_problem):
    """The paper's code: Lambda = (S H + H S)(C + H S H)^-1, non-symmetric, inexact (spec section 2)."""
    _, c = aniso_problem
    S, H = c.target_cov, c.H
    for B in (16, 150):
        L = (S @ H + H @ S) @ np.linalg.inv(c.noise_cov(S, B) + H @ S @ H)
        assert not np.allclose(L, L.T, rtol=1e-3)
        fwd = predict.stationary_cov(c, L, batch_size=B)
        assert np.linalg.norm(fwd - S) / np.linalg.norm(S) > 0.5  # measured 0.95 and 1.27
        t = tuning.tune(c, batch_size=B)
        assert t.forward_error < 1e-10


def test_bad_inputs(linear_problem):
    _, c = linear_problem
    hot = 0.5 / np.linalg.eigvals(c.H @ c.target_cov).real.min()
    with pytest.raises(ValueError, match="inverse temperature beta=.* too small"):
        tuning.tune(c, batch_size=16, temperature=hot)
    with pytest.raises(ValueError, match="eigenvalues outside \\(0, 2\\)"):
        predict.stationary(c, 2.5 * np.linalg.inv(c.H), batch_size=16)
    with pytest.raises(ValueError, match="eigenvalues outside \\(0, 2\\)"):
        predict.stationary(c, -0.01 * np.eye(c.dim), batch_size=16)
    with pytest.raises(ValueError, match="second moments diverge"):
        predict.stationary(c, 1.9 * np.linalg.inv(c.H), batch_size=1)
    with pytest.raises(ValueError, match="unknown tuning"):
        tuning.tune(c, method="nope", batch_size=4)
    with pytest.raises(ValueError, match="ct rule"):
        tuning.tune(c, method="ct", batch_size=4, temperature=100.0)
    with pytest.raises(ValueError, match="batch size"):
        tuning.tune(c, batch_size=c.num_obs + 1)
    X = np.random.default_rng(0).normal(size=(50, 2))
    pm = models.poisson_regression(X, np.ones(50))
    with pytest.raises(ValueError, match="linear regression models only"):
        tuning.tune(offline.offline(pm), method="lr-ws", batch_size=4)


def _diagonal_curvature(N=400):
    """A Curvature whose J, I and per-observation Hessians are diagonal: S, H, C(S) commute."""
    rng = np.random.default_rng(3)
    d = 3
    Jn = np.zeros((N, d, d))
    Jn[:, range(d), range(d)] = rng.uniform(0.5, 2.0, size=(N, d)) * np.array([1.0, 3.0, 0.3])
    G = rng.normal(size=(N, d)) * np.array([1.0, 2.0, 0.5])
    return offline.Curvature(theta_hat=np.zeros(d), num_obs=N, num_used=N, J=Jn.mean(0),
                             I=np.diag(np.mean(G ** 2, axis=0)), gamma=np.zeros((d, d)), Jn=Jn)


def test_code_rules_closed_forms():
    """Authors' code rules on a diagonal (commuting) curvature, against entrywise closed forms."""
    c = _diagonal_curvature()
    j, i, N = np.diag(c.J), np.diag(c.I), c.num_obs
    s = i / j ** 2 / N  # Sigma* entries
    for B in (4, 40):
        L = tuning.tune(c, method="ct-code", batch_size=B).Lambda
        np.testing.assert_allclose(L, L.T, rtol=0, atol=0)
        np.testing.assert_allclose(L, 2 * B / N * np.diag(1 / j), rtol=1e-13)
        # C = J without 1/B: Lambda does not depend on B
        L = tuning.tune(c, method="dq-const-code", batch_size=B).Lambda
        np.testing.assert_allclose(L, np.diag(2 * s * j / (j + j * s * j)), rtol=1e-12)
        # with commuting matrices the commuting form is the exact rule (forward error ~ 0)
        t = tuning.tune(c, method="dq-exact-code", batch_size=B)
        assert t.forward_error < 1e-10
        np.testing.assert_allclose(t.Lambda, tuning.tune(c, batch_size=B).Lambda, rtol=1e-10,
                                   atol=1e-14)


def test_code_rules_on_misspecified_linear(aniso_problem):
    """Without commutation: ct-code is symmetric 2B/N J^-1; the other code rules are not exact."""
    _, c = aniso_problem
    B = 16
    L = tuning.tune(c, method="ct-code", batch_size=B).Lambda
    np.testing.assert_allclose(L, 2 * B / c.num_obs * np.linalg.inv(c.J), rtol=1e-12)
    assert np.array_equal(L, L.T)
    for m in ("dq-exact-code", "lr-ws-code", "dq-const-code"):
        t = tuning.tune(c, method=m, batch_size=B)
        assert t.forward_error > 0.1  # measured 0.55, 0.85, 0.93 (max-entry relative)
    with pytest.raises(ValueError, match="ct-code rule"):
        tuning.tune(c, method="ct-code", batch_size=B, temperature=100.0)
