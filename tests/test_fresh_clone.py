"""A fresh clone works with the README's one install line and no environment variable: the quick start
at reduced size, `inertia sample` on a NumPyro model file with `--save`, and `inertia.load`.

The repository's committed HEAD is cloned into a temporary folder and installed by the README's
install line, verbatim, into a virtual environment that sees the already-installed packages
(`--system-site-packages`: nothing is downloaded when they satisfy the requirements; ~10 s). It
runs with only PATH and HOME set (HOME an empty temporary folder: no dataset cache, no XLA cache, no
INERTIA_* variable). A requirement the install line misses (ArviZ for `sample`, h5netcdf for
`--save`, NumPyro, matplotlib) fails the static check below, since this environment has them all.
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
INSTALL = re.compile(r'python3 -m pip install -e "\.\[([a-z,]+)\]"')


def _readme_install_line(text: str) -> str:
    """The install command of the README's quick start (its `python3 -m pip install` step, after
    the virtual environment's and before `&& inertia fit`)."""
    (line,) = [ln for ln in text.splitlines() if "inertia fit --model" in ln]
    (pip,) = [p.strip() for p in line.split("&&") if "pip install" in p]
    return pip


def test_the_first_command_makes_a_virtual_environment():
    """A fresh system's Python refuses `pip install` outside a virtual environment: the README's
    first command makes and enters one before installing."""
    (line,) = [ln for ln in (ROOT / "README.md").read_text().splitlines()
               if "inertia fit --model" in ln]
    steps = [p.strip() for p in line.split("&&")]
    assert steps[:2] == ["python3 -m venv .venv", ". .venv/bin/activate"], steps
    assert INSTALL.fullmatch(steps[2]) and steps[3].startswith("inertia fit")
    assert "python3 -m venv .venv && . .venv/bin/activate" in (
        ROOT / "docs" / "getting-started.md").read_text()


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout of the repository")
    base = tmp_path_factory.mktemp("fresh")
    dest = base / "inertia"
    out = subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(dest)],
                         capture_output=True, text=True)
    assert out.returncode == 0, f"git clone failed: {out.stderr.strip()}"
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True,
                   timeout=300)
    install = shlex.split(_readme_install_line((dest / "README.md").read_text()))
    assert install[:5] == ["python3", "-m", "pip", "install", "-e"]
    out = subprocess.run([str(venv / "bin" / "python"), *install[1:]], cwd=dest,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, f"the README's install line failed: {out.stderr[-3000:]}"
    return dest, venv


def _clean_run(args, clone, cwd):
    dest, venv = clone
    home = cwd / "home"
    home.mkdir(exist_ok=True)
    env = {"PATH": str(venv / "bin") + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin"),
           "HOME": str(home)}
    return subprocess.run([str(venv / "bin" / "python"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_one_install_line_covers_what_the_docs_run():
    """README and getting-started give the same install line, and it brings ArviZ, h5netcdf,
    NumPyro, matplotlib and scikit-learn (sample, --save, model files, plots, the WDBC quick start)."""
    line = _readme_install_line((ROOT / "README.md").read_text())
    extras = INSTALL.fullmatch(line).group(1).split(",")
    assert line in (ROOT / "docs" / "getting-started.md").read_text()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in extras:
        reqs += project["optional-dependencies"][extra]
    names = {re.split(r"[<>=\[ ;]", r, maxsplit=1)[0].lower() for r in reqs}
    # ... and PyMC (the docs' PyMC models) and pyarrow (Parquet data files)
    assert {"arviz", "h5netcdf", "numpyro", "matplotlib", "scikit-learn", "pymc", "pyarrow"} <= names
    core = {re.split(r"[<>=\[ ;]", r, maxsplit=1)[0].lower() for r in project["dependencies"]}
    assert {"arviz", "h5netcdf"} <= core  # `sample` and `save` need them on any install


MODEL = """import numpyro
import numpyro.distributions as dist


def model(x, y=None):
    a = numpyro.sample("a", dist.Normal(0.0, 2.0))
    b = numpyro.sample("b", dist.Normal(0.0, 2.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    numpyro.sample("y", dist.Normal(a + b * x, sigma), obs=y)
"""


def test_sample_a_model_file_and_save_in_a_clean_environment(clone, tmp_path):
    import numpy as np

    (tmp_path / "model.py").write_text(MODEL)
    rng = np.random.default_rng(0)
    x = rng.normal(size=40)
    rows = "\n".join(f"{a:.6f},{b:.6f}" for a, b in zip(x, 1.0 + 2.0 * x + rng.normal(size=40)))
    (tmp_path / "data.csv").write_text("x,y\n" + rows + "\n")
    out = _clean_run(["-m", "inertia", "sample", "--model", "model.py:model", "--data", "data.csv",
                      "--chains", "2", "--steps", "300", "--save", "run.nc",
                      "--allow-unconverged"], clone, tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Traceback" not in out.stderr and (tmp_path / "run.nc").stat().st_size > 1000
    out = _clean_run(["-c", "import inertia; print(inertia.load('run.nc').table())"], clone,
                     tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert {"a", "b", "sigma"} <= set(out.stdout.split())


def test_readme_quick_start_in_a_clean_environment(clone, tmp_path):
    readme = (clone[0] / "README.md").read_text()
    (line,) = [ln for ln in readme.splitlines() if "inertia fit --model" in ln]
    # the command after the venv and install steps, run as the install put it on PATH
    (cmd,) = [part.split() for part in line.split("&&") if part.split()[:2] == ["inertia", "fit"]]
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
