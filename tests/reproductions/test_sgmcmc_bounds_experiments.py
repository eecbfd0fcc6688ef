"""`inertia reproduce sgmcmc-w2-bound | sgmcmc-test-loss --quick`: end to end, then resumed."""
import json


import inertia  # noqa: F401
from reproductions import registry


def _run(name, out):
    return registry()[name](out, True)


def test_w2_bound_quick_and_resume(tmp_path):
    out = tmp_path / "w2"
    res = _run("sgmcmc-w2-bound", out)
    for f in ("results.json", "results.md", "w2_bound.png"):
        assert (out / f).stat().st_size > 0
    saved = json.loads((out / "results.json").read_text())
    assert saved["cells_computed"] == 2 * len(saved["points"]) + len(saved["setups"])
    for p in res["points"]:
        # mean gap (lower bound on W2) <= coupled (upper bound) <= the plug-in bounds
        assert 0 < p["mean_gap"] <= p["coupled"] <= p["bound_theorem_m4_measured"] <= p["bound"]
        assert abs(p["gap_predicted"] / p["mean_gap"] - 1) < 0.3  # first-order mean shift
    for s, v in res["slopes"].items():
        # linear in lambda / B: quick-size slope s.e. ~ 0.05, plus second-order curvature
        assert 0.8 <= v["pooled"]["slope"] <= 1.3, (s, v)
    again = _run("sgmcmc-w2-bound", out)
    assert again["cells_computed"] == 0 and again["cells_reused"] == saved["cells_computed"]
    assert again["slopes"] == res["slopes"]  # recomputed from the saved cells only


def test_test_loss_quick_and_resume(tmp_path):
    out = tmp_path / "tl"
    res = _run("sgmcmc-test-loss", out)
    for f in ("results.json", "results.md", "test_loss.png"):
        assert (out / f).stat().st_size > 0
    recs = res["batch_size"] + [r for v in res["weight_decay"].values() for r in v]
    for r in recs:
        assert abs(r["z"]["dq-exact"]) < 4  # ours: within Monte Carlo error
        assert r["z"]["dq-const"] < -4  # constant noise underestimates the spread
    again = _run("sgmcmc-test-loss", out)
    assert again["cells_computed"] == 0 and again["cells_reused"] == res["cells_computed"]
