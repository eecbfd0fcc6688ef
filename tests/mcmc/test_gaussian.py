"""Exact Gaussian laws: dense vs decoupled recursion, h -> 0 order, MCSE-gated moment recovery."""
import numpy as np
import pytest

import inertia  # noqa: F401
from inertia.mcmc import (GaussianDiagnostics, affine_map, propagate, sample, stationary_affine,
                          tune_gaussian, w2_gaussian)
from inertia.mcmc.kernels import Params
from inertia.targets import kappa_family

METHODS = [("ula", None, None), ("klmc", 1.5, None), ("hfhr", 1.5, 0.3), ("hfhr-split", 1.5, 0.3)]


@pytest.fixture(scope="module")
def target():
    return kappa_family(3, 10.0, seed=1)


@pytest.mark.parametrize("method,gamma,alpha", METHODS)
def test_dense_recursion_equals_decoupled_w2_curve(target, method, gamma, alpha):
    diag = GaussianDiagnostics(target)
    h = 0.15
    curve = diag.w2_curve(method, step_size=h, gamma=gamma, alpha=alpha, num_steps=40,
                          init_mean=np.zeros(3), init_var=0.5)
    A, c, Q = affine_map(method, Params(h, gamma or 1.0, alpha or 0.0), target.info["precision"],
                         target.info["mean"])
    k = A.shape[0] // 3
    m0 = np.zeros(3 * k)
    S0 = np.eye(3 * k)
    S0[:3, :3] *= 0.5
    ms, Ss = propagate(A, c, Q, m0, S0, 40)
    mu, cov = target.optimum
    dense = [w2_gaussian(ms[i][:3], Ss[i][:3, :3], mu, cov) for i in (0, 1, 7, 40)]
    np.testing.assert_allclose(curve[[0, 1, 7, 40]], dense, rtol=1e-7, atol=1e-9)
    # stationary law: dense Lyapunov solve == decoupled one
    m_inf, S_inf = stationary_affine(A, c, Q)
    st = diag.stationary(method, step_size=h, gamma=gamma, alpha=alpha)
    np.testing.assert_allclose(m_inf[:3], mu, atol=1e-12)
    np.testing.assert_allclose(S_inf[:3, :3], st.cov, atol=1e-10)
    assert abs(st.bias_w2 - w2_gaussian(mu, st.cov, mu, cov)) < 1e-7
    assert abs(st.rate - np.max(np.abs(np.linalg.eigvals(A)))) < 1e-10


# order of the stationary covariance error as h -> 0: first order except the split scheme at alpha = 0
ORDERS = [("ula", None, None, 1), ("klmc", 2.0, None, 1), ("hfhr", 2.0, 0.2, 1),
          ("hfhr-split", 2.0, 0.2, 1), ("hfhr-split", 2.0, 0.0, 2)]


@pytest.mark.parametrize("method,gamma,alpha,order", ORDERS)
def test_stationary_covariance_converges_at_scheme_order(target, method, gamma, alpha, order):
    diag = GaussianDiagnostics(target)
    _, cov = target.optimum
    hs = [0.02, 0.01, 0.005]
    errs = [np.linalg.norm(diag.stationary(method, step_size=h, gamma=gamma, alpha=alpha).cov - cov)
            for h in hs]
    rates = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    np.testing.assert_allclose(rates, order, atol=0.05)


def test_moment_recovery_correlated_gaussian_mcse_gated(target):
    """Chain mean / covariance vs the chain's exact stationary law within 4.5 MCSE (ESS-based)."""
    from numpyro.diagnostics import effective_sample_size

    p = dict(step_size=0.2, gamma=1.5, alpha=0.3)
    res = sample(target, "hfhr", num_chains=64, num_steps=1500, seed=3, **p)
    st = GaussianDiagnostics(target).stationary("hfhr", **p)
    x = res.draws[:, 300:]
    mu, cov = target.optimum
    r = x - mu
    ess = np.asarray(effective_sample_size(r))
    assert ess.min() > 2000
    mcse = r.reshape(-1, 3).std(0) / np.sqrt(ess)
    assert np.all(np.abs(x.mean((0, 1)) - st.mean) < 4.5 * mcse)
    iu = np.triu_indices(3)
    prods = r[..., iu[0]] * r[..., iu[1]]  # (chain, draw, 6): unbiased for cov entries (known mean)
    ess_p = np.asarray(effective_sample_size(prods))
    se_p = prods.reshape(-1, prods.shape[-1]).std(0) / np.sqrt(ess_p)
    est = prods.mean((0, 1))
    assert np.all(np.abs(est - st.cov[iu]) < 4.5 * se_p), (est, st.cov[iu], se_p)
    # against the target the chain's exact bias is added to the tolerance
    bias = np.abs(st.cov[iu] - cov[iu])
    assert np.all(np.abs(est - cov[iu]) < bias + 4.5 * se_p)


def test_tuning_reports_the_exact_crossing(target):
    grid = {"step_size": np.array([0.1, 0.2, 0.4]), "gamma": np.array([1.0, 2.0, 4.0]),
            "ahl": np.array([0.5, 1.0])}
    best = tune_gaussian(target, "hfhr", grid=grid, max_steps=400)
    diag = GaussianDiagnostics(target)
    curve = diag.w2_curve("hfhr", step_size=best["step_size"], gamma=best["gamma"],
                          alpha=best["alpha"], num_steps=400)
    first = int(np.argmax(curve <= 0.1 * curve[0]))
    assert first == best["steps"] and curve[first - 1] > 0.1 * curve[0]
    assert abs(curve[0] - best["w2_0"]) < 1e-12
    assert best["alpha"] * best["step_size"] * target.beta < 2
    # the optimum over the grid: no grid point reaches the tolerance sooner
    for h in grid["step_size"]:
        for g in grid["gamma"]:
            for r in grid["ahl"]:
                k, _ = diag.steps_to("hfhr", step_size=h, gamma=g, alpha=r / (h * target.beta),
                                     tol=0.1 * curve[0], max_steps=400)
                assert k < 0 or k >= best["steps"]


def test_tuning_for_a_gradient_budget(target):
    grid = {"step_size": np.array([0.1, 0.2, 0.4]), "gamma": np.array([1.0, 2.0, 4.0]),
            "ahl": np.array([0.5, 1.0])}
    best = tune_gaussian(target, "hfhr", grid=grid, budget=31)
    assert best["steps"] == 30
    diag = GaussianDiagnostics(target)
    curve = diag.w2_curve("hfhr", step_size=best["step_size"], gamma=best["gamma"],
                          alpha=best["alpha"], num_steps=30)
    assert abs(curve[-1] - best["w2"]) < 1e-12
    for h in grid["step_size"]:
        for g in grid["gamma"]:
            for r in grid["ahl"]:
                w = diag.w2_curve("hfhr", step_size=h, gamma=g, alpha=r / (h * target.beta),
                                  num_steps=30)[-1]
                assert w >= best["w2"] - 1e-12
