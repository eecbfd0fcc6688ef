"""`inertia sample`: JSON fields, exact W2 curve for Gaussian models, clear errors (exit 2)."""
import json

import numpy as np
import pytest

import inertia  # noqa: F401
from inertia.cli import main
from inertia.mcmc import GaussianDiagnostics
from inertia.targets import kappa_family


def test_sample_json_gaussian(capsys):
    rc = main(["sample", "--model", "gaussian-kappa", "--dim", "3", "--kappa", "10", "--method",
               "hfhr-split", "--steps", "200", "--chains", "2", "--step-size", "0.2", "--gamma",
               "1.5", "--alpha", "0.2", "--target-ess", "0", "--allow-unconverged", "--json",
               "--quiet"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["grad_evals"] == 201 and out["method"] == "hfhr-split"
    assert np.asarray(out["mean"]).shape == (3,) and np.asarray(out["cov"]).shape == (3, 3)
    w2 = np.asarray(out["w2"])
    assert w2.shape == (201,)
    exact = GaussianDiagnostics(kappa_family(3, 10.0)).w2_curve(
        "hfhr-split", step_size=0.2, gamma=1.5, alpha=0.2, num_steps=200)
    np.testing.assert_allclose(w2, exact, rtol=1e-12)
    assert w2[-1] < 0.1 * w2[0]
    assert abs(out["stationary_bias_w2"] - w2[-1]) < 1e-6


def test_sample_bad_alpha_exit_code(capsys):
    rc = main(["sample", "--dim", "3", "--kappa", "10", "--method", "hfhr", "--step-size", "0.1",
               "--alpha", "100", "--steps", "10", "--quiet"])
    assert rc == 2
    assert "alpha * step_size * L" in capsys.readouterr().err


def test_sample_logistic_needs_data():
    assert main(["sample", "--model", "nope"]) == 2
    assert main(["sample", "--model", "logistic", "--steps", "10", "--quiet"]) == 2
