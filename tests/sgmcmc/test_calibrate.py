"""Algorithm 1 in one call and the `inertia calibrate` command-line contract."""
import argparse
import json
import warnings

import numpy as np
import pytest
import scipy.stats

import inertia  # noqa: F401
from inertia.cli._parsers import add_calibrate
from inertia.sgmcmc import CalibrationWarning, calibrate

from . import _linear_chain as oracle


def _parser():
    p = argparse.ArgumentParser(prog="inertia")
    add_calibrate(p.add_subparsers(dest="command"))
    return p


def _write_csv(path, X, y, names=None, response="y", sep=","):
    names = names or [f"x{i}" for i in range(X.shape[1])]
    lines = [sep.join([response] + names)]
    lines += [sep.join(f"{v:.17g}" for v in [yy, *row]) for yy, row in zip(y, X)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_calibrate_linear(make_hetero):
    """Algorithm 1 end to end on a linear regression, where the proxy is the algorithm and the
    chain's law is known exactly (the oracle `_linear_chain`, sharing no code with inertia.sgmcmc).

    Monte Carlo tolerances (2 chains x 27,000 kept draws, IAT ~20, ESS ~2,700 per coordinate):
    - covariance: each of the 6 entries within T_COV batch-means standard errors of Sigma* (10
      batches of 2,700 draws per chain, 135 IATs each; Bonferroni over 6 entries at family-wise
      level 1e-3 with t_19 tails gives 4.8);
    - IAT: the relative sd of the estimate 2 n / ESS_bulk on a Gaussian VAR(1) with this chain's
      transition and covariance and this length is 0.048, 0.064, 0.056 per coordinate (measured
      over 100 replicate pairs of chains; largest of the 300 errors 0.23), so rtol 0.25 is ~4 sds
      of the worst coordinate.
    """
    X, y = make_hetero(n=400, d=2, seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CalibrationWarning)
        res = calibrate("linear", (X, y), batch_size=20, num_steps=30000, seed=2, num_chains=2,
                        intercept=True)
    assert res.draws.shape == (2, 27000, 3)
    D = np.column_stack([np.ones(len(y)), X])
    sigma = np.sqrt(np.sum((y - D @ np.linalg.lstsq(D, y, rcond=None)[0]) ** 2) / (len(y) - 3))
    a, Jn, theta_hat = oracle.linear_regression_parts(D, y, sigma)
    S = oracle.sandwich_target(a, Jn, theta_hat)
    np.testing.assert_allclose(res.target_cov, S, rtol=1e-10)
    mean, cov = oracle.stationary(a, Jn, res.Lambda, batch_size=20)
    np.testing.assert_allclose(mean, theta_hat, rtol=1e-10)
    assert np.max(np.abs(cov - S)) < 1e-9 * np.max(np.abs(S))  # the tuned chain's law is Sigma*
    np.testing.assert_allclose(res.predicted_cov, S, rtol=1e-8)
    assert res.max_z < res.z_threshold and "covariance" not in res.verdict.line()
    # the empirical covariance against Sigma*, in batch-means standard errors
    per = np.array([np.cov(b.T) for ch in res.draws for b in np.split(ch, 10)])
    se = per.std(0, ddof=1) / np.sqrt(len(per))
    T_COV = float(scipy.stats.t.ppf(1 - 1e-3 / 12, len(per) - 1))  # 4.8
    z = np.abs(res.empirical_cov - S) / se
    assert z.max() < T_COV, z
    # the exact IAT of coordinate i of the linear chain: lag-k autocovariance (I - Lambda J)^k S,
    # so tau_i = [(2 (Lambda J)^-1 - I) S]_ii / S_ii
    J = Jn.mean(0)
    tau = np.diag((2 * np.linalg.inv(res.Lambda @ J) - np.eye(3)) @ S) / np.diag(S)
    np.testing.assert_allclose(res.iat.per_coord, tau, rtol=1e-10)
    np.testing.assert_allclose(res.iat_empirical, tau, rtol=0.25)
    n = res.draws.shape[0] * res.draws.shape[1]
    np.testing.assert_allclose(res.ess_predicted, n / tau, rtol=1e-10)
    js = res.to_json()
    for k in ("lambda", "theta_hat", "sandwich", "target_cov", "predicted_cov", "empirical_cov",
              "iat"):
        assert k in js
    # the shared sampler diagnostics (inertia.diagnostics, as in inertia.mcmc): mixed chains
    dg = res.diagnostics
    assert dg.converged and js["diagnostics"]["converged"] and dg.worst_rhat < 1.01


def test_calibrate_reports_unmixed_chains(make_hetero):
    """Chains shorter than their autocorrelation time are flagged NOT CONVERGED, not trusted."""
    X, y = make_hetero(n=400, d=2, seed=5)
    with pytest.warns(RuntimeWarning, match="NOT CONVERGED"):
        res = calibrate("linear", (X, y), batch_size=20, num_steps=60, seed=2, num_chains=2,
                        intercept=True, init="map", names=["c", "a", "b"])
    assert not res.diagnostics.converged and res.diagnostics.names == ["c", "a", "b"]
    assert not res.to_json()["diagnostics"]["converged"]
    assert "r_hat" in res.table() and "NOT CONVERGED" in res.table()


def test_calibrate_warns_when_prediction_is_wrong():
    """Logistic regression on 20 nearly separable points, by design (no data seed): x evenly spaced
    on [-3, 3], y = 1 for x > 0 except the two labels next to the boundary, flipped. Sigma* is large
    on the scale where the loss is quadratic, so the proxy's prediction is wrong: the empirical
    covariance is ~250 Monte Carlo standard errors off (measured), against a threshold of ~3."""
    X = np.linspace(-3.0, 3.0, 20)[:, None]
    y = (X[:, 0] > 0).astype(float)
    y[[8, 11]] = 1.0 - y[[8, 11]]
    with pytest.warns(CalibrationWarning, match="standard errors"):
        res = calibrate("logistic", (X, y), batch_size=10, num_steps=10000, seed=0,
                        num_chains=2, intercept=True)
    assert res.max_z > 10 * res.z_threshold and "empirical covariance differs" in res.verdict.line()


def test_cli_contract(tmp_path, make_hetero):
    hetero_linear = make_hetero
    X, y = hetero_linear(n=200, d=2, seed=7)
    csv_path = _write_csv(tmp_path / "d.csv", X, y, names=["a", "b"], sep=";")
    out = tmp_path / "r.json"
    args = _parser().parse_args(
        ["calibrate", "--csv", str(csv_path), "--response", "y", "--model", "linear",
         "--batch-size", "10", "--tuning", "dq-exact", "--steps", "3000", "--seed", "1",
         "--json", str(out), "--subsample", "150", "--without-replacement"])
    rc = args.func(args)
    js = json.loads(out.read_text())
    assert rc == (0 if js["converged"] else 3) and js["verdict"].startswith(
        "converged" if rc == 0 else "NOT CONVERGED: ") and (rc == 0) is (not js["problems"])
    for k in ("lambda", "theta_hat", "sandwich", "target_cov", "predicted_cov", "empirical_cov",
              "iat"):
        assert k in js
    assert np.asarray(js["lambda"]).shape == (3, 3)  # intercept added
    assert js["parameters"] == ["(intercept)", "a", "b"]
    assert js["settings"]["replacement"] is False and js["settings"]["subsample"] == 150
    # SGLD + momentum + beta loss through the same command
    args = _parser().parse_args(
        ["calibrate", "--csv", str(csv_path), "--response", "y", "--model", "linear",
         "--loss", "beta", "--beta-div", "1.3", "--batch-size", "10", "--tuning", "dq-exact",
         "--steps", "2000", "--seed", "1", "--temperature", "2000", "--momentum", "0.3",
         "--allow-unconverged"])
    assert args.func(args) == 0


def test_cli_bad_input(tmp_path, make_hetero):
    hetero_linear = make_hetero
    X, y = hetero_linear(n=50, d=2, seed=7)
    good = _write_csv(tmp_path / "d.csv", X, y)
    base = ["calibrate", "--model", "linear", "--batch-size", "5", "--steps", "100",
            "--seed", "0"]
    with pytest.raises(ValueError, match="no column 'z'"):
        a = _parser().parse_args(base + ["--csv", str(good), "--response", "z"])
        a.func(a)
    bad = tmp_path / "bad.csv"
    bad.write_text("y,x\n1,2\n3,abc\n")
    with pytest.raises(ValueError, match="line 3, column 'x': 'abc' is not a number"):
        a = _parser().parse_args(base + ["--csv", str(bad), "--response", "y"])
        a.func(a)
    dup = tmp_path / "dup.csv"
    dup.write_text("y,x1,x2\n" + "".join(f"{i % 3},{i},{2 * i}\n" for i in range(20)))
    with pytest.raises(ValueError, match="has rank 2 < 3 parameters"):
        a = _parser().parse_args(base + ["--csv", str(dup), "--response", "y"])
        a.func(a)
    with pytest.raises(ValueError, match="no such CSV file"):
        a = _parser().parse_args(base + ["--csv", str(tmp_path / "none.csv"), "--response", "y"])
        a.func(a)
