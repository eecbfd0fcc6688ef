"""The four HFHR experiments at --quick: outputs written, numbers sane, a rerun recomputes nothing."""
import json

import numpy as np
import pytest

import inertia  # noqa: F401
from inertia.experiments import registry
from inertia.experiments._catalog import CATALOG

NAMES = ["hfhr-gaussian", "hfhr-logistic", "hfhr-bnn", "hfhr-mixture"]
PNG = {"hfhr-gaussian": "w2_vs_grads.png", "hfhr-logistic": "error_vs_grads.png",
       "hfhr-bnn": "test_loglik_vs_grads.png", "hfhr-mixture": "switches_vs_grads.png"}


@pytest.mark.parametrize("name", NAMES)
def test_quick_run_and_resume(name, tmp_path, require_data):
    require_data(*CATALOG[name].data_quick)
    if name == "hfhr-logistic":
        pytest.importorskip("numpyro")
    run = registry()[name]
    first = run(tmp_path, True)
    assert first["cells_computed"] > 0 and first["cells_reused"] == 0
    for f in ("results.json", "results.md", PNG[name]):
        assert (tmp_path / f).stat().st_size > 0
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["experiment"] == name
    again = run(tmp_path, True)
    assert again["cells_computed"] == 0 and again["cells_reused"] == first["cells_computed"]
    check = CHECKS[name]
    check(saved)


def _gaussian(s):
    for d, k, klmc, hfhr, ratio in s["summary"]:
        assert klmc and hfhr and hfhr <= klmc  # HFHR's grid includes no alpha = 0, yet wins here
    for c in s["cells"].values():
        w = np.asarray(c["curve_w2"], dtype=float)
        assert abs(w[0] - c["w2_0"]) < 1e-12
        if c["grads_to_tol"]:
            assert c["bias_w2"] < 0.1 * c["w2_0"] and c["rate"] < 1


def _logistic(s):
    for row in s["rows"]:
        assert np.isfinite(row[7]) and row[7] < 1.0  # mean error relative to posterior spread
    for ds, n, ess, m, L, Lb in s["references"]:
        assert ess > 20 and 0 < m <= L <= Lb


def _bnn(s):
    for row in s["rows"]:
        assert row[7] is not None and -3.0 < row[7] < 0.0 and row[9] == 0


def _mixture(s):
    for row in s["rows"]:
        assert row[3] > 0 and row[6] == 0 and 0.8 < row[5] < 1.5


CHECKS = {"hfhr-gaussian": _gaussian, "hfhr-logistic": _logistic, "hfhr-bnn": _bnn,
          "hfhr-mixture": _mixture}
