"""The verdict every `fit` ends with: an `inertia.verdict.Verdict` whose numbers hold the stop.

Runs the stopping rule did not end are judged here without changing the updates: a falling objective
trace, a divergence, an improper target or (paper mode) an iterate on the feasible set's boundary.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from .. import _warnings
from ..verdict import Verdict
from .auto import boundary
from .averaging import AVERAGING_FACTOR
from .monitor import paired_difference

PLATEAU_TOL = 1e-4  # nats over the last window: the automatic stopping rule's default


def stopped(reason: str, step: int, **numbers) -> Verdict:
    """A converged fit's verdict: `reason` (e.g. "objective converged") what ended the run."""
    return Verdict(True, (), {"stop": reason, "step": int(step), **numbers})


def not_converged(reason: str, step: int, **numbers) -> Verdict:
    """A verdict with converged False and `reason` its problem (and its stop)."""
    reason = reason.removeprefix("NOT CONVERGED: ")
    return Verdict(False, (reason,), {"stop": reason, "step": int(step), **numbers})


def diverged_verdict(diverged: dict, step: int) -> Verdict:
    """The verdict of a run that diverged (the result is its last finite state)."""
    return not_converged(f"diverged at update {diverged['step']} ({diverged['reason']}); the "
                         "result is the last finite state", step)


def trace_verdict(rec, window: int, tol: float = PLATEAU_TOL) -> Verdict:
    """Whether the objective plateaued over the last `window` checkpoints of a run without stopping rule."""
    step = rec.steps[-1]
    n = len(rec.steps)
    if n < 3:
        return not_converged(f"{n - 1} checkpoint(s) after the start are too few to see the "
                             "objective plateau", step)
    window = min(window, (n - 1) // 2)  # at most the second half of a short run
    if rec.est_draws:
        old, new = rec.seed_mean_draws(-1 - window), rec.seed_mean_draws(-1)
        if not (np.all(np.isfinite(old)) and np.all(np.isfinite(new))):
            return not_converged("the objective estimate is not finite at the end", step)
        dec, se = paired_difference(old, new)
    elif rec.obj_rows:
        f = np.mean(np.asarray(rec.obj_rows, dtype=float), axis=1)
        if not np.all(np.isfinite(f[-1 - window:])):
            return not_converged("the objective is not finite at the end", step)
        dec = float(f[-1 - window] - f[-1])
        se = float(np.std(np.diff(f[-1 - window:]), ddof=1)) if window > 1 else 0.0
        se = se if np.isfinite(se) else 0.0
    else:
        return not_converged("no objective to judge convergence by (evaluate=False and no "
                             "monitor)", step)
    out = {"decrease": dec, "stderr": se, "window_checkpoints": window}
    if dec > max(tol, 2.0 * se):
        return not_converged(f"the objective still fell by {dec:.3g} nats over the last "
                             f"{window} checkpoints (num_steps too small)", step, **out)
    return stopped("objective plateaued by the end of num_steps", step, **out)


def boundary_verdict(feasible: Optional[str], last_A, set_bounds, step: int,
                     method: str) -> Optional[Verdict]:
    """Paper mode: a warning and verdict where the last iterate is on the feasible set's boundary; or None."""
    if feasible is None or last_A is None:
        return None
    sides = [boundary(feasible, np.asarray(A), *set_bounds) for A in last_A]
    low, high = any(s[0] for s in sides), any(s[1] for s in sides)
    if not (low or high):
        return None
    which = ("alpha too large (the upper side, a radius ~ 1/sqrt(alpha), binds)" if high else
             "beta too small (the lower side, ~ 1/sqrt(beta), binds)")
    reason = (f"the iterate ends on the boundary of the feasible set the given bounds imply: the "
              f"bounds look wrong ({which}); the result is that boundary's best point, not the "
              "optimum")
    _warnings.warn(f"{method}: {reason}", RuntimeWarning)
    return not_converged(reason, step, bounds_look_wrong="upper" if high else "lower")


def improper_verdict(probe: dict, step: int) -> Verdict:
    """A target whose potential falls without bound along a ray (an improper density)."""
    rise = probe['potential_at_mode'] - probe['potential_far']
    how = (f"grows without bound along a direction from the mode (log p rises by {rise:.3g} nats "
           if probe.get("falling", True) else "does not decay along a direction from the mode "
           f"(log p changes by {rise:.3g} nats ")
    return not_converged(f"the log density {how}at {probe['distance']:.3g} sds; the same within "
                         f"{probe.get('tube_sds', 0):g} sds of that ray): an improper target "
                         "(infinite mass) has no Gaussian optimum", step, improper=probe)


def budget_verdict(rec, rule, num_steps: int) -> Verdict:
    """Why a monitored run ended without its stopping rule, and whether F_hat was still falling."""
    falling = rule.falling()
    out = {"decrease": rule.decrease, "stderr": rule.stderr}
    if rec.avg_start is None:
        return not_converged("num_steps reached with F_hat still falling" if falling else
                             "num_steps reached before the objective was seen to plateau",
                             rec.steps[-1], **out)
    out["averaging_from"] = rec.avg_start
    cut = rec.steps[-1] >= num_steps and num_steps < rec.avg_start * (1 + AVERAGING_FACTOR)
    if falling or cut:
        return not_converged("num_steps ended the averaging phase early"
                             + (" with F_hat still falling" if falling else ""), rec.steps[-1], **out)
    return stopped("averaging finished", rec.steps[-1], **out)


def with_quality(verdict: Verdict, quality: dict) -> Verdict:
    """The verdict with the approximation's quality (word, k-hat, PSIS ESS); `converged` kept."""
    return dataclasses.replace(verdict.with_numbers(pareto_khat=quality["khat"],
                                                    psis_ess=quality["ess"]),
                               quality=quality["verdict"])


__all__ = ["stopped", "not_converged", "diverged_verdict", "trace_verdict", "boundary_verdict",
           "improper_verdict", "budget_verdict", "with_quality", "PLATEAU_TOL"]
