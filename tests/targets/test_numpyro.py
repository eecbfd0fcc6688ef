"""from_numpyro: same potential, gradient and VI optimum as the built-in logistic target; constraints."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

numpyro = pytest.importorskip("numpyro")
import numpyro.distributions as dist  # noqa: E402

from inertia import vi  # noqa: E402
from inertia.targets import TargetError, logistic_regression  # noqa: E402
from inertia.targets.numpyro import from_numpyro  # noqa: E402


def logistic_model(X, y):
    b = numpyro.sample("b", dist.Normal(0.0, 1.0).expand([X.shape[1]]).to_event(1))
    numpyro.sample("y", dist.Bernoulli(logits=X @ b), obs=y)


@pytest.fixture(scope="module")
def pair():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = (rng.random(40) < 1 / (1 + np.exp(-X @ np.array([1.0, -1.0, 0.5])))).astype(float)
    ref = logistic_regression(X, y, intercept=False)
    return ref, from_numpyro(logistic_model, X, y, alpha=ref.alpha, beta=ref.beta)


def test_potential_and_gradient_match(pair):
    ref, t = pair
    assert t.dim == ref.dim == 3 and t.info["sites"] == {"b": (3,)}
    xs = jax.random.normal(jax.random.PRNGKey(1), (5, 3)) * 2
    diff = jax.jit(jax.vmap(t.potential))(xs) - jax.jit(jax.vmap(ref.potential))(xs)
    # NumPyro keeps the prior's normalising constant (d/2) log(2 pi); the built-in target drops it
    np.testing.assert_allclose(diff, 1.5 * math.log(2 * math.pi), rtol=0, atol=1e-11)
    np.testing.assert_allclose(jax.jit(jax.vmap(t.grad))(xs), jax.jit(jax.vmap(ref.grad))(xs), rtol=0, atol=1e-11)
    v = jnp.array([0.3, -1.0, 2.0])
    np.testing.assert_allclose(t.hvp(xs[0], v), ref.hvp(xs[0], v), rtol=0, atol=1e-11)


def test_vi_optimum_matches(pair):
    ref, t = pair
    res = vi.fit(t, "paired-proj", batch_size=16, num_steps=1500, seed=0, checkpoint_every=1500)
    assert res.history["gap"] is None  # no exact expectations for a generic NumPyro model
    gap, _ = vi.gaps(ref, res.mean[None], res.cov[None])
    # the stochastic fit on the NumPyro potential lands within the noise floor of the built-in
    # target's exact optimum (initial gap from N(0, I) is ~1.3 nats)
    assert 0 <= gap[0] < 1e-2
    q = vi.reference(ref)
    assert np.abs(res.mean - q.mean).max() < 0.05


def scale_model(y):
    mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
    sigma = numpyro.sample("sigma", dist.LogNormal(0.0, 1.0))
    numpyro.deterministic("precision", 1.0 / sigma**2)
    numpyro.sample("y", dist.Normal(mu, sigma), obs=y)


def test_constrained_outputs():
    y = jnp.array([0.5, 1.5, -0.2, 2.0])
    t = from_numpyro(scale_model, y)
    assert t.dim == 2 and t.info["sites"] == {"mu": (), "sigma": ()}
    u = jnp.array([0.7, -0.4])  # sorted site order: mu, then log sigma
    mu, s = 0.7, math.exp(-0.4)
    # potential in the unconstrained space includes log |d sigma / d u| = u
    expect = -(dist.Normal(0, 10).log_prob(mu) + dist.LogNormal(0, 1).log_prob(s) - 0.4
               + dist.Normal(mu, s).log_prob(y).sum())
    np.testing.assert_allclose(t.potential(u), expect, rtol=1e-12)
    out = t.info["constrain"](jnp.stack([u, u + 1.0]))
    np.testing.assert_allclose(out["sigma"], [s, math.exp(0.6)], rtol=1e-12)
    np.testing.assert_allclose(out["mu"], [0.7, 1.7], rtol=1e-12)
    np.testing.assert_allclose(out["precision"], [s**-2, math.exp(-1.2)], rtol=1e-12)
    with pytest.raises(ValueError, match="last axis 2"):
        t.info["constrain"](jnp.zeros(3))


def test_errors():
    def all_observed(y):
        numpyro.sample("y", dist.Normal(0.0, 1.0), obs=y)

    with pytest.raises(TargetError, match="no latent"):
        from_numpyro(all_observed, jnp.ones(2))


def test_model_traced_once_per_fit():
    """The model is traced twice in all: abstractly for its sites, then once for the jitted
    potential, which the start search compiles and the whole automatic fit reuses (an unjitted
    potential re-runs NumPyro's handlers in every jit, vmap and derivative of the fit: 11
    traces)."""
    calls = []

    def counted(y):
        calls.append(1)
        scale_model(y)

    t = from_numpyro(counted, jnp.array([0.5, 1.5, -0.2, 2.0]))
    assert len(calls) == 2
    res = vi.fit(t, seed=0, num_steps=100, progress=False)
    assert np.all(np.isfinite(res.mean))
    assert len(calls) == 2
