"""`sample(..., reparam="auto")` on NumPyro models: choose each hierarchical site's centredness,
run the chains in that parameterisation, and hand back a result of the original sites.

The steps: `targets.reparam.find_sites` (location-scale sites with latent parents; none: the run
is the ordinary one, untouched); a diagonal Gaussian fit of the fully non-centred model
(`diagonal_fit`: no mode search, a bounded number of gradients); c per element from its precision
(`targets.reparam.centredness`); `sample` on the model
rewritten with those c; the draws mapped to the original model's unconstrained coordinates, so
that names, tables, ESS, `to_arviz()` and the verdict read the original sites. The fit's
gradients are counted in the result's warm-up and total.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
from .. import _compile
from ..targets.reparam import (SUFFIX, _flat_index, find_sites, centredness, noncentred,
                               reparameterise, describe, describe_reparam)
from .frames import value_and_grad_of
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


# the diagonal Gaussian fit that chooses c (`diagonal_fit`): draws per update (antithetic pairs),
# updates per block, the most blocks, the step of the fixed-point iteration, the largest whitened
# mean gradient of a settled fit (its mean within a quarter of its sds: the Newton step it would
# still take), and the standard error of the sites' c (from the spread of the settled blocks'
# averages) at which the fit stops
FIT_DRAWS = 8
FIT_BLOCK = 50
FIT_BLOCKS = 20
FIT_RATE = 0.1
MEAN_TOL = 0.25
C_SE = 0.05


@functools.lru_cache(maxsize=8)
def _fit_block(target, draws: int, steps: int, rate: float):
    """One compiled block of `steps` updates of the diagonal fit: (mean, precision, key) ->
    (mean, precision, the block's mean precision, finite draws)."""
    vg = jax.vmap(value_and_grad_of(target))
    half = draws // 2

    def update(carry, key):
        m, p = carry
        s = 1.0 / jnp.sqrt(p)
        e = jax.random.normal(key, (half, m.shape[0]), m.dtype)
        e = jnp.concatenate([e, -e])  # antithetic: the odd part of grad V cancels in the mean
        v, g = vg(m + s * e)
        ok = jnp.isfinite(v) & jnp.all(jnp.isfinite(g), axis=1)
        w = ok / jnp.maximum(jnp.sum(ok), 1)
        g = jnp.where(ok[:, None], g, 0.0)
        # Stein: E[g e] = s E[hess V_ii]; over the draws' own sum of e^2 (the regression slope of
        # g on e: exact for a Gaussian target whose precision is diagonal, whatever the draws)
        h = jnp.sum(w[:, None] * g * e, axis=0) / (s * jnp.sum(w[:, None] * e * e, axis=0))
        # curvature that is not positive (noise, a region that is not log-concave): p kept
        p = jnp.where(jnp.isfinite(h) & (h > 0), (1.0 - rate) * p + rate * h, p)
        p = jnp.where(jnp.sum(ok) > 0, p, carry[1])
        s = 1.0 / jnp.sqrt(p)
        step = jnp.clip(jnp.sum(w[:, None] * g, axis=0) / p, -s, s)  # at most one sd an update
        m = m - rate * step
        return (m, p), (p, jnp.sum(ok), jnp.sum(w[:, None] * g, axis=0) * s)

    def block(m, p, key):
        (m, p), (ps, n, gs) = jax.lax.scan(update, (m, p), jax.random.split(key, steps))
        return m, p, jnp.mean(ps, axis=0), jnp.sum(n), jnp.mean(gs, axis=0)

    return _compile.jit(block)


def diagonal_fit(target, sites, *, seed=0, draws=FIT_DRAWS, steps=FIT_BLOCK,
                 max_blocks=FIT_BLOCKS, rate=FIT_RATE, mean_tol=MEAN_TOL, c_se=C_SE):
    """(mean, precision diagonal, gradients, blocks, c's standard error, whitened mean gradient)
    of the mean-field Gaussian N(m, diag(1/p)) at the fixed point p_i = E_q[hess V_ii],
    E_q[grad V] = 0 (the stationarity of the diagonal Gaussian fit; on a Gaussian target p is
    exactly the precision's diagonal, which `centredness` reads); mean and precision None where
    it does not settle or is not finite. A damped fixed-point iteration: p from Stein's identity
    E[grad V_i e_i] = s_i E[hess V_ii] on `draws` antithetic draws an update (over the draws'
    own sum of e_i^2), m by a natural-gradient step. It needs no mode: it starts at the target's
    start point (0) with p = 1. Blocks
    of `steps` updates; the fit has settled from the first block whose mean gradient, in the
    fit's own sds (max_i |E[grad V_i]| s_i), is at most `mean_tol`; p is the mean of the settled
    blocks' averages, and the fit stops when the sites' c = 1 - 1/p has a standard error (the
    blocks' spread) of at most `c_se`, or after `max_blocks` blocks."""
    d = target.dim
    x0 = np.asarray((getattr(target, "info", None) or {}).get("init", np.zeros(d)), np.float64)
    m = _compile.device(np.where(np.isfinite(x0), x0, 0.0).reshape(d), np.float64)
    p = _compile.device(np.ones(d), np.float64)
    idx = np.concatenate([np.ravel(_flat_index(target, k + SUFFIX, s.shape)) for k, s in
                          sites.items()])
    key = jax.random.PRNGKey(seed)
    block = _fit_block(target, int(draws), int(steps), float(rate))
    kept, se, r = [], math.inf, math.inf
    for b in range(max_blocks):
        m, p, avg, n, gw = block(m, p, jax.random.fold_in(key, b))
        avg = np.asarray(avg, np.float64)
        r = float(np.max(np.abs(np.asarray(gw))))
        if not (np.all(np.isfinite(avg)) and math.isfinite(r)) or int(n) == 0:
            kept = []
            break
        if not kept and r > mean_tol:  # not settled yet: the iteration still leaves its start
            continue
        kept.append(avg)
        if len(kept) >= 2:
            k = np.asarray(kept)[:, idx]
            pm = k.mean(0)
            se = float(np.max(k.std(0, ddof=1) / math.sqrt(len(kept)) / pm ** 2))  # dc = dp / p^2
            if se <= c_se:
                break
    done = b + 1
    grads = int(draws) * int(steps) * done
    if len(kept) < 2:
        return None, None, grads, done, se, r
    return np.asarray(m, np.float64), np.mean(kept, axis=0), grads, done, se, r


def choose(target, sites, *, seed=0):
    """(Reparameterised, gradients of the choice, how): c from the precision diagonal of a
    diagonal Gaussian fit of the fully non-centred model (`diagonal_fit`: no mode search, at most
    FIT_BLOCKS x FIT_BLOCK x FIT_DRAWS gradients at any d); where that fit does not settle, from a
    VI fit at the warm-up's preconditioning budget (`warmup.VI_WARMUP`), else its Laplace fit;
    the model rewritten with them."""
    nc = noncentred(target, sites, seed=seed)
    mean, prec, spent, blocks, se, r = diagonal_fit(nc.target, sites, seed=seed)
    vi = None if prec is not None else _vi_fit(nc.target, seed, **VI_WARMUP)
    if prec is not None:
        grads, spent = spent, 0
        factor = 1.0 / np.sqrt(prec)  # diag(s)
        how = f"diagonal fit, {blocks * FIT_BLOCK} updates, standard error of c {se:.2g}"
    elif vi is not None:
        mean, factor, grads, how = vi
        how = (f"the diagonal fit did not settle (mean gradient {r:.3g} sd after {blocks} blocks); "
               "VI, " + how)
    else:
        fit = fit_gaussian(nc.target, "laplace", seed=seed)
        mean, factor, grads, how = fit.mean, fit.factor, int(fit.grad_evals), "Laplace"
    c = centredness(nc.target, sites, mean, factor)
    return reparameterise(target, sites, c, seed=seed), int(grads) + spent, how


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
