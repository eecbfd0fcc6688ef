"""Each sgmcmc experiment at --quick: outputs written, numbers sane, a rerun recomputes nothing."""
import json
import math

import pytest

import inertia  # noqa: F401
from inertia.experiments import registry
from inertia.experiments._catalog import CATALOG

NAMES = ["sgmcmc-linear", "sgmcmc-linear-code", "sgmcmc-poisson-code", "sgmcmc-boston",
         "sgmcmc-boston-code", "sgmcmc-poisson", "sgmcmc-predict", "sgmcmc-nn",
         "sgmcmc-cost"]


@pytest.mark.parametrize("name", NAMES)
def test_quick_run_and_resume(name, tmp_path, require_data):
    require_data(*CATALOG[name].data_quick)
    run = registry()[name]
    first = run(tmp_path, True)
    assert first["cells_computed"] > 0 and first["cells_reused"] == 0
    assert (tmp_path / "results.json").exists() and (tmp_path / "results.md").exists()
    again = run(tmp_path, True)
    assert again["cells_computed"] == 0 and again["cells_reused"] == first["cells_computed"]
    js = json.loads((tmp_path / "results.json").read_text())
    assert js["experiment"] == name
    if name in ("sgmcmc-linear", "sgmcmc-linear-code", "sgmcmc-boston", "sgmcmc-boston-code"):
        s = js["summary"]
        for label, group in s.items():
            assert group["sandwich"]["cov_err"]["mean"] == 0.0  # the target itself
            assert group["dq-exact"]["predicted_cov_err"]["mean"] < 1e-9  # exact by construction
            if label.startswith("log"):  # (the beta-loss proxy is poor on Boston, see docs)
                assert 0 < group["dq-exact"]["cov_err"]["mean"] < 2
        assert list(tmp_path.glob("*.png"))
    if name in ("sgmcmc-linear-code", "sgmcmc-poisson-code"):
        for group in js["summary"].values():
            # the code's rules solve eq. 15 only under commutation: not exact, but finite here
            assert 1e-6 < float(group["dq-exact-code"]["predicted_cov_err"]["mean"]) < 1
            assert math.isfinite(float(group["ct-code"]["predicted_cov_err"]["mean"]))
    if name == "sgmcmc-predict":
        for r in js["fig1"].values():  # the exact Lyapunov rule hits the target by construction
            assert r["dq-exact"]["predicted_cov_err"] < 1e-9
            assert r["dq-const"]["predicted_cov_err"] > 1e-3
    if name == "sgmcmc-cost":
        for r in js["cells"].values():
            assert r["lambda_s"] > 0 and r["sampling_s"] > 0 and math.isfinite(r["ratio"])


def test_nuts_reference_matches_the_gaussian_posterior():
    """NUTS (NumPyro) of the flat-prior log-loss posterior: covariance sigma^2 (X^T X)^-1 within
    Monte Carlo error (800 draws: relative Frobenius error ~ sqrt(2 D / 800) ~ 0.07)."""
    import numpy as np

    from inertia.experiments.sgmcmc import _nuts_reference, sim_linear_code
    from inertia.sgmcmc import linear_regression

    X, y, theta = sim_linear_code(0, 3, 300)
    model = linear_regression(X, y, sigma=1.0)
    exact = np.linalg.inv(X.T @ X)
    rec = _nuts_reference(model, 0, 800, exact, theta)
    assert rec["draws"] == 800 and 0 <= rec["calib_err"] <= 1
    assert rec["cov_err"] < 0.25
