"""Posterior predictive draws by site through NumPyro's `Predictive`, from a result's posterior."""
from __future__ import annotations

import numpy as np

from . import idata as _id
from .build import _info, fit_sites, sample_sites


def predictive(res, rng_key, *model_args, num_samples=None, return_sites=None, **model_kwargs):
    """{site: (num_draws, ...)} of `numpyro.infer.Predictive` at each posterior draw (chains pooled)."""
    info = _info(res)
    spec = _id.numpyro_model(info)
    if spec is None:
        raise TypeError("predictive draws need a NumPyro model (targets.from_numpyro)")
    model, args, kwargs = spec
    if model_args or model_kwargs:
        args, kwargs = model_args, model_kwargs
    sites = fit_sites(res) if res.kind == "fit" else sample_sites(res)[0]
    return draw(model, _id.latent_only(sites, info), rng_key, args, kwargs, num_samples,
                return_sites)


def draw(model, sites, rng_key, args, kwargs, num_samples=None, return_sites=None) -> dict:
    """Predictive draws at posterior latent `sites` {name: (chain, draw, ...)} (chains pooled)."""
    from numpyro import handlers
    from numpyro.infer import Predictive

    post = {k: np.asarray(v).reshape((-1,) + np.shape(v)[2:]) for k, v in sites.items()}
    tr = handlers.trace(handlers.seed(handlers.substitute(
        model, data={k: v[0] for k, v in post.items()}), 0)).get_trace(*args, **kwargs)
    latent = {k for k, s in tr.items() if s["type"] == "sample" and not s.get("is_observed")}
    post = {k: v for k, v in post.items() if k in latent}
    if num_samples is not None:
        post = {k: v[:num_samples] for k, v in post.items()}
    pred = Predictive(model, posterior_samples=post, return_sites=return_sites)
    return {k: np.asarray(v) for k, v in pred(rng_key, *args, **kwargs).items()}


__all__ = ["predictive", "draw"]
