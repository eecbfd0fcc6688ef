"""Value/gradient consistency of a target at a few warm-up points (docs/guide.md), before the chains run."""
from __future__ import annotations

import numpy as np
from ..targets.base import jitted, TargetError

NUM_POINTS = 4  # warm-up points checked (the first chains' positions)
STEP = 1e-3  # h relative to 1 + |x|_inf
REL_TOL = 0.05  # relative disagreement flagged
MIN_BAD = 2  # points that must disagree (one point within h of a kink is not enough)


def directional_errors(target, points, seed: int = 0) -> list:
    """(grad V(x) . u, Richardson difference (4 D(h/2) - D(h)) / 3, tolerance) along a random unit u."""
    vg = jitted(target, "value_and_grad")
    rng = np.random.default_rng(seed)
    out = []
    for x in np.asarray(points, dtype=np.float64):
        u = rng.normal(size=x.shape)
        u /= np.linalg.norm(u)
        h = STEP * (1.0 + float(np.max(np.abs(x))))
        v0, g0 = vg(x)
        vals = [float(vg(x + t * h * u)[0]) for t in (1.0, -1.0, 0.5, -0.5)]
        g0 = np.asarray(g0, dtype=np.float64)
        if not (np.isfinite(float(v0)) and np.all(np.isfinite(vals))
                and np.all(np.isfinite(g0))):
            continue
        d1 = (vals[0] - vals[1]) / (2 * h)
        d2 = (vals[2] - vals[3]) / h
        fd, dd = (4 * d2 - d1) / 3, float(g0 @ u)
        eps = float(np.finfo(np.result_type(np.asarray(v0).dtype, np.float32)).eps)
        if all(float(np.float32(v)) == v for v in (float(v0), *vals)):  # float32 inside, cast
            eps = float(np.finfo(np.float32).eps)
        roundoff = 20 * eps * max(abs(float(v0)), *map(abs, vals)) / h
        out.append((dd, fd, REL_TOL * max(abs(dd), abs(fd)) + roundoff))
    return out


EVALS_PER_POINT = 5  # (V, grad V) at x and V at x +- h u, x +- h u / 2


def check_gradient(target, positions, seed: int = 0) -> int:
    """TargetError when grad V disagrees with V at MIN_BAD or more of NUM_POINTS; else evaluations made."""
    pts = np.asarray(positions, dtype=np.float64).reshape(-1, target.dim)[:NUM_POINTS]
    rows = directional_errors(target, pts, seed)
    bad = [(dd, fd) for dd, fd, tol in rows if abs(dd - fd) > tol]
    if not bad or len(bad) < min(MIN_BAD, len(rows)):
        return EVALS_PER_POINT * len(pts)
    dd, fd = bad[0]
    raise TargetError(
        f"the model's gradient disagrees with its log density at {len(bad)} of {len(rows)} "
        f"warm-up points checked (along a random direction: the gradient gives {-dd:.6g}, a "
        f"finite difference of the log density {-fd:.6g}); sampling with it would not converge. "
        "Common causes: an index out of range (JAX clamps it when evaluating and drops it in the "
        "gradient: check that labels used as indices run from 0 to size - 1), "
        "jax.lax.stop_gradient, or a custom_jvp / custom_vjp rule that does not match its "
        "function")


__all__ = ["directional_errors", "check_gradient"]
