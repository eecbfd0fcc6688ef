"""Faults of a model named as what they are, by fit and by sample alike: an improper posterior in one
dimension (flat prior, separable logistic data), a saddle point between two modes, a log density
that is NaN on half the line, and a flat prior in a centred hierarchy (the centredness rewrite's site
search). About 60 s (short fits and warm-ups)."""
import warnings

import jax.numpy as jnp
import numpy as np
import pytest

from inertia.mcmc import sample
from inertia.targets import TargetError, from_logdensity
from inertia.targets.mode import find_mode, probe_unbounded
from inertia.vi import fit

X = np.random.default_rng(1).normal(size=40)
Y = (X > 0).astype(float)


def _flat_logistic():
    """log p(w) = sum log sigmoid(+-w x): separable, flat prior: the mass grows without bound as
    w -> infinity (V falls to 0 and flattens)."""
    s = jnp.asarray(2 * Y - 1) * jnp.asarray(X)
    return from_logdensity(lambda w: -jnp.sum(jnp.logaddexp(0.0, -w[0] * s)), jnp.zeros(1))


def test_probe_finds_infinite_mass_in_one_dimension():
    t = _flat_logistic()
    found = probe_unbounded(t, np.array([50.0]), np.array([[10.0]]))
    assert found is not None and found["direction"] == [1.0]
    proper = from_logdensity(lambda w: -0.5 * w[0] ** 2, jnp.zeros(1))
    assert probe_unbounded(proper, np.zeros(1), np.eye(1)) is None


def test_a_bowl_seen_from_high_on_its_wall_is_not_improper():
    """V = A / (1 + x^2) + B log(1 + x^2), A = 2e12, B = 1e9: proper (tails x^-2e9), and from x = 0
    (V = 2e12, as a failed mode search's end point on a centred hierarchy's wall) V stays below
    V(0) out to 10^12 sds, yet rises again beyond its bottom: no infinite mass. Without the far
    end's rise test the probe called it improper; the flat logistic stays improper."""
    bowl = from_logdensity(lambda x: -(2e12 / (1 + x[0] ** 2) + 1e9 * jnp.log1p(x[0] ** 2)),
                           jnp.zeros(1))
    assert probe_unbounded(bowl, np.zeros(1), np.eye(1)) is None
    assert probe_unbounded(_flat_logistic(), np.array([50.0]), np.array([[10.0]])) is not None


def test_fit_says_improper_on_flat_prior_separable_data():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        r = fit(_flat_logistic(), num_steps=2000)
    assert not r.converged and r.verdict.numbers.get("improper") is not None
    assert "improper" in r.verdict.numbers["stop"]


def test_sample_says_improper_on_flat_prior_separable_data():
    with pytest.raises(TargetError, match="the posterior is improper.*proper prior"):
        sample(_flat_logistic(), num_steps=100)


def _bimodal():
    return from_logdensity(lambda p: jnp.logaddexp(-0.5 * ((p[0] - 3.0) / 0.5) ** 2,
                                                   -0.5 * ((p[0] + 3.0) / 0.5) ** 2),
                           jnp.zeros(1))


def test_saddle_named_with_the_modes_on_its_sides():
    with pytest.warns(RuntimeWarning, match=r"saddle point .* x\[0\] = 0 \(Hessian eigenvalue "
                                            r"-140 .*two modes, at x\[0\] = -3 and 3"):
        m = find_mode(_bimodal(), np.zeros(1))
    assert m.converged and abs(abs(float(m.x[0])) - 3.0) < 1e-3
    assert len(m.others) == 1 and abs(float(m.others[0][0]) + float(m.x[0])) < 1e-3


def test_sample_starts_at_both_modes_and_says_not_converged():
    """Modes at -3 and 3 (sd 0.5, barrier exp(-18)): the chains start at both modes the mode
    search found beside the saddle, never cross, and the run ends NOT CONVERGED on R-hat (all four
    chains at one mode called it converged, mean 3.0 against the true 0)."""
    with pytest.warns(RuntimeWarning, match="saddle point"):
        r = sample(_bimodal(), num_steps=200)
    assert not r.converged and "R-hat > 1.01" in r.verdict.problems[0]
    means = np.asarray(r.draws)[..., 0].mean(axis=1)  # per chain
    assert means.min() < -2.5 and means.max() > 2.5


def _nan_half_line():
    return from_logdensity(lambda p: jnp.sum(jnp.where(p < 0, jnp.nan, -p)), jnp.ones(1))


@pytest.mark.parametrize("route", ["fit", "sample"])
def test_nan_named_as_nan(route):
    with pytest.raises(TargetError, match=r"the log density is NaN at x\[0\] = -"):
        fit(_nan_half_line()) if route == "fit" else sample(_nan_half_line(), num_steps=50)


def test_site_search_through_a_flat_prior():
    pytest.importorskip("numpyro")
    import numpyro
    import numpyro.distributions as dist

    from inertia.targets.reparam import find_sites

    def model(y):
        mu = numpyro.sample("mu", dist.ImproperUniform(dist.constraints.real, (), ()))
        tau = numpyro.sample("tau", dist.HalfNormal(1.0))
        theta = numpyro.sample("theta", dist.Normal(mu, tau).expand([8]))
        numpyro.sample("y", dist.Normal(theta, 1.0), obs=y)

    sites = find_sites(model, (np.arange(8.0),))
    assert list(sites) == ["theta"] and sites["theta"].parents == ("mu", "tau")
