"""Posterior suite (benchmarks/posteriors): finite potentials, consistent names, exact moments."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numpyro")

import inertia  # noqa: E402,F401
from inertia.targets.base import jitted  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks" / "posteriors"))
from models import EXACT_DRAWS, NAMES, SHARED_REFERENCE, load  # noqa: E402
from reference import OUT as REFERENCE_JSON  # noqa: E402
from run import compare  # noqa: E402

N = 10 ** 6


@pytest.fixture(scope="module")
def posteriors():
    return {n: load(n) for n in NAMES}


@pytest.mark.slow
def test_potentials_finite_and_names_consistent(posteriors):
    """V and grad V are finite at a start; the description states the dimension; every named
    quantity has a stored reference."""
    refs = json.loads(REFERENCE_JSON.read_text()) if REFERENCE_JSON.exists() else {}
    assert len([p for p in posteriors.values() if p.group != "near-Gaussian"]) >= 10
    for name, p in posteriors.items():
        x = np.asarray(p.target.info.get("init", np.zeros(p.dim)))
        v, g = jitted(p.target, "value_and_grad")(x)  # compiled once, by from_numpyro's start
        assert np.isfinite(float(v)) and np.all(np.isfinite(np.asarray(g))), name
        assert f"d = {p.dim}" in p.description, name
        named = p.named(np.stack([x, x]))
        assert all(v.shape == (2,) for v in named.values()), name
        if name in refs:
            assert set(named) <= set(refs[name]["quantities"]), name
    assert set(SHARED_REFERENCE) <= set(NAMES)


@pytest.mark.parametrize("name", sorted(EXACT_DRAWS))
def test_exact_moments_match_exact_draws(name):
    """Closed-form means and sds against 1e6 draws of the exact law, within 5 standard errors
    (se of the mean sd/sqrt(n); of the variance sqrt(var((x - m)^2) / n), the funnel's x from its
    exact fourth moment 3 e^18)."""
    p = load(name)
    x = EXACT_DRAWS[name](N, np.random.default_rng(0))
    names = list(p.exact["mean"])
    for i, k in enumerate(names):
        m, sd = p.exact["mean"][k], p.exact["sd"][k]
        assert abs(x[:, i].mean() - m) < 5 * sd / np.sqrt(N), k
        dev2 = (x[:, i] - m) ** 2
        fourth = 3 * np.exp(18.0) if (name.startswith("funnel") and k != "v") else np.mean(dev2 ** 2)
        se_var = np.sqrt((fourth - sd ** 4) / N)
        assert abs(dev2.mean() - sd ** 2) < 5 * se_var, k


def test_exact_moments_disagree_with_a_wrong_law():
    """The moment check can fail: the banana's draws with curvature 0.3 instead of 0.25."""
    p = load("banana")
    x1 = 3.0 * np.random.default_rng(1).standard_normal(N)
    x2 = 0.3 * (x1 ** 2 - 9.0) + np.random.default_rng(2).standard_normal(N)
    se_var = np.sqrt(np.var(x2 ** 2) / N)
    assert abs(np.mean(x2 ** 2) - p.exact["sd"]["x[1]"] ** 2) > 5 * se_var


def test_gaussian_field_exact_moments_of_the_field():
    """gp-gaussian: the field f = L u of exact draws of u has the stated exact moments."""
    p = load("gp-gaussian")
    names_u = [f"u[{i}]" for i in range(p.dim)]
    A = np.asarray(p.target.hessian(np.zeros(p.dim)))
    cov = np.linalg.inv(A)
    mean = np.array([p.exact["mean"][k] for k in names_u])
    u = np.random.default_rng(0).multivariate_normal(mean, cov, size=200_000)
    f = p.named(u)
    for k in [f"f[{i}]" for i in range(p.dim)]:
        sd = p.exact["sd"][k]
        assert abs(f[k].mean() - p.exact["mean"][k]) < 5 * sd / np.sqrt(len(u)), k
        assert abs(f[k].std() / sd - 1) < 5 / np.sqrt(2 * len(u)), k


def test_compare_z_scores():
    """Errors in reference sds and z-scores against the combined MCSE."""
    ref = {"quantities": {"a": {"mean": 0.0, "sd": 2.0, "mcse_mean": 0.03, "mcse_sd": 0.0},
                          "c": {"mean": 1.0, "sd": 0.0, "mcse_mean": 0.0, "mcse_sd": 0.0}}}
    run = {"a": {"mean": 0.4, "sd": 2.5, "mcse_mean": 0.04, "mcse_sd": 0.1, "ess_bulk": 500.0,
                 "rhat": 1.0}, "c": {"mean": 1.0, "sd": 0.0, "mcse_mean": 0.0, "mcse_sd": 0.0,
                                     "ess_bulk": 1.0, "rhat": 1.0}}
    out = compare(run, ref)
    assert set(out) == {"a"}  # constant quantities are left out
    assert out["a"]["mean_err"] == pytest.approx(0.2)
    assert out["a"]["mean_z"] == pytest.approx(0.4 / 0.05)
    assert out["a"]["sd_err"] == pytest.approx(0.25)
    assert out["a"]["sd_z"] == pytest.approx(5.0)
