"""Posterior predictive draws by site through NumPyro's `Predictive`, from a result's posterior."""
from __future__ import annotations

import numpy as np

from . import idata as _id


def predictive(res, rng_key, *model_args, num_samples=None, return_sites=None, **model_kwargs):
    """{site: (num_draws, ...)} draws of `numpyro.infer.Predictive(model, posterior_samples)`:
    the model called with `model_args` / `model_kwargs` (default: the arguments it was fitted on)
    at each posterior draw (chains pooled; a fit's draws of q pushed through the constraints).
    Observed sites given as None in the arguments are drawn; pass new predictors for new data."""
    from numpyro.infer import Predictive

    from .build import _info, fit_sites, sample_sites

    info = _info(res)
    spec = _id.numpyro_model(info)
    if spec is None:
        raise TypeError("predictive draws need a NumPyro model (targets.from_numpyro)")
    model, args, kwargs = spec
    if model_args or model_kwargs:
        args, kwargs = model_args, model_kwargs
    kind = type(res).__name__
    sites = fit_sites(res) if kind == "FitResult" else sample_sites(res)[0]
    post = {k: np.asarray(v).reshape((-1,) + np.shape(v)[2:])
            for k, v in _id.latent_only(sites, info).items()}
    n = next(iter(post.values())).shape[0]
    if num_samples is not None and num_samples < n:
        post = {k: v[:num_samples] for k, v in post.items()}
    pred = Predictive(model, posterior_samples=post, return_sites=return_sites)
    return {k: np.asarray(v) for k, v in pred(rng_key, *args, **kwargs).items()}


__all__ = ["predictive"]
