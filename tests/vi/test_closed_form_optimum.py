"""The automatic `fit` reaches the Gaussian optimum q* known in closed form from several random starts.

q* is N(mean, cov) itself for a Gaussian target, and for a logistic regression the solution of the
stationary equations E_q grad V = 0, Sigma^{-1} = E_q hess V (`inertia.vi.reference`, exact
quadrature). Each fit is compared with q* by KL(q || q*), computed here in closed form, from
starts 70-130 nats away: within 1e-6 nats on the Gaussian (the STL gradient is exact at q*: 5e-11
to 3e-9 measured) and 1e-3 nats on the logistic regression (3e-5 to 6e-5 measured; the stopping
rule's objective tolerance is 1e-4 nats), from every start.
"""
import warnings

import numpy as np
import pytest

from inertia.targets import kappa_family
from inertia.vi import fit, reference

from .conftest import small_logistic

KL_TOL = {"gaussian": 1e-6, "logistic": 1e-3}
STARTS = 3


def kl_gaussians(m, S, m_star, S_star):
    """KL(N(m, S) || N(m*, S*)) in nats."""
    d = len(m)
    P = np.linalg.inv(S_star)
    dm = np.asarray(m_star) - np.asarray(m)
    _, ld_star = np.linalg.slogdet(S_star)
    _, ld = np.linalg.slogdet(S)
    return 0.5 * (np.trace(P @ S) + dm @ P @ dm - d + ld_star - ld)


def _random_starts(d, seed):
    """STARTS starts far from q*: means ~ N(0, 4 I), factors lower triangular with diagonal in
    [0.2, 3] and off-diagonal N(0, 0.3^2)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(STARTS):
        A = np.tril(0.3 * rng.standard_normal((d, d)), -1) + np.diag(rng.uniform(0.2, 3.0, d))
        out.append((2.0 * rng.standard_normal(d), A))
    return out


def _targets():
    g = kappa_family(dim=6, kappa=50.0, seed=3).replace(alpha=None, beta=None)
    m_star, S_star = (np.asarray(a) for a in g.optimum)
    lr = small_logistic(n=60, p=3, seed=2).replace(alpha=None, beta=None)
    ref = reference(lr)  # Newton on the stationary equations, gradient norm <= 1e-10
    return {"gaussian": (g, m_star, S_star), "logistic": (lr, np.asarray(ref.mean),
                                                         np.asarray(ref.cov))}


@pytest.mark.parametrize("which", ["gaussian", "logistic"])
def test_automatic_fit_reaches_the_closed_form_optimum_from_random_starts(which):
    t, m_star, S_star = _targets()[which]
    assert kl_gaussians(m_star, S_star, m_star, S_star) == pytest.approx(0, abs=1e-12)
    for k, init in enumerate(_random_starts(t.dim, seed=10)):
        assert kl_gaussians(init[0], init[1] @ init[1].T, m_star, S_star) > 1.0  # a real start
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            # the optimum reached is tested, not q as an answer: no PSIS quality check (it reads
            # the fit and never changes it; tests/vi/test_quality.py tests it)
            res = fit(t, seed=k, init=init, quality=False)
        m, S = np.asarray(res.mean), np.asarray(res.cov)
        kl = kl_gaussians(m, S, m_star, S_star)
        assert kl < KL_TOL[which], (which, k, kl)
        assert res.converged, (which, k)
