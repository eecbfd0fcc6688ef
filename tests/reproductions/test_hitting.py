"""Hitting times, censoring, matched comparisons and log-log slopes on inputs with known answers."""
import numpy as np
import pytest

from reproductions.hitting import (compare, count_outcomes, format_counts, hitting_time,
                                         loglog_slope, mean_gap, pair_comparisons)

STEPS = np.arange(0, 70, 10)  # 0, 10, ..., 60


def test_hitting_time_relative_on_seed_means():
    # two seeds; mean gaps 1, .5, .1, .02, .009, .001, .0001
    mean = np.array([1.0, 0.5, 0.1, 0.02, 0.009, 0.001, 0.0001])
    gaps = np.stack([mean * 0.5, mean * 1.5], axis=1)
    np.testing.assert_allclose(mean_gap(gaps), mean)
    assert hitting_time(STEPS, gaps, 1e-2) == 40
    assert hitting_time(STEPS, gaps, 1e-3) == 50  # equality counts as a crossing
    assert hitting_time(STEPS, gaps, 0.5) == 10
    assert hitting_time(STEPS, gaps, 1e-5) is None  # right-censored at the last checkpoint
    assert hitting_time(STEPS, gaps, 1e-2, g0=0.5) == 50  # common g0 from elsewhere
    assert hitting_time(STEPS, gaps, 0.02, relative=False) == 30


def test_seed_mean_not_per_seed_and_missing_seed_blocks_a_checkpoint():
    # one seed crosses early, the mean does not
    gaps = np.array([[1.0, 1.0], [1e-4, 0.5], [1e-4, 1e-2], [np.nan, 1e-3], [1e-4, 1e-3]])
    steps = np.arange(5) * 10
    assert hitting_time(steps, gaps, 1e-2) == 20  # mean(1e-4, 1e-2) = 5.05e-3
    assert hitting_time(steps, gaps, 1e-3) == 40  # checkpoint 30 lacks a seed: not a crossing
    assert np.isnan(mean_gap(gaps)[3])


def test_hitting_time_rejects_bad_input():
    with pytest.raises(ValueError, match="disagree"):
        hitting_time(STEPS[:3], np.ones(4), 0.1)
    with pytest.raises(ValueError, match="initial gap"):
        hitting_time(STEPS[:2], np.array([0.0, 0.0]), 0.1)
    with pytest.raises(ValueError, match="positive"):
        hitting_time(STEPS[:2], np.ones(2), 0.0)


@pytest.mark.parametrize("acc, plain, outcome", [
    (10, 20, "acc"), (30, 20, "plain"), (20, 20, "equal"), (None, None, "neither"),
    (600, None, "acc"), (None, 10, "plain")])
def test_compare_with_censoring(acc, plain, outcome):
    assert compare(acc, plain) == outcome


def test_count_and_format():
    c = count_outcomes(["acc", "acc", "plain", "neither", "equal", "acc"])
    assert c == {"acc": 3, "plain": 1, "equal": 1, "neither": 1}
    assert format_counts(c) == "3/1/1/1"
    with pytest.raises(ValueError):
        count_outcomes(["win"])


def test_pair_comparisons_table():
    """Three datasets, two pairs, two thresholds; every cell's outcome computed by hand."""
    geo = lambda r: r ** (STEPS / 10)  # noqa: E731  geometric decay from gap 1
    runs = {}
    # pair "a": acc faster on d1, equal on d2, plain faster on d3 (acc censored at 1e-4)
    runs[("d1", "a", True)] = (STEPS, geo(0.09))     # 1e-2 at 20, 1e-4 at 40
    runs[("d1", "a", False)] = (STEPS, geo(0.3))     # 1e-2 at 40 (0.0081), 1e-4 censored
    runs[("d2", "a", True)] = (STEPS, geo(0.09))
    runs[("d2", "a", False)] = (STEPS, geo(0.09))
    runs[("d3", "a", True)] = (STEPS, np.maximum(geo(0.09), 3e-3))  # floors above 1e-4
    runs[("d3", "a", False)] = (STEPS, geo(0.2))     # 1e-2 at 30 (0.008), 1e-4 at 60 (6.4e-5)
    # pair "b": neither reaches anything on d1; other datasets missing (skipped)
    runs[("d1", "b", True)] = (STEPS, np.ones(7))
    runs[("d1", "b", False)] = (STEPS, np.ones(7))
    t = pair_comparisons(runs, ["a", "b"], [1e-2, 1e-4], ["d1", "d2", "d3"])
    assert t[("a", 1e-2)]["counts"] == {"acc": 2, "plain": 0, "equal": 1, "neither": 0}
    assert t[("a", 1e-2)]["cells"]["d1"] == ("acc", 20, 40)
    assert t[("a", 1e-4)]["counts"] == {"acc": 1, "plain": 1, "equal": 1, "neither": 0}
    assert t[("a", 1e-4)]["cells"]["d3"] == ("plain", None, 60)
    assert t[("b", 1e-2)]["counts"] == {"acc": 0, "plain": 0, "equal": 0, "neither": 1}


def test_loglog_slope_exact_and_interval():
    x = np.array([10, 30, 100, 300, 1000.0])
    fit = loglog_slope(x, 3 * x**0.5)
    assert fit["slope"] == pytest.approx(0.5, abs=1e-12) and fit["stderr"] < 1e-6
    rng = np.random.default_rng(0)
    # coverage of the 95 % t-interval under exact Gaussian noise in log y: binomial(400, .95) check
    hits = 0
    for _ in range(400):
        y = np.exp(np.log(x) + rng.normal(scale=0.2, size=x.size))
        f = loglog_slope(x, y)
        hits += f["low"] <= 1.0 <= f["high"]
    assert 360 <= hits <= 396  # mean 380, sd 4.4
    with pytest.raises(ValueError):
        loglog_slope([1, 2], [1, 2])
