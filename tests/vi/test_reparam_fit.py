"""`vi.fit(..., reparam="auto")` (`mcmc.reparam_run.fit_reparameterised`): q is fitted in the
rewritten coordinates and read in the model's own sites."""
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

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
