"""`inertia.vi.fit`: the Gaussian fit (`vi.fit.fit`) and, with `ensure`, the exact sampler where the
Gaussian falls short (`vi.escalate`). The fit itself lives apart so that the sampler's warm-up,
which fits a Gaussian too, never imports the sampler back."""
from __future__ import annotations

import functools
from typing import Optional

import numpy as np

from .escalate import ACCEPT, escalate
from .fit import fit as _fit


@functools.wraps(_fit)
def fit(target, method=None, *, ensure: Optional[str] = None, seed=0, progress: bool = False,
        quality: bool = True, **kw):
    if ensure not in (None, *ACCEPT):
        raise ValueError(f"ensure must be None, 'adequate' or 'usable', got {ensure!r}")
    res = _fit(target, method, seed=seed, progress=progress,
               quality=quality or ensure is not None, **kw)
    if ensure is None:
        return res
    first = int(np.ravel(np.asarray(seed))[0])
    return escalate(res, target, ensure, seed=first, progress=progress)


__all__ = ["fit"]
