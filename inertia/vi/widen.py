"""Watches on estimated curvature bounds during a run: the feasible set they imply is widened when
the iterate sits on its boundary, and the bounds are re-measured at draws of the current q (a MAP's
curvature can be far from the typical set's: funnels). Each returns True when it rebuilt the kernel
and restarted the state from the last checkpoint."""
from __future__ import annotations


import numpy as np

from .. import _warnings
from .auto import boundary

WIDEN_AFTER = 3  # checkpoints in a row on one side of the feasible set before it is widened
WIDEN_FACTOR = 4.0  # alpha / 4 (upper side) or beta x 4 (lower side)
REESTIMATE_EVERY = 25  # checkpoints between curvature re-estimates at draws of q (auto mode)
REESTIMATE_FROM = 20  # not before this many checkpoints
REBUILD_RATIO = 3.0  # rebuild when the re-measured beta moved by more than this factor


class Widening:
    """Widen the feasible set when the iterate sat on its lower (upper) side WIDEN_AFTER
    checkpoints in a row (methods with a feasible set, `widen=True`)."""

    def __init__(self, enabled: bool):
        self.enabled = bool(enabled)
        self.low = self.high = 0  # consecutive checkpoints on each side

    def __call__(self, runner, loop) -> bool:
        feasible = runner.m_spec.feasible
        if not (self.enabled and feasible):
            return False
        sides = [boundary(feasible, A, *runner.set_bounds) for A in loop.rec.last_A]
        low, high = any(x[0] for x in sides), any(x[1] for x in sides)
        self.low, self.high = (self.low + 1) * low, (self.high + 1) * high
        if not (self.low >= WIDEN_AFTER or self.high >= WIDEN_AFTER):
            return False
        upper = self.high >= WIDEN_AFTER
        a, b = runner.set_bounds
        runner.set_bounds = (a / WIDEN_FACTOR if upper else a,
                             b * WIDEN_FACTOR if self.low >= WIDEN_AFTER else b)
        side = "upper" if upper else "lower"
        runner.events.append({"event": "widened", "step": loop.rec.steps[-1], "side": side,
                              "set_bounds": list(runner.set_bounds)})
        _warnings.warn(f"{runner.m_spec.name}: the iterate sits on the {side} boundary of the "
                      "feasible set built from the estimated bounds; widening it",
                      RuntimeWarning)
        self.low = self.high = 0
        runner.build()
        loop.restart(runner.kernel)
        return True


class Reestimation:
    """Every REESTIMATE_EVERY checkpoints before averaging, re-measure estimated bounds at draws
    of the current q; rebuild with the new step when beta moved by more than REBUILD_RATIO."""

    def __init__(self, curvature):
        self.curvature = curvature  # the CurvatureEstimate of estimated bounds; None: given bounds

    def __call__(self, runner, loop) -> bool:
        n = len(loop.rec.steps)
        if not (self.curvature is not None and loop.rec.avg_start is None
                and n >= REESTIMATE_FROM and n % REESTIMATE_EVERY == 0):
            return False
        if not reestimate(runner, loop.rec):
            return False
        loop.restart(runner.kernel)
        return True


def reestimate(runner, rec) -> bool:
    """Bounds under the last checkpoint's q; True when they moved enough to rebuild the kernel
    (the feasible set becomes the union of the old and new bounds)."""
    from ..targets.curvature import bounds_under

    m, A = rec.final[0][0], rec.final[1][0]
    cov = rec.host_cov(np.asarray(m)[None], np.asarray(A)[None])[0]
    try:
        L = np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        return False
    new = bounds_under(runner.target, m, L, seed=len(rec.steps))
    if new is None:
        return False
    a, b, hvps = new
    rec.hvp_offset += hvps
    if 1.0 / REBUILD_RATIO < b / runner.target.beta < REBUILD_RATIO:
        return False
    a = min(a, b)
    runner.events.append({"event": "bounds re-estimated", "step": rec.steps[-1],
                          "alpha": a, "beta": b,
                          "previous": [runner.target.alpha, runner.target.beta]})
    runner.target = runner.target.replace(alpha=float(a), beta=float(b))
    runner.set_bounds = (min(runner.set_bounds[0], a), max(runner.set_bounds[1], b))
    runner.build()
    return True


__all__ = ["Widening", "Reestimation", "reestimate", "REESTIMATE_EVERY"]
