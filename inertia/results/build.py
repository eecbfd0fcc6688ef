"""One output convention for `vi.fit`, `mcmc.sample` and `sgmcmc.calibrate`: InferenceData, summary rows,
and the attributes `save` writes.
"""
from __future__ import annotations

import warnings
from typing import Mapping, Optional

import numpy as np

from .._compile import of_result
from . import idata as _id
from ..posterior import flat_names, summarize, format_table
from .._random import key_of
from ..diagnostics import diagnose

FIT_DRAWS = 4000  # draws of q per seed behind a fit's summary, table and InferenceData


def model_info(target) -> dict:
    """What a result keeps of its target: NumPyro's constrain map, sites and model (when any)."""
    info = getattr(target, "info", None) or {}
    return {k: info[k] for k in ("constrain", "sites", "numpyro", "pymc") if k in info}


def _info(res) -> dict:
    info = dict(getattr(res, "model_info", None) or {})
    if getattr(res, "constrain", None) is not None:
        info.setdefault("constrain", res.constrain)
    return info


def _flat(res) -> dict:
    """The unconstrained moments, labelled as unconstrained coordinates."""
    cov = res.cov  # the factor family's FactorCovariance in its factor form (variational.factor)
    return {"names": list(coordinate_names(res)), "mean": np.asarray(res.mean).tolist(),
            "cov": cov.to_dict() if hasattr(cov, "to_dict") else np.asarray(cov).tolist()}


def coordinate_names(res) -> list:
    """Names of the flat (unconstrained) coordinates the result's mean and cov are in."""
    dim = np.shape(res.mean)[-1]
    return flat_names(dim, getattr(res, "names", None))


# ------------------------------------------------------------------ VI
@of_result
def fit_draws(res, num_draws: int = FIT_DRAWS, seed: int = 0) -> np.ndarray:
    """(seed, draw, d) draws of the fitted Gaussian(s), the same for every caller with the same arguments."""
    d = res.sample(key_of(seed), num_draws)
    return d[None] if d.ndim == 2 else d


@of_result
def fit_sites(res, num_draws: int = FIT_DRAWS, seed: int = 0) -> dict:
    return _id.sites_of(fit_draws(res, num_draws, seed), _info(res), res.names)


@of_result
def fit_summary(res, num_draws: int = FIT_DRAWS, seed: int = 0) -> list:
    """Rows (name, mean, sd, q5, q95) of q's draws pushed through the constraints (seeds pooled)."""
    return rows_of(fit_sites(res, num_draws, seed))


def rows_of(sites: Mapping) -> list:
    """Rows {name, mean, sd, q5, q95} of every scalar entry of the sites (chain and draw pooled)."""
    labels, x = _id.flat_rows(sites)
    flat = x.reshape(-1, x.shape[2])
    return summarize({lab: flat[:, i] for i, lab in enumerate(labels)})


def fit_settings(res) -> dict:
    d = res.to_dict()
    for k in ("mean", "cov", "checkpoints", "names", "summary"):
        d.pop(k, None)
    return d


@of_result
def fit_to_arviz(res, num_draws: int = FIT_DRAWS, seed: int = 0, log_likelihood: bool = True):
    """InferenceData of q's draws (chain = seed), constrained, with the run in the attributes."""
    info = _info(res)
    sites = fit_sites(res, num_draws, seed)
    rows = rows_of(sites)
    attrs = {"kind": "fit", "settings": fit_settings(res), "verdict": res.verdict.to_dict(),
             "summary": rows, "table": format_table(rows, ["mean", "sd", "q5", "q95"]),
             "gaussian": _flat(res), "history": res.to_dict()["checkpoints"],
             "draws": {"num_draws": int(num_draws), "seed": int(seed)}}
    if res.quality is not None:  # k-hat, PSIS ESS, verdict; the corrected rows and table
        with warnings.catch_warnings():  # said in the table itself
            warnings.simplefilter("ignore", RuntimeWarning)
            attrs.update(quality=res.quality, summary=res.summary(num_draws=num_draws, seed=seed),
                         table=res.table(num_draws=num_draws, seed=seed))
    groups = {"posterior": sites,
              "log_likelihood": _id.log_likelihood(sites, info) if log_likelihood else None,
              "observed_data": _id.observed_data(sites, info)}
    return _id.from_groups(groups, attrs, info)


# ------------------------------------------------------------------ MCMC
def _split(res):
    n = res.draws.shape[1]
    b = res.burn_in_default
    return int(round(b * n)) if isinstance(b, float) else int(b)


@of_result
def draws_summary(res) -> list:
    """Rows of a sample's or calibration's table: mean, sd, q5, q95, mcse, r_hat, ess_bulk, ess_tail."""
    dg = res.diagnostics
    if dg is None:
        kept = sample_sites(res)[0] if res.kind == "sample" else _id.sites_of(res.draws)
        labels, x = _id.flat_rows(kept)
        if x.shape[1] < 4:  # too few draws for R-hat and ESS
            return rows_of(kept)
        dg = diagnose(x, labels)
    return [{"name": str(n), "mean": float(dg.mean[i]), "sd": float(dg.sd[i]),
             "q5": float(dg.q05[i]), "q95": float(dg.q95[i]), "mcse": float(dg.mcse_mean[i]),
             "r_hat": float(dg.rhat[i]), "ess_bulk": float(dg.ess_bulk[i]),
             "ess_tail": float(dg.ess_tail[i])} for i, n in enumerate(dg.names)]


@of_result
def sample_sites(res):
    """(kept sites, burned sites or None): the draws after / before the burn-in, constrained."""
    info, start = _info(res), _split(res)
    kept = _id.sites_of(res.draws[:, start:], info, res.names)
    warm = _id.sites_of(res.draws[:, :start], info, res.names) if start > 0 else None
    return kept, warm


def sample_settings(res) -> dict:
    return {"method": res.method, "params": dict(res.params), "num_chains": res.num_chains,
            "num_steps": res.num_steps, "thinning": res.thinning, "seed": res.seed,
            "grad_evals": res.grad_evals, "warmup_grad_evals": res.warmup_grad_evals,
            "burn_in": res.burn_in_default, "tuning": res.tuning, "bias": res.bias}


@of_result
def sample_to_arviz(res, log_likelihood: bool = True):
    """InferenceData of kept draws (burned ones as warmup_posterior), sample_stats and the run."""
    info = _info(res)
    kept, warm = sample_sites(res)
    c, n = res.draws.shape[:2]
    stats = _id.per_draw_stats(res.info, c, n, res.thinning, res.params)
    start = _split(res)
    rows = draws_summary(res)
    attrs = {"kind": "sample", "settings": sample_settings(res), "verdict": res.verdict.with_numbers(
                 diverged_at=np.asarray(res.diverged_at).tolist()).to_dict(),
             "summary": rows, "table": res.table(),
             "unconstrained": {**_flat(res), "burn_in": start}}
    groups = {"posterior": kept,
              "sample_stats": {k: v[:, start:] for k, v in stats.items()},
              "log_likelihood": _id.log_likelihood(kept, info) if log_likelihood else None,
              "observed_data": _id.observed_data(kept, info),
              "warmup_posterior": warm,
              "warmup_sample_stats": ({k: v[:, :start] for k, v in stats.items()}
                                      if warm is not None else None)}
    return _id.from_groups(groups, attrs, info)


# ------------------------------------------------------------------ SG-MCMC
def calibration_to_arviz(res):
    """SG(L)D draws by parameter name, with the calibration's checks in the attributes."""
    names = res.names
    sites = _id.sites_of(res.draws, None, names)
    attrs = {"kind": "calibration", "settings": res.settings, "verdict": res.verdict.to_dict(),
             "summary": draws_summary(res), "table": res.table(),
             "unconstrained": {"names": names or coordinate_names(res),
                               "mean": np.asarray(res.mean).tolist(),
                               "cov": np.asarray(res.cov).tolist()}}
    return _id.from_groups({"posterior": sites}, attrs)


SUMMARY = {"fit": fit_summary, "sample": draws_summary, "calibration": draws_summary}
TO_ARVIZ = {"fit": fit_to_arviz, "sample": sample_to_arviz, "calibration": calibration_to_arviz}

__all__ = ["model_info", "fit_to_arviz", "fit_summary", "sample_to_arviz", "draws_summary",
           "calibration_to_arviz", "rows_of", "SUMMARY", "TO_ARVIZ", "FIT_DRAWS"]
