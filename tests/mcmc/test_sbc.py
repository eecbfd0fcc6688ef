"""Simulation-based calibration (Talts et al. 2018; Modrak et al. 2023) of the default sampler, and a
check that the same SBC detects an unadjusted scheme's step-size bias.

Machinery in benchmarks/sbc.py (`python3 benchmarks/sbc.py` runs the large version): R
replications theta_r ~ prior, y_r ~ p(y | theta_r) from the NumPyro model itself; one call of
`inertia.mcmc.sample(target, seed=1, num_steps=NUM_STEPS)` (automatic warm-up: Gaussian fit,
whitened frame, dual averaging, trajectory choice; then NUM_STEPS Metropolis-adjusted HFHR steps
on 4 chains) on the product of the R posteriors (the data of all replications are one array
argument, so one compilation and one warm-up serve them all); ranks of theta_r among 99 thinned
draws, binned (`sbc.bins_for(R)` bins, >= 5 expected per bin), Pearson's chi-square per
parameter. The five models together are one family: Holm over each model's parameters at level
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
REPLICATIONS = sbc.CI_REPLICATIONS  # constrained 50, hierarchical 40, student_t 50, glm 25, mixture 100
assert tuple(REPLICATIONS) == sbc.CALIBRATED


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
    from inertia.diagnostics import arviz_stats

    assert np.nanmin(arviz_stats(s.draws)["ess_bulk"]) >= sbc.NUM_DRAWS
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
