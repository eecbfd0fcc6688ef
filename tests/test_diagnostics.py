"""inertia.diagnostics and its one backend of R-hat, ESS and MCSE (inertia.convergence.chain_stats):
against ArviZ where the estimators are the same, closed forms (AR(1) chains) where they differ, the
same numbers from any blocking, verdicts."""
import warnings

import numpy as np
import pytest

import inertia  # noqa: F401
from inertia import convergence
from inertia.convergence import STATS, chain_stats
from inertia.diagnostics import count_nonfinite_potential, diagnose, summary


def _ar1(rng, phi, shape):
    x = np.empty(shape)
    x[:, 0] = rng.normal(size=shape[:1] + shape[2:])
    e = rng.normal(size=shape) * np.sqrt(1 - phi**2)
    for t in range(1, shape[1]):
        x[:, t] = phi * x[:, t - 1] + e[:, t]
    return x


def test_agrees_with_arviz_summary():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        import arviz as az
    rng = np.random.default_rng(1)
    x = _ar1(rng, 0.7, (4, 500, 3)) + np.array([0.0, 1.0, -2.0])
    x[2, :, 2] += 0.5  # one chain off: R-hat of x[2] above 1.01
    dg = diagnose(x, ["a", "b", "c"])
    ref = az.summary(az.convert_to_dataset({"x": x}), round_to="none", stat_focus="mean")
    for ours, col in [(dg.mean, "mean"), (dg.sd, "sd"), (dg.rhat, "r_hat")]:
        np.testing.assert_allclose(ours, ref[col].to_numpy(), rtol=1e-10, err_msg=col)
    # ESS and MCSE: NumPyro's estimator, which differs from ArviZ's in two details of Geyer's
    # sequence (ArviZ adds the first autocorrelation past the truncation when positive, and
    # caps the second pair of lags by the first); for these positively correlated chains
    # (autocorrelation time 5.7) both are within noise of 0: under 3 % in ESS
    for ours, col in [(dg.ess_bulk, "ess_bulk"), (dg.ess_tail, "ess_tail"),
                      (dg.mcse_mean, "mcse_mean"), (dg.mcse_sd, "mcse_sd")]:
        ratio = ours / ref[col].to_numpy()
        assert np.all(np.abs(ratio - 1.0) < 0.03), (col, ratio)
    np.testing.assert_allclose(dg.q05, np.quantile(x.reshape(-1, 3), 0.05, axis=0))
    assert dg.rhat[2] > 1.02 and not dg.converged
    assert any(p.startswith("R-hat > 1.01") and p.endswith("c)") for p in dg.verdict.problems)


def test_ess_of_ar1_chains_matches_theory():
    # AR(1) with coefficient phi: ESS = N (1 - phi) / (1 + phi); 4 x 4000 draws, phi = 0.8 -> 1778
    rng = np.random.default_rng(2)
    x = _ar1(rng, 0.8, (4, 4000, 2))
    dg = diagnose(x)
    np.testing.assert_allclose(dg.ess_bulk, 16000 * 0.2 / 1.8, rtol=0.15)
    assert dg.converged and np.all(dg.rhat < 1.01)
    assert "converged" in summary(x) and "x[1]" in summary(x)


def test_few_effective_draws_and_nonfinite_are_not_converged():
    rng = np.random.default_rng(3)
    slow = _ar1(rng, 0.995, (4, 400, 1))
    dg = diagnose(slow)
    assert not dg.converged and any("bulk ESS < 100" in p for p in dg.verdict.problems)
    x = rng.normal(size=(2, 300, 2))
    dg = diagnose(x, nonfinite_potential=30)
    assert not dg.converged and "not finite at 30 of 600 draws (5.0 %)" in dg.verdict.problems[0]
    x[1, 200:] = np.nan
    assert any("100 of 600 draws are not finite" in p for p in diagnose(x).verdict.problems)


def test_constant_coordinates_are_not_judged():
    # an LKJ Cholesky factor has entries fixed at 1 and 0: ArviZ's R-hat and ESS are NaN there, and
    # they must not make a converged run "NOT CONVERGED"; a slow coordinate beside them still does
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.normal(size=(4, 2000, 2)), np.ones((4, 2000, 1)),
                        np.zeros((4, 2000, 1))], axis=2)
    dg = diagnose(x, ["a", "b", "L[0,0]", "L[0,1]"])
    assert np.isnan(dg.rhat[2]) and dg.converged, dg.verdict.problems
    x[..., 1] = _ar1(rng, 0.995, (4, 2000, 1))[..., 0]
    dg = diagnose(x, ["a", "b", "L[0,0]", "L[0,1]"])
    assert not dg.converged and all("L[0" not in p for p in dg.verdict.problems)
    assert any("b" in p for p in dg.verdict.problems)


def test_count_nonfinite_potential():
    import jax.numpy as jnp

    x = np.linspace(-2, 2, 3 * 7).reshape(3, 7, 1)
    n = count_nonfinite_potential(lambda q: jnp.where(q[0] > 1.0, jnp.nan, q[0] ** 2), x, batch=4)
    assert n == int(np.sum(x > 1.0))


def test_bad_shapes():
    with pytest.raises(ValueError, match="draws must be shaped"):
        diagnose(np.zeros((2, 2, 1)))
    with pytest.raises(ValueError, match="2 names for 3"):
        diagnose(np.zeros((2, 10, 3)), ["a", "b"])


def test_table_rows_cut_to_zero_one_and_bad_counts():
    """max_rows = 0 prints the header and the count (was a crash); 1 keeps the least converged
    parameter (the one chain shifted by 3 sds); a negative or fractional count is refused."""
    x = np.random.default_rng(1).normal(size=(4, 200, 3))
    x[0, :, 1] += 3.0
    dg = diagnose(x, ["a", "b", "c"])
    zero = dg.table(0).splitlines()
    assert len(zero) == 2 and zero[1] == "... 3 parameters (none shown: max_rows = 0)"
    one = dg.table(1).splitlines()
    assert len(one) == 3 and one[1].startswith("b ") and "2 more parameters" in one[2]
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="max_rows must be a whole number"):
            dg.table(bad)


def _arviz(x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        import arviz as az
    numba = getattr(az, "Numba", None)
    was = bool(getattr(numba, "numba_flag", False))
    if was:  # ArviZ 0.23's Numba MCSE(sd) fails under NumPy >= 2.4
        numba.disable_numba()
    try:
        ds = az.convert_to_dataset({"x": x})
        return {"rhat": az.rhat(ds, method="rank")["x"].values,
                "ess_bulk": az.ess(ds, method="bulk")["x"].values,
                "ess_tail": az.ess(ds, method="tail")["x"].values}
    finally:
        if was:
            numba.enable_numba()


def test_rhat_equals_arviz_with_ties_shifts_and_one_bad_chain():
    """R-hat is ArviZ's to rounding: on draws with repeated values (Metropolis rejections: every
    draw 4 times), on rounded draws (many ties) and with one chain shifted by one sd."""
    rng = np.random.default_rng(5)
    x = np.repeat(_ar1(rng, 0.5, (4, 150, 3)), 4, axis=1)
    x[:, :, 1] = np.round(x[:, :, 1], 1)
    x[2, :, 2] += 1.0
    ours, ref = chain_stats(x)["rhat"], _arviz(x)["rhat"]
    np.testing.assert_allclose(ours, ref, rtol=1e-12)
    assert ours[2] > 1.05 > ours[0]  # one chain off by one sd: read 1.149 (and 1.011)


def test_ess_of_antithetic_chains_is_the_ar1_law():
    """AR(1) with phi = -0.5: ESS = N (1 - phi) / (1 + phi) = 3 N. 4 x 2,000 draws, 40
    coordinates: the median bulk ESS within 10 % of 24,000 (over 12 other data seeds it read
    1.02-1.06 of it, sd 1.1 %: Geyer's truncation biases it up by a few per cent)."""
    rng = np.random.default_rng(6)
    ess = chain_stats(_ar1(rng, -0.5, (4, 2000, 40)), ("ess_bulk",))["ess_bulk"]
    assert abs(np.median(ess) / 24000.0 - 1.0) < 0.10, np.median(ess)


def test_blocks_and_threads_give_the_same_numbers(monkeypatch):
    """Coordinates in blocks of 3 on two threads, then one block on one thread: equal numbers."""
    rng = np.random.default_rng(7)
    x = _ar1(rng, 0.3, (3, 100, 10))
    monkeypatch.setattr(convergence, "_BLOCK", 3 * 300)
    monkeypatch.setattr(convergence._prefetch, "cores", lambda: 2)
    a = convergence._stats(x, STATS)
    monkeypatch.setattr(convergence, "_BLOCK", 1 << 18)
    monkeypatch.setattr(convergence._prefetch, "cores", lambda: 1)
    b = convergence._stats(x, STATS)
    for k in STATS:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def test_nonfinite_constant_and_short():
    """A coordinate with a NaN draw: NaN, the others unchanged; a constant coordinate: ESS is the
    number of draws and R-hat NaN (as ArviZ); fewer than 4 draws: NaN; no warnings."""
    rng = np.random.default_rng(8)
    x = rng.normal(size=(2, 50, 3))
    clean = chain_stats(x)
    y = x.copy()
    y[1, 7, 0] = np.nan
    y[:, :, 2] = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        st = chain_stats(y)
        short = chain_stats(x[:, :3])
    assert all(np.isnan(st[k][0]) for k in STATS)
    for k in STATS:
        assert st[k][1] == clean[k][1], k
    assert st["ess_bulk"][2] == 100.0 and np.isnan(st["rhat"][2])
    assert all(np.isnan(short[k]).all() for k in STATS)
    with pytest.raises(ValueError, match="unknown statistics"):
        chain_stats(x, ("ess",))
    with pytest.raises(ValueError, match="shaped"):
        chain_stats(x[0])
