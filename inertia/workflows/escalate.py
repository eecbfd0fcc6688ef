"""`fit(..., ensure=...)`: the exact sampler, warm-started from the fit, when the Gaussian falls short
("adequate": k-hat < 0.5; "usable": k-hat <= 0.7; docs/vi.md).
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
    """The fit when it meets `ensure`, else `mcmc.sample` from draws of q, with `.fit`, `.escalated`."""
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
