"""Warm-up without user constants: Gaussian fit, whitening x = m + L z, exact-Gaussian tuning, bias check.

The five steps (fit, whitening, whitened curvature, `tuning.tune_ess`, the h against h/2 check):
docs/hfhr.md, "Automatic tuning, diagnostics and bias of the unadjusted schemes".
"""
from __future__ import annotations

import dataclasses
import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from .. import _compile
from ..targets.base import Target, TargetError
from ..targets.whiten import whiten
from ..targets.curvature import estimate_curvature, _bounds_from, spectrum_under, hessian_extremes
from ..diagnostics import chain_stats
from ..variational.fit import fit
from .tuning import tune_ess

MAX_HALVINGS = 4
# the Laplace-whitened target's estimated kappa from which the Laplace fit is a poor frame and
# the warm-up fits q by VI (docs/hfhr.md)
SWITCH_KAPPA = 1e4
# the VI fit when the Laplace frame is poor (badly conditioned, or hess V indefinite at its draws):
# a preconditioner needs q to a fraction of a nat, not to 1e-4 (300 updates at the default batch
# gave the chains the same errors as 2,000 on stochastic volatility at a quarter of the gradients;
# against fits run to convergence, 0.77 of the gradients per ESS over 21 reference runs;
# docs/hfhr.md)
VI_WARMUP = {"num_steps": 300}


@dataclasses.dataclass
class GaussianFit:
    """Mean m, factor L (covariance L L^T) and how they were obtained."""

    mean: np.ndarray
    factor: np.ndarray
    kind: str
    grad_evals: int
    info: dict


def fit_gaussian(target: Target, precondition: str = "auto", *, seed: int = 0) -> GaussianFit:
    """Gaussian approximation used as preconditioner: "laplace", "vi", "auto" or "none" (identity)."""
    target, est, info, grads = _laplace(target, seed)
    if np.ndim(est.factor) == 1:  # d > MATRIX_FREE_DIM: the dense frame (forced) needs diag(s)
        est = dataclasses.replace(est, factor=np.diag(est.factor))
    if precondition == "none":
        return GaussianFit(np.asarray(est.mode), np.eye(target.dim), "none", grads, info)
    laplace_ok = est.map_converged and est.lambda_min[0] > 0
    budget = {}
    if precondition == "auto" and laplace_ok:
        kappa, hvps, indefinite = _whitened_kappa(target, est.mode, est.factor, seed)
        grads += 2 * hvps
        info["whitened_kappa"] = kappa
        if indefinite:  # not log-concave where the Laplace fit puts mass
            info["indefinite_at_laplace_draws"] = True
        if kappa >= SWITCH_KAPPA or indefinite:  # the Laplace fit is a poor frame: q by VI
            laplace_ok, budget = False, VI_WARMUP
    if precondition == "vi" or (precondition == "auto" and not laplace_ok):
        vi = _vi_fit(target, seed, **budget)
        if vi is not None:
            mean, factor, g, note = vi
            info.update(vi=note)
            return GaussianFit(mean, factor, "vi", grads + g, info)
        info.update(vi="VI fit failed: Laplace fit used")
    return GaussianFit(np.asarray(est.mode), np.asarray(est.factor), "laplace", grads, info)


def _laplace(target: Target, seed: int, init=None):
    """(target with a dense Hessian product, `estimate_curvature` at the MAP, its info, gradients)."""
    if target.hess_matmul_fn is None:  # a compiled dense Hessian instead of eager HVPs
        target = target.replace(hess_matmul_fn=_compile.jit(
            lambda x, M: jax.vmap(lambda v: target.hvp(x, v), in_axes=1, out_axes=1)(M)))
    est = estimate_curvature(target, init=init, num_points=1, margin=1.0, seed=seed)
    info = {"map_converged": est.map_converged, "hessian_min_eig": est.lambda_min[0],
            "hessian_max_eig": est.lambda_max[0], "log_concave_at_mode": est.lambda_min[0] > 0}
    if est.other_modes:  # beside a saddle: the chains start at every mode found (adapt)
        info["other_modes"] = [np.asarray(x, np.float64) for x in est.other_modes]
    return target, est, info, est.grad_evals + 2 * est.hvp_evals


# beyond frames.DENSE_MAX_DIM (up to frames.LAPLACE_DENSE_MAX_DIM) the sampler's frame is the
# dense Laplace fit only when this whitened kappa_hat and positive definite Hessians at its draws
# say it whitens the target
LAPLACE_KAPPA = 100.0


def good_laplace_fit(target: Target, mode, *, seed: int = 0, max_kappa: float = LAPLACE_KAPPA):
    """(GaussianFit or None, gradients, why): the Laplace fit at `mode` where it is a good frame."""
    try:
        target, est, info, grads = _laplace(target, seed, np.asarray(mode, np.float64))
    except (ValueError, ArithmeticError, np.linalg.LinAlgError) as err:  # the frames need no Hessian
        return None, 0, f"the Laplace fit failed ({type(err).__name__}: {err})"
    if not (est.map_converged and est.lambda_min[0] > 0) or np.ndim(est.factor) != 2:
        return None, grads, "the Hessian at the MAP is not positive definite"
    kappa, hvps, indefinite = _whitened_kappa(target, est.mode, est.factor, seed)
    grads += 2 * hvps
    info["whitened_kappa"] = kappa
    if indefinite:
        return None, grads, "the Hessian is indefinite at a draw of the Laplace fit"
    if not kappa < max_kappa:
        return None, grads, f"the Laplace-whitened kappa_hat {kappa:.3g} >= {max_kappa:g}"
    return (GaussianFit(np.asarray(est.mode), np.asarray(est.factor), "laplace", grads, info),
            grads, f"the Laplace fit whitens the target (kappa_hat {kappa:.3g})")


def _whitened_kappa(target, mode, factor, seed):
    """(kappa_hat, HVPs, indefinite) of the Laplace-whitened potential at draws of N(0, I)."""
    d = target.dim
    sp = spectrum_under(whiten(target, mode, factor), np.zeros(d), np.eye(d), 4, seed=seed)
    if not sp["lambda_max"]:
        return math.inf, int(sp["hvp_evals"]), False
    a, b = _bounds_from(sp["lambda_min"], sp["lambda_max"], sp["mean_lambda_min"])
    a, b = a / 2.0, b * 2.0  # the margin of curvature.bounds_under
    return (float(b / a) if a > 0 else math.inf, int(sp["hvp_evals"]),
            bool(min(sp["lambda_min"]) <= 0))


def _vi_fit(target, seed, **budget):
    """(mean, Cholesky factor, gradients, note) of `inertia.variational.fit`, or None on failure."""
    try:
        with warnings.catch_warnings():  # a budgeted preconditioning run ends unconverged by design
            if budget:
                warnings.filterwarnings("ignore", message=".*NOT CONVERGED", category=RuntimeWarning)
            r = fit(target, seed=seed, quality=False, **budget)
        mean = np.asarray(r.mean, dtype=np.float64).reshape(-1)
        factor = np.linalg.cholesky(np.asarray(r.cov, dtype=np.float64).reshape(target.dim, -1))
    except Exception:  # noqa: BLE001 - any failure of the fit falls back to the Laplace fit
        return None
    if "improper" in r.verdict.numbers:  # the fit's probe found infinite mass
        why = r.verdict.numbers["stop"]
        raise TargetError(f"the posterior is improper: {why}; give every parameter a proper prior "
                          "(or check the data for separation)")
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(factor))):
        return None
    h = r.history
    g = int(np.asarray(h.get("grad_evals", [0]))[-1]) + 2 * int(np.asarray(h.get("hvp_evals", [0]))[-1])
    return mean, factor, g, f"{r.method}, {r.num_steps} steps"


class Curvature:
    """Whitened Hessians met so far: extreme eigenvalues per point and their running mean (dense d)."""

    def __init__(self):
        self.lo, self.hi, self.hsum, self.count, self.hvps = [], [], None, 0, 0

    def add(self, wtarget: Target, points):
        """Add hess V_w at every finite point; returns (min, max) eigenvalue over these points."""
        lo, hi = [], []
        for z in np.asarray(points):
            if not np.all(np.isfinite(z)):
                continue
            a, b, H, n = hessian_extremes(wtarget, z)
            self.hvps += n
            if not (math.isfinite(a) and math.isfinite(b)):
                continue
            lo.append(a)
            hi.append(b)
            if H is not None:
                self.hsum = H if self.hsum is None else self.hsum + H
                self.count += 1
        self.lo += lo
        self.hi += hi
        return (min(lo), max(hi)) if lo else None

    def spectrum(self) -> np.ndarray:
        """Tuning spectrum: 7 quantiles of the mean whitened Hessian (or geometric), floored at 1e-4 max."""
        top = max(max(self.hi), 1e-12)
        if self.hsum is not None and self.count == len(self.lo):
            w = np.linalg.eigvalsh(self.hsum / self.count)
            q = np.quantile(w, np.linspace(0.0, 1.0, 7))
            return np.maximum(q, 1e-4 * top)
        return np.geomspace(max(min(self.lo), 1e-4 * top), top, 7)

    @property
    def stiff(self) -> float:
        return float(max(self.hi))


def moments_check(a, b, bias_tol: float, alpha: float = 1e-3) -> dict:
    """Bias check of draws at h against h/2: chi-square(d) on (diff / se)^2 and the RMS excess vs bias_tol."""
    from scipy.stats import chi2

    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return {"passed": False, "excess": float("inf"), "reason": "non-finite warm-up draws"}
    sa, sb = (chain_stats(v, ("mcse_mean", "mcse_sd")) for v in (a, b))
    fa, fb = a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1])
    scale = np.maximum(fb.std(axis=0), 1e-300)
    out = {"passed": True, "excess": 0.0}
    for name, diff, se in (
            ("mean", (fa.mean(0) - fb.mean(0)) / scale, np.hypot(sa["mcse_mean"], sb["mcse_mean"]) / scale),
            ("sd", (fa.std(0) - fb.std(0)) / scale, np.hypot(sa["mcse_sd"], sb["mcse_sd"]) / scale)):
        stat = float(np.sum((diff / se) ** 2))
        p = float(chi2.sf(stat, diff.size))
        rms = 2.0 * math.sqrt(max(float(np.mean(diff**2 - se**2)), 0.0))
        out.update({f"bias_{name}": float(2 * np.max(np.abs(diff))), f"se_{name}": float(2 * np.max(se)),
                    f"rms_bias_{name}": rms, f"p_{name}": p})
        if p < alpha and rms > bias_tol:
            out["passed"] = False
        out["excess"] = max(out["excess"], rms if p < alpha else 0.0)
    return out


BLOCK = 100  # every warm-up and sampling run is made of compiled blocks of this many steps


def warmup_steps(tau: float) -> int:
    """Warm-up length per run: 10 autocorrelation times, 200 to 2000 steps (a multiple of BLOCK)."""
    return int(min(2000, max(200, BLOCK * math.ceil(10 * tau / BLOCK))))


def run_warmup(target: Target, method, num_chains: int, key, *, precondition: str = "auto",
               bias_tol: float = 0.03, init=None, runner=None, seed: int = 0):
    """The whole warm-up: (whitened target, fit, params dict, states, report)."""
    fit = fit_gaussian(target, precondition, seed=seed)
    wt = whiten(target, fit.mean, fit.factor)
    d = target.dim
    keys = jax.random.split(key, 4)
    z0 = np.asarray(jax.random.normal(keys[0], (num_chains, d), dtype=jnp.float64))
    if init is not None:
        x = np.broadcast_to(np.asarray(init, dtype=np.float64), (num_chains, d))
        z0 = np.linalg.solve(fit.factor, (x - fit.mean).T).T
    curv = Curvature()
    first = curv.add(wt, np.vstack([np.zeros((1, d)), z0]))
    if first is None:
        raise FloatingPointError("the Hessian of the model is not finite at its mode or at the "
                                 "Gaussian fit's draws: the model (not the sampler) is at fault")
    report = {"precondition": fit.kind, "fit": {**fit.info, "grad_evals": fit.grad_evals},
              "curvature": [{"where": "mode and fit draws", "min": first[0], "max": first[1]}],
              "bias_tol": bias_tol, "retunes": [], "bias_checks": []}
    grads = fit.grad_evals
    max_step = None

    def tune():
        return tune_ess(curv.spectrum(), method.name, bias_tol=bias_tol, max_step=max_step,
                        stiff=curv.stiff)

    tuned = tune()
    steps = warmup_steps(tuned["tau"])
    for attempt in range(MAX_HALVINGS + 1):  # first run; re-estimate curvature where the chains are
        state, draws, div = runner(wt, tuned, z0, keys[1], steps)
        grads += steps * method.grads_per_step
        if not div.any():
            break
        max_step = tuned["step_size"] / 2
        report["retunes"].append(f"chains diverged at h = {tuned['step_size']:.4g} in warm-up: "
                                 f"h <= {max_step:.4g}")
        tuned = tune()
    else:
        raise FloatingPointError(f"{method.name}: warm-up chains keep diverging after "
                                 f"{MAX_HALVINGS} step-size halvings (h = {tuned['step_size']:.3g}); "
                                 "the model is likely non-finite or unbounded somewhere")
    more = curv.add(wt, _positions(state))
    if more is not None:
        report["curvature"].append({"where": "warm-up positions", "min": more[0], "max": more[1]})
        tuned = tune()
    for k in range(MAX_HALVINGS + 1):
        half = dict(tuned, step_size=tuned["step_size"] / 2)
        s_a, da, diva = runner(wt, tuned, state, keys[2], steps)
        _, db, divb = runner(wt, half, state, keys[3], 2 * steps)
        grads += 3 * steps * method.grads_per_step
        chk = moments_check(da[:, steps // 4:], db[:, steps // 2:], bias_tol)
        chk["step_size"] = tuned["step_size"]
        report["bias_checks"].append(chk)
        if chk["passed"]:
            state = s_a
            break
        if k == MAX_HALVINGS:
            report["retunes"].append("bias check still failing after "
                                     f"{MAX_HALVINGS} halvings: kept h = {tuned['step_size']:.4g}")
            if not diva.any():
                state = s_a
            break
        max_step = tuned["step_size"] / 2
        tuned = tune()
        report["retunes"].append(f"h vs h/2 moments differ beyond bias_tol: h <= {max_step:.4g}")
    report.update(tuning=tuned, warmup_steps=steps, grad_evals=int(grads + 2 * curv.hvps),
                  hvp_evals=int(curv.hvps))
    return wt, fit, tuned, state, report


def _positions(state):
    return np.asarray(state.position if hasattr(state, "position") else state)


__all__ = ["GaussianFit", "fit_gaussian", "whiten", "Curvature", "moments_check", "run_warmup"]
