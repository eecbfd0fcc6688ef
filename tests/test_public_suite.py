"""The public suite (benchmarks/public): the posteriordb translations and a quick no-regression
subset of the stored table.

- Translation check (score test, benchmarks/public/score.py): on posteriordb's reference draws,
  mapped to the NumPyro model's unconstrained space, every coordinate of the mean gradient of the
  log density has |z| below the Bonferroni bound at family-wise level 0.001 (under the right
  posterior E grad log p = 0, so a correct translation fails with probability <= 0.001); the
  stored draws also come back through the target's constrain map. A deliberately wrong model (the
  natural-log earnings regression scored on the log10 one's draws) must fail it.
- No regression: `inertia.mcmc.sample(target, seed=0)` on five small posteriors; where the
  stored table (benchmarks/results/public_suite.json) says the run converged and was right, it
  must still converge, be right against the reference, and spend at most 1.25x the stored
  gradients per ESS (gradient counts are deterministic for a seed: this is not a timed test).
"""
import functools
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numpyro")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "public"))

import catalogue  # noqa: E402
import score  # noqa: E402

SCORED = [e.name for e in catalogue.ENTRIES if e.reference == "posteriordb draws"]
TABLE = ROOT / "benchmarks" / "results" / "public_suite.json"
QUICK = ("eight_schools-eight_schools_noncentered", "arK-arK", "garch-garch11",
         "kidiq-kidscore_momiq", "earnings-logearn_interaction_z")
SLACK = 1.25


def test_suite_size_and_sources():
    """At least 30 posteriors with published references or ground truth; every stored
    posteriordb reference has means and sds for the model's quantities."""
    published = [e for e in catalogue.ENTRIES if e.reference != "NUTS"]
    assert len(published) >= 30
    assert len(SCORED) >= 40


@pytest.mark.parametrize("name", SCORED)
def test_translation_score(name):
    z, bound, n, d, roundtrip = score.score_z(name)
    assert n == 200 and d >= 3
    assert roundtrip < 1e-6
    assert np.all(np.isfinite(z)) and np.max(np.abs(z)) < bound, (np.round(z, 2), bound)


def test_score_detects_a_wrong_model():
    """The log-earnings model scored on the log10-earnings posterior's draws (the same sites,
    another posterior): the mean gradient is far from zero."""
    z, bound, _, _, _ = score.score_z("earnings-logearn_height",
                                      reference_of="earnings-log10earn_height")
    assert np.max(np.abs(z)) > 3 * bound


def _stored():
    if not TABLE.exists():
        return {}
    rows = json.loads(TABLE.read_text())["rows"]
    return {r["posterior"]: r for r in rows if r["method"] == "inertia-sample" and "error" not in r}


@functools.lru_cache(maxsize=1)
def _suite_runner():
    """benchmarks/public/run.py under a name of its own: other tests import another `run` module."""
    spec = importlib.util.spec_from_file_location("public_suite_run",
                                                  ROOT / "benchmarks" / "public" / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", QUICK)
def test_no_regression(name):
    stored = _stored().get(name)
    if stored is None or not (stored["converged"] and stored["right"]):
        pytest.skip(f"{name}: no converged and right row stored")
    row = _suite_runner().run_one(name, "inertia-sample")
    assert row["seed"] == stored["seed"]
    assert row["converged"], row["verdict"]
    assert row["right"], (row["max_mean_err"], row["max_sd_err"], row["wrong_quantities"])
    assert row["grads_per_ess"] <= SLACK * stored["grads_per_ess"], (
        row["grads_per_ess"], stored["grads_per_ess"])


def test_accel_gp_potential_is_the_stan_density():
    """mcycle_gp-accel_gp has no reference draws in the posteriordb checkout (summary statistics
    only): its potential at a random point equals the Stan model's log density with Stan's log
    transforms of the positive parameters, computed here with SciPy."""
    from scipy import stats

    e = catalogue.BY_NAME["mcycle_gp-accel_gp"]
    post = e.build()
    d = {k: np.asarray(v) for k, v in catalogue.load_data(e.data).items()}
    r = np.random.default_rng(5)
    p = {"Intercept": -10.0 + r.normal(), "sdgp_1": 40.0 * np.exp(0.2 * r.normal()),
         "lscale_1": 0.08 * np.exp(0.2 * r.normal()), "zgp_1": r.normal(size=40),
         "Intercept_sigma": 2.5 + 0.3 * r.normal(), "sdgp_sigma_1": 3 * np.exp(0.2 * r.normal()),
         "lscale_sigma_1": 0.1 * np.exp(0.2 * r.normal()), "zgp_sigma_1": r.normal(size=20)}
    u = score.unconstrained_draws(post, {k: np.asarray(v)[None] for k, v in p.items()})[0]

    def gp(X, slam, sd, ls, z):
        spd = sd ** 2 * np.sqrt(2 * np.pi) * ls * np.exp(-0.5 * ls ** 2 * slam[:, 0] ** 2)
        return X @ (np.sqrt(spd) * z)

    mu = p["Intercept"] + gp(d["Xgp_1"], d["slambda_1"], p["sdgp_1"], p["lscale_1"], p["zgp_1"])
    sigma = np.exp(p["Intercept_sigma"] + gp(d["Xgp_sigma_1"], d["slambda_sigma_1"],
                                             p["sdgp_sigma_1"], p["lscale_sigma_1"],
                                             p["zgp_sigma_1"]))
    lp = (stats.t.logpdf(p["Intercept"], 3, -13, 36) + stats.t.logpdf(p["Intercept_sigma"], 3, 0, 10)
          + sum(stats.t.logpdf(p[k], 3, 0, 36) + np.log(2) for k in ("sdgp_1", "sdgp_sigma_1"))
          + sum(stats.invgamma.logpdf(p[k], 1.124909, scale=0.0177)
                for k in ("lscale_1", "lscale_sigma_1"))
          + stats.norm.logpdf(p["zgp_1"]).sum() + stats.norm.logpdf(p["zgp_sigma_1"]).sum()
          + stats.norm.logpdf(d["Y"], mu, sigma).sum()
          + sum(np.log(p[k]) for k in ("sdgp_1", "lscale_1", "sdgp_sigma_1", "lscale_sigma_1")))
    assert float(post.target.potential(u)) == pytest.approx(-lp, rel=1e-10)
