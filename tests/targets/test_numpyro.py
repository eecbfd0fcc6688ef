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
    traces). A fit that ends NOT CONVERGED (100 updates stop its averaging early) looks for a
    centred hierarchy to name the way out: one more abstract trace, for the rewrite's sites."""
    calls = []

    def counted(y):
        calls.append(1)
        scale_model(y)

    t = from_numpyro(counted, jnp.array([0.5, 1.5, -0.2, 2.0]))
    assert len(calls) == 2
    with pytest.warns(RuntimeWarning, match="NOT CONVERGED"):
        res = vi.fit(t, seed=0, num_steps=100, progress=False)
    assert np.all(np.isfinite(res.mean)) and not res.converged
    assert len(calls) == 3


class Seen(list):
    """The (array type, index dtype, counts dtype) of each trace of `poisson_glmm` (a static
    pytree node: the casts pass it on, not a copy)."""

    __hash__ = object.__hash__


jax.tree_util.register_static(Seen)


def poisson_glmm(g, y, G, seen=None):
    """Poisson counts with a non-centred group intercept a[g] indexed by integer data `g`."""
    if seen is not None:
        seen.append((type(g).__name__, g.dtype.name, y.dtype.name))
    b0 = numpyro.sample("b0", dist.Normal(0.0, 2.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    with numpyro.plate("G", G):
        a = numpyro.sample("a", dist.Normal(0.0, 1.0))
    numpyro.sample("y", dist.Poisson(jnp.exp(b0 + sigma * a[g])), obs=y)


def glmm_data(G=6, n=48, seed=0):
    """(g int64, y float64 counts, G): 6 groups, 48 rows (d = 8)."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, G, n)
    y = rng.poisson(np.exp(1.0 + 0.5 * rng.normal(size=G)[g])).astype(float)
    return g, y, G


@pytest.mark.parametrize("kind", ["numpy", "jax"])
def test_float32_target_with_integer_index_data(kind):
    """A model indexing a latent vector by int64 data (a[g]) builds in float32: the index stays
    integer (int32, JAX's integer in the 32-bit mode float32 targets trace in; numpy stays numpy),
    the counts become float32, and V, grad V agree with the float64 target's at 20 points (float32
    inputs, so both evaluate the same x). Tolerance 64 eps32 relative (7.6e-6): V sums 56 terms
    (48 rows, 6 + 2 prior terms), each rounded to a few eps32, of nearly one sign (the Poisson and
    normal terms are positive), so the float32 error is at most ~56 eps32 |V|; each gradient
    component sums at most as many terms, measured against the largest component (measured: V
    3.4e-7, grad 1.1e-6 relative)."""
    g, y, G = glmm_data()
    if kind == "jax":
        with jax.enable_x64(True):
            g = jnp.asarray(g)  # an int64 JAX array
    seen = Seen()
    t = from_numpyro(poisson_glmm, g, y, G, seen=seen)
    t32 = t.astype("float32")
    assert t32.dtype == "float32" and t32.dim == t.dim == 8
    eps32 = float(np.finfo(np.float32).eps)
    xs = np.asarray(jax.random.normal(jax.random.PRNGKey(1), (20, t.dim)), np.float32)
    with jax.enable_x64(True):
        v64 = np.array([t.potential(jnp.asarray(x, jnp.float64)) for x in xs])
        g64 = np.array([t.grad(jnp.asarray(x, jnp.float64)) for x in xs])
        v32 = np.array([t32.potential(x) for x in xs], np.float64)
        g32 = np.array([t32.grad(x) for x in xs], np.float64)
        assert t32.potential(xs[0]).dtype == t32.grad(xs[0]).dtype == jnp.float32
    # every trace of the model saw the data as given (float64 target) or cast (float32 target)
    array_type = {"numpy": "ndarray", "jax": "ArrayImpl"}[kind]
    assert set(seen) == {(array_type, "int64", "float64"), (array_type, "int32", "float32")}
    np.testing.assert_allclose(v32, v64, rtol=64 * eps32, atol=0)
    scale = np.max(np.abs(g64), axis=1, keepdims=True)
    assert np.all(np.abs(g32 - g64) <= 64 * eps32 * scale)


def test_factor_fit_in_float32_on_integer_index_data():
    """fit(dtype="float32", family="factor") on the integer-indexed GLMM (d = 8, rank 2) converges
    and lands on the float64 fit of the same seed: means within 0.08 posterior sds, sds within 6%.
    Those bounds are 3x the Monte Carlo spread of the float64 fit itself (seeds 1-3 against seed 0:
    largest mean difference 0.018-0.027 sds, sds 1.5-2.0%; float32 against float64 at seed 0:
    0.019 sds, 1.7%): float32 rounding (~1e-7 relative) is far below it."""
    g, y, G = glmm_data()
    t = from_numpyro(poisson_glmm, g, y, G)
    r64, r32 = (vi.fit(t, family="factor", rank=2, seed=0, dtype=dt, quality=False)
                for dt in ("float64", "float32"))
    assert r32.dtype == "float32" and r32.converged and r64.converged
    sd64 = np.sqrt(r64.cov.diagonal())
    assert np.max(np.abs(np.asarray(r32.mean) - np.asarray(r64.mean)) / sd64) < 0.08
    np.testing.assert_allclose(np.sqrt(r32.cov.diagonal()), sd64, rtol=0.06)


def improper_model(y):
    """A flat real vector (a random walk's values, its roughness a factor) and a flat positive
    scale: ImproperUniform sites, which have no sampler."""
    f = numpyro.sample("f", dist.ImproperUniform(dist.constraints.real_vector, (), (y.shape[0],)))
    s = numpyro.sample("s", dist.ImproperUniform(dist.constraints.positive, (), ()))
    numpyro.factor("walk", -0.5 * jnp.sum((f[1:] - f[:-1]) ** 2) - 0.5 * jnp.log(s) ** 2)
    numpyro.sample("y", dist.Normal(f, s), obs=y)


def test_improper_uniform_sites_are_traced_without_numpyro_initialisation(monkeypatch):
    """ImproperUniform sites take their place in the abstract trace (no fall-back to NumPyro's
    initialize_model, which compiles and searches for a start): the potential equals NumPyro's
    potential_energy at random points, with the positive site's log-Jacobian, and the start is
    finite."""
    import inertia.targets.numpyro as tn
    from numpyro.infer.util import potential_energy

    def refuse():
        raise AssertionError("initialize_model was called")

    monkeypatch.setattr(tn, "_numpyro", refuse)
    y = jnp.array([0.3, -0.2, 1.1, 0.4, 0.9])
    t = from_numpyro(improper_model, y)
    assert t.dim == 6 and t.info["sites"] == {"f": (5,), "s": ()}
    assert np.isfinite(float(t.potential(t.info["init"])))
    for x in jax.random.normal(jax.random.PRNGKey(2), (3, 6)):
        ref = potential_energy(improper_model, (y,), {}, {"f": x[:5], "s": x[5]})
        np.testing.assert_allclose(t.potential(x), ref, rtol=1e-12)
    assert float(t.info["constrain"](x)["s"]) == pytest.approx(math.exp(float(x[5])))
