"""Parameter choices: defaults from the curvature bounds m <= hess V <= L, and exact-W2 tuning on Gaussians.

Defaults (docs/hfhr.md, "API"): ULA h = 0.1 / L; KLMC h = 0.2 / sqrt(L), gamma = max(2 sqrt(m), h L);
HFHR h, gamma as KLMC, alpha = 0.5 / (h L).
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .gaussian import GaussianDiagnostics, chain_statistics
from .kernels import get_method


def default_parameters(target, method: str) -> dict:
    """Step size, friction and alpha from the target's curvature bounds (alpha = m, beta = L)."""
    m_ = get_method(method)
    if target.alpha is None or target.beta is None:
        raise ValueError(f"target {target.name!r} has no curvature bounds; pass step_size, gamma and "
                         "alpha explicitly (or build the target with alpha= and beta=)")
    m, L = float(target.alpha), float(target.beta)
    if not m_.kinetic:
        return {"step_size": 0.1 / L}
    h = 0.2 / math.sqrt(L)
    out = {"step_size": h, "gamma": max(2.0 * math.sqrt(m), h * L)}
    if "alpha" in m_.uses:
        out["alpha"] = 0.5 / (h * L)
    return out


def default_grid(target, method: str, size: str = "normal") -> dict:
    """A (h, gamma, alpha h L) grid scaled by the curvature bounds, for `tune_gaussian`."""
    m, L = float(target.alpha), float(target.beta)
    n = {"small": 6, "normal": 12}[size]
    if not get_method(method).kinetic:
        return {"step_size": np.geomspace(0.02, 1.9, n) / L}
    grid = {"step_size": np.geomspace(0.02, 3.0, n) / math.sqrt(L),
            "gamma": np.geomspace(0.5 * math.sqrt(m), 3.0 * math.sqrt(L), n)}
    if "alpha" in get_method(method).uses:
        grid["ahl"] = np.array([0.1, 0.25, 0.5, 1.0, 1.5, 1.9]) if size == "normal" else \
            np.array([0.25, 0.5, 1.0, 1.5])
    return grid


def tune_gaussian(target, method: str, *, tol: float = 0.1, budget: Optional[int] = None,
                  grid: Optional[dict] = None, max_steps: int = 5000, init_mean=None,
                  init_var: float = 1.0) -> dict:
    """Best grid point by the exact W2: least W2 after `budget` gradients, or fewest to W2 <= tol W2_0."""
    m_ = get_method(method)
    diag = GaussianDiagnostics(target)
    L = float(diag.lam[-1])
    grid = default_grid(target, method) if grid is None else grid
    hs = np.asarray(grid["step_size"], dtype=np.float64)
    gs = np.asarray(grid.get("gamma", [1.0]), dtype=np.float64) if m_.kinetic else np.array([1.0])
    rs = np.asarray(grid.get("ahl", [0.0]), dtype=np.float64) if "alpha" in m_.uses else np.array([0.0])
    H, G, R = (a.ravel() for a in np.meshgrid(hs, gs, rs, indexing="ij"))
    A = R / (H * L)
    w0 = diag.initial_w2(init_mean, init_var)
    stable = diag.rates(m_, step_size=H, gamma=G, alpha=A) < 1.0
    out = {"method": m_.name, "w2_0": w0, "tol": tol, "budget": budget, "grid_points": int(H.size)}
    if budget is not None:
        steps = max(int(budget) - 1, 0) // m_.grads_per_step  # the initial gradient counts
        curves, _ = diag.grid_curves(m_, step_size=H, gamma=G, alpha=A, num_steps=steps,
                                     init_mean=init_mean, init_var=init_var)
        final = np.where(stable, curves[:, -1], np.inf)
        if not np.isfinite(final).any():
            out.update(step_size=None, gamma=None, alpha=None, w2=None)
            return out
        i = int(np.argmin(final))
        out.update(steps=steps, w2=float(final[i]))
    else:
        hit, _ = diag.steps_to(m_, step_size=H, gamma=G, alpha=A, tol=tol * w0, max_steps=max_steps,
                               init_mean=init_mean, init_var=init_var)
        ok = (hit > 0) & stable
        if not ok.any():
            out.update(step_size=None, gamma=None, alpha=None, grad_evals=None)
            return out
        i = int(np.flatnonzero(ok)[np.argmin(hit[ok])])
        out.update(steps=int(hit[i]), grad_evals=int(hit[i]) * m_.grads_per_step)
    best = {"step_size": float(H[i])}
    if m_.kinetic:
        best["gamma"] = float(G[i])
    if "alpha" in m_.uses:
        best["alpha"] = float(A[i])
    st = diag.stationary(m_, **best)
    out.update(best, bias_w2=st.bias_w2, rate=st.rate)
    return out


def tune_ess(eigenvalues, method: str, *, bias_tol: float = 0.03, max_step: Optional[float] = None,
             stiff: Optional[float] = None, num: int = 24) -> dict:
    """Fewest gradients per effective sample on a Gaussian with these Hessian eigenvalues, exactly."""
    m_ = get_method(method)
    lam = np.sort(np.atleast_1d(np.asarray(eigenvalues, dtype=np.float64)))
    if not (lam[0] > 0 and np.all(np.isfinite(lam))):
        raise ValueError(f"eigenvalues must be positive and finite, got {lam}")
    m, L = float(lam[0]), float(max(lam[-1], stiff or 0.0))
    top = 3.0 / math.sqrt(L) if m_.kinetic else 1.9 / L
    top = top if max_step is None else min(top, float(max_step))
    if m_.kinetic:
        hs = np.geomspace(0.02 / 3.0 * top, top, num)  # fixed grid shapes: one compilation
        gs = np.geomspace(0.2 * math.sqrt(m), 4.0 * math.sqrt(L), max(num // 2, 4))
        rs = np.array([0.0, 0.1, 0.25, 0.5, 1.0, 1.5]) if "alpha" in m_.uses else np.array([0.0])
    else:
        hs, gs, rs = np.geomspace(0.01 / 1.9 * top, top, 2 * num), np.array([1.0]), np.array([0.0])
    H, G, R = (a.ravel() for a in np.meshgrid(hs, gs, rs, indexing="ij"))
    lam_all = lam if stiff is None else np.append(lam, float(stiff))
    st = chain_statistics(m_, lam_all, step_size=H, gamma=G, alpha=R / (H * L))
    stable = np.all(st["rate"] < 1.0, axis=1)
    n = lam.size
    tau = np.maximum(st["tau_mean_geyer"], st["tau_sq"])[:, :n].max(axis=1) * m_.grads_per_step
    tau = np.where(stable, tau, np.inf)
    err = np.abs(st["sd_error"][:, :n]).max(axis=1)
    ok = np.isfinite(tau) & (err <= bias_tol)
    if not ok.any():  # the tolerance is out of reach on this grid: least biased stable point
        ok = np.isfinite(tau) & (err <= np.nanmin(np.where(np.isfinite(tau), err, np.nan)) * 1.0001)
    i = int(np.flatnonzero(ok)[np.argmin(tau[ok])])
    out = {"step_size": float(H[i])}
    if m_.kinetic:
        out["gamma"] = float(G[i])
    if "alpha" in m_.uses:
        out["alpha"] = float(R[i] / (H[i] * L))
    out.update(tau=float(tau[i]), sd_bias=float(err[i]), rate=float(st["rate"][i].max()),
               eigenvalues=lam.tolist(), stiff=stiff, bias_tol=float(bias_tol), grid_points=int(H.size))
    return out
