"""`inertia.vi.fit`: the Gaussian fit (`vi.fit.fit`) and, with `ensure`, the exact sampler where the
Gaussian falls short (`vi.escalate`). The fit itself lives apart so that the sampler's warm-up,
which fits a Gaussian too, never imports the sampler back."""
from __future__ import annotations

import functools

import numpy as np

from .escalate import escalate
from .fit import fit as _fit


@functools.wraps(_fit)
def fit(target, method=None, *, reparam=False, **kw):
    # reparam="auto": NumPyro location-scale sites with latent parents partially non-centred,
    # as `mcmc.sample` does (`mcmc.reparam_run`); q is then Gaussian in those coordinates
    from ..mcmc import reparam_run  # upward (vi -> mcmc): escalation is a workflow

    sites = reparam_run.applies(target, reparam, init=kw.get("init"))
    if sites:
        from ..mcmc.sample import diagnose_result

        return reparam_run.fit_reparameterised(_fit, escalate, diagnose_result, target, sites,
                                               method, **kw)
    res = _fit(target, method, **kw)
    ensure = kw.get("ensure", getattr(kw.get("options"), "ensure", None))
    if ensure is None:
        return res
    first = int(np.ravel(np.asarray(kw.get("seed", 0)))[0])
    return escalate(res, target, ensure, seed=first, progress=bool(kw.get("progress", False)))


__all__ = ["fit"]
