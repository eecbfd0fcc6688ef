"""Command line: parsing imports no JAX, every option documents its default, and bad input gets one
clear line (exit 2), interrupts one line (exit 130), and output paths are checked before a run."""
import argparse
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

import inertia
from inertia import _names
from inertia.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]


def _subparsers(parser):
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sub.choices


def test_parsing_imports_no_jax_and_version():
    code = ("import sys; from inertia.cli import build_parser; p = build_parser(); "
            "p.parse_args(['fit', '--model', 'gaussian-kappa', '--method', 'stl-proj']); "
            "print(sorted(m for m in sys.modules if m == 'jax' or m.startswith('jax.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    with pytest.raises(SystemExit) as ex:
        main(["--version"])
    assert ex.value.code == 0


def test_version_output(capsys):
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.strip() == f"inertia {inertia.__version__}"


def test_static_names_match_registries():
    from inertia.data import DATASETS
    from inertia.mcmc import REGISTRY
    from inertia.sgmcmc.tuning import METHODS as TUNINGS
    from inertia.targets.zoo import MODELS
    from inertia.vi import METHODS

    assert sorted(_names.VI_METHODS) == sorted(METHODS)
    assert tuple(_names.VI_MODELS) == tuple(MODELS)
    assert sorted(_names.MCMC_METHODS) == sorted(REGISTRY)
    assert tuple(_names.SGMCMC_TUNINGS) == tuple(TUNINGS)
    assert sorted(_names.DATASETS) == sorted(DATASETS)
    assert sorted(_names.CLASSIFICATION) == sorted(
        n for n, s in DATASETS.items() if s.task == "classification")


def test_catalog_matches_registry_and_experiments_extra():
    from inertia.experiments import registry
    from inertia.experiments._catalog import CATALOG, describe

    assert sorted(CATALOG) == sorted(registry())
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["experiments"]
    provided = {req.split(">")[0].split("=")[0].strip().lower() for req in extra}
    for name, entry in CATALOG.items():
        assert entry.description and entry.quick and entry.full, name
        assert set(entry.packages) <= provided, (name, entry.packages)
        assert set(entry.data_quick) <= set(_names.DATASETS) >= set(entry.data_full)
    text = describe()
    assert all(name in text for name in CATALOG) and "INERTIA_DATA_DIR" in text


def test_every_option_has_help_and_shows_its_default():
    for name, p in _subparsers(build_parser()).items():
        text = " ".join(p.format_help().split())
        for a in p._actions:
            if isinstance(a, argparse._HelpAction):
                continue
            assert a.help, (name, a.dest)
            shown = a.required or a.default is None or a.default is False
            assert shown or "default" in a.help or f"(default: {a.default})" in text, \
                (name, a.dest)


def test_fit_defaults():
    a = build_parser().parse_args(["fit", "--model", "gaussian-kappa", "--method", "stl-proj"])
    assert (a.batch_size, a.steps, a.seed) == (None, None, 0)  # None: vi.fit's automatic choice


@pytest.mark.parametrize("argv, words", [
    (["fit", "--model", "gaussian-kappa", "--method", "stl-proj", "--checkpoint-every", "0"],
     "--checkpoint-every: must be >= 1"),
    (["fit", "--model", "gaussian-kappa", "--method", "stl-proj", "--checkpoint-every", "-3"],
     "--checkpoint-every: must be >= 1"),
    (["fit", "--model", "gaussian-kappa", "--method", "stl-proj", "--batch-size", "0"],
     "--batch-size: must be >= 1"),
    (["fit", "--model", "gaussian-kappa", "--method", "sgd"], "invalid choice"),
    (["calibrate", "--csv", "x.csv", "--response", "y", "--model", "linear", "--batch-size", "4",
      "--steps", "10", "--chains", "0"], "--chains: must be >= 1"),
    (["calibrate", "--csv", "x.csv", "--response", "y", "--model", "linear", "--batch-size", "4",
      "--steps", "10", "--chains", "-2"], "--chains: must be >= 1"),
    (["calibrate", "--csv", "x.csv", "--response", "y", "--model", "linear", "--batch-size", "4",
      "--steps", "10", "--momentum", "1.0"], "--momentum: must be in [0, 1)"),
    (["calibrate", "--csv", "x.csv", "--response", "y", "--model", "linear", "--batch-size", "4",
      "--steps", "10", "--temperature", "0"], "inverse temperature beta must be > 0"),
    (["sample", "--chains", "0"], "--chains: must be"),
])
def test_argument_errors_are_one_line(argv, words, capsys):
    with pytest.raises(SystemExit) as ex:
        main(argv)
    assert ex.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert words in err[-1] and "_inv_temp" not in err[-1]


def test_output_paths_checked_before_the_run(tmp_path, monkeypatch, capsys):
    import inertia.vi  # noqa: F401

    monkeypatch.setattr(sys.modules["inertia.vi.fit"], "fit", lambda *a, **k: pytest.fail("must not run"))
    blocker = tmp_path / "file"
    blocker.write_text("x")
    base = ["fit", "--model", "gaussian-kappa", "--method", "stl-proj", "--quiet"]
    assert main(base + ["--json", str(blocker / "out.json")]) == 2
    assert main(base + ["--plot", str(tmp_path)]) == 2  # a folder, not a file
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "--json" in err[0] and "--plot" in err[1] and "folder" in err[1]
    assert main(["reproduce", "lower-bound", "--quick", "--out", str(blocker)]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err


def test_interrupt_is_one_line_with_resume_hint(tmp_path, monkeypatch, capsys):
    import inertia.experiments as ex

    def stop(out, quick):
        raise KeyboardInterrupt

    monkeypatch.setattr(ex, "registry", lambda: {"lower-bound": stop})
    out = tmp_path / "r"
    assert main(["reproduce", "lower-bound", "--quick", "--out", str(out)]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(out) in err[0] and "again to resume" in err[0]


def test_truncated_cell_names_the_file(tmp_path):
    from inertia.experiments._runner import CellStore

    store = CellStore(tmp_path)
    store.save("a", {"x": [1, 2, 3]})
    path = store.path("a")
    path.write_text(path.read_text()[:7])
    with pytest.raises(ValueError, match=f"saved cell {path} is unreadable.*delete it"):
        store.get_or_compute("a", lambda: 0)
    with pytest.raises(ValueError, match="is a file"):
        CellStore(path)


def _csv(path, X, y):
    cols = [f"x{i}" for i in range(X.shape[1])]
    rows = [",".join(cols + ["y"])] + [",".join(map(str, list(r) + [v])) for r, v in zip(X, y)]
    path.write_text("\n".join(rows) + "\n")
    return path


def test_calibrate_names_separation_and_tiny_data(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    sep = _csv(tmp_path / "sep.csv", X, (X[:, 1] > 0).astype(int))
    base = ["calibrate", "--response", "y", "--batch-size", "4", "--steps", "50"]
    assert main(base + ["--csv", str(sep), "--model", "logistic"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "separable" in err[0] and "'x1'" in err[0]
    zeros = _csv(tmp_path / "zeros.csv", X, np.zeros(60, int))
    assert main(base + ["--csv", str(zeros), "--model", "poisson"]) == 2
    assert "Poisson MLE does not exist" in capsys.readouterr().err
    one = _csv(tmp_path / "one.csv", X[:1], [1.0])
    assert main(base[:3] + ["--batch-size", "1", "--steps", "50", "--csv", str(one),
                            "--model", "linear"]) == 2
    assert "1 data row(s) for 3 parameters" in capsys.readouterr().err


def test_calibrate_api_rejects_bad_settings():
    from inertia.sgmcmc import calibrate
    from inertia.sgmcmc.calibrate import NoEstimateError

    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 2))
    y = X @ [1.0, -1.0] + rng.normal(size=40)
    for kw, words in [(dict(num_chains=0), "num_chains"), (dict(momentum=1.0), "momentum"),
                      (dict(temperature=0.0), "inverse temperature"),
                      (dict(batch_size=41), "batch_size")]:
        args = dict(batch_size=4, num_steps=50) | kw
        with pytest.raises(ValueError, match=words):
            calibrate("linear", (X, y), **args)
    with pytest.raises(NoEstimateError, match="separable"):
        calibrate("logistic", (X, (X[:, 0] > 0).astype(float)), batch_size=4, num_steps=50)
