"""The four VI experiments end to end at --quick: outputs, sane numbers, and resuming after an
interruption recomputes exactly the cells that are missing."""
import json

import numpy as np
import pytest

from reproductions import registry
from reproductions._catalog import CATALOG
from reproductions.vi_experiments import variants

NAMES = ["kappa-scaling", "gaussian-methods", "graph-probit", "logistic"]
PNG = {"kappa-scaling": ["kappa_scaling.png"], "gaussian-methods": ["gaussian_methods.png"],
       "graph-probit": ["graph_probit_b64.png", "graph_probit_b64_queries.png"],
       "logistic": ["logistic_b8.png"]}


def _check_kappa(s, out):
    hits = {(k, a): h for k, a, h in s["hits"]}
    for k in s["config"]["kappas"]:
        assert hits[(k, True)] < hits[(k, False)] <= s["config"]["budget"] * k
    # 3 kappas only at --quick: the slopes are loose, but already on the right side of 0.75
    assert abs(s["slopes"]["acc"]["slope"] - 0.5) < 0.1
    assert abs(s["slopes"]["plain"]["slope"] - 1.0) < 0.1


def _check_gaussian(s, out):
    rows = {r[1]: r for r in s["rows"]}
    # samplewise-exact FD: one seed; accelerated beats plain at the end of the quick budget
    assert rows["fd-proj (acc)"][2] == 1 and rows["stl-proj (acc)"][2] == 5
    assert rows["fd-proj (acc)"][3] < rows["fd-proj (plain)"][3]
    assert rows["stl-proj (acc)"][3] < rows["stl-proj (plain)"][3]


def _fit_cells(out):
    cells = [json.loads(p.read_text())["value"] for p in sorted((out / "cells").glob("*.json"))]
    return [c for c in cells if "gap" in c]


def _hit(cell, threshold, g0):
    """First checkpoint step whose seed-mean gap is <= threshold x g0 (None if never)."""
    mean = np.asarray(cell["gap"], float).mean(axis=1)
    hits = np.flatnonzero(mean <= threshold * g0)
    return int(np.asarray(cell["steps"])[hits[0]]) if hits.size else None


def _check_gaps(cells, fstar, f0):
    """Every cell's F* and initial gap F(N(0, I)) - F* against the second method (rel 1e-9);
    gaps are F(q) - F* >= 0 up to quadrature error."""
    for c in cells:
        if "f_star" in c:
            assert c["f_star"] == pytest.approx(fstar, rel=1e-9)
        g = np.asarray(c["gap"], float)
        np.testing.assert_allclose(g[0], f0 - fstar, rtol=1e-9)
        assert np.all(g > -1e-8 * abs(fstar))


def _check_graph(s, out):
    """Table 2's F_ref and the quick Table 4 hits against an independent minimisation of F
    (tests/experiments/_vi_reference.py: its own kNN graph, quadrature and L-BFGS)."""
    from inertia.data import load_dataset

    from ._vi_reference import graph_probit_optimum, knn_precision

    (t2,) = s["table2"]
    assert (t2["dataset"], t2["n"], t2["p"]) == ("sonar", 208, 60)
    ds = load_dataset("sonar")
    Q = knn_precision(ds.X)
    fstar, f0 = graph_probit_optimum(Q, 2.0 * np.asarray(ds.y, float) - 1.0)
    assert t2["accepted"] and t2["F_ref"] == pytest.approx(fstar, rel=1e-9)  # 351.8166297
    assert t2["lambda_max"] == pytest.approx((np.linalg.eigvalsh(Q)[-1] - 1) / 49, rel=1e-10)
    assert t2["kappa"] == pytest.approx(2 + 49 * t2["lambda_max"])
    assert s["g0"]["64"]["sonar"] == pytest.approx(f0 - fstar, rel=1e-9)  # 4761.04
    cells = _fit_cells(out)
    _check_gaps(cells, fstar, f0)
    pp = {c["accelerated"]: c for c in cells if c["method"] == "paired-proj"}
    for thr in s["config"]["thresholds"]:
        got = s["table4"]["64"][f"paired-proj@{thr:g}"]
        hits = (_hit(pp[True], thr, f0 - fstar), _hit(pp[False], thr, f0 - fstar))
        assert tuple(got["cells"]["sonar"][1:]) == hits
        assert sum(got["counts"].values()) == 1


def _check_logistic(s, out):
    """Pima's F* and initial gap against an independent minimisation of F (rel 1e-9), and the
    matched 1 % comparison recomputed from the cells' gaps."""
    from inertia.data import load_dataset

    from ._vi_reference import logistic_optimum

    ds = load_dataset("pima")
    fstar, f0 = logistic_optimum(np.column_stack([np.ones(len(ds.y)), ds.X]), ds.y)  # 375.616
    cells = _fit_cells(out)
    _check_gaps(cells, fstar, f0)
    by = {c["accelerated"]: c for c in cells}
    acc, plain = (_hit(by[a], 0.01, f0 - fstar) for a in (True, False))
    assert acc is not None and plain is not None
    assert s["table6"]["8"]["stl-proj"]["cells"]["pima"] == [
        "acc" if acc < plain else "plain" if plain < acc else "equal", acc, plain]
    assert s["comparisons"] == 1 and s["acc_wins"] == int(acc < plain)


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
    CHECKS[name](saved, tmp_path)
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
