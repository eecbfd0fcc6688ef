"""inertia.convergence.chain_stats: the one backend of R-hat, ESS and MCSE. Against ArviZ where the
estimators are the same, closed forms where they differ, and the same numbers from any blocking."""
import warnings

import numpy as np
import pytest

from inertia import convergence
from inertia.convergence import STATS, chain_stats


def _ar1(rng, phi, shape):
    """Stationary AR(1) chains with unit variance along axis 1."""
    x = np.empty(shape)
    x[:, 0] = rng.normal(size=shape[:1] + shape[2:])
    e = rng.normal(size=shape) * np.sqrt(1 - phi**2)
    for t in range(1, shape[1]):
        x[:, t] = phi * x[:, t - 1] + e[:, t]
    return x


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
    assert ours[2] > 1.05 > ours[0]  # one chain off by one sd: about 1.09


def test_ess_of_antithetic_chains_is_the_ar1_law():
    """AR(1) with phi = -0.5: ESS = N (1 - phi) / (1 + phi) = 3 N. 4 x 2,000 draws, 40
    coordinates: the median bulk ESS within 10 % of 24,000 (its sampling sd is about 4 %)."""
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
