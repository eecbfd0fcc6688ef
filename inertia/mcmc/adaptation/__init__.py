"""Warm-up schemes of the sampler, one module each (`Scheme`, `adaptation.base`); a kernel's
registry entry names its scheme (`Method.warmup`) and `sample` runs the one it names.

- "dual-averaging" (`dual_averaging`, the exact kernel): preconditioner, step size by dual
  averaging to a target acceptance, trajectory choice; warms up again after divergences.
- "gaussian-tuning" (`gaussian_tuning`, the unadjusted schemes): preconditioner, (h, gamma, alpha)
  tuned exactly on a Gaussian with the measured curvature, h vs h/2 bias checks.

A new scheme is one module defining `SCHEME` plus one entry in `SCHEMES`.
"""
from __future__ import annotations

from . import dual_averaging, gaussian_tuning
from .base import Accounting, Report, Scheme, Settings

SCHEMES = {"dual-averaging": dual_averaging.SCHEME, "gaussian-tuning": gaussian_tuning.SCHEME}


def get_scheme(name: str) -> Scheme:
    """The warm-up scheme named `name`, with a clear error listing the choices."""
    try:
        return SCHEMES[name]
    except KeyError:
        raise ValueError(f"unknown warm-up scheme {name!r}; available: {', '.join(SCHEMES)}") from None


__all__ = ["SCHEMES", "get_scheme", "Scheme", "Settings", "Report", "Accounting"]
