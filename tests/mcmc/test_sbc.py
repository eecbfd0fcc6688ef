"""Simulation-based calibration (Talts et al. 2018; Modrak et al. 2023) of the default sampler, and a
check that the same SBC detects an unadjusted scheme's step-size bias.

Machinery in benchmarks/sbc.py (`python3 benchmarks/sbc.py` runs the large version): R
replications theta_r ~ prior, y_r ~ p(y | theta_r) from the NumPyro model itself; one call of
`inertia.mcmc.sample(target, seed=1, num_steps=NUM_STEPS)` (automatic warm-up: Gaussian fit,
whitened frame, dual averaging, trajectory choice; then NUM_STEPS Metropolis-adjusted HFHR steps
on 4 chains) on the product of the R posteriors (the data of all replications are one array
argument, so one compilation and one warm-up serve them all); ranks of theta_r among 99 thinned
draws, binned (`sbc.bins_for(R)` bins, >= 5 expected per bin), Pearson's chi-square and the mean
rank's z (a shift test) per parameter, the smaller p-value doubled (`sbc.rank_pvalue`). The five models together are one family: Holm over each model's parameters at level
FWER / 5 (Bonferroni over the models), so a correct sampler fails this file with probability at
most FWER = 0.01, whatever the seed. The seeds are fixed (0 for the data, 1 for the sampler) for
reproducibility, not chosen. Caveat: the replications share the chains' accept/reject steps and
warm-up, so their ranks are not exactly independent; with 99 draws thinned from 2,000 the
dependence is small, and the benchmark's larger runs check the same claim with more power.
"""
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import inertia  # noqa: F401
from inertia.mcmc import sample

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import sbc  # noqa: E402

FWER = sbc.FWER
NUM_STEPS = sbc.CI_NUM_STEPS  # 500
# replications per model: as many as the CI budget allows (the product's dimension is R x d)
# constrained 200 (2 rows of data each: wide posteriors, so a Jacobian error shows: with the
# log-Jacobian of sigma dropped from the potential, sigma's mean-rank z was 5.4 (p = 6e-8, chi-square
# p = 4e-5) against the level 0.002 / 4 / 2 this test applies; 0.92 on the correct code),
# hierarchical 40, student_t 50, glm 25, mixture 100
REPLICATIONS = sbc.CI_REPLICATIONS
assert tuple(REPLICATIONS) == sbc.CALIBRATED


def test_rank_statistics_under_uniform_ranks():
    """The shift test's null moments are those of uniform ranks on {0..99}; a balanced sample has
    z = 0, and a shift of one rank-sd / sqrt(R) x 4 has z = 4."""
    L = sbc.NUM_DRAWS
    r = np.arange(L + 1)
    assert np.var(r) == pytest.approx(((L + 1) ** 2 - 1) / 12, rel=1e-12)
    assert sbc.mean_rank(np.tile(r, 2)) == (0.0, 1.0)
    R = 200
    shifted = np.full(R, L / 2 + 4 * np.sqrt(np.var(r) / R))
    assert sbc.mean_rank(shifted)[0] == pytest.approx(4.0, rel=1e-12)
    assert sbc.rank_pvalue(np.tile(r, 2), 10) == 1.0


@pytest.mark.parametrize("name", sbc.CALIBRATED)
def test_default_sampler_passes_sbc(name):
    r = sbc.run(sbc.MODELS[name], REPLICATIONS[name], seed=0, num_steps=NUM_STEPS)
    s = r.sample
    # the automatic path: the exact kernel after its warm-up, in a fitted (whitened) frame
    assert s.method == "hfhr-exact" and s.tuning["kind"] == "adaptation"
    assert s.preconditioner is not None and s.num_steps == NUM_STEPS
    assert 0.5 < np.mean(s.chains["acceptance_rate"]) < 0.99  # the Metropolis test is active
    assert not np.any(s.diverged_at)
    # 99 draws thinned from 2,000 are near-independent only when the chains mixed: ESS >= 99
    from inertia.diagnostics import chain_stats

    assert np.nanmin(chain_stats(s.draws)["ess_bulk"]) >= sbc.NUM_DRAWS
    rejected = sbc.holm(r.pvalues, FWER / len(sbc.CALIBRATED))
    assert not rejected, {k: r.pvalues[k] for k in rejected}


def test_sbc_detects_the_step_size_bias_of_ula():
    # conjugate theta | y ~ N(., 1/5): ULA at h = 0.3 (h lambda = 1.5) has stationary variance
    # (1/5) / (1 - h lambda / 2) = 4 x the posterior's (exact, tests/mcmc/test_kernels.py), so its
    # draws are twice too wide and the ranks of theta pile up in the middle bins
    R = 100

    def ula(target, seed):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return sample(target, "ula", step_size=0.3, num_steps=1000, seed=seed)

    r = sbc.run(sbc.MODELS["normal"], R, seed=0, sampler=ula)
    assert r.sample.method == "ula" and r.dim == R
    rejected = sbc.holm(r.pvalues, FWER / len(sbc.CALIBRATED))  # the level of the test above
    assert rejected == ["theta"], r.pvalues
