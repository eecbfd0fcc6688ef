"""A run compiles each block shape once: the step parameters (eta, s) are arguments of the compiled
block, so averaging, its extensions and recoveries (smaller steps) reuse it; the numbers are those
of a block that has the step compiled in as a constant."""
import importlib

import jax
import numpy as np
import pytest

from inertia.targets import kappa_family
from inertia.vi import fit
from inertia.variational.monitor import ObjectiveMonitor, common_normals
from inertia.variational.options import FitOptions

from .conftest import small_logistic

runmod = importlib.import_module("inertia.variational.runner")


def _block_traces(run):
    """run() and the number of times the VI block (runner's `block`) was traced for compilation:
    JAX's compile events (`jax.monitoring`, /jax/core/compile/jaxpr_trace_duration), which fire
    for every new program whether or not the persistent cache then serves its binary."""
    names = []

    def listen(event, seconds, fun_name=None, **_):
        if event == "/jax/core/compile/jaxpr_trace_duration":
            names.append(fun_name)

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        out = run()
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    return out, names.count("block")


def _auto_fit(monkeypatch, constant):
    """The automatic fit of test_averaging_extension_... (averaging, then an extension at half the
    step) and its block traces; `constant`: the step compiled in, a program per step size."""
    if constant:
        build = runmod.Runner.build

        def constant_build(self):
            self.traced = False
            return build(self)

        monkeypatch.setattr(runmod.Runner, "build", constant_build)
    t = small_logistic(n=60, p=3).replace(alpha=None, beta=None)
    try:
        return _block_traces(lambda: fit(t, seed=0, init=(np.zeros(t.dim), np.eye(t.dim))))
    finally:
        monkeypatch.undo()


def test_new_step_sizes_reuse_the_compiled_block(monkeypatch):
    """One trace of the block for three step sizes; a block rebuilt per step (a step compiled in as
    a constant) is traced once per step size and fails here."""
    res, traced = _auto_fit(monkeypatch, constant=False)
    steps = {e["event"] for e in res.events}
    assert {"averaging", "averaging extended"} <= steps  # two changes of the step size
    assert traced == 1
    ref, traced_ref = _auto_fit(monkeypatch, constant=True)
    assert traced_ref >= 3  # the counter sees the programs a constant step costs
    # the same run, to rounding (XLA may fold a constant step differently)
    np.testing.assert_allclose(res.mean, ref.mean, rtol=0, atol=1e-9)
    np.testing.assert_allclose(res.cov, ref.cov, rtol=0, atol=1e-9)
    assert list(res.history["step"]) == list(ref.history["step"])


@pytest.mark.parametrize("method", ["fd-prox", "paired-proj", "price-stl-proj", "ngvi", "fb-gvi"])
def test_every_family_takes_its_step_as_an_argument(method):
    """Builders that need a concrete step fall back to a constant; none of these does."""
    opts = FitOptions(restart=False, recover=False, widen=False, monitor=False, average=False)
    r = runmod.Runner(kappa_family(5, 10.0), method, opts, 4, None, {}, 1)
    state = jax.vmap(lambda _: r.kernel.init(np.zeros(5), np.eye(5)))(np.arange(1))
    r._compiled(state, 1, 3)
    assert r.traced


def test_monitors_share_one_set_of_common_normals():
    """Monitors of 128, 256 and 1024 draws use the first rows of one seeded draw, which (JAX's
    partitionable threefry) is the draw of that shape itself: F_hat is the formula on those draws."""
    t = kappa_family(3, 10.0)
    m, L = np.array([0.3, -0.2, 0.1]), np.array([[1.0, 0, 0], [0.2, 0.7, 0], [-0.1, 0.3, 0.5]])
    for n in (1024, 256, 129):  # 129: a last chunk of one draw
        xi = np.asarray(jax.random.normal(jax.random.PRNGKey(3 + 7919), (n, 3)))
        np.testing.assert_array_equal(common_normals(3, n, 3), xi)
        v = ObjectiveMonitor(t, "chol", num_draws=n, seed=3)(m[None], L[None]).draws[0]
        want = np.array([float(t.potential(m + L @ x)) for x in xi]) \
            - 1.5 * np.log(2 * np.pi * np.e) - np.sum(np.log(np.diag(L)))
        np.testing.assert_allclose(v, want, rtol=1e-13, atol=1e-12)


def test_whitened_monitor_uses_the_parents_compiled_potential():
    """F_hat of a whitened target (V(shift + W z)) from the parent's compiled V at shift + W m,
    W S equals F_hat on the whitened potential itself."""
    from inertia.targets.whiten import whiten

    rng = np.random.default_rng(1)
    t = small_logistic(n=40, p=3)
    d = t.dim
    wt = whiten(t, rng.normal(size=d), np.tril(rng.normal(size=(d, d))) + 2 * np.eye(d))
    m, C = rng.normal(size=d), np.eye(d) + 0.1 * np.ones((d, d))
    got = ObjectiveMonitor(wt, "sym", num_draws=256, seed=0)(m[None], C[None]).draws
    direct = ObjectiveMonitor(wt.replace(affine=None), "sym", num_draws=256, seed=0)
    np.testing.assert_allclose(got, direct(m[None], C[None]).draws, rtol=1e-12, atol=1e-10)


def test_large_pools_are_drawn_per_monitor_and_not_kept(monkeypatch):
    """Above POOL_BYTES (large d) the common normals are drawn at the size asked and not kept, so a
    finished fit holds no d x 1024 array; the draws are the same."""
    from inertia.variational import monitor

    monkeypatch.setattr(monitor, "POOL_BYTES", 100 * 5 * 8)
    monitor._POOL.clear()
    xi = monitor.common_normals(3, 200, 5)  # 8,000 bytes > 4,000
    assert xi.shape == (200, 5) and not monitor._POOL
    np.testing.assert_array_equal(xi, np.asarray(jax.random.normal(jax.random.PRNGKey(3 + 7919),
                                                                   (200, 5))))
    monitor.common_normals(3, 64, 5)  # 2,560 bytes: kept
    assert monitor._POOL[(3, 5)].shape == (64, 5)
