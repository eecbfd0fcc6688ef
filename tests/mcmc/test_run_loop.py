"""The run-until-converged loop's decisions: chains that disagree (a failed warm-up: warmed up again,
then stopped with the reason), the budget (max_steps) and the progress lines that say why."""
import io

import jax.numpy as jnp
import numpy as np
import pytest
from scipy.signal import lfilter
from scipy.stats import binom, chi2

from inertia.convergence import chains_disagree
from inertia.mcmc import sample
from inertia.progress import Progress
from inertia.targets import from_potential


def _ar(rng, rho, chains=4, n=1000, d=40):
    """Stationary AR(1) chains (chain, draw, d) with unit variance: all sample N(0, 1)."""
    e = rng.standard_normal((chains, n, d)) * np.sqrt(1 - rho ** 2)
    e[:, 0] = rng.standard_normal((chains, d))
    return lfilter([1.0], [1.0, -rho], e, axis=1)


def test_agreeing_chains_pass_the_disagreement_test_at_its_level():
    # 30 sets of 4 agreeing AR(1) chains (rho 0.5 and 0.9: per-chain ESS about 330 and 50), 40
    # coordinates each: the test's level is 0.01 per set (Bonferroni); flags beyond the binomial
    # 0.999 quantile of 60 sets at 0.01 would say the level is not held
    rng = np.random.default_rng(3)
    flags = sum(chains_disagree(_ar(rng, rho)) is not None for rho in (0.5, 0.9) for _ in range(30))
    assert flags <= binom.ppf(0.999, 60, 0.01)


def test_a_chain_one_sd_off_is_found_and_named():
    rng = np.random.default_rng(4)
    x = _ar(rng, 0.9)
    # chain 2 samples N(1, 1) in coordinate 7: Q about ESS_c x 3/4 (ESS_c = 1,000 x 0.1 / 1.9,
    # about 53): about 40, twice the bound (19.7); its mean 3 + 40 x (rank-normalised scale)
    x[2, :, 7] += 1.0
    dis = chains_disagree(x)
    assert dis is not None and dis.index == 7 and dis.count == 1
    assert dis.bound == pytest.approx(chi2.isf(0.01 / 40, 3))
    assert dis.q > 1.5 * dis.bound


def _bimodal():
    # modes at x0 = -10 and +10, a barrier of exp(-50) between them: chains started in different
    # modes stay there, whatever frame a re-adaptation gives them
    def V(x):
        return (-jnp.logaddexp(-0.5 * (x[0] - 10) ** 2, -0.5 * (x[0] + 10) ** 2)
                + 0.5 * jnp.sum(x[1:] ** 2))

    return from_potential(V, 3)


def test_disagreeing_chains_warm_up_again_once_then_stop_with_the_reason():
    init = np.array([[10.0, 0, 0], [-10.0, 0, 0], [10.0, 0, 0], [-10.0, 0, 0]])
    out = io.StringIO()
    with pytest.warns(RuntimeWarning, match="NOT CONVERGED"):
        r = sample(_bimodal(), init=init, seed=0, max_steps=10_000,
                   progress=Progress("sample", file=out, tty=False))
    st = r.stopped
    assert st["readapted"] == 1 and st["why"] == "budget"
    assert r.num_steps == 1000  # never extended: the measured ESS rate cannot meet 400 in 10,000
    assert not r.converged and r.verdict.problems[0] == st["problem"]
    assert "chains disagree" in st["problem"] and "x[0]" in st["problem"]
    assert "reparameterise" in st["problem"] and "max_steps=" in st["problem"]
    text = out.getvalue()
    assert "a failed warm-up; warming up again" in text and "stopped after 1,000" in text
    # the discarded attempt's gradients (warm-up and 4 x 1,000 draws) are in the total
    assert r.total_grad_evals > 2 * 4 * r.grad_evals


def test_the_budget_stops_a_run_its_ess_rate_cannot_finish_and_says_how_far_to_go():
    t = from_potential(lambda x: 0.5 * jnp.sum(x ** 2), 2)
    r = sample(t, target_ess=1e6, max_steps=3000, seed=0)
    assert r.num_steps == 1000 and r.stopped["why"] == "budget"
    # the diagnostics' own rule (ESS >= 100, R-hat <= 1.01) is met: the stop is said, not a problem
    assert r.converged and "beyond the budget max_steps = 3,000" in r.stopped["problem"]
    need = int(r.stopped["problem"].split("max_steps=")[1].split()[0])
    # the draws the rate predicts: 1,000 x 1e6 / ESS, ESS of 4 x 1,000 draws on a Gaussian
    ess = float(np.min(r.diagnostics.ess_bulk))
    assert need == pytest.approx(1000 * 1e6 / ess, rel=0.05) and need > 3000


def test_an_extension_is_said_with_its_reason_and_the_converged_run_has_no_stop_problem():
    t = from_potential(lambda x: 0.5 * jnp.sum(x ** 2 / jnp.array([1.0, 4.0])), 2)
    out = io.StringIO()
    r = sample(t, target_ess=6000, seed=0, progress=Progress("sample", file=out, tty=False))
    assert r.converged and r.stopped["why"] == "converged" and r.stopped["readapted"] == 0
    assert r.num_steps > 1000  # 4 x 1,000 draws give ESS of a few thousand, short of 6,000
    lines = [ln for ln in out.getvalue().splitlines() if "extending to" in ln]
    assert len(lines) == len(r.stopped["decisions"]) >= 1
    assert "bulk ESS" in lines[0] and "(goal 6000)" in lines[0]
    assert lines[-1].endswith(f"extending to {r.num_steps:,} draws")
