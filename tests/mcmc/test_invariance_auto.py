"""Invariance through the automatic path: exact draws of a d = 10 rotated product of Student-t's keep
their law under the parameters and whitened frame that the default warm-up chose for that target.

The default `sample(target)` picks (h, gamma, alpha, trajectory length and spread) and the frame
x = m + L z; 4,000 independent chains then start from exact draws (mapped into that frame) and run
K = 20 iterations of the sampling program `sample` itself runs (`inertia.mcmc.chains`). An exact
kernel leaves the law unchanged: every rotated-back coordinate s_i / c_i is still t(5), tested by
Kolmogorov-Smirnov, and the coordinates stay uncorrelated (z-tests of E[s_i s_j] = 0); Holm over
all tests at family-wise level 0.001.
"""
import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import inertia  # noqa: F401
from inertia.mcmc import chains, get_method, sample
from inertia.mcmc.adapt import frame_value_and_grad
from inertia.mcmc.kernels import Params
from inertia.mcmc.kernels import adjusted_hfhr as exact
from inertia.targets import from_potential

D, NU, N, K = 10, 5.0, 4000, 20
FWER = 1e-3


def _rotated_t():
    rng = np.random.default_rng(0)
    Q, _ = np.linalg.qr(rng.standard_normal((D, D)))
    scales = np.geomspace(0.3, 3.0, D)
    Qj, cj = jnp.asarray(Q), jnp.asarray(scales)

    def potential(x):
        s = (Qj.T @ x) / cj
        return 0.5 * (NU + 1.0) * jnp.sum(jnp.log1p(s**2 / NU))

    return from_potential(potential, D, name="rotated-t"), Q, scales


def _holm_rejects(pvalues, alpha):
    p = np.sort(np.asarray(pvalues))
    return bool(np.any(p <= alpha / (len(p) - np.arange(len(p)))))


def _law_pvalues(s):
    """KS p-values of each column of s (n, D) against t(NU), and two-sided z-test p-values of
    E[s_i s_j] = 0 (i < j; Var(s_i s_j) = (NU / (NU - 2))^2 for independent unit t's)."""
    ks = [stats.kstest(s[:, i], stats.t(NU).cdf).pvalue for i in range(D)]
    v = NU / (NU - 2.0)
    i, j = np.triu_indices(D, 1)
    z = (s[:, i] * s[:, j]).mean(0) / (v / math.sqrt(s.shape[0]))
    return np.array(ks), 2 * stats.norm.sf(np.abs(z))


def run_from_exact(target, Q, scales, res, seed):
    """Final standardised coordinates s / c of N chains started from exact draws, K iterations at
    the automatic run's parameters and frame; returns (s, mean acceptance)."""
    m = get_method(res.method)
    mean, factor = (np.asarray(a) for a in res.preconditioner)
    vg = frame_value_and_grad(target, mean, factor)
    rng = np.random.default_rng(seed)
    x0 = (rng.standard_t(NU, size=(N, D)) * scales) @ Q.T
    z0 = np.linalg.solve(factor, (x0 - mean).T).T
    keys = jax.random.split(jax.random.PRNGKey(seed), 2 * N)
    state = jax.vmap(lambda q, k: m.init(q, k, vg))(jnp.asarray(z0), keys[:N])
    p = res.params
    params = Params(p["step_size"], p["gamma"], p["alpha"], p["num_leapfrog"],
                    res.tuning["choice"]["length_spread"])
    ch = chains.Chains(state, keys[N:], np.zeros(N, dtype=np.int64), np.zeros(N, dtype=np.int64))
    ch, _, (pos, info) = chains.run_block(m, vg, ch, None, chains.sampling(params, K))
    assert np.all(np.asarray(ch.diverged_at) == 0)
    x = mean + np.asarray(ch.state.position) @ factor.T
    return (x @ Q) / scales, float(np.mean(info.acceptance_rate))


@pytest.fixture(scope="module")
def automatic():
    target, Q, scales = _rotated_t()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = sample(target, seed=0)
    return target, Q, scales, res


def test_exact_draws_keep_their_law_under_the_warmups_parameters(automatic):
    target, Q, scales, res = automatic
    assert res.method == "hfhr-exact" and res.tuning["kind"] == "adaptation"
    s, acc = run_from_exact(target, Q, scales, res, seed=1)
    ks, cross = _law_pvalues(s)
    assert not _holm_rejects(np.concatenate([ks, cross]), FWER), (ks.min(), cross.min())
    assert acc < 0.99  # the Metropolis test rejects proposals: the check is not vacuous
    # the chains moved: the final states are far from the start (K iterations mix t-tails)
    s0 = (np.random.default_rng(1).standard_t(NU, size=(N, D)) * scales) @ Q.T
    assert np.mean(np.abs((s0 @ Q) / scales - s) > 0.1) > 0.5


def test_the_check_fails_a_kernel_without_its_metropolis_test(automatic, monkeypatch):
    # the same chains with the energy error zeroed (every proposal accepted: unadjusted HFHR at the
    # warm-up's step) leave the law: KS p-values ~1e-8 at the tuned h (measured)
    target, Q, scales, res = automatic
    orig = exact.langevin_trajectory

    def without_test(*args, **kw):
        q, p, v, g, dh, bad, n = orig(*args, **kw)
        return q, p, v, g, 0.0 * dh, bad, n

    monkeypatch.setattr(exact, "langevin_trajectory", without_test)
    chains.program.cache_clear()  # recompile the chains with the broken trajectory
    try:
        s, acc = run_from_exact(target, Q, scales, res, seed=1)
    finally:
        chains.program.cache_clear()  # no broken program outlives this test
    assert acc == 1.0
    assert _holm_rejects(np.concatenate(_law_pvalues(s)), FWER)


def test_the_chains_share_each_iterations_trajectory_length(automatic):
    """All chains of a block draw an iteration's K from one key (no chain waits under vmap for a
    longer one): per iteration every chain spends the same gradients, and K varies over the
    iterations across [n/2, 3n/2] at spread 1/2 (the law test above runs with this sharing)."""
    target, Q, scales, res = automatic
    m = get_method(res.method)
    mean, factor = (np.asarray(a) for a in res.preconditioner)
    vg = frame_value_and_grad(target, mean, factor)
    n_chains, iters, n = 8, 200, 12.0
    keys = jax.random.split(jax.random.PRNGKey(3), 2 * n_chains)
    z0 = np.random.default_rng(3).standard_normal((n_chains, D))
    state = jax.vmap(lambda q, k: m.init(q, k, vg))(jnp.asarray(z0), keys[:n_chains])
    ch = chains.Chains(state, keys[n_chains:], np.zeros(n_chains, dtype=np.int64),
                       np.zeros(n_chains, dtype=np.int64))
    params = Params(0.5 * res.params["step_size"], 0.0, 0.0, n, 0.5)
    for adapt in (False, True):  # sampling blocks and warm-up blocks alike
        t = chains.sampling(params, iters) if not adapt else chains.tuning(
            np.log(0.5 * res.params["step_size"]), time=n * 0.5 * res.params["step_size"],
            num_iters=iters)
        _, _, (_, info) = chains.run_block(m, vg, ch, np.zeros(2, np.uint32), t)
        g = np.asarray(info.num_grads)  # (iterations, chains)
        ok = ~np.asarray(info.diverging)  # a divergent trajectory stops early
        same = [np.all(row[k] == row[k][0]) for row, k in zip(g, ok) if k.any()]
        assert len(same) > iters // 2 and all(same), "chains spent different gradients"
        if not adapt:
            assert g.min() == 6 and g.max() == 18 and len(np.unique(g)) == 13
