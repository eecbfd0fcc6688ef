"""A fresh clone works with no environment variable: README quick start at reduced size.

The repository's committed HEAD is cloned into a temporary folder and run with only PATH and HOME
set (HOME an empty temporary folder: no dataset cache, no XLA cache, no INERTIA_* variable). To stay
fast it does not pip-install the clone: the already-installed dependencies are reused and the clone
is put first on PYTHONPATH (the one variable added, so that `inertia` is the clone's code).
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout of the repository")
    dest = tmp_path_factory.mktemp("fresh") / "inertia"
    out = subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(dest)],
                         capture_output=True, text=True)
    assert out.returncode == 0, f"git clone failed: {out.stderr.strip()}"
    return dest


def _clean_run(args, clone, cwd):
    home = cwd / "home"
    home.mkdir(exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
           "PYTHONPATH": str(clone)}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_readme_quick_start_in_a_clean_environment(clone, tmp_path):
    readme = (clone / "README.md").read_text()
    (line,) = [ln for ln in readme.splitlines() if "inertia fit --model" in ln]
    cmd = line.split("&&", 1)[1].split()
    assert cmd[:2] == ["inertia", "fit"]
    # reduced size: the README's options with fewer steps and a smaller batch
    opts = dict(zip(cmd[2::2], cmd[3::2]))
    opts.update({"--steps": "60", "--batch-size": "8"})
    # 60 updates stop short of the plateau: the verdict says so, and the flag keeps exit 0
    argv = ["-m", "inertia", "fit"] + [t for kv in opts.items() for t in kv] + ["--allow-unconverged"]
    out = _clean_run(argv, clone, tmp_path)
    assert out.returncode == 0, out.stderr
    assert "final gap" in out.stdout and "Traceback" not in out.stderr
    res = json.loads((tmp_path / opts["--json"]).read_text())
    assert res["method"] == opts["--method"] and res["num_steps"] == 60
    assert 0 <= res["final_gap"] < res["checkpoints"][0]["gap"]
    assert (tmp_path / opts["--plot"]).stat().st_size > 1000


def test_shipped_data_and_clear_errors_in_a_clean_environment(clone, tmp_path):
    code = ("import inertia.data as d; print(sorted(n for n in d.DATASETS if d.available(n))); "
            "print(d.load_dataset('sonar').X.shape)\n"
            "try:\n    d.load_dataset('pima', download=False)\n"
            "except d.DatasetError as e:\n    print(e)")
    out = _clean_run(["-c", code], clone, tmp_path)
    assert out.returncode == 0, out.stderr
    avail, shape, err = out.stdout.strip().splitlines()
    assert avail == str(["banknote", "diabetes", "german", "ionosphere", "sonar", "wdbc"])
    assert shape == "(208, 60)"
    assert "INERTIA_DATA_DIR is not set" in err and "INERTIA_OFFLINE" not in err
    out = _clean_run(["-m", "inertia", "--version"], clone, tmp_path)
    assert out.returncode == 0 and out.stdout.startswith("inertia ")
