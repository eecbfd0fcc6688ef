"""Watches on estimated curvature bounds during a run, as policies of the run state: widen the feasible set
at its boundary, re-measure the bounds at draws of the current q (docs/vi.md).
"""
from __future__ import annotations

import numpy as np

from .auto import boundary
from ..targets import curvature as _curvature

WIDEN_AFTER = 3  # checkpoints in a row on one side of the feasible set before it is widened
WIDEN_FACTOR = 4.0  # alpha / 4 (upper side) or beta x 4 (lower side)
REESTIMATE_EVERY = 25  # checkpoints between curvature re-estimates at draws of q (auto mode)
REESTIMATE_FROM = 20  # not before this many checkpoints
REBUILD_RATIO = 3.0  # rebuild when the re-measured beta moved by more than this factor


def unchanged(state):
    """The policy of a switched-off watch."""
    return state, []


def widening(enabled: bool, feasible, name: str):
    """Policy: widen the feasible set after WIDEN_AFTER checkpoints in a row on one side."""
    if not (enabled and feasible):
        return unchanged

    def widen(s):
        sides = [boundary(feasible, A, *s.set_bounds) for A in s.last_A]
        low, high = any(x[0] for x in sides), any(x[1] for x in sides)
        n_low, n_high = (s.widen_low + 1) * low, (s.widen_high + 1) * high
        if not (n_low >= WIDEN_AFTER or n_high >= WIDEN_AFTER):
            return s._replace(widen_low=n_low, widen_high=n_high), []
        upper = n_high >= WIDEN_AFTER
        a, b = s.set_bounds
        bounds = (a / WIDEN_FACTOR if upper else a, b * WIDEN_FACTOR if n_low >= WIDEN_AFTER else b)
        side = "upper" if upper else "lower"
        event = {"event": "widened", "step": s.step, "side": side, "set_bounds": list(bounds),
                 "warning": f"{name}: the iterate sits on the {side} boundary of the feasible set "
                            "built from the estimated bounds; widening it"}
        return s._replace(set_bounds=bounds, widen_low=0, widen_high=0, restart=True), [event]

    return widen


def reestimation(curvature):
    """Policy: every REESTIMATE_EVERY checkpoints re-measure estimated bounds at draws of q."""
    if curvature is None:
        return unchanged

    def reestimate_bounds(s):
        n = s.checkpoints
        if not (s.averaging_from is None and n >= REESTIMATE_FROM and n % REESTIMATE_EVERY == 0):
            return s, []
        return reestimate(s)

    return reestimate_bounds


def reestimate(s):
    """Bounds under the last checkpoint's q: the new state, a restart if they moved enough, an event."""
    m, A = s.final[0][0], s.final[1][0]
    cov = s.covariance(np.asarray(m)[None], np.asarray(A)[None])[0]
    try:
        L = np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        return s, []
    new = _curvature.bounds_under(s.target, m, L, seed=s.checkpoints)
    if new is None:
        return s, []
    a, b, hvps = new
    s = s._replace(hvps=s.hvps + hvps)
    if 1.0 / REBUILD_RATIO < b / s.target.beta < REBUILD_RATIO:
        return s, []
    a = min(a, b)
    event = {"event": "bounds re-estimated", "step": s.step, "alpha": a, "beta": b,
             "previous": [s.target.alpha, s.target.beta]}
    return s._replace(target=s.target.replace(alpha=float(a), beta=float(b)),
                      set_bounds=(min(s.set_bounds[0], a), max(s.set_bounds[1], b)),
                      restart=True), [event]


__all__ = ["widening", "reestimation", "reestimate", "REESTIMATE_EVERY"]
