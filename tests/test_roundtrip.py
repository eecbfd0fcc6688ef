"""Every result type round-trips through `save` / `inertia.load`: mean, cov, names, verdict, history
and draws equal (bit for bit), including `LoadedResult.save -> load`."""
import math
import warnings

import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("arviz")
pytest.importorskip("h5netcdf")

import inertia  # noqa: E402
from inertia import vi  # noqa: E402
from inertia.mcmc import sample  # noqa: E402
from inertia.results.build import coordinate_names  # noqa: E402
from inertia.targets import from_logdensity, from_potential, kappa_family  # noqa: E402


def _posterior(obj):
    post = obj["posterior"] if not hasattr(obj, "posterior") else obj.posterior
    return {k: np.asarray(post[k].values) for k in post.data_vars}


def _same(a, b):
    """Equal arrays, NaNs in the same places."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_array_equal(a, b)


def roundtrip(res, tmp_path, name="run.nc"):
    """Save, load, save the loaded result, load again; returns both loaded results after checking
    that the second equals the first in everything `LoadedResult` exposes."""
    back = inertia.load(res.save(tmp_path / name))
    again = inertia.load(back.save(tmp_path / ("again-" + name)))
    for x in (again,):
        assert x.kind == back.kind and x.names == back.names
        _same(x.mean, back.mean)
        _same(x.cov, back.cov)
        assert x.verdict == back.verdict and x.settings == back.settings
        assert x.history == back.history and x.summary() == back.summary()
        pa, pb = _posterior(x.to_arviz()), _posterior(back.to_arviz())
        assert pa.keys() == pb.keys()
        for k in pa:
            _same(pa[k], pb[k])
    return back


def _check_sample(res, back):
    assert back.kind == "sample" and back.names == coordinate_names(res) and back.names
    _same(back.mean, res.mean)
    _same(back.cov, res.cov)
    assert back.verdict.converged == res.converged
    assert back.verdict.line() == res.verdict.line()
    assert back.verdict.problems == res.verdict.problems
    assert back.verdict.numbers["diverged_at"] == np.asarray(res.diverged_at).tolist()
    post = _posterior(back.to_arviz())
    start = int(round(res.burn_in_default * res.draws.shape[1]))
    kept = np.concatenate([post[k].reshape(post[k].shape[:2] + (-1,)) for k in post], axis=2)
    _same(kept, res.draws[:, start:])  # the names order the variables as the coordinates


def _check_fit(res, back):
    assert back.kind == "fit" and back.names == coordinate_names(res) and back.names
    _same(back.mean, np.asarray(res.mean))
    _same(back.cov, np.asarray(res.cov))
    assert back.converged == res.converged
    hist = res.to_dict()["checkpoints"]
    assert back.history == hist and len(hist) > 0
    a, b = _posterior(res.to_arviz()), _posterior(back.to_arviz())
    for k in a:
        _same(b[k], a[k])


def test_unadjusted_sample(tmp_path):
    t = kappa_family(3, 10.0, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a short run: the verdict may be negative
        res = sample(t, "hfhr", step_size=0.05, gamma=1.0, alpha=0.1, num_steps=400, seed=2)
    _check_sample(res, roundtrip(res, tmp_path))


def test_diverged_sample_with_nan_draws(tmp_path):
    t = from_potential(lambda q: 0.5 * q @ q, 1, name="cliff")
    t = t.replace(grad=lambda q: jnp.where(jnp.abs(q) < 4.0, q, jnp.nan))
    with pytest.warns(RuntimeWarning, match="diverged"):
        res = sample(t, "ula", step_size=2.5, num_chains=3, num_steps=40, seed=0,
                     init=np.array([0.5]), on_divergence="stop")
    assert np.isnan(res.draws).any() and np.all(res.diverged_at > 0)
    back = roundtrip(res, tmp_path)
    assert back.verdict.numbers["diverged_at"] == res.diverged_at.tolist()
    _check_sample(res, back)


def test_from_logdensity_sample_and_fit(tmp_path):
    prec = jnp.array([[2.0, 0.5], [0.5, 1.0]])
    t = from_logdensity(lambda p: -0.5 * p["a"] @ prec @ p["a"] - 0.5 * p["b"] ** 2,
                        {"a": np.zeros(2), "b": np.zeros(())})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        s = sample(t, seed=0, num_steps=300)
    back = roundtrip(s, tmp_path, "s.nc")
    _check_sample(s, back)
    assert back.names == ["a[0]", "a[1]", "b"]
    f = vi.fit(t, seed=0, num_steps=200)
    back = roundtrip(f, tmp_path, "f.nc")
    _check_fit(f, back)
    assert back.names == ["a[0]", "a[1]", "b"]


def test_multi_seed_and_float32_fits(tmp_path):
    t = kappa_family(4, 20.0, seed=0)
    multi = vi.fit(t, "stl-proj", seed=[0, 1], num_steps=200, batch_size=8)
    _check_fit(multi, roundtrip(multi, tmp_path, "multi.nc"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        f32 = vi.fit(t, dtype="float32", seed=0, num_steps=200)
    _check_fit(f32, roundtrip(f32, tmp_path, "f32.nc"))


def test_large_data_calibration(tmp_path):
    from inertia.sgmcmc import calibrate

    rng = np.random.default_rng(0)
    X = rng.normal(size=(1500, 3))
    y = (rng.random(1500) < 1 / (1 + np.exp(-(X @ np.array([0.5, -0.3, 0.2]) + 0.2)))).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = calibrate("logistic", (X, y), batch_size=32, num_steps=600, seed=1, num_chains=2,
                        intercept=True, large=True)
    back = roundtrip(res, tmp_path)
    assert back.kind == "calibration"
    _same(back.mean, np.asarray(res.mean))
    _same(back.cov, np.asarray(res.cov))
    assert back.verdict.converged == res.converged and back.verdict.numbers["max_z"] == res.max_z
    post = _posterior(back.to_arviz())
    draws = np.concatenate([post[k].reshape(post[k].shape[:2] + (-1,)) for k in post], axis=2)
    _same(draws, res.draws)
    assert math.isfinite(back.verdict.numbers["max_z"])
