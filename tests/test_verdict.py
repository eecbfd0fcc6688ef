"""One `Verdict` type on every result (fit, sample, calibrate, load), and it alone sets the command
line's exit status."""
import dataclasses
import json
import warnings

import numpy as np
import pytest

import inertia
from inertia.verdict import Verdict


def test_verdict_algebra_and_json():
    ok = Verdict.of(max_rhat=1.0)
    assert ok.converged and ok.problems == () and ok.line() == "converged"
    bad = ok.with_problem("k-hat 0.9 > 0.7", khat=0.9)
    assert not bad.converged and bad.numbers == {"max_rhat": 1.0, "khat": 0.9}
    assert ok.converged  # immutable: with_problem returned a new verdict
    both = ok.merge(bad, Verdict.of(["R-hat 1.2 > 1.01"]))
    assert not both.converged and both.problems == ("k-hat 0.9 > 0.7", "R-hat 1.2 > 1.01")
    assert both.line() == "NOT CONVERGED: k-hat 0.9 > 0.7; R-hat 1.2 > 1.01"
    assert Verdict(True, ["a problem"]).converged is False  # a problem is never converged
    assert (ok.exit_status(), bad.exit_status(), bad.exit_status(True)) == (0, 3, 0)
    assert Verdict.from_dict(json.loads(json.dumps(both.to_dict()))) == both
    # a converged fit's Gaussian judged unreliable: exit status 4 (0 when allowed), still converged
    poor = dataclasses.replace(ok, quality="unreliable")
    assert poor.converged and (poor.exit_status(), poor.exit_status(False, True)) == (4, 0)
    assert Verdict.from_dict(json.loads(json.dumps(poor.to_dict()))) == poor
    assert bad.merge(poor).quality == "unreliable" and bad.merge(poor).exit_status() == 3


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """A fit, a sample and a calibration of small problems (~10 s with their compilations)."""
    from inertia.mcmc import sample
    from inertia.sgmcmc import calibrate
    from inertia.targets import gaussian
    from inertia.vi import fit

    t = gaussian(np.array([1.0, -2.0]), np.array([[2.0, 0.3], [0.3, 1.0]]))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    y = X @ np.array([0.5, -1.0]) + rng.normal(size=300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = {"fit": fit(t, "exact-apg", num_steps=200),
               "sample": sample(t, "hfhr", num_chains=2, num_steps=40, seed=0),
               "calibrate": calibrate("linear", (X, y), batch_size=20, num_steps=400, seed=0)}
    path = out["sample"].save(tmp_path_factory.mktemp("v") / "s.nc")
    out["load"] = inertia.load(path)
    return out


@pytest.mark.parametrize("kind", ["fit", "sample", "calibrate", "load"])
def test_every_result_has_the_one_verdict_type(results, kind):
    res = results[kind]
    v = res.verdict
    assert type(v) is Verdict
    assert res.converged is v.converged is (not v.problems)
    assert v.line() in repr(res) or ("converged" if v.converged else "NOT CONVERGED") in repr(res)
    if kind in ("sample", "load"):  # 40 steps of 2 chains: too few for R-hat and ESS
        assert not v.converged and any("ESS" in p for p in v.problems)
        assert v.numbers["min_ess_bulk"] < 100
    if kind == "load":
        assert v.problems == results["sample"].verdict.problems


def _csv(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 2))
    y = X @ np.array([0.5, -1.0]) + rng.normal(size=200)
    path = tmp_path / "d.csv"
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", header="a,b,y", comments="")
    return path


@pytest.mark.parametrize("verdict", [Verdict.of(), Verdict.of(["injected problem"])])
def test_the_verdict_alone_sets_the_exit_status(verdict, tmp_path, monkeypatch, capsys):
    """With each result's verdict replaced, every command exits 0 or 3 by it alone (and 0 with
    --allow-unconverged), whatever its run found."""
    from inertia.cli import main
    from inertia.mcmc.sample import SampleResult
    from inertia.sgmcmc.calibrate import CalibrationResult
    from inertia.variational.result import FitResult

    for cls in (FitResult, SampleResult, CalibrationResult):  # FitResult's: set by the run, kept
        monkeypatch.setattr(cls, "verdict", property(lambda self: verdict, lambda self, v: None),
                            raising=False)
    csv = _csv(tmp_path)
    runs = [["fit", "--model", "gaussian-kappa", "--dim", "2", "--steps", "50"],
            ["sample", "--model", "gaussian-kappa", "--dim", "2", "--method", "hfhr",
             "--step-size", "0.01", "--gamma", "1", "--alpha", "0", "--steps", "20",
             "--chains", "2"],
            ["calibrate", "--csv", str(csv), "--response", "y", "--model", "linear",
             "--batch-size", "20", "--steps", "200"]]
    want = 0 if verdict.converged else 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for argv in runs:
            assert main(argv + ["--quiet"] * (argv[0] != "calibrate")) == want, argv
            assert main(argv + ["--quiet"] * (argv[0] != "calibrate")
                        + ["--allow-unconverged"]) == 0, argv
    err = capsys.readouterr().err
    assert ("not converged" in err) is (not verdict.converged)


def test_one_outcome_shape():
    """The run's outcome is a `Verdict`: a dict keyed "converged" is written in one place of the
    package (`Verdict.to_dict`, the JSON every result and file carries), not once per result."""
    import ast
    from pathlib import Path

    root = Path(inertia.__file__).parent
    where = [f"{p.relative_to(root)}:{node.lineno}" for p in sorted(root.rglob("*.py"))
             for node in ast.walk(ast.parse(p.read_text()))
             if isinstance(node, ast.Dict) and any(
                 isinstance(k, ast.Constant) and k.value == "converged" for k in node.keys)]
    assert len(where) == 1 and where[0].startswith("verdict.py:"), where
