"""ArviZ reads every inertia output: ess, rhat and summary run without glue (VI, mcmc, sgmcmc)."""
import jax
import numpy as np
import pytest

az = pytest.importorskip("arviz")

from inertia import vi  # noqa: E402
from inertia.arviz_io import to_arviz_draws  # noqa: E402
from inertia.targets import gaussian  # noqa: E402


def _check(obj, var, dim, n_total):
    """ess / rhat / summary run; returns (ess_bulk, rhat, summary means) as arrays."""
    ess = np.asarray(az.ess(obj)[var])
    rhat = np.asarray(az.rhat(obj)[var])
    summ = az.summary(obj)
    assert ess.shape == rhat.shape == (dim,) and len(summ) == dim
    assert np.all(np.isfinite(ess)) and np.all((ess > 0) & (ess <= 4 * n_total))
    return ess, rhat, summ["mean"].to_numpy()


@pytest.fixture(scope="module")
def gauss():
    return gaussian(np.array([1.0, -2.0]), np.array([[2.0, 0.3], [0.3, 1.0]]))


def test_vi_result(gauss):
    res = vi.fit(gauss, "exact-apg", num_steps=200, seed=[0, 1, 2, 3], checkpoint_every=200)
    idata = res.to_arviz(num_draws=500, seed=3)
    ess, rhat, means = _check(idata, "x", 2, 2000)
    # draws are i.i.d. from the fitted Gaussians (= the target here): ESS ~ 2000, R-hat ~ 1
    assert np.all(ess > 1400) and np.all(np.abs(rhat - 1) < 0.02)
    sd = np.sqrt(np.diag(np.linalg.inv(np.array([[2.0, 0.3], [0.3, 1.0]]))))
    assert np.all(np.abs(np.asarray(res.mean).mean(0) - [1, -2]) < 1e-8)
    assert np.all(np.abs(means - [1.0, -2.0]) < 5 * sd / np.sqrt(2000))


def test_named_and_dict_inputs():
    rng = np.random.default_rng(0)
    draws = rng.normal(size=(2, 300, 3))
    idata = to_arviz_draws(draws, names=["a", "b", "c"])
    summ = az.summary(idata)
    assert list(summ.index) == ["x[a]", "x[b]", "x[c]"]
    np.testing.assert_allclose(summ["mean"].to_numpy(), draws.mean(axis=(0, 1)), atol=1e-3)
    sites = {"mu": draws[..., 0], "sigma": np.exp(draws[..., 1:])}
    summ = az.summary(to_arviz_draws(sites))
    assert list(summ.index) == ["mu", "sigma[0]", "sigma[1]"]
    assert float(np.asarray(az.ess(to_arviz_draws(sites))["mu"])) > 300
    with pytest.raises(ValueError, match="names has 2"):
        to_arviz_draws(draws, names=["a", "b"])
    with pytest.raises(ValueError, match="chain, draw"):
        to_arviz_draws(np.zeros(5))


def test_mcmc_result(gauss):
    from inertia.mcmc import sample

    res = sample(gauss, "hfhr", num_chains=4, num_steps=400, seed=0)
    ess, rhat, means = _check(res.to_arviz(), "x", 2, 1600)
    # res.ess() is the diagnostics' bulk ESS of the kept draws; ArviZ's estimator differs in
    # two details of Geyer's sequence (inertia.convergence), within noise here (read: 1.00004)
    ratio = res.ess() / ess
    assert np.all(np.abs(ratio - 1.0) < 0.03), ratio
    assert np.all(np.isfinite(rhat))


def test_sgmcmc_result():
    """ArviZ's summary of the SGD draws against the exact predictions of the proxy (linear
    regression: the proxy is the algorithm): the stationary mean is theta_hat and the sds are
    sqrt(diag(predicted_cov)); 4 Monte Carlo standard errors, the mean's from the predicted IAT
    (sd(mean) = sqrt(Sigma_ii tau_i / n)), the sd's from the predicted ESS (sd / sqrt(2 ESS))."""
    from inertia.sgmcmc import calibrate

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    y = X @ np.array([0.5, -1.0]) + rng.normal(size=200)
    res = calibrate("linear", (X, y), batch_size=20, num_steps=10000, seed=0, num_chains=2)
    n = res.draws.shape[0] * res.draws.shape[1]
    ess, rhat, means = _check(res.to_arviz(), "x", 2, n)
    sd_pred = np.sqrt(np.diag(res.predicted_cov))
    mcse_mean = np.sqrt(sd_pred ** 2 * res.iat.per_coord / n)
    assert np.all(np.abs(means - res.theta_hat) < 4 * mcse_mean)
    sds = az.summary(res.to_arviz())["sd"].to_numpy()
    ess_pred = n / res.iat.per_coord
    # (+ 1e-3: the summary rounds to 3 decimals)
    assert np.all(np.abs(sds - sd_pred) < 4 * sd_pred / np.sqrt(2 * ess_pred) + 1e-3)
    # ArviZ's bulk ESS against the predicted n / tau (tau = 10.2 here): the relative sd of the
    # estimate from 2 chains x 9,000 draws is ~0.07 (measured 0.048-0.064 on Gaussian VAR(1)
    # chains with tau = 20 and 2 x 27,000 draws, tests/sgmcmc/test_calibrate.py; the sd scales as
    # sqrt(tau / n), x 1.22 here), so rtol 0.3 is ~4 sds
    np.testing.assert_allclose(ess, ess_pred, rtol=0.3)
    assert np.all(np.abs(rhat - 1) < 0.1)
