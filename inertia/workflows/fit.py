"""`inertia.vi.fit`: the Gaussian fit (`variational.fit.fit`), on the partially non-centred model with
`reparam="auto"` (`mcmc.reparam_run`), and with `ensure` the exact sampler where the Gaussian falls
short (`workflows.escalate`). The fit itself lives below the drivers, so that the sampler's warm-up,
which fits a Gaussian too, never imports the sampler back."""
from __future__ import annotations

import dataclasses
import functools

import numpy as np

from ..mcmc import reparam_run
from ..mcmc.sample import diagnose_result
from ..variational.fit import fit as _fit
from .escalate import escalate


@functools.wraps(_fit)
def fit(target, method=None, **kw):
    # reparam="auto" (a FitOptions field): NumPyro location-scale sites with latent parents
    # partially non-centred, as `mcmc.sample` does (`mcmc.reparam_run`); q is then Gaussian in
    # those coordinates
    reparam = kw.get("reparam", getattr(kw.get("options"), "reparam", False))
    sites = reparam_run.applies(target, reparam, init=kw.get("init"))
    if sites:
        return reparam_run.fit_reparameterised(_fit, escalate, diagnose_result, target, sites,
                                               method, **kw)
    res = _fit(target, method, **kw)
    _say_the_way_out(res, target, reparam, kw.get("init"))
    ensure = kw.get("ensure", getattr(kw.get("options"), "ensure", None))
    if ensure is None:
        return res
    first = int(np.ravel(np.asarray(kw.get("seed", 0)))[0])
    return escalate(res, target, ensure, seed=first, progress=bool(kw.get("progress", False)))


def _say_the_way_out(res, target, reparam, init) -> None:
    """A fit that did not converge: its reason ends with the way out, the rewrite where the model
    has centred hierarchical sites it would rewrite (reparam="auto"), else after a divergence the
    exact sampler."""
    v = res.verdict
    if v.converged or any("the way out" in p for p in v.problems):
        return
    sites = {} if reparam else reparam_run.applies(target, "auto", init=init)
    if sites:
        hint = (f"centred hierarchical sites ({', '.join(sorted(sites))}) make the posterior a "
                "funnel no single Gaussian follows: fit(target, reparam=\"auto\") fits them "
                "partially non-centred, or sample(target) (exact; it rewrites them itself)")
    elif getattr(res, "diverged", None):
        hint = "sample(target), exact where a Gaussian fit diverges"
    else:  # the reason says it (e.g. num_steps reached)
        return
    first = (v.problems[0] + "; " if v.problems else "") + f"the way out: {hint}"
    res.verdict = dataclasses.replace(v, problems=(first,) + tuple(v.problems[1:]))

__all__ = ["fit"]
