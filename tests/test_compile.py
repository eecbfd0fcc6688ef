"""XLA optimisation tiers (inertia._compile): which targets get the fast-compile tier, that its
options reach XLA only at the top level, and that a fit's numbers agree across tiers to rounding."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from inertia import _compile
from inertia.targets import from_potential, gaussian, logistic_regression
from inertia.vi import fit


def test_small_target_gets_the_fast_tier_and_a_large_one_the_optimized(monkeypatch):
    monkeypatch.delenv("INERTIA_COMPILE", raising=False)
    small = gaussian(np.zeros(3), np.eye(3))
    assert _compile.work(small) < _compile.FAST_WORK["fit"] < _compile.FAST_WORK["sample"]
    assert _compile.tiers_of(small)[0] == "fast"
    assert _compile.tiers_of(small, "sample")[0] == "fast"
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20000, 40))
    big = logistic_regression(X, (rng.uniform(size=20000) < 0.5).astype(float))
    # 20,000 rows x 41 columns: the gradient alone is ~5e6 flops, over both drivers' budgets
    assert _compile.work(big) > _compile.FAST_WORK["sample"]
    assert _compile.tiers_of(big)[0] == "optimized"
    assert _compile.tiers_of(big, "sample")[0] == "optimized"
    mid = logistic_regression(X[:3000, :30], (rng.uniform(size=3000) < 0.5).astype(float))
    assert _compile.FAST_WORK["fit"] < _compile.work(mid) < _compile.FAST_WORK["sample"]
    assert _compile.tiers_of(mid)[0] == "optimized"
    assert _compile.tiers_of(mid, "sample")[0] == "fast"
    wide = from_potential(lambda x: 0.5 * x @ x, 300, name="wide")  # d^3 / 8 alone is over
    assert _compile.work(wide) == 300.0 ** 3 / 8 + 8 * 300.0 ** 2  # no gradient needed
    assert _compile.tiers_of(wide, "sample")[0] == "optimized"


def test_a_long_run_of_a_small_target_is_optimized(monkeypatch):
    monkeypatch.delenv("INERTIA_COMPILE", raising=False)
    length = _compile.run_length("fit", {"num_steps": 9000, "seed": list(range(10)),
                                         "batch_size": 64})
    assert length == pytest.approx(9 * 10 * 8)
    assert _compile.run_length("fit", {}) == 1.0 and _compile.run_length("sample", {}) == 1.0
    assert _compile.run_length("sample", {"num_steps": 500, "num_chains": 8}) == 1.0
    small = gaussian(np.zeros(8), np.eye(8))
    assert _compile.tiers_of(small, "fit")[0] == "fast"
    assert _compile.tiers_of(small, "fit", 2.0)[0] == "fast"
    assert _compile.tiers_of(small, "fit", length)[0] == "optimized"  # a production run


def test_environment_forces_a_tier_and_a_bad_target_falls_back(monkeypatch):
    small = gaussian(np.zeros(2), np.eye(2))
    monkeypatch.setenv("INERTIA_COMPILE", "optimized")
    assert _compile.tiers_of(small)[0] == "optimized"
    monkeypatch.setenv("INERTIA_COMPILE", "fast")
    assert _compile.tiers_of(object())[0] == "fast"
    monkeypatch.delenv("INERTIA_COMPILE")
    assert _compile.tiers_of(object())[0] == "optimized"  # the driver raises its own error later
    with pytest.raises(ValueError, match="unknown compile tier"):
        with _compile.tier("quick"):
            pass


def test_options_apply_at_the_top_level_only():
    inner = _compile.jit(lambda x: jnp.sin(x) * 2.0)
    outer = _compile.jit(lambda x: inner(x) + 1.0)
    x = jnp.linspace(0.0, 1.0, 5)
    with _compile.tier("fast"):
        assert _compile.options() == (_compile.TIERS["fast"] if jax.default_backend() == "cpu"
                                      else None)
        got = outer(x)  # inner is traced inside outer: it takes no options of its own
    assert _compile.options() is None
    np.testing.assert_allclose(got, np.sin(np.linspace(0.0, 1.0, 5)) * 2.0 + 1.0, rtol=1e-14)
    if jax.default_backend() == "cpu":  # the inner function fell back to its plain jit
        assert list(outer._jits) == [tuple(sorted(_compile.TIERS["fast"].items()))]
        assert () in inner._jits
    with _compile.tier("fast"):
        with _compile.tier_for(gaussian(np.zeros(900), np.eye(900))) as name:
            assert name == "fast"  # a tier already set is kept


def test_fit_agrees_across_tiers_to_rounding():
    target = logistic_regression(np.random.default_rng(1).normal(size=(60, 3)),
                                 (np.random.default_rng(2).uniform(size=60) < 0.5).astype(float))
    runs = {}
    for name in ("fast", "lean", "optimized"):
        with _compile.tier(name):
            runs[name] = fit(target, "stl-proj", batch_size=8, num_steps=300, seed=0)
    b = runs["optimized"]
    for a in (runs["fast"], runs["lean"]):
        assert a.num_steps == b.num_steps
        np.testing.assert_allclose(a.mean, b.mean, rtol=1e-11, atol=1e-13)
        np.testing.assert_allclose(a.cov, b.cov, rtol=1e-10, atol=1e-13)


def test_hot_programs_of_a_mid_sized_model_are_lean_and_of_a_large_one_optimized(monkeypatch):
    monkeypatch.delenv("INERTIA_COMPILE", raising=False)
    rng = np.random.default_rng(3)
    small = logistic_regression(rng.normal(size=(500, 10)), (rng.uniform(size=500) < 0.5) * 1.0)
    assert _compile.HOT_FAST_WORK["sample"] < _compile.work(small) < _compile.HOT_FAST_WORK["fit"]
    assert _compile.tiers_of(small, "fit") == ("fast", "fast")  # its VI block at a batch of 8
    assert _compile.tiers_of(small, "fit", 1.0, 4.0) == ("fast", "lean")  # at a batch of 32
    assert _compile.tiers_of(small, "sample") == ("fast", "lean")  # the chains run longer
    mid = logistic_regression(rng.normal(size=(2000, 10)), (rng.uniform(size=2000) < 0.5) * 1.0)
    assert _compile.HOT_FAST_WORK["fit"] < _compile.work(mid) < _compile.LEAN_WORK["fit"]
    with _compile.tier_for(mid, "fit") as name:
        assert name == "fast" and _compile.current() == "fast"
        assert _compile.current(hot=True) == "lean"  # the VI block and the chains
        assert _compile.current(optimized=True) == "optimized"  # the monitor's batched potential
    assert _compile.tiers_of(mid, "fit", 8.0) == ("optimized", "optimized")  # a production run
    wide = logistic_regression(rng.normal(size=(3000, 30)), (rng.uniform(size=3000) < 0.5) * 1.0)
    assert _compile.FAST_WORK["fit"] < _compile.work(wide) < _compile.FAST_WORK["sample"]
    assert _compile.work(wide) < min(_compile.LEAN_WORK.values())
    assert _compile.tiers_of(wide, "fit") == ("optimized", "lean")
    assert _compile.tiers_of(wide, "sample") == ("fast", "lean")
    big = logistic_regression(rng.normal(size=(20000, 40)), (rng.uniform(size=20000) < 0.5) * 1.0)
    assert _compile.work(big) > max(_compile.LEAN_WORK.values())
    assert _compile.tiers_of(big, "fit") == _compile.tiers_of(big, "sample") == ("optimized",) * 2
    tiny = gaussian(np.zeros(3), np.eye(3))
    with _compile.tier_for(tiny, "sample"):
        assert _compile.current() == _compile.current(hot=True) == "fast"
    monkeypatch.setenv("INERTIA_COMPILE", "fast")
    assert _compile.tiers_of(mid)[1] == "fast"
    with _compile.tier_for(mid, "fit"):  # a forced tier reaches every program
        assert _compile.current(optimized=True) == _compile.current(hot=True) == "fast"
    assert _compile.current() == "optimized"  # outside every run


def test_the_samplers_check_takes_the_runs_tier_and_the_monitors_potential_stays_optimized():
    from inertia.diagnostics import count_nonfinite_potential
    from inertia.targets.base import BATCH, batched_potential

    def V(x):
        return jnp.where(x[0] < 2.0, 0.5 * jnp.sum(x**2), jnp.nan)

    kept, check = batched_potential(V), batched_potential(V, optimized=False)
    assert kept is batched_potential(V) and check is batched_potential(V, optimized=False)
    draws = np.zeros((2, 300, 2))
    draws[1, :7, 0] = 3.0  # seven draws where V is nan
    with _compile.tier_for(gaussian(np.zeros(2), np.eye(2)), "sample"):
        assert count_nonfinite_potential(V, draws) == 7
        kept(np.zeros((BATCH, 2)))
    if jax.default_backend() == "cpu":
        assert list(check._jits) == [_compile._options_of("fast", "cpu")]
        assert list(kept._jits) == [()]


def test_device_puts_host_arrays_without_compiling():
    import logging

    names = []

    class _Log(logging.Handler):
        def emit(self, record):
            if record.getMessage().startswith("Finished XLA compilation"):
                names.append(record.getMessage())

    shape = (7, 13)  # a shape no other test stages
    x = np.arange(91.0).reshape(shape) / 3.0
    h, old = _Log(), jax.config.jax_log_compiles
    jax.config.update("jax_log_compiles", True)
    logging.getLogger("jax").addHandler(h)
    try:
        y = _compile.device(x)
        z = _compile.device(x, np.float32)
        k = _compile.device(3, np.int64)
    finally:
        logging.getLogger("jax").removeHandler(h)
        jax.config.update("jax_log_compiles", old)
    assert names == []
    ref = jnp.asarray(x)  # what it replaces: same values, dtype and (non-weak) type
    assert isinstance(y, jax.Array) and y.dtype == ref.dtype and not y.weak_type
    np.testing.assert_array_equal(np.asarray(y), np.asarray(ref))
    assert z.dtype == jnp.float32 and k.dtype == jnp.int64 and k.shape == ()


def test_fit_sizes_its_block_tier_by_the_default_batch(monkeypatch):
    from inertia.variational.fit import _block_length

    monkeypatch.delenv("INERTIA_COMPILE", raising=False)
    assert _block_length(gaussian(np.zeros(4), np.eye(4)), {}, 1.0) == 1.0  # batch 8
    assert _block_length(gaussian(np.zeros(44), np.eye(44)), {}, 2.0) == 2.0 * 22 / 8
    assert _block_length(gaussian(np.zeros(44), np.eye(44)), {"batch_size": 8}, 1.0) == 1.0


def test_the_tier_policy_is_a_function_of_a_cost_number(monkeypatch):
    monkeypatch.delenv("INERTIA_COMPILE", raising=False)
    c = _compile
    assert c.tiers(c.HOT_FAST_WORK["fit"], "fit") == ("fast", "fast")
    assert c.tiers(1.01 * c.HOT_FAST_WORK["fit"], "fit") == ("fast", "lean")
    assert c.tiers(1.01 * c.FAST_WORK["fit"], "fit") == ("optimized", "lean")
    assert c.tiers(1.01 * c.LEAN_WORK["fit"], "fit") == ("optimized", "optimized")
    assert c.tiers(c.HOT_FAST_WORK["sample"], "sample", 1.0, 2.0) == ("fast", "lean")
    assert c.tiers(1.0, "sample", 1.01 * c.FAST_MAX_LENGTH) == ("optimized", "optimized")
