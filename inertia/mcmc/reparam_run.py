"""`sample(..., reparam="auto")` on NumPyro models: choose each hierarchical site's centredness,
run the chains in that parameterisation, and hand back a result of the original sites.

The steps: `targets.reparam.find_sites` (location-scale sites with latent parents; none: the run
is the ordinary one, untouched); a Gaussian fit (`warmup.fit_gaussian`) of the fully non-centred
model; c per element from its precision (`targets.reparam.centredness`); `sample` on the model
rewritten with those c; the draws mapped to the original model's unconstrained coordinates, so
that names, tables, ESS, `to_arviz()` and the verdict read the original sites. The fit's
gradients are counted in the result's warm-up and total.
"""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np
from ..targets.reparam import (find_sites, centredness, noncentred, reparameterise, describe,
                               describe_reparam)
from .warmup import VI_WARMUP, _vi_fit, fit_gaussian
from ..results.build import model_info
from .. import _warnings
from .kernels import get_method

from ..verdict import Verdict
from ..progress import progress as progress_bar
from .adapt import TARGET_ACCEPT, verdict_problems

MODES = ("auto", False)


def check_mode(reparam):
    """The `reparam` argument: "auto" or False (True is read as "auto")."""
    if reparam is True:
        return "auto"
    if reparam not in MODES:
        raise ValueError(f"reparam must be 'auto' or False, got {reparam!r}")
    return reparam


def applies(target, reparam, *, init=None, manual=False) -> dict:
    """{site: Site} to rewrite: NumPyro targets with location-scale sites that have latent
    parents, under reparam="auto", the automatic warm-up and no given start; else {}."""
    info = getattr(target, "info", None) or {}
    if check_mode(reparam) is False or manual or init is not None or "numpyro" not in info:
        return {}
    spec = info["numpyro"]
    try:
        return find_sites(spec["model"], spec["args"], spec["kwargs"])
    except Exception as err:  # a model NumPyro cannot trace for dependencies: run it as it is
        warnings.warn(f"the centredness rewrite was skipped: NumPyro could not trace the model's "
                      f"dependencies ({type(err).__name__}: {' '.join(str(err).split())[:200]}); "
                      "the model runs as written", UserWarning, stacklevel=2)
        return {}


def choose(target, sites, *, seed=0):
    """(Reparameterised, gradients of the choice, how): c from a VI fit of the fully non-centred
    model at the warm-up's preconditioning budget (`warmup.VI_WARMUP`: c to about 0.02 of the
    full fit's on the suite's hierarchies at a tenth of its gradients), its Laplace fit where VI
    fails; the model rewritten with them."""
    nc = noncentred(target, sites, seed=seed)
    vi = _vi_fit(nc.target, seed, **VI_WARMUP)
    if vi is not None:
        mean, factor, grads, how = vi
        how = "VI, " + how
    else:
        fit = fit_gaussian(nc.target, "laplace", seed=seed)
        mean, factor, grads, how = fit.mean, fit.factor, int(fit.grad_evals), "Laplace"
    c = centredness(nc.target, sites, mean, factor)
    return reparameterise(target, sites, c, seed=seed), int(grads), how


def sample_reparameterised(sample, diagnose, target, sites, *, names, options, seed=0, **kw):
    """`sample(...)` on the rewritten model, the result in the original sites' coordinates
    (`names`: theirs; `diagnose`: `sample.diagnose_result`, passed in by the caller; `options`:
    the call's `SampleOptions`, without a start or given parameters)."""
    if kw.get("progress"):  # one bar for the choice and the run: its phases say which runs
        kw["progress"] = progress_bar(f"sample {kw.get('method') or ''}".strip(), kw["progress"])
        kw["progress"].phase(f"rewrite ({', '.join(sorted(sites))}): a Gaussian fit of the "
                             "non-centred model chooses each site's centredness")
    rep, grads, how = choose(target, sites, seed=seed)
    if kw.get("progress"):
        kw["progress"].note(describe_reparam({"sites": describe(rep.centred, rep.sites),
                                              "fit": how, "grad_evals": grads}))
    res = sample(rep.target, seed=seed, names=names, **kw,
                 options=options.replace(reparam=False, diagnostics=False))
    return in_original(res, target, rep, grads, how, names=names,
                       diagnose=diagnose if options.diagnostics else None,
                       target_accept=options.target_accept)


def in_original(res, target, rep, grads, how, *, names, diagnose=None, target_accept=None):
    """A SampleResult of the rewritten model as one of `target`: draws mapped to its
    unconstrained coordinates, its names and model, the choice's gradients counted, diagnosed
    on its sites by `diagnose(target, result)` (none if None)."""
    out = dataclasses.replace(
        res, draws=rep.to_original(res.draws), names=list(names),
        preconditioner=None, model_info=model_info(target), diagnostics=None,
        warmup_grad_evals=res.warmup_grad_evals + grads,
        total_grad_evals=res.total_grad_evals + grads,
        reparam={"sites": describe(rep.centred, rep.sites), "grad_evals": grads, "fit": how,
                 "dim": rep.target.dim})
    if diagnose is not None:
        out.diagnostics = _diagnose(diagnose, target, out, target_accept)
    return out


def original_model_info(target, rep) -> dict:
    """`results.build.model_info` of `target` whose constrain map reads draws of the rewritten
    model's unconstrained coordinates (host arrays or traced)."""
    import jax
    import jax.numpy as jnp

    info = model_info(target)
    constrain = info["constrain"]

    def through(x):
        if isinstance(x, jax.core.Tracer):
            lead = x.shape[:-1]
            flat = jax.vmap(rep.point_map)(jnp.reshape(x, (-1, x.shape[-1])))
            return constrain(jnp.reshape(flat, lead + (target.dim,)))
        return constrain(rep.to_original(x))

    info["constrain"] = through
    return info


def fit_reparameterised(fit, escalate, diagnose, target, sites, method=None, **kw):
    """`vi.fit` of the rewritten model: q is a Gaussian in its coordinates (mean, cov, names);
    tables and InferenceData read the original sites through the map; `ensure` escalates to the
    sampler on the rewritten model, its result mapped to the original sites."""
    seed = int(np.ravel(np.asarray(kw.get("seed", 0)))[0])
    rep, grads, how = choose(target, sites, seed=seed)
    res = fit(rep.target, method, **kw)
    res.model_info = original_model_info(target, rep)
    res.constrain = res.model_info["constrain"]
    res.reparam = {"sites": describe(rep.centred, sites), "grad_evals": grads, "fit": how,
                   "dim": rep.target.dim}
    res.events.insert(0, {"event": "reparameterised", "step": 0, "grad_evals": grads,
                          "centredness": {k: v["centredness"]
                                          for k, v in res.reparam["sites"].items()}})
    ensure = kw.get("ensure", getattr(kw.get("options"), "ensure", None))
    if ensure is None:
        return res
    out = escalate(res, rep.target, ensure, seed=seed, progress=bool(kw.get("progress", False)))
    if out is res:
        return res
    return in_original(out, target, rep, grads, how, names=target.info["names"],
                       diagnose=diagnose)  # its `fit` and `escalated` kept


def _diagnose(diagnose_result, target, res, target_accept):
    """The original sites' diagnostics with the exact kernel's divergence and acceptance
    problems, as `sample` judges its own runs."""
    n = res.draws.shape[1]
    if n - int(round(res.burn_in_default * n)) < 4:
        return None
    dg = diagnose_result(target, res)
    m = get_method(res.method)
    if m.adjusted and res.chains:
        acc = TARGET_ACCEPT if target_accept is None else float(target_accept)
        dg.verdict = dg.verdict.merge(Verdict.of(verdict_problems(
            res.chains, acc, res.tuning, unconverged=not dg.converged)))
    stopped = getattr(res, "stopped", None)  # the run loop's reason (`sample.add_stop_reason`)
    if not dg.converged and stopped and stopped.get("problem"):
        dg.verdict = Verdict.of((stopped["problem"],)).merge(dg.verdict)
    if not dg.converged:
        _warnings.warn(f"{m.name}: " + dg.line(), RuntimeWarning)
    return dg


__all__ = ["sample_reparameterised", "fit_reparameterised", "in_original", "applies", "choose",
           "check_mode"]
