"""`vi.fit(..., reparam="auto")` (`mcmc.reparam_run.fit_reparameterised`): q is fitted in the
rewritten coordinates and read in the model's own sites."""
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

from inertia import vi
from inertia.targets import from_numpyro

TAU = 2.0
S = np.array([0.5, 1.0, 3.0, 10.0])
Y = np.array([1.0, -2.0, 3.0, 0.5])


def model(s, y):
    """mu ~ N(0, 5^2), theta_i ~ N(mu, TAU^2), y_i ~ N(theta_i, s_i^2): Gaussian in every
    parameterisation (the rewrite is linear when the scale is fixed)."""
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    with numpyro.plate("J", len(y)):
        theta = numpyro.sample("theta", dist.Normal(mu, TAU))
        numpyro.sample("y", dist.Normal(theta, s), obs=y)


def exact_means():
    """Conjugate posterior means: mu from y_i | mu ~ N(mu, TAU^2 + s_i^2); theta_i given mu
    linear in mu."""
    w = 1.0 / (TAU ** 2 + S ** 2)
    m_mu = np.sum(w * Y) / (1 / 25.0 + np.sum(w))
    prec = 1 / S ** 2 + 1 / TAU ** 2
    return m_mu, (Y / S ** 2 + m_mu / TAU ** 2) / prec


def test_fit_reads_the_original_sites_at_the_exact_means():
    """The table lists mu and theta[i] (no auxiliary site), at the conjugate posterior means to
    5 Monte Carlo standard errors of the table's 4,000 draws of q (sd / sqrt(4000)) plus 0.01 sd
    for the fit's own tolerance; the rewrite is recorded with a c per school."""
    res = vi.fit(from_numpyro(model, jnp.asarray(S), jnp.asarray(Y)), seed=0, reparam="auto",
                 quality=False)
    rows = {r["name"]: r for r in res.summary()}
    assert set(rows) == {"mu"} | {f"theta[{i}]" for i in range(len(Y))}
    m_mu, m_theta = exact_means()
    for name, m in [("mu", m_mu)] + [(f"theta[{i}]", v) for i, v in enumerate(m_theta)]:
        sd = rows[name]["sd"]
        assert abs(rows[name]["mean"] - m) <= (5 / np.sqrt(4000) + 0.01) * sd, (name, rows[name])
    c = np.asarray(res.reparam["sites"]["theta"]["centredness"])
    np.testing.assert_allclose(c, TAU ** 2 / (TAU ** 2 + S ** 2), atol=0.05)
    assert res.events[0]["event"] == "reparameterised"


def _schools(sigma, y):
    """The eight schools, centred (theta_j ~ N(mu, tau), tau ~ HalfCauchy(5)): a funnel."""
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
    with numpyro.plate("J", len(y)):
        theta = numpyro.sample("theta", dist.Normal(mu, tau))
        numpyro.sample("y", dist.Normal(theta, sigma), obs=y)


def test_a_fit_that_does_not_converge_names_the_rewrite_as_the_way_out():
    """Stopped by its budget (20 updates, the objective still falling) on a centred hierarchy: the
    reason names the centred site and the way out; a model with nothing to rewrite gets none."""
    y = np.array([28.0, 8, -3, 7, -1, 1, 18, 12])
    sigma = np.array([15.0, 10, 16, 11, 9, 11, 10, 18])
    with pytest.warns(RuntimeWarning):
        res = vi.fit(from_numpyro(_schools, sigma, y), num_steps=20, seed=0, quality=False)
    reason = res.verdict.problems[0]
    assert not res.converged and "the way out" in reason and "(theta)" in reason
    assert 'reparam="auto"' in reason and "sample(target)" in reason

    def flat(x, y):
        b = numpyro.sample("b", dist.Normal(0.0, 1.0))
        numpyro.sample("y", dist.Normal(b * x, 1.0), obs=y)

    with pytest.warns(RuntimeWarning):
        res = vi.fit(from_numpyro(flat, np.arange(5.0), np.arange(5.0)), num_steps=20, seed=0,
                     quality=False)
    assert not res.converged and "the way out" not in res.verdict.problems[0]
