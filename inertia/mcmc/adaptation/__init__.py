"""Warm-up schemes of the sampler, one module each; a kernel's registry entry names its scheme.

"dual-averaging" (the exact kernel), "gaussian-tuning" (the unadjusted schemes): docs/howto/extend.md.
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
