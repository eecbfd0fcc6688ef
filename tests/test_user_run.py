"""First-run benchmark (benchmarks/user_run.py): its model files and CSVs load as a user's do, and
its probe sees JAX's compilations."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import user_run  # noqa: E402

from inertia.targets import from_numpyro  # noqa: E402
from inertia.targets.modelfile import load_module  # noqa: E402
from inertia.targets.zoo import make_target  # noqa: E402


@pytest.mark.parametrize("name", list(user_run.MODELS))
def test_model_file_and_csv_load_through_cli_and_api(tmp_path, name):
    """`--model model.py:model --data data.csv` and from_numpyro(model, **columns) give the
    stated dimension and the same finite potential at the origin."""
    folder = user_run._write_model(str(tmp_path), name)
    cli = make_target(os.path.join(folder, "model.py") + ":model",
                      data=os.path.join(folder, "data.csv"))
    assert cli.dim == user_run.MODELS[name][0]
    names = open(os.path.join(folder, "data.csv")).readline().strip().split(",")
    table = np.loadtxt(os.path.join(folder, "data.csv"), delimiter=",", skiprows=1)
    model = load_module(Path(folder) / "model.py").model
    api = from_numpyro(model, **{n: table[:, j] for j, n in enumerate(names)})
    assert api.dim == cli.dim
    u = np.zeros(cli.dim)
    assert np.isfinite(float(cli.potential(u)))
    np.testing.assert_allclose(float(api.potential(u)), float(cli.potential(u)), rtol=1e-12)


def test_probe_counts_compilations(tmp_path):
    """Two jitted functions of two shapes each: 4 traces, lowerings and XLA compilations; the
    spans fit inside the process's own time."""
    probe = tmp_path / "probe.py"
    probe.write_text(user_run.PROBE)
    script = tmp_path / "s.py"
    script.write_text("import jax, jax.numpy as jnp\nf = jax.jit(lambda x: jnp.sin(x) + 1)\n"
                      "g = jax.jit(lambda x: x * 2)\n"
                      "for n in (2, 3):\n    f(jnp.ones(n)).block_until_ready()\n"
                      "    g(jnp.ones(n)).block_until_ready()\n")
    out = tmp_path / "probe.json"
    env = dict(os.environ, USER_RUN_PROBE=str(out), JAX_PLATFORMS="cpu")
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    subprocess.run([sys.executable, str(probe), "--script", str(script)], env=env, check=True)
    rec = json.loads(out.read_text())
    assert rec["rc"] == 0
    assert rec["traces"] >= 4 and rec["lowerings"] >= 4 and rec["compiles"] >= 4
    assert rec["cache_hits"] == 0
    assert 0 < rec["compile_s"] <= rec["overhead_s"] <= rec["inside_s"]
    assert rec["import_s"] > 0
