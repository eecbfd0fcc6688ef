"""`fit`: exact query accounting (spec §7), reproducibility, vmapped seeds, bad input, divergence."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from inertia.targets import TargetError, from_potential, kappa_family
from inertia.vi import METHODS, fit, make_kernel

STOCHASTIC = [n for n in METHODS if n != "exact-apg"]


@pytest.mark.parametrize("method", STOCHASTIC)
def test_query_counts_equal_spec(method, counting):
    """Counted gradient / HVP calls of 3 compiled updates equal 3x the spec §7 cost."""
    target, counts = counting
    b, d = 3, target.dim
    kernel, m_spec, est, acc, rule = make_kernel(target, method, batch_size=b)
    state = kernel.init(jnp.zeros(d), jnp.eye(d))
    run = jax.jit(lambda st, ks: jax.lax.scan(kernel.step, st, ks))
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    jax.block_until_ready(run(state, keys))
    counts["grad"] = counts["hvp"] = 0
    jax.block_until_ready(run(state, keys))
    jax.effects_barrier()
    assert (counts["grad"], counts["hvp"]) == tuple(3 * c for c in est.cost(d, b)), method
    table = {"fd": (d + 1 + b, 0), "paired": (b, d * b), "stl": (b, 0), "price-stl": (b, d * b),
             "reparam": (b, 0), "price": (b, d * b)}
    assert est.cost(d, b) == table[est.name]


def test_history_counts_and_same_seed_same_numbers():
    t = kappa_family(6, 50.0)
    r1 = fit(t, "fd-proj", batch_size=8, num_steps=40, seed=3, checkpoint_every=10)
    r2 = fit(t, "fd-proj", batch_size=8, num_steps=40, seed=3, checkpoint_every=10)
    r3 = fit(t, "fd-proj", batch_size=8, num_steps=40, seed=4, checkpoint_every=10)
    np.testing.assert_array_equal(r1.mean, r2.mean)
    np.testing.assert_array_equal(r1.history["gap"], r2.history["gap"])
    assert not np.array_equal(r1.mean, r3.mean)
    np.testing.assert_array_equal(r1.history["step"], [0, 10, 20, 30, 40])
    np.testing.assert_array_equal(r1.history["grad_evals"], np.arange(0, 41, 10) * (6 + 1 + 8))
    np.testing.assert_array_equal(r1.history["hvp_evals"], 0)


def test_vmapped_seeds_equal_sequential_runs():
    t = kappa_family(5, 30.0)
    seeds = [0, 7, 11]
    many = fit(t, "stl-proj", batch_size=4, num_steps=30, seed=seeds, checkpoint_every=10)
    for i, s in enumerate(seeds):
        one = fit(t, "stl-proj", batch_size=4, num_steps=30, seed=s, checkpoint_every=10)
        np.testing.assert_allclose(many.mean[i], one.mean, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(many.history["gap"][:, i], one.history["gap"][:, 0],
                                   rtol=1e-10, atol=1e-13)


def test_uneven_checkpoints_and_result_api():
    t = kappa_family(4, 10.0)
    r = fit(t, "price-stl-proj", batch_size=2, num_steps=25, seed=0, checkpoint_every=10)
    np.testing.assert_array_equal(r.history["step"], [0, 10, 20, 25])
    assert r.num_steps == 25 and r.dim == 4
    np.testing.assert_allclose(r.cov, r.factor @ r.factor.T, atol=1e-12)
    draws = r.sample(jax.random.PRNGKey(0), 20000)
    assert draws.shape == (20000, 4)
    np.testing.assert_allclose(draws.mean(0), r.mean, atol=5 * np.sqrt(np.diag(r.cov).max() / 2e4))
    out = r.to_dict()
    for key in ("method", "accelerated", "batch_size", "num_steps", "dim", "mean", "cov",
                "checkpoints", "final_gap"):
        assert key in out
    assert set(out["checkpoints"][0]) >= {"step", "gap", "objective", "grad_evals", "hvp_evals",
                                          "seconds"}


def test_bad_input_is_named():
    t = kappa_family(4, 10.0)
    with pytest.raises(KeyError, match="unknown VI method"):
        fit(t, "nope", num_steps=1)
    with pytest.raises(ValueError, match="batch_size"):
        fit(t, "stl-proj", batch_size=0, num_steps=1)
    with pytest.raises(ValueError, match="baseline"):
        fit(t, "dgg-prox", accelerated=True, num_steps=1)
    with pytest.raises(ValueError, match="init"):
        fit(t, "stl-proj", num_steps=1, init=(jnp.zeros(3), jnp.eye(3)))
    with pytest.raises(TargetError, match="alpha must be > 0"):
        from_potential(lambda x: x @ x, 2, alpha=0.0, beta=1.0)
    with pytest.raises(TargetError, match="alpha <= beta"):
        from_potential(lambda x: x @ x, 2, alpha=2.0, beta=1.0)
    no_bounds = from_potential(lambda x: x @ x, 2)  # bounds now estimated, not required
    res = fit(no_bounds, "stl-proj", num_steps=50, batch_size=4)
    assert res.bounds["estimated"] and res.curvature["lambda_max"][0] == pytest.approx(2.0)
    np.testing.assert_allclose(res.cov, 0.5 * np.eye(2), atol=1e-8)  # Laplace start is exact
    no_expect = from_potential(lambda x: 0.5 * x @ x, 2, alpha=1.0, beta=1.0)
    with pytest.raises(TargetError, match="exact Gaussian expectations"):
        fit(no_expect, "exact-apg", num_steps=1)
    nan_at_start = from_potential(lambda x: jnp.log(x[0]) + x @ x, 2, alpha=1.0, beta=2.0)
    with pytest.raises(FloatingPointError, match="not finite"):
        fit(nan_at_start, "stl-proj", num_steps=1)


def test_divergence_stops_with_last_finite_state():
    t = kappa_family(4, 10.0)
    with pytest.warns(RuntimeWarning, match="divergence"):
        r = fit(t, "fd-prox", accelerated=False, batch_size=2, num_steps=400, seed=0,
                checkpoint_every=5, step_size=3.0)  # 15x the stable step 1/beta
    assert r.diverged is not None and r.diverged["step"] <= 400
    assert r.history["step"][-1] == r.diverged["last_finite_step"] < r.diverged["step"]
    assert np.all(np.isfinite(r.mean)) and np.all(np.isfinite(r.history["gap"]))


def test_no_gap_when_target_lacks_expectations():
    t = from_potential(lambda x: 0.5 * x @ x + jnp.sum(jnp.log(jnp.cosh(x))), 3, alpha=1.0,
                       beta=2.0)
    r = fit(t, "stl-proj", batch_size=8, num_steps=200, seed=0, checkpoint_every=100)
    assert r.history["gap"] is None and r.final_gap is None
    np.testing.assert_allclose(r.mean, 0.0, atol=0.05)  # symmetric target: mean zero


@pytest.mark.parametrize("method", ["ngvi-reparam", "bam", "stl-proj"])
def test_rebuild_after_bounds_reestimate_passes_the_wider_set_only_to_projected_methods(method):
    """After a curvature re-estimate the runner rebuilds its kernel with the union of the old and
    new bounds as feasible set; methods without a feasible set (NGVI, BaM) must rebuild without
    it (they raised "unknown options ['set_bounds']" on stochastic volatility)."""
    from inertia.variational.options import FitOptions
    from inertia.variational.runner import Runner

    t = kappa_family(4, 10.0)
    opts = FitOptions(accelerated=METHODS[method].accelerable, restart=False, recover=False,
                      widen=False, monitor=False, average=False, window=5)
    runner = Runner(t, method, opts, 8, None, {}, 1)
    runner.target = t.replace(alpha=t.alpha / 10.0, beta=t.beta * 10.0)
    runner.set_bounds = (t.alpha / 10.0, t.beta)  # union with the re-estimated bounds differs
    runner.build()
    state = runner.kernel.init(jnp.zeros(4), jnp.eye(4))
    state, _ = runner.kernel.step(state, jax.random.PRNGKey(0))
    assert np.all(np.isfinite(np.asarray(state.m)))
