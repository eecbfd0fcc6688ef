"""Randomised-midpoint HFHR / ULD: exact stationary variance on q^2/2 (tau integrated by
Gauss-Legendre quadrature of the per-tau affine law) against Monte Carlo chains."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import inertia  # noqa: F401
from inertia.mcmc import GaussianDiagnostics, REGISTRY, sample
from inertia.mcmc.kernels import Params, rmm
from inertia.targets import gaussian


@jax.jit
def _per_tau_maps(k, taus):
    """A(tau) and the noise Jacobian J(tau) of one step on q^2/2 at each midpoint time."""
    def f(z, xi, tau):
        (q, p), _ = rmm.step_given(k, tau, (z[:1], z[1:]), z[:1], xi.reshape(4, 1), lambda q: q)
        return jnp.concatenate([q, p])

    z0, xi0 = jnp.zeros(2), jnp.zeros(4)
    return jax.vmap(lambda tau: (jax.jacfwd(f, 0)(z0, xi0, tau), jax.jacfwd(f, 1)(z0, xi0, tau)))(taus)


def exact_stationary_var(h, gamma, alpha, nodes=40):
    """S = E_tau[A S A^T] + E_tau[Q] for the 1-D target q^2/2 (the step is affine given tau)."""
    t, w = np.polynomial.legendre.leggauss(nodes)
    taus, ws = 0.5 * (t + 1), 0.5 * w
    A, J = (np.asarray(a) for a in _per_tau_maps(rmm.prepare(Params(h, gamma, alpha)),
                                                  jnp.asarray(taus)))
    EAA = np.einsum("t,tij,tkl->ikjl", ws, A, A).reshape(4, 4)
    EQ = np.einsum("t,tij,tkj->ik", ws, J, J).reshape(4)
    return np.linalg.solve(np.eye(4) - EAA, EQ).reshape(2, 2)[0, 0]


def test_rm_bias_is_smaller_than_one_gradient_schemes():
    std = gaussian(np.zeros(1), np.eye(1))
    diag = GaussianDiagnostics(std)
    for h in (0.4, 0.2):
        uld = exact_stationary_var(h, 2.0, 0.0)
        klmc = diag.stationary("klmc", step_size=h, gamma=2.0).cov[0, 0]
        # at equal gradients (RM uses two per step) KLMC runs with h/2
        klmc_half = diag.stationary("klmc", step_size=h / 2, gamma=2.0).cov[0, 0]
        assert abs(uld - 1) < 0.2 * abs(klmc_half - 1) < 0.2 * abs(klmc - 1)
        hf = exact_stationary_var(h, 2.0, 0.5)
        hf_exp = diag.stationary("hfhr", step_size=h / 2, gamma=2.0, alpha=0.5).cov[0, 0]
        assert abs(hf - 1) < abs(hf_exp - 1)


@pytest.mark.parametrize("method,alpha", [("hfhr-rm", 1.0)])  # uld-rm is the same step at alpha = 0
def test_rm_chains_match_exact_stationary_variance(method, alpha):
    from numpyro.diagnostics import effective_sample_size

    std = gaussian(np.zeros(1), np.eye(1))
    h = 0.5
    want = exact_stationary_var(h, 2.0, alpha or 0.0)
    res = sample(std, method, step_size=h, gamma=2.0, alpha=alpha, num_chains=64, num_steps=1000,
                 seed=2)
    assert res.grad_evals == 2001 and REGISTRY[method].grads_per_step == 2
    sq = res.draws[:, 100:, 0] ** 2
    ess = float(effective_sample_size(sq[..., None])[0])
    se = sq.std() / np.sqrt(ess)
    assert abs(sq.mean() - want) < 4.5 * se, (sq.mean(), want, se)
