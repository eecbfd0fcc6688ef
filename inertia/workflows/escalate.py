"""`fit(..., ensure=...)`: the exact sampler, warm-started from the fit, when the Gaussian falls short.

The fit is kept when it converged and its quality (`variational.quality`) meets the level asked for
("adequate": k-hat < 0.5; "usable": k-hat <= 0.7); otherwise `mcmc.sample` (its default exact
kernel and warm-up) runs from draws of q (PSIS-resampled where k-hat <= 0.7) and its result is
returned with the fit in `.fit` and why in `.escalated` (also its verdict's `numbers["escalated"]`).
"""
from __future__ import annotations

import numpy as np

from .._random import key_of
from ..mcmc.sample import sample

ACCEPT = {"adequate": ("adequate",), "usable": ("adequate", "usable with correction")}
NUM_CHAINS = 4  # as `mcmc.sample`'s default


def falls_short(res, ensure: str) -> bool:
    """Whether the fit did not converge or its quality verdict is below `ensure`."""
    return not res.converged or res.verdict.quality not in ACCEPT[ensure]


def escalate(res, target, ensure: str, *, seed: int = 0, progress: bool = False):
    """The fit `res` when it meets `ensure`, else `mcmc.sample(target)` started at NUM_CHAINS draws
    of q, with `.fit` (the fit) and `.escalated` (why the sampler ran)."""
    if not falls_short(res, ensure):
        return res
    if res.quality is not None and res.quality.get("corrected"):
        init = res.psis_draws(NUM_CHAINS, seed=seed)
    else:
        init = np.asarray(res.sample(key_of(seed + 1), NUM_CHAINS)).reshape(-1, res.dim)
        init = init[:NUM_CHAINS]
    out = sample(target, num_chains=NUM_CHAINS, init=init, seed=seed, progress=progress)
    why = ("the fit did not converge" if not res.converged else
           f"the Gaussian is {res.verdict.quality} (asked: {ensure})")
    out.fit, out.escalated = res, f"exact sampler run because {why}"
    return out


__all__ = ["escalate", "falls_short", "ACCEPT"]
