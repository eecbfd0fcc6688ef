"""The BLAS pools run one thread inside fit, sample, calibrate and the CLI, and are restored after."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg.cython_lapack  # noqa: F401  (loads the OpenBLAS XLA's CPU LAPACK calls)
from threadpoolctl import threadpool_info, threadpool_limits

import inertia  # noqa: F401
from inertia import _threads
from inertia.mcmc import sample
from inertia.sgmcmc import calibrate
from inertia.targets import from_logdensity
from inertia.vi import fit


def _blas_threads():
    return sorted({p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"})


@pytest.fixture
def seen():
    """Thread counts of every loaded BLAS pool, observed from inside compiled code."""
    out = []

    def record(_):
        out.append(_blas_threads())

    def logdensity(x):
        jax.debug.callback(record, x)
        return -0.5 * jnp.sum(x**2)

    return out, logdensity


def _assert_one_thread_inside(seen_list, run):
    with threadpool_limits(limits=2, user_api="blas"):
        before = _blas_threads()
        run()
        after = _blas_threads()
    assert before == [2], "test setup: pools should have been raised to 2 threads"
    assert seen_list, "the callback never ran"
    assert all(s == [1] for s in seen_list), seen_list
    assert after == before


def test_fit_runs_with_one_blas_thread(seen):
    out, logdensity = seen
    target = from_logdensity(logdensity, jnp.zeros(3), alpha=1.0, beta=1.0)
    _assert_one_thread_inside(out, lambda: fit(target, "stl-proj", batch_size=2, num_steps=3,
                                               seed=0, evaluate=False))


def test_sample_runs_with_one_blas_thread(seen):
    out, logdensity = seen
    target = from_logdensity(logdensity, jnp.zeros(3), alpha=1.0, beta=1.0)
    _assert_one_thread_inside(out, lambda: sample(target, "hfhr", num_chains=2, num_steps=3,
                                                  seed=0))


def test_calibrate_runs_with_one_blas_thread(seen):
    out, _ = seen
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = X @ np.array([0.5, -1.0]) + rng.normal(size=40)

    def loss(theta, datum):
        jax.debug.callback(lambda _: out.append(_blas_threads()), theta)
        x, yy = datum
        return 0.5 * (yy - x @ theta) ** 2

    _assert_one_thread_inside(out, lambda: calibrate(loss, (X, y), dim=2, batch_size=10,
                                                     num_steps=20, num_chains=1, seed=0))


def test_cli_runs_with_one_blas_thread(monkeypatch):
    import sys

    from inertia import cli

    fit_module = sys.modules["inertia.vi.ensure"]

    out = []
    real = fit_module.fit

    def spy(*a, **k):
        out.append(_blas_threads())
        return real(*a, **k)

    monkeypatch.setattr(fit_module, "fit", spy)
    monkeypatch.setenv("INERTIA_JAX_CACHE", "off")
    _assert_one_thread_inside(out, lambda: cli.main(
        ["fit", "--model", "gaussian-kappa", "--dim", "3", "--method", "stl-proj", "--steps", "2",
         "--batch-size", "2", "--seed", "0", "--quiet"]))


def test_limit_can_be_turned_off():
    _threads.set_blas_threads(None)
    try:
        with threadpool_limits(limits=2, user_api="blas"), _threads.single_blas_thread():
            assert _blas_threads() == [2]
    finally:
        _threads.set_blas_threads(1)
    with pytest.raises(ValueError):
        _threads.set_blas_threads(0)
