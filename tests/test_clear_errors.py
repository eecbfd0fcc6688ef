"""Errors that were tracebacks or "internal error": each names the user's model, file or
argument. Cheap: no case runs a sampler past its start (about 20 s in all)."""
import numpy as np
import pytest

from inertia.cli import main


def _run(argv, capsys):
    rc = main(argv)
    return rc, capsys.readouterr().err


def test_a_models_jax_error_is_the_models_with_its_line(tmp_path, capsys):
    pytest.importorskip("numpyro")
    (tmp_path / "g.csv").write_text("g,y\n" + "".join(f"{i % 3},{0.1 * i}\n" for i in range(12)))
    (tmp_path / "m.py").write_text(
        "import jax.numpy as jnp\nimport numpyro, numpyro.distributions as dist\n"
        "def model(g, y):\n    G = int(jnp.max(g)) + 1\n"
        "    mu = numpyro.sample('mu', dist.Normal(0, 1).expand([G]))\n"
        "    numpyro.sample('y', dist.Normal(mu[g.astype(int)], 1.0), obs=y)\n")
    rc, err = _run(["sample", "--model", f"{tmp_path}/m.py:model", "--data",
                    f"{tmp_path}/g.csv", "--quiet"], capsys)
    assert rc == 2 and "internal error" not in err
    assert "m.py raised ConcretizationTypeError at line 4 (G = int(jnp.max(g)) + 1)" in err


@pytest.mark.parametrize("where", ["log density", "import"])
def test_sys_exit_in_a_model_file_is_not_an_exit_status(tmp_path, capsys, where):
    body = ("import sys\nimport jax.numpy as jnp\ndef logp(p, data):\n    sys.exit(3)\n"
            "logp_init = jnp.zeros(2)\n") if where == "log density" else "import sys\nsys.exit(3)\n"
    (tmp_path / "e.py").write_text(body)
    rc, err = _run(["sample", "--model", f"{tmp_path}/e.py:logp", "--quiet", "--steps", "20"],
                   capsys)
    assert rc == 2 and "called sys.exit(3)" in err  # not 3, the not-converged status


def test_csv_without_the_models_response_column(tmp_path, capsys):
    pytest.importorskip("numpyro")
    (tmp_path / "x.csv").write_text("x1,x2\n" + "".join(f"{i},{i % 5}\n" for i in range(30)))
    (tmp_path / "m.py").write_text(
        "import numpyro, numpyro.distributions as dist\ndef model(x1, x2, y=None):\n"
        "    b = numpyro.sample('b', dist.Normal(0, 1).expand([2]))\n"
        "    numpyro.sample('y', dist.Normal(b[0] * x1 + b[1] * x2, 1.0), obs=y)\n")
    rc, err = _run(["fit", "--model", f"{tmp_path}/m.py:model", "--data", f"{tmp_path}/x.csv",
                    "--quiet"], capsys)
    assert rc == 2 and "argument 'y' is not a column of the CSV" in err and "30 unknown" in err


def test_short_row_deep_in_a_csv_read_in_row_groups(tmp_path):
    pytest.importorskip("pyarrow")
    from inertia.data.sources import open_source

    rows = ["x1,x2,y"] + [f"{i},{i % 7},{i % 2}" for i in range(5000)]
    rows[4002] = "1,2"  # file line 4003
    (tmp_path / "long.csv").write_text("\n".join(rows) + "\n")
    with pytest.raises(ValueError, match=r"long.csv: line 4003 has 2 cells, the header 3"):
        open_source(tmp_path / "long.csv", "y")


def test_a_header_wider_than_memory_refused_before_the_target(tmp_path, capsys, monkeypatch):
    from inertia import resources

    monkeypatch.setattr(resources, "available_bytes", lambda: 1 << 30)  # 1 GiB free
    p = 6000  # d = 6001: the d x d matrices of a fit need more than 1 GiB
    X = np.random.default_rng(0).normal(size=(3, p))
    (tmp_path / "w.csv").write_text(",".join(f"x{i}" for i in range(p)) + ",y\n" + "".join(
        ",".join(f"{v:.3f}" for v in r) + f",{t}\n" for r, t in zip(X, [0, 1, 1])))
    rc, err = _run(["fit", "--model", "logistic", "--method", "stl-proj", "--steps", "5",
                    "--quiet", "--response", "y", "--data", f"{tmp_path}/w.csv"], capsys)
    assert rc == 2 and "6000 predictor columns make d = 6001" in err and "select fewer" in err


def test_a_missing_jax_platform(monkeypatch):
    """An error raised in jax's xla_bridge (where JAX starts its platform) gets the advice; the
    same error raised elsewhere does not."""
    from inertia.cli import _backend_error

    monkeypatch.setenv("JAX_PLATFORMS", "cuda")
    ns = {}
    for where, expected in (("/x/jax/_src/xla_bridge.py", True), ("/x/elsewhere.py", False)):
        ns["err"] = RuntimeError("Unable to initialize backend 'cuda'")
        exec(compile("def backends():\n    raise err\n", where, "exec"), ns)
        try:
            ns["backends"]()
        except RuntimeError as e:
            msg = _backend_error(e)
        assert (msg is not None) == expected
    ns["err"] = AssertionError()  # jax 0.10's failure on a CPU-only machine
    exec(compile("def backends():\n    raise err\n", "/x/jax/_src/xla_bridge.py", "exec"), ns)
    try:
        ns["backends"]()
    except AssertionError as e:
        msg = _backend_error(e)
    assert "JAX_PLATFORMS=cuda" in msg and "unset JAX_PLATFORMS" in msg


def test_api_arguments_named():
    import jax.numpy as jnp

    from inertia.mcmc import sample
    from inertia.targets import from_logdensity, kappa_family
    from inertia.vi import fit

    with pytest.raises(ValueError, match="num_chains must be a positive integer, got True"):
        sample(kappa_family(3, 10.0), num_chains=True, num_steps=20)
    t = from_logdensity(lambda p: -0.5 * jnp.sum(p["a"] ** 2), {"a": jnp.ones(2)})
    with pytest.raises(ValueError, match=r"init must be a pair.*keys \['b'\].*'a\[0\]'"):
        fit(t, init={"b": jnp.zeros(2)}, num_steps=20)


def test_a_density_written_as_minus_inf_names_the_cause():
    import jax.numpy as jnp

    from inertia.mcmc import sample
    from inertia.targets import TargetError, from_logdensity

    t = from_logdensity(lambda p: jnp.where(p["x"] < 0, -jnp.inf, -0.5 * p["x"] ** 2),
                        {"x": jnp.ones(())})
    with pytest.raises(TargetError, match="step size adapted down to 0.*-inf"):
        sample(t, num_steps=200)
