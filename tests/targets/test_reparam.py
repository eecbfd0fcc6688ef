"""Partial non-centring of NumPyro models (`inertia.targets.reparam`): the rewritten potential is
the original's up to the Jacobian, the sites chosen are exactly the location-scale ones with latent
parents, and c is the normal-normal optimum on a model where it is known in closed form."""
import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

from inertia.targets import from_numpyro
from inertia.targets.reparam import centredness, find_sites, noncentred, reparameterise

SIGMA = jnp.array([15.0, 10.0, 16.0, 11.0, 9.0])
Y = jnp.array([28.0, 8.0, -3.0, 7.0, -1.0])


def schools(sigma, y):
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
    with numpyro.plate("J", len(y)):
        theta = numpyro.sample("theta", dist.Normal(mu, tau))
        numpyro.sample("y", dist.Normal(theta, sigma), obs=y)


def mixed_families(sigma, y):
    """A Student-t group law, a LogNormal site and a Laplace vector site (event dims), each with
    latent parents."""
    mu = numpyro.sample("mu", dist.Normal(0.0, 2.0))
    tau = numpyro.sample("tau", dist.HalfNormal(1.0))
    with numpyro.plate("J", len(y)):
        theta = numpyro.sample("theta", dist.StudentT(4.0, mu, tau))
        s = numpyro.sample("s", dist.LogNormal(mu / 4, tau))
        numpyro.sample("y", dist.Normal(theta, sigma * s), obs=y)
    numpyro.sample("w", dist.Laplace(mu, tau).expand([3]).to_event(1))


def funnel():
    v = numpyro.sample("v", dist.Normal(0.0, 3.0))
    numpyro.sample("x", dist.Normal(0.0, jnp.exp(v / 2)).expand([2]).to_event(1))


def _target(model, *args):
    return from_numpyro(model, *args)


def _sites(t):
    spec = t.info["numpyro"]
    return find_sites(spec["model"], spec["args"], spec["kwargs"])


@pytest.mark.parametrize("model,args", [(schools, (SIGMA, Y)), (mixed_families, (SIGMA, Y)),
                                        (funnel, ())])
def test_potential_is_the_original_up_to_the_jacobian(model, args):
    """V'(u') = V(T(u')) - log|det dT/du'(u')| at random points u' and random elementwise c,
    T the map to the original unconstrained coordinates (to 1e-9 relative: float64 rounding)."""
    t = _target(model, *args)
    sites = _sites(t)
    rng = np.random.default_rng(1)
    c = {k: rng.uniform(0.0, 1.0, s.shape) for k, s in sites.items()}
    rep = reparameterise(t, sites, c)
    assert rep.target.dim == t.dim
    for _ in range(4):
        u = jnp.asarray(rng.normal(size=rep.target.dim))
        x = rep.point_map(u)
        logdet = jnp.linalg.slogdet(jax.jacfwd(rep.point_map)(u))[1]
        expected = float(t.potential(x) - logdet)
        assert float(rep.target.potential(u)) == pytest.approx(expected, rel=1e-9, abs=1e-9)
        np.testing.assert_allclose(rep.to_original(np.asarray(u)[None])[0], np.asarray(x),
                                   rtol=1e-12, atol=1e-12)


def test_fully_centred_is_the_original_model():
    """c = 1 everywhere: the same potential at the same point (the identity map)."""
    t = _target(schools, SIGMA, Y)
    sites = _sites(t)
    rep = reparameterise(t, sites, {k: np.ones(s.shape) for k, s in sites.items()})
    u = jnp.asarray(np.random.default_rng(2).normal(size=t.dim))
    np.testing.assert_allclose(np.asarray(rep.point_map(u)), np.asarray(u), atol=1e-12)
    assert float(rep.target.potential(u)) == pytest.approx(float(t.potential(u)), rel=1e-12)


def left_alone(y):
    """No site qualifies: z has no latent parent; g's family is not location-scale; the
    likelihood is observed."""
    mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    z = numpyro.sample("z", dist.Normal(0.0, 1.0).expand([3]).to_event(1))
    g = numpyro.sample("g", dist.Gamma(sigma + 1.0, 1.0))
    numpyro.sample("y", dist.Normal(mu + z.sum() + g, sigma), obs=y)


def one_of_many(y):
    mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
    tau = numpyro.sample("tau", dist.HalfNormal(1.0))
    a = numpyro.sample("a", dist.Normal(0.0, 1.0).expand([3]).to_event(1))
    b = numpyro.sample("b", dist.Normal(mu, tau).expand([3]).to_event(1))
    e = numpyro.sample("e", dist.Exponential(1.0 / tau))
    numpyro.sample("y", dist.Normal(a.sum() + b.sum(), e), obs=y)


def test_sites_without_a_location_scale_parent_are_left_alone():
    """Only location-scale sites with latent parents are listed, with their parents."""
    assert _sites(_target(left_alone, jnp.array(0.5))) == {}
    found = _sites(_target(one_of_many, jnp.array(0.5)))
    assert set(found) == {"b"}
    assert found["b"].parents == ("mu", "tau") and found["b"].shape == (3,)
    assert set(_sites(_target(mixed_families, SIGMA, Y))) == {"theta", "s", "w"}


TAU = 2.0


def known_scale(sigma, y):
    """theta_i ~ N(mu, TAU^2), y_i ~ N(theta_i, sigma_i^2): Gaussian in every parameterisation."""
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    with numpyro.plate("J", len(y)):
        theta = numpyro.sample("theta", dist.Normal(mu, TAU))
        numpyro.sample("y", dist.Normal(theta, sigma), obs=y)


def test_centredness_is_the_normal_normal_optimum():
    """On a Gaussian posterior (its Laplace fit exact), c_i = tau^2 / (tau^2 + sigma_i^2)
    (Papaspiliopoulos, Roberts & Skold 2007), to 1e-6."""
    from inertia.mcmc.warmup import fit_gaussian

    sigma = jnp.array([0.5, 1.0, 2.0, 8.0, 30.0])
    t = _target(known_scale, sigma, Y)
    sites = _sites(t)
    nc = noncentred(t, sites)
    fit = fit_gaussian(nc.target, "laplace")
    c = centredness(nc.target, sites, fit.mean, fit.factor)["theta"]
    s2 = np.asarray(sigma) ** 2
    np.testing.assert_allclose(c, TAU ** 2 / (TAU ** 2 + s2), atol=1e-6)


def test_diagonal_fit_finds_the_precision_diagonal_without_a_mode():
    """The rewrite's choice (`mcmc.reparam_run.diagonal_fit`): on a Gaussian non-centred model the
    diagonal fit's fixed point is the precision's diagonal, so c_i = tau^2 / (tau^2 + sigma_i^2);
    its Monte Carlo error is the standard error it reports: within 4 of them (a false alarm about
    once in 16,000 per element), and that error within its stopping level C_SE. Its cost is
    bounded whatever the model: at most FIT_BLOCKS blocks."""
    from inertia.mcmc import reparam_run as rr

    sigma = jnp.array([0.5, 1.0, 2.0, 8.0, 30.0])
    t = _target(known_scale, sigma, Y)
    sites = _sites(t)
    nc = noncentred(t, sites, seed=1)  # the start point choose's fit starts from
    mean, prec, grads, blocks, se, r = rr.diagonal_fit(nc.target, sites, seed=1)
    assert r <= rr.MEAN_TOL  # settled: the mean's remaining Newton step within a quarter sd
    c = centredness(nc.target, sites, mean, 1.0 / np.sqrt(prec))["theta"]
    exact = TAU ** 2 / (TAU ** 2 + np.asarray(sigma) ** 2)
    assert se <= rr.C_SE
    assert np.max(np.abs(c - exact)) <= 4 * se, (c, exact, se)
    assert grads == blocks * rr.FIT_BLOCK * rr.FIT_DRAWS
    assert blocks <= rr.FIT_BLOCKS
    rep, g, how = rr.choose(t, sites, seed=1)
    assert g == grads and how.startswith("diagonal fit")
    np.testing.assert_allclose(rep.centred["theta"], c)


def test_diagonal_fit_that_does_not_settle_hands_over_to_vi():
    """A fit whose mean has not settled (here: 2 updates a block, from a start far in the tail:
    mu's whitened gradient stays far above MEAN_TOL) gives no precision, and `choose` takes the
    VI fit, counting both fits' gradients."""
    from inertia.mcmc import reparam_run as rr

    t = _target(known_scale, SIGMA, Y)
    sites = _sites(t)
    nc = noncentred(t, sites)
    mean, prec, grads, blocks, se, r = rr.diagonal_fit(nc.target, sites, steps=2, max_blocks=3)
    assert mean is None and prec is None and r > rr.MEAN_TOL and grads == 3 * 2 * rr.FIT_DRAWS
