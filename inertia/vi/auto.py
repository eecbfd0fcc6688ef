"""Constant-free operation of `fit`: estimated bounds, start, default method and batch, feasible-set
watch. Nothing here changes an algorithm; it chooses the constants the paper assumes known.
"""
from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Optional

import numpy as np

from ..targets.base import Target

DEFAULT_METHOD = "stl-proj"  # gradient-only, zero variance at the optimum on Gaussian targets
SMALL_BATCH_METHODS = ("stl-proj", "dgg-stl")  # STL's variance at the start grows with d / b


def default_batch(method: str, dim: int) -> int:
    """Batch size b when the user gives none: 8 <= b ~ d / 2 <= 64 for the stochastic methods."""
    return int(min(64, max(8, math.ceil(dim / 2))))


def warn_small_batch(method: str, dim: int, batch_size: int):
    """STL-type estimators with b << d stall far from the optimum (seen at d = 100, b = 8)."""
    if method in SMALL_BATCH_METHODS and dim >= 32 and batch_size < dim / 8:
        warnings.warn(f"{method} with batch size {batch_size} at d = {dim} can stall far from the "
                      f"optimum; a batch of at least {default_batch(method, dim)} is advised",
                      RuntimeWarning, stacklevel=3)


@dataclasses.dataclass
class Prepared:
    """A target with bounds, where the bounds came from, and the start (mean, Cholesky factor)."""

    target: Target
    curvature: Optional[object]  # CurvatureEstimate when the bounds were estimated
    init: Optional[tuple]


def prepare(target: Target, init=None, *, margin: float = 2.0, seed: int = 0,
            verbose: bool = False) -> Prepared:
    """Estimate missing curvature bounds (user bounds win) and start at the Laplace fit."""
    if target.alpha is not None and target.beta is not None:
        return Prepared(target, None, init)
    from ..targets.curvature import with_estimated_bounds

    init_mean = None if init is None else np.asarray(init[0], dtype=float)
    tgt, est = with_estimated_bounds(target, init=init_mean, margin=margin, seed=seed)
    if verbose:
        import sys

        print(f"inertia: {est.describe()}", file=sys.stderr, flush=True)
    if init is None:
        init = (np.asarray(est.mode), np.asarray(est.factor))
    return Prepared(tgt, est, init)


def boundary(feasible: Optional[str], A: np.ndarray, alpha: float, beta: float,
             rel: float = 1e-6) -> tuple[bool, bool]:
    """(lower side active, upper side active) of the feasible set at factor A (spec §2.3-2.5)."""
    if feasible is None:
        return False, False
    d = A.shape[-1]
    if feasible in ("sym", "sym-floor"):
        w = np.linalg.eigvalsh(0.5 * (A + A.T))
        lower = (1.0 if feasible == "sym-floor" else 0.5) / math.sqrt(beta)
        upper = 2.0 / math.sqrt(alpha) if feasible == "sym" else math.inf
        return bool(w[0] <= lower * (1 + rel)), bool(w[-1] >= upper * (1 - rel))
    radius = math.sqrt(d / alpha)
    outer = bool(np.linalg.norm(A) >= radius * (1 - rel))
    if feasible == "chol":
        return bool(np.min(np.diag(A)) <= 0.5 / math.sqrt(beta) * (1 + rel)), outer
    return False, outer  # "norm": the norm-constrained prox only bounds ||L||_F


__all__ = ["DEFAULT_METHOD", "default_batch", "warn_small_batch", "prepare", "Prepared",
           "boundary"]
