"""Curvature bounds alpha <= hess V <= beta estimated from the target: MAP, Laplace fit, Lanczos.

The VI step rules and feasible sets K_L / K_C need bounds alpha <= eig(hess V) <= beta
that a user's model does not come with. `estimate_curvature` finds the MAP with scipy's L-BFGS,
takes the extreme Hessian eigenvalues there and at a few draws of the Laplace approximation
(a dense eigendecomposition up to d = MATRIX_FREE_DIM, `targets.mode`; above it Lanczos on HVPs via
scipy's `eigsh` and no d x d matrix: the Laplace factor is then the diagonal
diag(hess V)^-1/2 from Rademacher HVP probes), and widens them by a stated safety margin. Points
where hess V is indefinite (non-log-concave targets) do not set
alpha: it comes from the mean Hessian over the points, the curvature the Gaussian optimum sees
(Sigma* = (E_q* hess V)^-1).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from .. import _warnings
from .._compile import device
from .base import Target, TargetError, jitted
from .mode import (PROBES, MATRIX_FREE_DIM, find_mode as mode_search, inverse_factor, nan_points,
                   probed_scale)

DEGENERATE_RATIO = 1e2  # lambda_max(MAP) / lambda_max(start) above this: a spike, not a mode
DENSE_MAX_DIM = MATRIX_FREE_DIM  # up to this d the Hessian is formed densely (targets.mode)


@dataclasses.dataclass
class CurvatureEstimate:
    """Estimated bounds and how they were found.

    `alpha`, `beta`: bounds after the margin; `lambda_min`, `lambda_max`: per point (mode first);
    `mean_lambda_min`: smallest eigenvalue of the Hessian averaged over the points; `mode`, `factor`:
    MAP and Cholesky factor of the Laplace covariance (hess V(mode))^-1 (regularised if needed),
    or above MATRIX_FREE_DIM the vector s of the diagonal factor diag(s), s = diag(hess V)^-1/2;
    `grad_evals`, `hvp_evals`, `potential_evals`: queries spent; `margin`: the safety factor.
    """

    alpha: float
    beta: float
    margin: float
    mode: np.ndarray
    factor: np.ndarray
    lambda_min: list
    lambda_max: list
    mean_lambda_min: float
    log_concave_at_points: bool
    grad_evals: int
    hvp_evals: int
    potential_evals: int
    map_converged: bool
    method: str
    map_reason: str = ""  # the mode finder's verdict (targets.mode)
    other_modes: tuple = ()  # further modes the mode finder found beside a saddle (targets.mode)
    search_converged: bool = True  # the search's own test met (a spike it met is no usable mode)

    def describe(self) -> str:
        """One line for the output."""
        return (f"curvature estimated (alpha = {self.alpha:.3g}, beta = {self.beta:.3g}, "
                f"kappa = {self.beta / self.alpha:.3g}; margin x{self.margin:g}; Hessian spectrum "
                f"[{min(self.lambda_min):.3g}, {max(self.lambda_max):.3g}] at the MAP and "
                f"{len(self.lambda_min) - 1} Laplace draws by {self.method}; "
                f"{self.grad_evals} gradients + {self.hvp_evals} HVPs)")

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["mode"] = np.asarray(self.mode).tolist()
        d.pop("factor")
        return d


def find_mode(target: Target, init=None, *, max_iter: int = 2000, gtol: float = 1e-8):
    """MAP argmin V by L-BFGS then trust-region Newton (`targets.mode.find_mode`):
    (x, converged, gradient evaluations)."""
    m = mode_search(target, init, max_iter=max_iter)
    return m.x, m.converged, m.grad_evals


def _jitted_hessian(target):
    return jitted(target, "hessian")


def hessian_extremes(target: Target, x, *, dense_max_dim: int = DENSE_MAX_DIM, notes=None):
    """(lambda_min, lambda_max, H or None, hvps) of hess V(x): dense for small d, else Lanczos.

    Lanczos whose relative tolerance cannot be met (an end of the spectrum crowded near zero, far
    below the other end) falls back to the shifted problem (`_shifted_extreme`), accurate to
    LANCZOS_TOL of the spectrum's largest magnitude; each fallback is said in a RuntimeWarning
    and appended to `notes` (a list) when given. An end not found even so is NaN (the callers
    skip that point)."""
    d = target.dim
    x = device(x)
    if d <= dense_max_dim:
        H = np.asarray(_jitted_hessian(target)(x))
        H = 0.5 * (H + H.T)
        if not np.all(np.isfinite(H)):
            return math.nan, math.nan, None, d
        w = np.linalg.eigvalsh(H)
        return float(w[0]), float(w[-1]), H, d
    from scipy.sparse.linalg import LinearOperator

    hvp = jitted(target, "hvp")  # one compilation for every point
    count = [0]

    def mv(v):
        count[0] += 1
        return np.asarray(hvp(x, device(np.ravel(v), np.float64)))

    op = LinearOperator((d, d), matvec=mv, dtype=np.float64)
    rng = np.random.default_rng(0)
    v0 = rng.standard_normal(d)
    kw = dict(k=1, v0=v0, tol=LANCZOS_TOL, maxiter=20 * d, return_eigenvectors=False)
    said = []
    lmax = _extreme(op, "LA", kw, said)
    lmin = _extreme(op, "SA", kw, said)
    if said:
        msg = (f"Hessian eigenvalues at d = {d}: Lanczos (scipy eigsh) did not converge for "
               + " and ".join(said) + f" ({count[0]} HVPs in all)")
        if notes is not None:
            notes.append(msg)
        _warnings.warn(msg, RuntimeWarning)
    return lmin, lmax, None, count[0]


LANCZOS_TOL = 1e-3  # eigsh's relative tolerance on the extreme eigenvalues


def _extreme(op, which, kw, said) -> float:
    """The largest ("LA") or smallest ("SA") eigenvalue of op by eigsh, else by
    `_shifted_extreme` (said in `said`), else NaN."""
    from scipy.sparse.linalg import ArpackNoConvergence, eigsh

    try:
        return float(eigsh(op, which=which, **kw)[0])
    except ArpackNoConvergence:
        pass
    end = "the largest" if which == "LA" else "the smallest"
    try:
        v = _shifted_extreme(op, which, kw)
    except ArpackNoConvergence:
        said.append(f"{end} (nor for the shifted problem: not estimated)")
        return math.nan
    said.append(f"{end}: the shifted problem's estimate {v:.4g} used instead, accurate to "
                f"{LANCZOS_TOL:g} of the largest |eigenvalue|")
    return v


def _shifted_extreme(op, which, kw) -> float:
    """An end of the spectrum of a symmetric op from the other problem Lanczos meets easily: the
    largest magnitude s (which="LM", relative to itself), then the largest eigenvalue of
    s I - op (for "SA") or s I + op (for "LA"), whose relative tolerance is one of s. Lanczos's
    relative tolerance on an eigenvalue near zero (an end crowded there, far below s) is the one
    it cannot meet; its absolute error here is about LANCZOS_TOL x s."""
    from scipy.sparse.linalg import LinearOperator, eigsh

    s = abs(float(eigsh(op, which="LM", **kw)[0]))
    sign = -1.0 if which == "SA" else 1.0
    shifted = LinearOperator(op.shape, matvec=lambda v: s * np.ravel(v) + sign * op.matvec(v),
                             dtype=np.float64)
    top = float(eigsh(shifted, which="LA", **kw)[0])
    return sign * (top - s)


def _laplace_factor(H, lmin, lmax, d):
    """Cholesky factor of H^-1 when H is positive definite (`targets.mode.inverse_factor`: accurate
    to the condition number of H, not its square), else of (H + shift I)^-1 shifted so that the
    matrix is safely positive."""
    if lmin > 0:
        try:
            return inverse_factor(H)
        except np.linalg.LinAlgError:
            pass
    floor = max(1e-8 * abs(lmax), 1e-12)
    shift = floor - min(lmin, 0.0) + 1e-3 * max(abs(lmax), 1.0)
    return inverse_factor(H + shift * np.eye(d))


def estimate_curvature(target: Target, *, init=None, num_points: int = 4, margin: float = 2.0,
                       seed: int = 0, dense_max_dim: int = DENSE_MAX_DIM) -> CurvatureEstimate:
    """alpha_hat = mean-Hessian lambda_min / margin, beta_hat = max lambda_max * margin over the MAP
    and `num_points - 1` draws of the Laplace approximation N(mode, hess V(mode)^-1).

    For d > `dense_max_dim` eigenvalues come from Lanczos (scipy `eigsh` on HVPs) and the Laplace
    factor is diagonal, returned as the vector s (`probed_scale`): no d x d matrix is formed.
    """
    if not margin >= 1.0:
        raise ValueError(f"margin must be >= 1, got {margin}")
    if init is None and "init" in target.info:
        init = np.asarray(target.info["init"])
    found = mode_search(target, init, dense_max_dim=dense_max_dim)
    notes = []  # Lanczos fallbacks (`hessian_extremes`), said in `method`
    mode, converged, grad_evals = found.x, found.converged, found.grad_evals
    d = target.dim
    hvps = found.hvp_evals
    if found.hessian is not None and d <= dense_max_dim and np.all(np.isfinite(found.hessian)):
        H0 = found.hessian
        w = np.linalg.eigvalsh(H0)
        lmin0, lmax0 = float(w[0]), float(w[-1])
    else:
        lmin0, lmax0, H0, n = hessian_extremes(target, mode, dense_max_dim=dense_max_dim,
                                                  notes=notes)
        hvps += n
    x_start = np.zeros(d) if init is None else np.asarray(init, dtype=float)
    degenerate = not (converged and math.isfinite(lmax0) and math.isfinite(lmin0))
    if not degenerate:  # a MAP at a spike (funnels: scale -> 0) says nothing about the posterior
        lmin_s, lmax_s, H_s, n = hessian_extremes(target, x_start, dense_max_dim=dense_max_dim,
                                                  notes=notes)
        hvps += n
        if math.isfinite(lmax_s) and lmax_s > 0 and lmax0 > DEGENERATE_RATIO * lmax_s:
            degenerate = True
    if degenerate:
        mode = x_start
        lmin0, lmax0, H0, n = hessian_extremes(target, mode, dense_max_dim=dense_max_dim,
                                                  notes=notes)
        hvps += n
    if H0 is not None:
        factor = _laplace_factor(H0, lmin0, lmax0, d)
    elif found.scale is not None and not degenerate:  # probed at the mode by the search
        factor = found.scale
    else:
        factor = probed_scale(target, mode, seed=seed)
        hvps += PROBES
    extra = spectrum_under(target, mode, factor, num_points - 1, seed=seed,
                           dense_max_dim=dense_max_dim, H_first=H0, notes=notes)
    lmins, lmaxs = [lmin0] + extra["lambda_min"], [lmax0] + extra["lambda_max"]
    mean_lmin = extra["mean_lambda_min"]
    check_curvature(target, mode, lmins, lmaxs, mean_lmin, H0)
    hvps += extra["hvp_evals"]
    alpha_raw, beta_raw = _bounds_from(lmins, lmaxs, mean_lmin)
    return CurvatureEstimate(
        alpha=alpha_raw / margin, beta=beta_raw * margin, margin=margin, mode=mode, factor=factor,
        lambda_min=lmins, lambda_max=lmaxs, mean_lambda_min=mean_lmin,
        log_concave_at_points=bool(min(lmins) > 0), grad_evals=int(grad_evals),
        hvp_evals=int(hvps), potential_evals=int(extra["potential_evals"]),
        map_converged=converged and not degenerate, map_reason=_map_reason(found, degenerate),
        other_modes=found.others,
        search_converged=bool(converged),
        method=("dense eigendecomposition" if d <= dense_max_dim
                else "Lanczos (scipy eigsh) on HVPs, diagonal Laplace factor")
        + "".join(f"; {n}" for n in notes))


def _map_reason(found, degenerate: bool) -> str:
    """The mode search's reason, saying why the start was used instead (never a met criterion
    given as the reason of a mode declared not found)."""
    if not degenerate:
        return found.reason
    why = ("a spike (hess V there far above the start's)" if found.converged
           else "the search did not converge")
    return f"no usable mode, the start used instead: {why} ({found.reason})"


FLAT = 1e-13  # |eigenvalue| <= FLAT * lambda_max at every point: a flat direction (rounding level)


def _names(target, d):
    names = (getattr(target, "info", None) or {}).get("names")
    return list(names) if names is not None and len(names) == d else [f"x[{i}]" for i in range(d)]


def check_curvature(target: Target, mode, lmins, lmaxs, mean_lmin, H_mode=None) -> None:
    """TargetError naming the cause when the Hessian gives no usable curvature: zero everywhere
    with a non-zero gradient (a non-smooth, piecewise-linear log density such as exp(-|x|)), zero
    with a zero gradient (a flat log density), or zero along one direction at every point (an
    improper posterior)."""
    beta_raw = max(lmaxs)
    d = target.dim
    if not (math.isfinite(beta_raw) and beta_raw > 0):
        vg = jitted(target, "value_and_grad")
        rng = np.random.default_rng(0)
        pts = [np.asarray(mode)] + [np.asarray(mode) + rng.standard_normal(d) for _ in range(3)]
        nan = nan_points(target, pts)
        if nan:
            raise TargetError(nan)
        grads = [float(np.max(np.abs(np.asarray(vg(device(x))[1])))) for x in pts]
        if max(grads) > 0:
            raise TargetError(
                "the log density has no curvature: its Hessian is 0 at the MAP and around it while "
                f"its gradient is not (largest |gradient| {max(grads):.3g}), as for a non-smooth, "
                "piecewise-linear log density such as exp(-|x|) (a Laplace prior), whose second "
                "derivative is 0 away from its kinks. inertia's methods need a twice-"
                "differentiable log density: smooth the kinks (e.g. |x| -> sqrt(x^2 + 1e-2)), or "
                "sample with fixed parameters (step_size, gamma and alpha all given)")
        raise TargetError("the log density is flat (zero gradient and Hessian at the MAP and "
                          "around it): it does not depend on the parameters, so the posterior is "
                          "improper; give every parameter a proper prior")
    if all(abs(v) <= FLAT * beta_raw for v in lmins) and mean_lmin <= FLAT * beta_raw:
        which = ""
        if H_mode is not None:
            w, V = np.linalg.eigh(np.asarray(H_mode))
            top = np.argsort(-np.abs(V[:, 0]))[:3]
            which = f" (mostly {', '.join(_names(target, d)[i] for i in top if abs(V[i, 0]) > 0.1)})"
        raise TargetError(
            f"the posterior is improper: the log density is flat along a direction{which} at the "
            f"MAP and at every Laplace draw (smallest Hessian eigenvalue {max(lmins, key=abs):.2g}, "
            f"largest {beta_raw:.3g}), so it does not integrate; give those parameters a proper "
            "prior (a parameter without one, or parameters that enter only through their sum)")


def _bounds_from(lmins, lmaxs, mean_lmin):
    """(alpha, beta) before the margin; indefinite points never set alpha."""
    beta_raw = max(lmaxs)
    if not (math.isfinite(beta_raw) and beta_raw > 0):
        raise TargetError("could not estimate curvature: the Hessian has no positive eigenvalue "
                          "at the MAP (is the potential bounded below?)")
    alpha_raw = min([v for v in lmins if v > 0] + [mean_lmin]) if mean_lmin > 0 else mean_lmin
    return max(alpha_raw, 1e-6 * beta_raw), beta_raw


def spectrum_under(target: Target, mean, factor, num_points: int, *, seed: int = 0,
                   dense_max_dim: int = DENSE_MAX_DIM, H_first=None, notes=None) -> dict:
    """Extreme Hessian eigenvalues at `num_points` draws of N(mean, factor factor^T), and the
    smallest eigenvalue of the Hessian averaged over them (and `H_first`, when given)."""
    d = target.dim
    rng = np.random.default_rng(seed)
    vg = jitted(target, "value_and_grad")
    lmins, lmaxs, hvps, pot = [], [], 0, 0
    hsum = None if H_first is None else np.array(H_first, dtype=float)
    nsum = 0 if H_first is None else 1
    dense = True
    for _ in range(max(0, num_points)):
        x = np.asarray(mean) + _times(factor, rng.standard_normal(d))
        pot += 1
        if not np.isfinite(float(vg(device(x))[0])):
            continue
        lmin, lmax, H, n = hessian_extremes(target, x, dense_max_dim=dense_max_dim, notes=notes)
        hvps += n
        if not (math.isfinite(lmin) and math.isfinite(lmax)):
            continue
        lmins.append(lmin)
        lmaxs.append(lmax)
        if H is None:
            dense = False
        elif dense:
            hsum = H.copy() if hsum is None else hsum + H
            nsum += 1
    pts = lmins if H_first is None else lmins + [float(np.linalg.eigvalsh(H_first)[0])]
    if dense and hsum is not None and np.all(np.isfinite(hsum)):
        mean_lmin = float(np.linalg.eigvalsh(hsum / nsum)[0])
    else:
        mean_lmin = float(np.mean(pts)) if pts else float("nan")
    return {"lambda_min": lmins, "lambda_max": lmaxs, "mean_lambda_min": mean_lmin,
            "hvp_evals": hvps, "potential_evals": pot}


def _times(factor, z):
    """F z for a factor (d, d), or diag(F) z for the vector F of a diagonal factor."""
    F = np.asarray(factor)
    return F * z if F.ndim == 1 else F @ z


def bounds_under(target: Target, mean, factor, *, num_points: int = 4, margin: float = 2.0,
                 seed: int = 0):
    """(alpha_hat, beta_hat, hvps) from the Hessian at draws of the current Gaussian N(mean, FF^T)."""
    sp = spectrum_under(target, mean, factor, num_points, seed=seed)
    if not sp["lambda_max"]:
        return None
    a, b = _bounds_from(sp["lambda_min"], sp["lambda_max"], sp["mean_lambda_min"])
    return a / margin, b * margin, sp["hvp_evals"]


def with_estimated_bounds(target: Target, **kwargs):
    """(target with alpha/beta filled in, CurvatureEstimate); user-given bounds always win."""
    est = estimate_curvature(target, **kwargs)
    alpha = target.alpha if target.alpha is not None else est.alpha
    beta = target.beta if target.beta is not None else est.beta
    if alpha > beta:
        alpha = beta
    return target.replace(alpha=float(alpha), beta=float(beta)), est


__all__ = ["CurvatureEstimate", "estimate_curvature", "find_mode", "hessian_extremes",
           "with_estimated_bounds"]
