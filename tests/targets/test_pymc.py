"""PyMC models as targets (`inertia.targets.from_pymc`) and as model files, against the closed-form
posterior of examples/pymc/hierarchical.py (normal-gamma and Dirichlet-multinomial conjugacy) and
against `pm.sample` on the same model. About 30 s of CPU in all (PyTensor's graph rewrites, three
sampler runs, two fits, one pm.sample); skipped without PyMC unless INERTIA_REQUIRE_PYMC is set."""
import json
import os
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from scipy.special import gammaln

if os.environ.get("INERTIA_REQUIRE_PYMC"):  # .ci/run installs the pymc extra: run, never skip
    import pymc as pm
else:
    pm = pytest.importorskip("pymc", reason="from_pymc needs the optional pymc extra "
                                              "(pip install 'inertia[pymc]')")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pymc"
DATA = json.loads((EXAMPLE / "hierarchical.json").read_text())


def closed_form(d, a=2.0, b=2.0):
    """Exact posterior means and sds: prec ~ Gamma(a + n/2, b + S/2); (mu, theta) | prec normal
    with precision prec * L; w ~ Dirichlet(1 + counts); sigma = prec^(-1/2)."""
    y, g, J = np.asarray(d["y"]), np.asarray(d["group"]), d["J"]
    s0, k, c = d["s0"], d["k"], np.asarray(d["counts"], dtype=float)
    L = np.zeros((J + 1, J + 1))
    L[0, 0] = s0 + J * k
    L[0, 1:] = L[1:, 0] = -k
    L[1:, 1:] = np.diag(k + np.bincount(g, minlength=J))
    rhs = np.concatenate([[0.0], np.bincount(g, weights=y, minlength=J)])
    m = np.linalg.solve(L, rhs)
    a1, b1 = a + y.size / 2, b + (y @ y - rhs @ m) / 2
    cov = np.linalg.inv(L) * b1 / (a1 - 1)  # marginal (Student t) covariance of (mu, theta)
    e_sigma = np.exp(gammaln(a1 - 0.5) - gammaln(a1)) * np.sqrt(b1)
    al = 1 + c
    a0 = al.sum()
    mean = {"mu": m[0], "prec": a1 / b1, "sigma": e_sigma,
            **{f"theta[{j}]": m[1 + j] for j in range(J)},
            **{f"w[{i}]": al[i] / a0 for i in range(3)}}
    sd = {"mu": np.sqrt(cov[0, 0]), "prec": np.sqrt(a1) / b1,
          "sigma": np.sqrt(b1 / (a1 - 1) - e_sigma ** 2),
          **{f"theta[{j}]": np.sqrt(cov[1 + j, 1 + j]) for j in range(J)},
          **{f"w[{i}]": np.sqrt(al[i] * (a0 - al[i]) / (a0 ** 2 * (a0 + 1))) for i in range(3)}}
    return mean, sd


@pytest.fixture(scope="module")
def sampled():
    import runpy

    from inertia import mcmc
    from inertia.data.named import read_named
    from inertia.targets import from_pymc

    model = runpy.run_path(str(EXAMPLE / "hierarchical.py"))["model"]
    target = from_pymc(model(**read_named(EXAMPLE / "hierarchical.json")))
    return target, mcmc.sample(target, seed=0)


def test_sampled_draws_match_the_closed_form(sampled):
    """Every mean within 4 MCSE (ArviZ's) of the exact one, every sd within 10 % (ESS > 1000: the
    sd's own relative error is about 2 %)."""
    target, res = sampled
    assert target.dim == 8 and "prec_log__" in target.info["names"]
    assert "w_simplex__[1]" in target.info["names"]
    mean, sd = closed_form(DATA)
    rows = {r["name"]: r for r in res.summary()}
    assert set(rows) == set(mean)
    for name in mean:
        r = rows[name]
        assert abs(r["mean"] - mean[name]) < 4 * r["mcse"], (name, r, mean[name])
        assert abs(r["sd"] / sd[name] - 1) < 0.10, (name, r["sd"], sd[name])


def test_inference_data_is_shaped_like_pm_sample(sampled):
    import arviz as az
    import matplotlib.pyplot as plt

    target, res = sampled
    idata = res.to_arviz()
    for group in ("posterior", "sample_stats", "log_likelihood", "observed_data"):
        assert hasattr(idata, group), group
    post = idata.posterior
    assert set(post.data_vars) == {"mu", "prec", "sigma", "theta", "w"}
    assert post["theta"].dims == ("chain", "draw", "group")
    assert list(post["w"].coords["category"].values) == ["a", "b", "c"]
    np.testing.assert_allclose(post["sigma"], 1 / np.sqrt(post["prec"]), rtol=1e-12)
    np.testing.assert_allclose(post["w"].sum("category"), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(idata.observed_data["counts"], DATA["counts"])
    # pointwise log likelihood at one draw, recomputed with SciPy
    c, n = 1, 7
    theta = post["theta"].values[c, n]
    sigma = float(post["sigma"].values[c, n])
    want = stats.norm.logpdf(DATA["y"], theta[np.asarray(DATA["group"])], sigma)
    np.testing.assert_allclose(idata.log_likelihood["y"].values[c, n], want, rtol=1e-10)
    want_counts = stats.multinomial.logpmf(DATA["counts"], 30, post["w"].values[c, n])
    assert float(idata.log_likelihood["counts"].values[c, n]) == pytest.approx(want_counts)
    table = az.summary(idata)
    assert "theta[g0]" in table.index and "w[c]" in table.index
    loo = az.loo(idata, var_name="y")
    assert np.isfinite(loo.elpd_loo)
    az.plot_trace(idata, var_names=["prec", "w"])
    plt.close("all")


def test_cli_fits_a_pymc_model_file_with_json_data(tmp_path):
    """`inertia fit` on the model file and its JSON data: the Gaussian q (in PyMC's unconstrained
    coordinates) has constrained means within 0.1 exact sd of the exact ones (q is nearly exact
    here: a' = 14 for prec, Dirichlet(6, 11, 16) for w)."""
    from inertia.cli import main

    out = tmp_path / "fit.json"
    assert main(["fit", "--model", f"{EXAMPLE / 'hierarchical.py'}:model", "--data",
                 str(EXAMPLE / "hierarchical.json"), "--json", str(out), "--quiet"]) == 0
    fit = json.loads(out.read_text())
    assert "[PyMC model]" in fit["target"]
    mean, sd = closed_form(DATA)
    rows = {r["name"]: r for r in fit["summary"]}
    for name in mean:
        assert abs(rows[name]["mean"] - mean[name]) < 0.1 * sd[name], (name, rows[name])


def test_model_file_holding_a_pm_model(tmp_path):
    """A file defining a pm.Model instance: --data sets its pm.Data containers by name (the
    potential follows the new data), other names are refused by name; discrete free variables
    are refused."""
    from inertia.targets import TargetError
    from inertia.targets.zoo import make_target

    (tmp_path / "m.py").write_text(
        "import pymc as pm\nwith pm.Model() as model:\n    y = pm.Data('y', [0.0, 0.0])\n"
        "    x = pm.Normal('x', 0.0, 1.0)\n    pm.Normal('obs', x, 1.0, observed=y)\n")
    (tmp_path / "d.json").write_text('{"y": [1.0, 2.0, 4.0]}')
    t = make_target(f"{tmp_path / 'm.py'}:model", data=str(tmp_path / "d.json"))
    y = np.array([1.0, 2.0, 4.0])  # V(x) = x^2 / 2 + sum (y - x)^2 / 2 + const
    assert float(t.potential(np.ones(1)) - t.potential(np.zeros(1))) == pytest.approx(
        0.5 + 0.5 * np.sum((y - 1) ** 2 - y ** 2), rel=1e-12)
    (tmp_path / "e.json").write_text('{"z": [1.0]}')
    with pytest.raises(TargetError, match=r"\['z'\] are none of them \(containers: \['y'\]"):
        make_target(f"{tmp_path / 'm.py'}:model", data=str(tmp_path / "e.json"))
    from inertia.targets import from_pymc

    with pm.Model() as discrete:
        pm.Poisson("k", 3.0)
    with pytest.raises(TargetError, match="continuous free variables.*k"):
        from_pymc(discrete)


def test_pymc_data_are_arguments_not_constants():
    """PyMC's observed data and pm.Data containers (1 500 rows each, above the scan's 1 000
    elements) are arguments of every program a PyMC target's run compiles (value and gradient,
    the constrain map with a data-sized deterministic, the sampler, the pointwise log
    likelihood), not HLO constants that XLA embeds and folds."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from test_constants import large_constants

    from inertia.mcmc import sample
    from inertia.targets import from_pymc

    rng = np.random.default_rng(5)
    x = rng.normal(size=1500)
    y = 1.0 + 2.0 * x + rng.normal(size=1500)
    with pm.Model() as m:
        xd = pm.Data("x", x)
        a, b = pm.Normal("a", 0.0, 1.0), pm.Normal("b", 0.0, 1.0)
        s = pm.HalfNormal("s", 1.0)
        pm.Normal("y", a + b * xd, s, observed=y)
        pm.Deterministic("fit", a + b * xd)

    def run():
        res = sample(from_pymc(m), num_steps=100, seed=0)
        idata = res.to_arviz()
        assert idata.log_likelihood["y"].shape[-1] == 1500
        assert idata.posterior["fit"].shape[-1] == 1500

    assert large_constants(run) == []


# --- against pm.sample on the same model ------------------------------------------------------
# pm.sample's NUTS through PyMC's NumPyro backend (nuts_sampler="numpyro": no C compilation, ~15 s
# on one core), 4 chains x (1 000 tune + 1 000 draws), bulk ESS ~4 000 per quantity.
Z = 4.0  # per quantity, |z| > 4 has probability 6e-5 under N(0, 1): 20 checks, a false alarm in 800


@pytest.fixture(scope="module")
def pm_sampled():
    import runpy

    pytest.importorskip("numpyro", reason="pm.sample's NumPyro backend (the test extra)")

    from inertia.data.named import read_named

    model = runpy.run_path(str(EXAMPLE / "hierarchical.py"))["model"]
    with model(**read_named(EXAMPLE / "hierarchical.json")):
        return pm.sample(draws=1000, tune=1000, chains=4, random_seed=1, progressbar=False,
                         nuts_sampler="numpyro", nuts_sampler_kwargs={"chain_method": "vectorized"},
                         idata_kwargs={"log_likelihood": True})


def _agrees_with_pm_sample(idata, ref, sd_tol=None):
    """The InferenceData has pm.sample's groups, variables, dims and coordinates, and az.summary's
    rows of both agree: every mean within Z combined MCSEs (ArviZ's mcse_mean of each), every sd
    within Z combined mcse_sd (sd_tol=None), or both within sd_tol reference sds plus Z reference
    MCSEs (an approximation, e.g. VI's q). Returns the two tables."""
    import arviz as az

    for group in ("posterior", "log_likelihood", "observed_data") + (
            ("sample_stats",) if sd_tol is None else ()):  # q's draws have no sampler statistics
        assert group in idata.groups(), group
    assert set(idata.posterior.data_vars) == set(ref.posterior.data_vars)
    for k, v in ref.posterior.data_vars.items():
        assert idata.posterior[k].dims == v.dims, k
        for dim in v.dims[2:]:
            assert list(idata.posterior[k].coords[dim].values) == list(v.coords[dim].values)
    assert set(idata.log_likelihood.data_vars) == set(ref.log_likelihood.data_vars)
    for k, v in ref.log_likelihood.data_vars.items():
        assert idata.log_likelihood[k].shape[2:] == v.shape[2:], k
        np.testing.assert_array_equal(idata.observed_data[k], ref.observed_data[k])
    ours, theirs = az.summary(idata), az.summary(ref)
    assert sorted(ours.index) == sorted(theirs.index)  # rows by name: their order follows the
    # posterior's variable order, which differs between PyMC versions
    for name in theirs.index:
        a, b = ours.loc[name], theirs.loc[name]
        if sd_tol is None:
            se_m, se_s = np.hypot(a.mcse_mean, b.mcse_mean), np.hypot(a.mcse_sd, b.mcse_sd)
            assert abs(a["mean"] - b["mean"]) < Z * se_m, (name, a["mean"], b["mean"], se_m)
            assert abs(a["sd"] - b["sd"]) < Z * se_s, (name, a["sd"], b["sd"], se_s)
        else:
            tol = sd_tol * b["sd"] + Z * b.mcse_mean
            assert abs(a["mean"] - b["mean"]) < tol, (name, a["mean"], b["mean"], tol)
            assert abs(a["sd"] / b["sd"] - 1) < sd_tol + Z * b.mcse_sd / b["sd"], (name, a, b)
    return ours, theirs


def _loo_agrees(idata, ref):
    """az.loo of y runs on both and their elpd_loo (24 observations, ~4 000 draws each) differ by
    less than 0.5: each pointwise elpd has a Monte Carlo sd of about sd(log p_i) / sqrt(ESS) <
    0.02 here, so the sum of 24 has one below 0.1 if independent and 0.5 if fully correlated.
    (counts is one multinomial observation: leaving it out is not a LOO question.)"""
    import arviz as az

    a, b = az.loo(idata, var_name="y"), az.loo(ref, var_name="y")
    assert np.all(a.pareto_k < 0.7) and np.all(b.pareto_k < 0.7)
    assert abs(a.elpd_loo - b.elpd_loo) < 0.5, (a.elpd_loo, b.elpd_loo)


def test_sample_agrees_with_pm_sample(sampled, pm_sampled):
    """from_pymc + inertia.mcmc.sample: pm.sample's InferenceData layout and az.summary table,
    numbers within Monte Carlo error, the same elpd_loo."""
    _, res = sampled
    idata = res.to_arviz()
    _agrees_with_pm_sample(idata, pm_sampled)
    _loo_agrees(idata, pm_sampled)


def test_fit_agrees_with_pm_sample(pm_sampled):
    """from_pymc + inertia.vi.fit: q's draws in pm.sample's layout, every mean within 0.1 sd and
    every sd within 10 % of pm.sample's, plus 4 of its MCSEs (q is a Gaussian in PyMC's
    unconstrained coordinates; on this posterior its constrained moments are within ~5 % sd of the
    exact ones, see test_cli_fits_a_pymc_model_file_with_json_data)."""
    import runpy

    from inertia.data.named import read_named
    from inertia.targets import from_pymc
    from inertia.vi import fit

    model = runpy.run_path(str(EXAMPLE / "hierarchical.py"))["model"]
    res = fit(from_pymc(model(**read_named(EXAMPLE / "hierarchical.json"))), seed=0)
    _agrees_with_pm_sample(res.to_arviz(), pm_sampled, sd_tol=0.1)


def test_cli_sample_agrees_with_pm_sample(tmp_path, pm_sampled):
    """`inertia sample` on the model file and its JSON data, saved as netCDF and read back with
    ArviZ alone: pm.sample's layout and numbers (as above); az.summary, az.loo and az.plot_trace
    run on it as on pm.sample's."""
    import arviz as az
    import matplotlib.pyplot as plt

    from inertia.cli import main

    nc = tmp_path / "draws.nc"
    assert main(["sample", "--model", f"{EXAMPLE / 'hierarchical.py'}:model", "--data",
                 str(EXAMPLE / "hierarchical.json"), "--save", str(nc), "--quiet"]) == 0
    idata = az.from_netcdf(nc)
    _agrees_with_pm_sample(idata, pm_sampled)
    _loo_agrees(idata, pm_sampled)
    az.plot_trace(idata, var_names=["prec", "theta", "w", "sigma"])
    plt.close("all")
