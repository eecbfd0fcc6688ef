"""The four VI experiments end to end at --quick: outputs, sane numbers, and resuming after an
interruption recomputes exactly the cells that are missing."""
import json

import numpy as np
import pytest

from inertia.experiments import registry
from inertia.experiments._catalog import CATALOG
from inertia.experiments.vi_experiments import variants

NAMES = ["kappa-scaling", "gaussian-methods", "graph-probit", "logistic"]
PNG = {"kappa-scaling": ["kappa_scaling.png"], "gaussian-methods": ["gaussian_methods.png"],
       "graph-probit": ["graph_probit_b64.png", "graph_probit_b64_queries.png"],
       "logistic": ["logistic_b8.png"]}


def _check_kappa(s):
    hits = {(k, a): h for k, a, h in s["hits"]}
    for k in s["config"]["kappas"]:
        assert hits[(k, True)] < hits[(k, False)] <= s["config"]["budget"] * k
    # 3 kappas only at --quick: the slopes are loose, but already on the right side of 0.75
    assert abs(s["slopes"]["acc"]["slope"] - 0.5) < 0.1
    assert abs(s["slopes"]["plain"]["slope"] - 1.0) < 0.1


def _check_gaussian(s):
    rows = {r[1]: r for r in s["rows"]}
    # samplewise-exact FD: one seed; accelerated beats plain at the end of the quick budget
    assert rows["fd-proj (acc)"][2] == 1 and rows["stl-proj (acc)"][2] == 5
    assert rows["fd-proj (acc)"][3] < rows["fd-proj (plain)"][3]
    assert rows["stl-proj (acc)"][3] < rows["stl-proj (plain)"][3]


def _check_graph(s):
    (t2,) = s["table2"]
    assert (t2["dataset"], t2["n"], t2["p"]) == ("sonar", 208, 60)
    assert t2["accepted"] and abs(t2["F_ref"] - t2["F_ref_engine"]) < 1e-6
    assert t2["kappa"] == pytest.approx(2 + 49 * t2["lambda_max"])
    counts = s["table4"]["64"]["paired-proj@0.01"]["counts"]
    assert sum(counts.values()) == 1


def _check_logistic(s):
    assert s["comparisons"] == 1 and s["acc_wins"] in (0, 1)


CHECKS = {"kappa-scaling": _check_kappa, "gaussian-methods": _check_gaussian,
          "graph-probit": _check_graph, "logistic": _check_logistic}


@pytest.mark.parametrize("name", NAMES)
def test_quick_run_and_resume(name, tmp_path, require_data):
    require_data(*CATALOG[name].data_quick)
    run = registry()[name]
    first = run(tmp_path, True)
    assert first["cells_computed"] > 0 and first["cells_reused"] == 0
    for f in ["results.json", "results.md"] + PNG[name]:
        assert (tmp_path / f).stat().st_size > 0, f
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["experiment"] == name
    CHECKS[name](saved)
    # interruption: one finished cell is lost; the rerun recomputes it and only it
    cells = sorted((tmp_path / "cells").glob("*.json"))
    lost = cells[len(cells) // 2]
    before = lost.read_text()
    lost.unlink()
    mtimes = {p: p.stat().st_mtime_ns for p in cells if p != lost}
    again = run(tmp_path, True)
    assert again["cells_computed"] == 1 and again["cells_reused"] == len(cells) - 1
    assert all(p.stat().st_mtime_ns == t for p, t in mtimes.items())
    # same seeds -> same numbers
    a, b = json.loads(before)["value"], json.loads(lost.read_text())["value"]
    if "gap" in a:
        np.testing.assert_array_equal(np.asarray(a["gap"], float), np.asarray(b["gap"], float))
    if name == "logistic":  # a report on the saved cells computes nothing and counts the same
        lost.unlink()
        part = run(tmp_path, True, saved_only=True)
        assert part["cells_computed"] == 0 and part["cells_reused"] == len(cells) - 1
        assert part["comparisons"] == 0


def test_variants_are_the_papers_seventeen():
    v = variants()
    assert len(v) == 17 and sum(a for _, a in v) == 6


def test_bad_override_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="unknown datasets"):
        registry()["logistic"](tmp_path, True, datasets=["iris"])
