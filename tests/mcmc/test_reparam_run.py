"""`sample(..., reparam=...)` on NumPyro models (`inertia.mcmc.reparam_run`): draws of the original
sites follow the exact law of Neal's funnel, the result reads the original sites, and
reparam=False (or a model with nothing to rewrite) is the ordinary run, bit for bit."""
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from scipy import stats

from inertia.mcmc import sample
from inertia.targets import from_numpyro


def funnel():
    """Neal's funnel: v ~ N(0, 3^2), x_i | v ~ N(0, e^v), i = 0, 1."""
    v = numpyro.sample("v", dist.Normal(0.0, 3.0))
    numpyro.sample("x", dist.Normal(0.0, jnp.exp(v / 2)).expand([2]).to_event(1))


@pytest.fixture(scope="module")
def funnel_run():
    return sample(from_numpyro(funnel), seed=0, num_chains=4)


def _mcse_ok(draws, exact, what):
    """|mean of f(draws) - exact| <= 4 MCSE (ArviZ's, from the run's own autocorrelation): a
    false alarm about once in 16,000 checks at the run's ESS."""
    from inertia.convergence import chain_stats

    mcse = float(chain_stats(np.asarray(draws)[..., None])["mcse_mean"][0])
    est = float(np.mean(draws))
    assert abs(est - exact) <= 4 * mcse, (what, est, exact, mcse)


def test_funnel_draws_match_the_exact_law(funnel_run):
    """v ~ N(0, 9) and x_i e^{-v/2} ~ N(0, 1) independent of v: means, second moments and the
    tail probability P(v < -3) = Phi(-1) within 4 Monte Carlo standard errors; a KS test of v
    thinned to about one draw per effective sample (p > 1e-3)."""
    res = funnel_run
    assert res.converged, res.verdict.line()
    sites = res.to_arviz().posterior
    v = np.asarray(sites["v"])  # (chain, draw)
    x = np.asarray(sites["x"])  # (chain, draw, 2)
    _mcse_ok(v, 0.0, "mean v")
    _mcse_ok(v ** 2, 9.0, "E v^2")
    _mcse_ok((v < -3.0).astype(float), float(stats.norm.cdf(-1.0)), "P(v < -3)")
    for i in range(2):
        w = x[..., i] * np.exp(-v / 2)
        _mcse_ok(w, 0.0, f"mean x[{i}] e^-v/2")
        _mcse_ok(w ** 2, 1.0, f"E (x[{i}] e^-v/2)^2")
        _mcse_ok(w ** 2 * v, 0.0, "E w^2 v (independence)")
    ess = float(np.min(res.ess()))
    step = max(1, int(np.ceil(v.size / ess)))
    assert stats.kstest(v.reshape(-1)[::step] / 3.0, "norm").pvalue > 1e-3


def test_funnel_run_reports_the_original_sites(funnel_run):
    """Names, table and InferenceData are the original model's; the report names the rewritten
    site and its centredness (the funnel's x: fully non-centred); its gradients are counted."""
    res = funnel_run
    assert res.names == list(from_numpyro(funnel).info["names"])
    assert res.draws.shape[2] == 3
    assert set(res.to_arviz().posterior.data_vars) == {"v", "x"}
    assert [r["name"] for r in res.summary()] == ["v", "x[0]", "x[1]"]
    assert res.reparam["sites"]["x"]["max"] < 0.05
    assert "reparameterised" in res.report() and "x (Normal" in res.report()
    assert res.verdict.numbers["reparameterised"]["x"] == res.reparam["sites"]["x"]["centredness"]
    assert res.warmup_grad_evals >= res.reparam["grad_evals"] > 0


def centred(y):
    """theta_i ~ N(mu, 1): a location with a latent parent, in a gentle geometry (short warm-up)."""
    mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
    with numpyro.plate("J", len(y)):
        theta = numpyro.sample("theta", dist.Normal(mu, 1.0))
        numpyro.sample("y", dist.Normal(theta, 1.0), obs=y)


def noncentred(y):
    mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
    with numpyro.plate("J", len(y)):
        z = numpyro.sample("z", dist.Normal(0.0, 1.0))
        numpyro.sample("y", dist.Normal(mu + z, 1.0), obs=y)


ARGS = (jnp.array([1.0, -0.5, 2.0]),)
SHORT = dict(seed=3, num_chains=2, num_steps=100)


@pytest.mark.filterwarnings("ignore:hfhr-exact:RuntimeWarning")  # 100 steps: not converged
def test_off_is_the_ordinary_run(monkeypatch):
    """reparam=False runs the model as written: the same draws, bit for bit, as a run with the
    rewrite removed from `sample` altogether; and on a model with nothing to rewrite the default
    is that same ordinary run."""
    from inertia.mcmc import reparam_run

    t = from_numpyro(centred, *ARGS)
    off = sample(t, reparam=False, **SHORT)
    assert off.reparam is None
    with monkeypatch.context() as mp:
        mp.setattr(reparam_run, "applies", lambda *a, **k: {})
        bare = sample(t, **SHORT)
    np.testing.assert_array_equal(off.draws, bare.draws)
    assert off.total_grad_evals == bare.total_grad_evals
    nc = from_numpyro(noncentred, *ARGS)
    auto, plain = sample(nc, **SHORT), sample(nc, reparam=False, **SHORT)
    assert auto.reparam is None
    np.testing.assert_array_equal(auto.draws, plain.draws)


@pytest.mark.filterwarnings("ignore:hfhr-exact:RuntimeWarning")
def test_given_start_or_parameters_keep_the_model():
    """A given start or given kernel parameters keep the model as written (they are in its
    coordinates); a bad `reparam` value is refused."""
    t = from_numpyro(centred, *ARGS)
    res = sample(t, init=np.zeros(t.dim), **SHORT)
    assert res.reparam is None
    with pytest.raises(ValueError, match="reparam"):
        sample(t, reparam="always", **SHORT)


def test_cli_reports_the_rewrite_and_turns_it_off(tmp_path, capsys):
    """`inertia sample` on a centred model: the JSON and the printed report name the rewritten
    site; `--no-reparam` runs the model as written (no rewrite recorded)."""
    import json

    from inertia.cli import main

    mf = tmp_path / "m.py"
    mf.write_text("import numpyro\nimport numpyro.distributions as dist\n"
                  "def model(y):\n"
                  "    mu = numpyro.sample('mu', dist.Normal(0.0, 1.0))\n"
                  "    with numpyro.plate('J', len(y)):\n"
                  "        theta = numpyro.sample('theta', dist.Normal(mu, 1.0))\n"
                  "        numpyro.sample('y', dist.Normal(theta, 1.0), obs=y)\n")
    csv = tmp_path / "d.csv"
    csv.write_text("y\n1.0\n-0.5\n2.0\n")
    common = ["sample", "--model", f"{mf}:model", "--data", str(csv), "--steps", "100",
              "--target-ess", "0", "--chains", "2", "--quiet", "--allow-unconverged"]
    for flag, rewritten in (([], True), (["--no-reparam"], False)):
        out = tmp_path / f"s{len(flag)}.json"
        assert main(common + flag + ["--json", str(out)]) == 0
        d = json.loads(out.read_text())
        assert (d["reparam"] is not None) == rewritten
        assert ("reparameterised" in capsys.readouterr().out) == rewritten
        assert [r["name"] for r in d["summary"]] == ["mu", "theta[0]", "theta[1]", "theta[2]"]


def test_fit_cli_rewrites_only_when_asked(tmp_path, capsys):
    """`inertia fit --reparam` on a centred model records and prints the rewrite, and its table
    reads the model's own sites; without the flag the model is fitted as written."""
    import json

    from inertia.cli import main

    mf = tmp_path / "m.py"
    mf.write_text("import numpyro\nimport numpyro.distributions as dist\n"
                  "def model(y):\n"
                  "    mu = numpyro.sample('mu', dist.Normal(0.0, 1.0))\n"
                  "    tau = numpyro.sample('tau', dist.HalfNormal(1.0))\n"
                  "    with numpyro.plate('J', len(y)):\n"
                  "        theta = numpyro.sample('theta', dist.Normal(mu, tau))\n"
                  "        numpyro.sample('y', dist.Normal(theta, 1.0), obs=y)\n")
    csv = tmp_path / "d.csv"
    csv.write_text("y\n1.0\n-0.5\n2.0\n")
    common = ["fit", "--model", f"{mf}:model", "--data", str(csv), "--quiet",
              "--allow-unconverged", "--allow-unreliable"]
    for flag, rewritten in (([], False), (["--reparam"], True)):
        out = tmp_path / f"f{len(flag)}.json"
        assert main(common + flag + ["--json", str(out)]) == 0
        d = json.loads(out.read_text())
        assert (d["reparam"] is not None) == rewritten
        assert ("reparameterised (0 = non-centred" in capsys.readouterr().out) == rewritten
        assert [r["name"] for r in d["summary"]][:3] == ["mu", "tau", "theta[0]"]
        if rewritten:
            assert set(d["reparam"]["sites"]) == {"theta"}
