"""The posteriordb-style examples (examples/posteriordb): model file + JSON data, no edit to the
model for the data's sake. arK runs through `inertia fit` (about 10 s) and matches least squares;
garch11 and diamonds: the target's potential equals the Stan model's log density in Stan's
unconstrained coordinates, computed here with SciPy (about 3 s each)."""
import json
from pathlib import Path

import numpy as np
import pytest
from scipy import special, stats

pytest.importorskip("numpyro")

HERE = Path(__file__).resolve().parents[1] / "examples" / "posteriordb"


def _data(name):
    return json.loads((HERE / f"{name}.json").read_text())


def test_ark_one_command_matches_least_squares(tmp_path):
    """With priors normal(0, 10) on 195 observations, the AR(5) posterior of (alpha, beta) has the
    least-squares mean and sd s * sqrt(diag((Z'Z)^-1)) (to 0.5 %); the CLI's Gaussian fit must
    find both (mean within 0.05 sd, sd within 5 %)."""
    from inertia.cli import main

    out = tmp_path / "fit.json"
    rc = main(["fit", "--model", f"{HERE / 'arK.py'}:model", "--data", str(HERE / "arK.json"),
               "--json", str(out), "--quiet"])
    assert rc == 0
    fit = json.loads(out.read_text())
    d = _data("arK")
    K, T, y = d["K"], d["T"], np.asarray(d["y"])
    Z = np.column_stack([np.ones(T - K)] + [y[K - k:T - k] for k in range(1, K + 1)])
    coef, rss = np.linalg.lstsq(Z, y[K:], rcond=None)[:2]
    sd = np.sqrt(rss[0] / (T - 2 * K - 1) * np.diag(np.linalg.inv(Z.T @ Z)))
    assert fit["names"][:K + 1] == ["alpha"] + [f"beta[{k}]" for k in range(K)]
    mean = np.asarray(fit["mean"][:K + 1])
    fit_sd = np.sqrt(np.diag(np.asarray(fit["cov"])))[:K + 1]
    assert np.all(np.abs(mean - coef) < 0.05 * sd)
    assert np.allclose(fit_sd / sd, 1.0, atol=0.05)


def _target(name):
    from inertia.targets.zoo import make_target

    return make_target(f"{HERE / name}.py:model", data=str(HERE / f"{name}.json"))


def test_garch11_potential_is_the_stan_density():
    t = _target("garch11")
    d = _data("garch11")
    y, s1 = np.asarray(d["y"]), d["sigma1"]
    x = np.random.default_rng(1).normal(scale=0.5, size=4)  # sorted sites: alpha0 alpha1 beta1_unit mu
    u0, u1, u2, mu = x
    a0, a1, p = np.exp(u0), special.expit(u1), special.expit(u2)
    b1 = (1 - a1) * p
    var = np.empty_like(y)
    var[0] = s1 ** 2
    for i in range(1, y.size):
        var[i] = a0 + a1 * (y[i - 1] - mu) ** 2 + b1 * var[i - 1]
    loglik = stats.norm.logpdf(y, mu, np.sqrt(var)).sum()
    # Stan's transforms: alpha0 = exp(u0), alpha1 = logistic(u1), beta1 = (1 - alpha1) logistic(u2)
    logjac = u0 + np.log(a1 * (1 - a1)) + np.log((1 - a1) * p * (1 - p))
    assert float(t.potential(x)) == pytest.approx(-(loglik + logjac), rel=1e-10)


@pytest.mark.parametrize("prior_only", [0, 1])
def test_diamonds_potential_is_the_stan_density(tmp_path, prior_only):
    from inertia.targets.zoo import make_target

    d = _data("diamonds")
    d["prior_only"] = prior_only
    (tmp_path / "d.json").write_text(json.dumps(d))
    t = make_target(f"{HERE / 'diamonds.py'}:model", data=str(tmp_path / "d.json"))
    K, X, Y = d["K"], np.asarray(d["X"]), np.asarray(d["Y"])
    assert t.dim == K + 1
    x = np.random.default_rng(2).normal(scale=0.3, size=K + 1)  # sorted: Intercept, b, sigma
    icpt, b, log_sigma = x[0], x[1:K], x[K]
    sigma = np.exp(log_sigma)
    Xc = X[:, 1:] - X[:, 1:].mean(axis=0)
    logp = (stats.norm.logpdf(b).sum() + stats.t.logpdf(icpt, 3, 8, 10)
            + stats.t.logpdf(sigma, 3, 0, 10) + np.log(2) + log_sigma)
    if not prior_only:
        logp += stats.norm.logpdf(Y, icpt + Xc @ b, sigma).sum()
    assert float(t.potential(x)) == pytest.approx(-logp, rel=1e-10)
