"""Outputs and optional caches never lose a run: a --save name of 250 characters (its temporary file's
name shortened to the file system's limit), a name beyond the limit refused before the run, and a
read-only HOME (no cache folder can be made) costs JAX's, ArviZ's and matplotlib's caches, with one
warning line, never the result. About 40 s (two short fits in fresh processes)."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from inertia import _cache
from inertia._cost import describe
from inertia._io import name_max, write_text_atomic
from inertia.cli import main

ROOT = Path(__file__).resolve().parents[1]
FIT = ["fit", "--model", "gaussian-kappa", "--dim", "3", "--kappa", "10", "--method", "stl-proj",
       "--steps", "50", "--quiet", "--allow-unconverged"]


def test_a_name_of_250_characters_is_written(tmp_path):
    name = "r" * 245 + ".json"
    assert len(name) == 250 <= name_max(tmp_path)
    write_text_atomic(tmp_path / name, "{}")
    assert [p.name for p in tmp_path.iterdir()] == [name]  # written, no temporary file left


def test_save_with_a_250_character_name(tmp_path, capsys):
    pytest.importorskip("arviz")
    path = tmp_path / ("s" * 247 + ".nc")
    assert main([*FIT, "--save", str(path)]) == 0
    assert path.read_bytes()[:4] == b"\x89HDF" and len(list(tmp_path.iterdir())) == 1


def test_a_name_beyond_the_limit_refused_before_the_run(tmp_path, capsys):
    path = tmp_path / ("s" * (name_max(tmp_path) + 1))
    rc = main([*FIT, "--save", str(path) + ".nc", "--json", str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    assert rc == 2 and "longer than this file system takes" in err and "--save" in err
    assert not list(tmp_path.iterdir())  # refused before the run: nothing written


def _env(home, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "XDG_", "MPL"))
           and k not in ("INERTIA_JAX_CACHE", "HOME")}
    env.update(HOME=str(home), PYTHONPATH=str(ROOT), **extra)
    return env


def test_read_only_home_costs_the_caches_not_the_result(tmp_path):
    # /proc: a folder no one (root included) can make a folder in, as an immutable HOME
    out = tmp_path / "out.json"
    r = subprocess.run([sys.executable, "-m", "inertia", *FIT, "--json", str(out)],
                       env=_env("/proc"), capture_output=True, text=True, timeout=300,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text())["mean"]
    lines = [ln for ln in r.stderr.splitlines()
             if re.search("cache|matplotlib|arviz|/proc", ln, re.IGNORECASE)]
    assert len(lines) == 1 and "cannot create cache folders" in lines[0], r.stderr
    assert "JAX's compilation cache" in lines[0] and "matplotlib" in lines[0]


def test_command_caches_say_why_once(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    for k in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "MPLCONFIGDIR", "INERTIA_JAX_CACHE",
              "JAX_COMPILATION_CACHE_DIR"):
        monkeypatch.delenv(k, raising=False)

    def refuse(path, *a, **k):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(os, "makedirs", refuse)
    monkeypatch.setattr(_cache, "enable_for_command", lambda: None)
    line = _cache.command_caches()
    assert line.count("Permission denied") == 2 and os.environ["INERTIA_JAX_CACHE"] == "off"
    assert os.environ["MPLCONFIGDIR"] != str(tmp_path)  # a temporary folder for matplotlib


def test_arviz_imports_without_its_cache_folder(tmp_path):
    code = ("from inertia.convergence import _arviz; az = _arviz(); import numpy as np\n"
            "print(float(az.ess(np.random.default_rng(0).normal(size=(2, 500)))))")
    r = subprocess.run([sys.executable, "-c", code], env=_env("/proc"), capture_output=True,
                       text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert 700 < float(r.stdout) < 1300  # ESS of 1000 independent draws


def test_compile_times_worded_apart():
    line = describe({"seconds_per_gradient": 1e-4, "gradients": 10, "run_seconds": 1e-3,
                     "compile_seconds": 19.4, "wall_seconds": 30.0})
    assert "compile of all programs 19.4 s" in line
    from inertia.targets import kappa_family
    from inertia.vi import fit
    from inertia.variational.result import report_text

    res = fit(kappa_family(3, 10.0), "stl-proj", num_steps=40)
    out = res.to_dict()
    out["summary"] = res.summary()
    text = report_text(res, out, 2.5)
    assert re.search(r"updates \d+\.\d\d s \(their compile \d+\.\d\d s; whole run 2\.50 s\)", text)
    assert not re.search(r"compile \d+(\.\d+)?s", text)  # every time "N s", one wording
