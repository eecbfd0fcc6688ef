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
    from reproductions import registry
    from reproductions._catalog import CATALOG, describe

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
    from inertia.cli import fit as fit_command

    monkeypatch.setattr(fit_command, "fit", lambda *a, **k: pytest.fail("must not run"))
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
    import reproductions as ex

    def stop(out, quick):
        raise KeyboardInterrupt

    monkeypatch.setattr(ex, "registry", lambda: {"lower-bound": stop})
    out = tmp_path / "r"
    assert main(["reproduce", "lower-bound", "--quick", "--out", str(out)]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(out) in err[0] and "again to resume" in err[0]


def test_reproduce_without_the_folder_names_it(tmp_path, monkeypatch, capsys):
    """An install without the checkout's reproductions/ folder: parsing works, running names it."""
    from inertia.cli import reproduce

    monkeypatch.setattr(reproduce, "FOLDER", tmp_path / "reproductions")
    assert main(["reproduce", "lower-bound", "--quick", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "reproductions/" in err and str(tmp_path / "reproductions") in err


def test_truncated_cell_names_the_file(tmp_path):
    from reproductions._runner import CellStore

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


def _binary_csv(path, cell=None, scale=1.0, prefix=""):
    """80 rows, x1 the strong predictor; `cell` = (row, column, text) replaces one cell."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(80, 2))
    y = (2.0 * X[:, 0] + rng.normal(size=80) > 0).astype(int)
    rows = [[f"{a * scale:.6g}", f"{b:.6g}", str(c)] for (a, b), c in zip(X, y)]
    if cell is not None:
        rows[cell[0]][cell[1]] = cell[2]
    path.write_text(prefix + "\n".join(["x1,x2,y"] + [",".join(r) for r in rows]) + "\n",
                    encoding="utf-8")
    return str(path)


def _commands(csv):
    return {"fit": ["fit", "--model", "logistic", "--data", csv, "--response", "y", "--method",
                    "stl-proj", "--steps", "5", "--quiet"],
            "sample": ["sample", "--model", "logistic", "--data", csv, "--response", "y",
                       "--steps", "20", "--quiet"],
            "calibrate": ["calibrate", "--csv", csv, "--response", "y", "--model", "logistic",
                          "--batch-size", "8", "--steps", "50"]}


@pytest.mark.parametrize("command", ["fit", "sample", "calibrate"])
def test_nan_and_huge_csv_cells_are_named_in_every_command(tmp_path, command, capsys):
    nan = _binary_csv(tmp_path / "nan.csv", cell=(10, 0, "nan"))
    assert main(_commands(nan)[command]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "line 12, column 'x1': 'nan'" in err[0] and "--drop-missing" in err[0]
    huge = _binary_csv(tmp_path / "huge.csv", scale=1e300)
    assert main(_commands(huge)[command]) == 2
    err = capsys.readouterr().err
    assert "column 'x1' has values as large as" in err and "overflow" in err


@pytest.mark.parametrize("command", ["fit", "sample", "calibrate"])
def test_bom_and_drop_missing_reach_the_model_with_every_predictor(tmp_path, command,
                                                                    monkeypatch):
    import inertia.mcmc  # noqa: F401
    import inertia.sgmcmc  # noqa: F401
    from inertia.cli import calibrate as calibrate_command, fit as fit_command, sample as sample_command

    seen = {}

    class Stop(BaseException):  # passes main's handlers
        pass

    def fake(target, *a, **k):
        seen["names"] = (getattr(target, "info", None) or {}).get("names") or \
            getattr(target, "feature_names", None)
        seen["n"] = getattr(target, "num_obs", None)
        raise Stop

    monkeypatch.setattr(fit_command, "fit", fake)  # the commands' own names
    monkeypatch.setattr(sample_command, "sample", fake)
    monkeypatch.setattr(calibrate_command, "calibrate", fake)
    bom = _binary_csv(tmp_path / "bom.csv", prefix="\ufeff")
    with pytest.raises(Stop):
        main(_commands(bom)[command])
    nan = _binary_csv(tmp_path / "nan.csv", cell=(10, 0, "nan"))
    with pytest.warns(UserWarning, match="dropped 1 of 80 data rows"), pytest.raises(Stop):
        main(_commands(nan)[command] + ["--drop-missing"])
    if command == "calibrate":
        assert seen["n"] == 79
    else:
        assert "x1" in " ".join(map(str, seen["names"]))  # the NaN's column stays in the model


def test_reps_below_one_refused(capsys):
    for reps in ("0", "-2"):
        with pytest.raises(SystemExit) as ex:
            main(["reproduce", "sgmcmc-linear", "--quick", "--reps", reps])
        assert ex.value.code == 2
        assert "--reps: must be >= 1" in capsys.readouterr().err
    from reproductions.sgmcmc import _with_reps

    with pytest.raises(ValueError, match="reps"):
        _with_reps({"runs": 5}, 0)


def test_edited_cell_is_named_not_adopted(tmp_path):
    from reproductions._runner import CellStore, cell_key, run_cells

    store = CellStore(tmp_path)
    key = cell_key(method="sgd", seed=0)
    run_cells(store, [(key, lambda: {"mean": 0.7412, "sd": 0.1903})], quiet=True)
    path = store.path(key)
    assert run_cells(store, [(key, lambda: pytest.fail("must not recompute"))], quiet=True) == \
        {key: {"mean": 0.7412, "sd": 0.1903}}
    path.write_text(path.read_text().replace("0.7412", "0.7519"))  # a plausible wrong number
    with pytest.raises(ValueError, match=f"saved cell {path} does not match its checksum.*"
                                         "delete it to recompute"):
        run_cells(store, [(key, lambda: 0)], quiet=True)
    path.write_text('{"mean": 0.7412, "sd": 0.1903}')  # no checksum at all
    with pytest.raises(ValueError, match="no checksum.*delete it to recompute"):
        store.get_or_compute(key, lambda: 0)


needs_dev_full = pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")


@needs_dev_full
def test_failed_writes_exit_nonzero_in_every_command(tmp_path, capsys):
    from inertia._io import write_text_atomic

    with pytest.raises(OSError, match="No space left on device: ./dev/full"):
        write_text_atomic("/dev/full", "x" * 10)
    write_text_atomic(tmp_path / "ok.json", "{}")
    assert [p.name for p in tmp_path.iterdir()] == ["ok.json"]  # no temporary file left
    fit = ["fit", "--model", "gaussian-kappa", "--dim", "2", "--kappa", "4", "--method",
           "stl-proj", "--steps", "5", "--quiet"]
    sample = ["sample", "--dim", "2", "--kappa", "4", "--step-size", "0.1", "--gamma", "1",
              "--alpha", "0.1", "--steps", "20", "--quiet", "--allow-unconverged"]
    csv = _binary_csv(tmp_path / "d.csv")
    calibrate = ["calibrate", "--csv", csv, "--response", "y", "--model", "logistic",
                 "--batch-size", "8", "--steps", "50"]
    for argv in (fit + ["--json", "/dev/full"], fit + ["--plot", "/dev/full"],
                 sample + ["--json", "/dev/full"], calibrate + ["--json", "/dev/full"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "No space left on device" in err, (argv, err)
    assert Path("/dev/full").is_char_device()


def test_one_chain_is_judged_by_ess_alone():
    from inertia.convergence import StopRule
    from inertia.diagnostics import ONE_CHAIN, diagnose

    draws = np.random.default_rng(0).normal(size=(1, 2000, 3))
    dg = diagnose(draws)
    assert np.all(np.isnan(dg.rhat)) and dg.converged, dg.verdict
    assert ONE_CHAIN in dg.line() and "<-" not in dg.table()
    j = StopRule(400.0).judge(draws)
    assert j.met and np.isnan(j.rhat) and j.ess == pytest.approx(dg.min_ess_bulk)
    assert not StopRule(1e5).judge(draws).met
    stuck = np.cumsum(np.random.default_rng(1).normal(size=(1, 200, 3)), axis=1)  # a random walk
    assert not diagnose(stuck).converged


def test_one_chain_sample_stops_at_the_ess_rule():
    from inertia.mcmc import sample
    from inertia.targets import kappa_family

    res = sample(kappa_family(3, 10.0), "hfhr", step_size=0.2, gamma=1.0, alpha=0.1,
                 num_chains=1, num_steps=1000, target_ess=200, max_steps=100_000)
    assert res.num_steps < 100_000 and res.diagnostics.converged, res.diagnostics.line()
    assert "R-hat needs two or more chains" in res.diagnostics.line()


def test_seeds_alike_in_every_entry_point():
    from inertia._random import check_seed
    from inertia.mcmc import sample
    from inertia.sgmcmc import calibrate
    from inertia.targets import kappa_family
    from inertia.vi import fit

    assert check_seed(np.int64(7)) == 7 and check_seed(0) == 0
    for bad in (1.5, 2.0, True, -1, 2 ** 64, "3"):
        with pytest.raises(ValueError, match="seed must be a whole number"):
            check_seed(bad)
    t = kappa_family(3, 10.0)
    X = np.random.default_rng(0).normal(size=(30, 2))
    for call in (lambda: fit(t, "stl-proj", seed=1.5, num_steps=5),
                 lambda: sample(t, seed=1.5, num_steps=20),
                 lambda: calibrate("linear", (X, X[:, 0]), batch_size=5, num_steps=20, seed=1.5)):
        with pytest.raises(ValueError, match="seed must be a whole number"):
            call()


def test_sample_cli_follows_the_api_defaults(monkeypatch):
    from inertia.cli import sample as sample_command

    seen = []

    class Stop(BaseException):  # passes main's handlers
        pass

    def fake(target, method, **kw):
        seen.append({k: kw[k] for k in ("num_steps", "target_ess", "max_steps")})
        raise Stop

    monkeypatch.setattr(sample_command, "sample", fake)
    base = ["sample", "--dim", "3", "--quiet"]
    for extra in ([], ["--steps", "50"], ["--steps", "50", "--target-ess", "200"],
                  ["--target-ess", "0"]):
        with pytest.raises(Stop):
            main(base + extra)
    assert seen == [dict(num_steps=None, target_ess=None, max_steps=None),
                    dict(num_steps=50, target_ess=None, max_steps=None),
                    dict(num_steps=50, target_ess=200.0, max_steps=None),
                    dict(num_steps=1000, target_ess=None, max_steps=None)]
    assert main(base + ["--steps", "50", "--max-steps", "500"]) == 2  # no ESS rule to cap


def _model_file(tmp_path, text, name="m.py"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_model_file_conventions(tmp_path):
    from inertia.targets import TargetError
    from inertia.targets.modelfile import target_from_file

    body = "import jax.numpy as jnp\ndef logp(p, data):\n    return -0.5 * jnp.sum(p ** 2)\n"
    fn = _model_file(tmp_path, body + "def logp_init():\n    return jnp.zeros(3)\n", "fn.py")
    t = target_from_file(f"{fn}:logp")
    assert t.dim == 3 and "[log density, logp_init a function]" in t.name
    assert float(t.potential(np.ones(3))) == pytest.approx(1.5)
    val = _model_file(tmp_path, body + "logp_init = [0.0, 0.0]\n", "val.py")
    assert "logp_init a value" in target_from_file(f"{val}:logp").name
    noinit = _model_file(tmp_path, body, "noinit.py")
    with pytest.raises(TargetError, match="looks like a log density.*no logp_init"):
        target_from_file(f"{noinit}:logp")
    other = _model_file(tmp_path, "def f():\n    return 3.0\n", "other.py")
    with pytest.raises(TargetError, match="neither a NumPyro model .* nor a log density"):
        target_from_file(f"{other}:f")
    vec = _model_file(tmp_path, body.replace("jnp.sum(p ** 2)", "p ** 2")
                      + "logp_init = [0.0, 0.0]\n", "vec.py")
    with pytest.raises(TargetError, match="must return a scalar"):
        target_from_file(f"{vec}:logp")


def test_discrete_latent_site_named(tmp_path):
    pytest.importorskip("numpyro")
    from inertia.targets import TargetError
    from inertia.targets.modelfile import target_from_file

    path = _model_file(tmp_path, "import numpyro, numpyro.distributions as dist\ndef model():\n"
                                 "    z = numpyro.sample('z', dist.Bernoulli(0.3))\n"
                                 "    numpyro.sample('x', dist.Normal(z, 1.0))\n")
    with pytest.raises(TargetError, match="inertia needs continuous latent sites; marginalise "
                                          "or enumerate them in NumPyro.*z"):
        target_from_file(f"{path}:model")


def test_non_smooth_and_improper_densities_named():
    import jax.numpy as jnp

    from inertia.targets import TargetError, from_logdensity
    from inertia.targets.curvature import estimate_curvature

    kink = from_logdensity(lambda p: -jnp.sum(jnp.abs(p)), jnp.zeros(2))
    with pytest.raises(TargetError, match="non-smooth, piecewise-linear"):
        estimate_curvature(kink)
    flat_dir = from_logdensity(lambda p: -0.5 * p[0] ** 2, jnp.zeros(2))
    with pytest.raises(TargetError, match=r"posterior is improper.*\(mostly x\[1\]\)"):
        estimate_curvature(flat_dir)
    flat = from_logdensity(lambda p: 0.0 * jnp.sum(p), jnp.zeros(2))
    with pytest.raises(TargetError, match="flat .* improper"):
        estimate_curvature(flat)
    proper = from_logdensity(lambda p: -0.5 * p[0] ** 2 - 0.5e-6 * p[1] ** 2, jnp.zeros(2))
    assert estimate_curvature(proper).alpha > 0  # ill-conditioned (1e6) but proper
