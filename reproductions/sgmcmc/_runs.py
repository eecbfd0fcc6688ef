"""SGD runs for each tuning rule, the exact Gaussian columns and the NUTS reference."""
from __future__ import annotations

import math
import time

import numpy as np


def _tuned_runs(model, curv, methods, B, epochs, seed, theta_star=None, max_draws=20_000, *,
                burn_frac=0.1, start=None, whiten_calib=False):
    """Tune Lambda by each method, run SGD for `epochs` epochs; covariance / calibration errors.

    start: initial point (default theta_hat); whiten_calib adds the authors' Poisson calibration
    metric (`_quantile_calib_rmse`) against N(theta_hat, Sigma*).
    """
    import jax
    import scipy.stats

    from inertia.sgmcmc import kernels, rel_fro, stationary, tune

    N = model.num_obs
    steps = int(math.ceil(epochs * N / B))
    burn = steps * round(1000 * burn_frac) // 1000  # exact integer division (0.1 -> steps // 10)
    x0 = curv.theta_hat if start is None else np.asarray(start, float)
    thin = max(1, (steps - burn) // max_draws)
    sampler = kernels.make_sampler(model, batch_size=B,
                                   num_draws=(steps - burn) // thin, thin=thin, burn_in=burn)
    target = curv.target_cov
    out = {}
    for k, meth in enumerate(methods):
        rec = {"method": meth}
        try:
            t = tune(curv, method=meth, batch_size=B, check=False)
        except ValueError as err:
            out[meth] = dict(rec, error=str(err), cov_err=None, calib_err=None)
            continue
        try:
            pred = stationary(curv, t.Lambda, batch_size=B).cov
            rec["predicted_cov_err"] = rel_fro(pred, target)
        except ValueError as err:
            rec["predicted_cov_err"] = None
            rec["prediction_error"] = str(err)
        t0 = time.perf_counter()
        draws = np.asarray(sampler(jax.random.key(seed * 1000 + k), t.Lambda, x0[None]))[0]
        rec["sample_seconds"] = time.perf_counter() - t0
        if not np.all(np.isfinite(draws)) or np.abs(draws).max() > 1e100:
            out[meth] = dict(rec, cov_err=None, calib_err=None, diverged=True)
            continue
        emp = np.cov(draws.T)
        rec["cov_err"] = rel_fro(emp, target)
        rec["var_ratio"] = (np.diag(emp) / np.diag(target)).tolist()
        if theta_star is not None:
            q = np.mean(draws <= theta_star[None, :], axis=0)
            rec["calib_err"] = float(scipy.stats.kstest(q, "uniform").statistic)
        if whiten_calib:
            rec["calib_rmse"] = _quantile_calib_rmse(draws, curv.theta_hat, target)
        out[meth] = rec
    return out


def _quantile_calib_rmse(draws, mean, cov, qs=(0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99)):
    """The authors' Poisson calibration error: draws whitened by N(mean, cov); RMS gap between
    empirical and standard-normal quantiles per coordinate, averaged over coordinates."""
    import scipy.linalg
    import scipy.stats

    z = scipy.linalg.solve_triangular(np.linalg.cholesky(cov), (draws - mean).T, lower=True).T
    gap = np.quantile(z, qs, axis=0) - scipy.stats.norm.ppf(qs)[:, None]
    return float(np.mean(np.sqrt(np.mean(gap ** 2, axis=0))))


def _gaussian_refs(curv, theta_star=None):
    """The Posterior (H^-1 / N) and Sandwich Gauss columns: exact, no sampling."""
    import scipy.stats

    from inertia.sgmcmc import rel_fro

    res = {}
    for name, S in (("posterior", curv.posterior_cov), ("sandwich", curv.target_cov)):
        rec = {"cov_err": rel_fro(S, curv.target_cov)}
        if theta_star is not None:
            q = scipy.stats.norm.cdf((theta_star - curv.theta_hat) / np.sqrt(np.diag(S)))
            rec["calib_err"] = float(scipy.stats.kstest(q, "uniform").statistic)
        res[name] = rec
    return res


_NUTS = {}


def _nuts_reference(model, seed, draws, target, theta_star=None):
    """Standard (log loss) or generalised (beta-loss) posterior exp(-sum_n l_n(theta)) by NUTS
    (NumPyro), with a N(0, 100^2 I) prior (the bounded beta-loss needs a proper prior; it is
    negligible against the likelihood here); covariance error against Sigma* and calibration of
    theta* as for the SGD runs."""
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    import scipy.stats
    from numpyro.infer import MCMC, NUTS

    from inertia.sgmcmc import rel_fro

    X, y = np.asarray(model.X), np.asarray(model.y)
    N, D = X.shape
    loss = model.info["loss"]
    sigma = model.info["sigma"]
    a = (model.info["beta_div"] - 1.0) if loss == "beta" else 1.0

    def nmodel(X, y, sigma, a):
        th = numpyro.sample("theta", dist.Normal(0.0, 100.0).expand([D]).to_event(1))
        r2 = (y - X @ th) ** 2 / (2 * sigma ** 2)
        if loss == "log":
            numpyro.factor("loglik", -jnp.sum(r2))
        else:  # l = c (1 - exp(-a r^2 / (2 sigma^2))) / a, c = (2 pi sigma^2)^(-a/2)
            c = (2 * jnp.pi * sigma ** 2) ** (-a / 2)
            numpyro.factor("loglik", -jnp.sum(c * (1 - jnp.exp(-a * r2)) / a))

    memo = ("result", seed, draws, loss, X.shape, float(np.sum(X)), float(np.sum(y)))
    if memo in _NUTS:  # the same data set at another batch size
        return _NUTS[memo]
    key = (N, D, draws, loss)
    if key not in _NUTS:  # jit_model_args: one compilation per shape, data traced
        _NUTS[key] = MCMC(NUTS(nmodel), num_warmup=draws, num_samples=draws, progress_bar=False,
                          jit_model_args=True)
    mcmc = _NUTS[key]
    t0 = time.perf_counter()
    mcmc.run(jax.random.key(seed), jnp.asarray(X), jnp.asarray(y), float(sigma), float(a),
             init_params={"theta": jnp.asarray(model_mode(model))})
    th = np.asarray(mcmc.get_samples()["theta"])
    rec = {"cov_err": rel_fro(np.cov(th.T), target), "sample_seconds": time.perf_counter() - t0,
           "draws": int(th.shape[0])}
    if theta_star is not None:
        q = np.mean(th <= theta_star[None, :], axis=0)
        rec["calib_err"] = float(scipy.stats.kstest(q, "uniform").statistic)
    for k in [k for k in _NUTS if k[0] == "result"]:
        del _NUTS[k]
    _NUTS[memo] = rec
    return rec


def model_mode(model):
    from inertia.sgmcmc.offline import fit_map

    return np.asarray(fit_map(model).theta)


def _linear_columns(model, curv, methods, B, cfg, seed, theta_star, **run_options):
    """A linear-regression cell: the tuned SGD runs, the exact Gaussian columns, NUTS where
    cfg["nuts_draws"] asks for it, and the gradient norm at theta_hat."""
    res = _tuned_runs(model, curv, methods, B, cfg["epochs"], seed, theta_star, **run_options)
    res.update(_gaussian_refs(curv, theta_star))
    if cfg.get("nuts_draws"):
        res["nuts"] = _nuts_reference(model, seed, cfg["nuts_draws"], curv.target_cov, theta_star)
    res["grad_norm"] = curv.grad_norm
    return res
