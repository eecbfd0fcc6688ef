"""Constant-free operation of `fit`: estimated bounds, start, default method and batch, feasible-set watch."""
from __future__ import annotations

import dataclasses
import math
from typing import Optional

import numpy as np

from .. import _warnings
from ..targets.base import Target
from ..targets.curvature import with_estimated_bounds, bounds_under
from ..targets.mode import probe_unbounded
from .monitor import ObjectiveMonitor
from ..targets.whiten import whiten

DEFAULT_METHOD = "stl-proj"  # gradient-only, zero variance at the optimum on Gaussian targets
SMALL_BATCH_METHODS = ("stl-proj", "dgg-stl")  # STL's variance at the start grows with d / b


# Above this condition number of the whitened target (bounds at draws of the start) the automatic
# mode runs ngvi-reparam: stl-proj contracts by ~1 - 1/sqrt(15 kappa) per update, NGVI's
# natural-gradient step is affine-invariant (docs/vi.md, "When the default does not converge").
# On 22 posteriors stl-proj converged at whitened kappa up to 198 and stalled at 693 (an 8-group
# hierarchical linear model: 20,000 updates not converged; ngvi-reparam converged in 3,200)
SWITCH_KAPPA = 500.0
FALLBACK_METHOD = "ngvi-reparam"


def choose_method(target: Target, curvature=None) -> Optional[dict]:
    """FALLBACK_METHOD as an event where kappa_hat >= SWITCH_KAPPA or hess V was indefinite; else None."""
    if target.alpha is None or target.beta is None:
        return None
    kappa = target.beta / target.alpha
    if kappa >= SWITCH_KAPPA:
        why = f"estimated kappa {kappa:.3g} >= {SWITCH_KAPPA:g} in whitened coordinates"
    elif curvature is not None and not curvature.log_concave_at_points:
        why = (f"hess V indefinite at the Laplace draws (smallest eigenvalue "
               f"{min(curvature.lambda_min):.3g}): not log-concave")
    else:
        return None
    return {"event": "method chosen", "step": 0, "method": FALLBACK_METHOD,
            "reason": f"{FALLBACK_METHOD}: {why}"}


def default_batch(method: str, dim: int) -> int:
    """Batch size b when the user gives none: 8 <= b ~ d / 2 <= 64 for the stochastic methods."""
    return int(min(64, max(8, math.ceil(dim / 2))))


def warn_small_batch(method: str, dim: int, batch_size: int):
    """STL-type estimators with b << d stall far from the optimum (seen at d = 100, b = 8)."""
    if method in SMALL_BATCH_METHODS and dim >= 32 and batch_size < dim / 8:
        _warnings.warn(f"{method} with batch size {batch_size} at d = {dim} can stall far from the "
                      f"optimum; a batch of at least {default_batch(method, dim)} is advised",
                      RuntimeWarning)


@dataclasses.dataclass
class Prepared:
    """A target with bounds, where the bounds came from, and the start (mean, Cholesky factor)."""

    target: Target
    curvature: Optional[object]  # CurvatureEstimate when the bounds were estimated
    init: Optional[tuple]
    improper: Optional[dict] = None  # a ray along which V falls without bound (targets.mode)


def prepare(target: Target, init=None, *, margin: float = 2.0, seed: int = 0,
            verbose: bool = False, family: str = "full-rank") -> Prepared:
    """Estimate missing bounds, start at the Laplace fit, and probe for an improper target."""
    if target.alpha is not None and target.beta is not None:
        return Prepared(target, None, init)
    init_mean = None if init is None else np.asarray(init[0], dtype=float)
    tgt, est = with_estimated_bounds(target, init=init_mean, margin=margin, seed=seed)
    if verbose:
        import sys

        print(f"inertia: {est.describe()}", file=sys.stderr, flush=True)
    improper = probe_unbounded(target, est.mode, est.factor, seed=seed)
    if init is None and np.ndim(est.factor) == 1 and family != "full-rank":
        init = (np.asarray(est.mode), np.asarray(est.factor))  # diag(s): the family's own start
    elif init is None:  # a diagonal factor (d > MATRIX_FREE_DIM) as the full-rank family's matrix
        F = np.diag(est.factor) if np.ndim(est.factor) == 1 else est.factor
        init = (np.asarray(est.mode), best_scale(tgt, est.mode, F, seed))
    return Prepared(tgt, est, init, improper)


def best_scale(target, mode, factor, seed=0, scales=tuple(2.0 ** -k for k in range(7))):
    """The Laplace factor scaled by the s in `scales` with the lowest objective estimate."""
    mon = ObjectiveMonitor(target, "chol", num_draws=128, seed=seed)
    A = np.stack([sc * np.asarray(factor) for sc in scales])
    est = mon(np.repeat(np.asarray(mode)[None], len(scales), 0), A)
    f = np.where(np.isfinite(est.value), est.value, np.inf)
    return A[int(np.argmin(f))] if np.isfinite(f).any() else A[-1]


def boundary(feasible: Optional[str], A: np.ndarray, alpha: float, beta: float,
             rel: float = 1e-6) -> tuple[bool, bool]:
    """(lower side active, upper side active) of the feasible set at factor A."""
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


@dataclasses.dataclass
class Whitening:
    """x = shift + W z: the run happens in z, where the start is N(0, I); F_x = F_z - log|det W|."""

    shift: np.ndarray
    W: np.ndarray
    target: Target  # the user's target (x coordinates)
    hvp_evals: int  # spent on the bounds in z

    @property
    def log_det(self) -> float:
        return float(np.sum(np.log(np.abs(np.diag(self.W)))))


def whiten_start(target: Target, init, *, seed: int = 0):
    """(target in z = W^-1 (x - m0), start (0, I), Whitening), bounds re-estimated in z."""
    m0 = np.asarray(init[0], dtype=float)
    A0 = np.asarray(init[1], dtype=float)
    lower = np.array_equal(A0, np.tril(A0)) and np.all(np.diag(A0) > 0)
    W = A0 if lower else np.linalg.cholesky(A0 @ A0.T)  # A0 itself: no squared condition number
    zt = whiten(target, m0, W)
    zt = dataclasses.replace(zt, info={k: v for k, v in target.info.items() if k != "init"})
    d = target.dim
    new = bounds_under(zt, np.zeros(d), np.eye(d), seed=seed)
    if new is None:
        return None
    a, b, hvps = new
    zt = zt.replace(alpha=float(min(a, b)), beta=float(b))
    return zt, (np.zeros(d), np.eye(d)), Whitening(m0, W, target, int(hvps))


def _psd_cholesky(S):
    """Cholesky factor of S, or of S with negative eigenvalues set to 0 (with a RuntimeWarning)."""
    try:
        return np.linalg.cholesky(S)
    except np.linalg.LinAlgError:
        w, Q = np.linalg.eigh(0.5 * (S + S.T))
        _warnings.warn(f"the fitted covariance is not positive definite (smallest eigenvalue "
                      f"{w[0]:.3g}, largest {w[-1]:.3g}): q has collapsed in some directions; its "
                      "negative eigenvalues were set to 0", RuntimeWarning)
        R = np.linalg.qr((Q * np.sqrt(np.maximum(w, 0.0))).T, mode="r")
        return R.T * np.where(np.diag(R) < 0, -1.0, 1.0)


def unwhiten(res, wh: Whitening):
    """The FitResult of a run in z, mapped back to x (mean, covariance, factors, F_hat)."""
    W, c = wh.W, wh.shift
    res.mean = np.asarray(res.mean) @ W.T + c
    if res.coords == "cov":  # factor first: W (chol Sigma_z) stays lower-triangular and exact
        res.factor = W @ _psd_cholesky(np.asarray(res.cov))
        res.cov = res.factor @ res.factor.T
    else:
        res.cov = W @ np.asarray(res.cov) @ W.T
        res.factor = W @ np.asarray(res.factor)
    h = res.history
    if "mean" in h:
        h["mean"] = np.asarray(h["mean"]) @ W.T + c
        h["factor"] = W @ np.asarray(h["factor"])  # W and each factor lower-triangular: Cholesky
    if h.get("objective_estimate") is not None:
        h["objective_estimate"] = np.asarray(h["objective_estimate"]) - wh.log_det
    h["hvp_evals"] = np.asarray(h["hvp_evals"]) + wh.hvp_evals
    res.target_name = wh.target.name
    res.names = wh.target.info.get("names")
    res.constrain = wh.target.info.get("constrain")
    res.bounds = {**(res.bounds or {}), "whitened": True}
    return res


__all__ = ["DEFAULT_METHOD", "SWITCH_KAPPA", "FALLBACK_METHOD", "choose_method", "default_batch",
           "warn_small_batch", "prepare", "Prepared",
           "boundary", "whiten_start", "unwhiten", "Whitening"]
