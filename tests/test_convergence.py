"""The one run-until-converged loop (`inertia.convergence`): its rule, its extension schedule, and
SG-MCMC's one-chain run stopping when its ESS is reached."""
import warnings

import numpy as np
import pytest

from inertia.convergence import StopRule, ess_bulk, run_until_converged


def _iid_runner(num_chains, seed=0):
    """advance/view over i.i.d. N(0, 1) draws (chain, draw, 2): ESS about chains x draws."""
    rng = np.random.default_rng(seed)
    chunks = []

    def advance(n):
        chunks.append(rng.normal(size=(num_chains, n, 2)))

    return chunks, advance, lambda: np.concatenate(chunks, axis=1)


@pytest.mark.parametrize("num_chains", [1, 4])
def test_loop_stops_at_the_target_and_not_before(num_chains):
    """i.i.d. draws: the loop stops at the first judged total whose bulk ESS reaches the target
    (one chain: ESS alone, R-hat is not defined), and that total is well under the cap."""
    chunks, advance, view = _iid_runner(num_chains)
    goals = []
    rule = StopRule(1000.0, cap=100_000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no "All-NaN slice" with one chain
        done, why = run_until_converged(advance, 100, rule, view=view, on_extend=lambda g, j: goals.append(g))
    x = view()
    assert why == "converged" and x.shape[1] == done < 100_000
    assert np.min(ess_bulk(x)) >= 1000.0
    if len(chunks) > 1:  # the total before the last extension fell short
        assert np.min(ess_bulk(x[:, :done - chunks[-1].shape[1]])) < 1000.0
    # an i.i.d. run needs about 1000 / chains draws; the schedule overshoots by <= 1.1 x 1.5 x
    assert done <= 2.0 * 1000.0 / num_chains + 100


def test_next_goal_schedule_and_cap():
    """1.1 x the draws the ESS rate predicts, at least 1.5 x, whole blocks, growth and cap bounds."""
    assert StopRule(400.0).next_goal(100, 100.0) in (440, 441)   # 100 x 1.1 x 4, rounded up
    assert StopRule(400.0).next_goal(100, 390.0) == 150          # at least 1.5 x
    assert StopRule(400.0, block=64).next_goal(100, 100.0) == 448  # 7 blocks of 64
    assert StopRule(400.0, max_growth=4.0).next_goal(100, 1.0) == 400
    assert StopRule(400.0, cap=300).next_goal(100, 1.0) == 300
    chunks, advance, view = _iid_runner(2)
    done, why = run_until_converged(advance, 50, StopRule(1e9, cap=400), view=view)
    assert (done, why) == (400, "cap") and view().shape[1] == 400


def test_halt_and_unjudged_stop_at_once():
    chunks, advance, view = _iid_runner(2)
    assert run_until_converged(advance, 10, StopRule(1e9), view=view, halt=lambda: True) == (
        10, "halted")
    assert run_until_converged(advance, 10, StopRule(1e9), view=lambda: None) == (10, "unjudged")
    assert run_until_converged(advance, 10, StopRule(None), view=view) == (10, "fixed")


def test_one_chain_calibrate_stops_at_its_target_ess():
    """One SG(L)D chain with target_ess stops once its bulk ESS reaches the target: R-hat (NaN with
    one chain) must not keep it running to max_steps (~2 s warm, 8 s with its compilations)."""
    from inertia.sgmcmc import calibrate

    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 2))
    y = (X @ np.array([1.0, -1.0]) + rng.normal(size=500) > 0).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        res = calibrate("logistic", (X, y), batch_size=25, seed=0, target_ess=100, num_chains=1,
                        max_steps=200_000)
    assert res.draws.shape[0] == 1
    assert np.min(ess_bulk(res.draws)) >= 100
    assert res.settings["num_steps"] < 50_000, res.settings


def test_the_same_draws_are_summarised_once_and_changed_draws_anew(monkeypatch):
    """chain_stats on equal draws (a copy, as the run's last judgement then its diagnosis)
    computes each statistic once and returns equal numbers; a copy of the returned arrays is handed
    out (mutating one does not change the next answer); a statistic not computed yet is computed
    alone; draws that differ in one coordinate are summarised anew, and that coordinate's R-hat
    moves (one chain shifted by 50 sds: rank R-hat 1.53)."""
    from inertia import convergence

    calls = []
    real = convergence._stats
    monkeypatch.setattr(convergence, "_stats", lambda x, w: calls.append(w) or real(x, w))
    x = np.random.default_rng(0).normal(size=(4, 200, 3))
    a = convergence.chain_stats(x, ("rhat", "ess_bulk"))
    a["rhat"][:] = -1.0
    b = convergence.chain_stats(x.copy())
    assert calls == [("rhat", "ess_bulk"), ("ess_tail", "mcse_mean", "mcse_sd")]
    assert np.all(b["rhat"] > 0.9)
    y = x.copy()
    y[0, :, 1] += 50.0
    c = convergence.chain_stats(y)
    assert len(calls) == 3 and c["rhat"][1] > 1.3 and abs(c["rhat"][0] - b["rhat"][0]) < 1e-12


def test_the_judgement_computes_only_what_its_rule_reads(monkeypatch):
    """A plain rule reads R-hat and bulk ESS; a strict one also the tail ESS and MCSE(sd)."""
    from inertia import convergence

    calls = []
    real = convergence._stats
    monkeypatch.setattr(convergence, "_stats", lambda x, w: calls.append(w) or real(x, w))
    x = np.random.default_rng(1).normal(size=(4, 200, 2))
    StopRule(100.0).judge(x)
    StopRule(100.0, strict=True).judge(x + 1.0)
    assert calls[0] == ("rhat", "ess_bulk") and set(calls[1]) == set(convergence.STATS)


def test_doubled_ranks_are_scipys_average_ranks_times_two():
    """The unstable-sort ranks equal SciPy's rankdata("average") x 2 exactly, with many ties (values
    from 5 levels; draws rounded to 0.1) and with none, in rows of different tie patterns."""
    from scipy import stats

    from inertia.convergence import doubled_ranks

    rng = np.random.default_rng(3)
    for rows in (rng.integers(0, 5, size=(200, 41)).astype(float),
                 np.round(rng.normal(size=(30, 997)), 1), rng.normal(size=(7, 500))):
        got = doubled_ranks(rows)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, 2 * stats.rankdata(rows, method="average", axis=1))


def test_folded_ranks_from_one_sort_are_the_folded_draws_ranks():
    """The bulk's normal scores, and the folded draws' that `_z_scales` merges from the bulk's
    sort, equal those of ranking x and |x - median(x)| afresh, bit for bit: with ties from rounding, with repeated draws (as
    rejections make), a constant coordinate, and odd and even numbers of draws."""
    from scipy import stats

    from inertia.convergence import _normal_scores, _z_scales

    rng = np.random.default_rng(7)
    for c, n, d in ((4, 50, 6), (1, 7, 3), (3, 11, 5), (8, 4, 2)):
        x = rng.normal(size=(c, n, d))
        x[..., 0] = np.round(x[..., 0] * 2) / 2
        keep = np.maximum.accumulate(np.where(rng.random((c, n)) < 0.3, 0, np.arange(n)), axis=1)
        x[..., 1] = np.take_along_axis(x[..., 1], keep, axis=1)
        x[..., -1] = 1.5
        folded = np.abs(x - np.median(x, axis=(0, 1)))
        ranks = stats.rankdata(folded.reshape(c * n, d), method="average", axis=0)
        want = _normal_scores(c * n)[(2 * ranks).astype(np.int64) - 2].reshape(x.shape)
        np.testing.assert_array_equal(_z_scales(x)[1], want)
        bulk = stats.rankdata(x.reshape(c * n, d), method="average", axis=0)
        np.testing.assert_array_equal(
            _z_scales(x)[0],
            _normal_scores(c * n)[(2 * bulk).astype(np.int64) - 2].reshape(x.shape))


@pytest.mark.parametrize("shape", [(4, 1000, 5), (1, 501, 3), (8, 37, 4), (2, 4, 2)])
def test_ess_is_numpyros_estimator(shape):
    """The ESS (single-threaded FFTs) is NumPyro's effective_sample_size to rounding, on random-walk
    plus noise chains of even and odd lengths and one, two or eight chains; a constant coordinate
    counts every draw."""
    from numpyro.diagnostics import effective_sample_size

    from inertia.convergence import _ess

    rng = np.random.default_rng(7)
    x = 0.1 * rng.normal(size=shape).cumsum(axis=1) + rng.normal(size=shape)
    np.testing.assert_allclose(_ess(x), effective_sample_size(x), rtol=1e-12)
    x[..., 0] = 3.0
    assert _ess(x)[0] == shape[0] * shape[1]


def test_the_strict_rule_leaves_out_the_sd_of_a_tail_without_a_fourth_moment():
    # 4 x 2,000 iid draws: column 0 half-Cauchy (no variance: its sd's MCSE never settles), column
    # 1 N(0, 1). Bulk and tail ESS are about 8,000 for both; with the half-Cauchy's sd judged, the
    # MCSE(sd) term at target 400 would cut the ESS by orders of magnitude
    from inertia.convergence import HEAVY_TAIL, StopRule, tail_index

    rng = np.random.default_rng(5)
    x = np.stack([np.abs(rng.standard_cauchy((4, 2000))), rng.standard_normal((4, 2000))], axis=-1)
    k = tail_index(x.reshape(-1, 2))
    assert k[0] > 0.75 and k[1] < HEAVY_TAIL  # half-Cauchy: k = 1; Gaussian: k <= 0
    j = StopRule(400.0, strict=True).judge(x)
    assert j.met and j.ess > 4000
    t2 = rng.standard_t(2, (8000, 1))  # k = 1/2: no variance
    assert tail_index(t2)[0] >= HEAVY_TAIL
