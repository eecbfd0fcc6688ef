"""The verdict every `fit` ends with: `stopped = {"converged": bool, "reason": str, ...}`.

Runs that the stopping rule did not end (paper mode, a divergence) get one here without any change
to the updates: the objective trace over the last `window` checkpoints (exact F where the target
has it, else the common-random-number F_hat) still falling by more than max(tol, 2 s.e.) means not
converged; so does a divergence, an improper target (`targets.mode.probe_unbounded`) and, in paper
mode, an iterate left on the boundary of the feasible set the given bounds imply. A monitored run
that ran out of updates gets `budget_verdict`.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .. import _warnings
from ..verdict import Verdict
from .auto import boundary

PLATEAU_TOL = 1e-4  # nats over the last window: the automatic stopping rule's default


def not_converged(reason: str, step: int, **extra) -> dict:
    """A verdict with converged False; `reason` starts with NOT CONVERGED."""
    text = reason if reason.startswith("NOT CONVERGED") else f"NOT CONVERGED: {reason}"
    return {"reason": text, "converged": False, "step": int(step), **extra}


def diverged_verdict(diverged: dict, step: int) -> dict:
    """The verdict of a run that diverged (the result is its last finite state)."""
    return not_converged(f"diverged at update {diverged['step']} ({diverged['reason']}); the "
                         "result is the last finite state", step)


def trace_verdict(rec, window: int, tol: float = PLATEAU_TOL) -> dict:
    """Whether the objective plateaued over the last `window` checkpoints (at most the second half
    of the checkpoints) of a run without a stopping rule: paired F_hat differences (monitor) or the
    exact objective's trace."""
    step = rec.steps[-1]
    n = len(rec.steps)
    if n < 3:
        return not_converged(f"{n - 1} checkpoint(s) after the start are too few to see the "
                             "objective plateau", step)
    window = min(window, (n - 1) // 2)  # at most the second half of a short run
    if rec.est_draws:
        from .monitor import paired_difference

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
    return {"step": int(step), **out, "reason": "objective plateaued by the end of num_steps",
            "converged": True}


def boundary_verdict(feasible: Optional[str], last_A, set_bounds, step: int,
                     method: str) -> Optional[dict]:
    """Paper mode: the last iterate on the boundary of the feasible set built from the given bounds
    (the projection or prox still binds): the bounds look wrong. A warning and a verdict, or None."""
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


def improper_verdict(probe: dict, step: int) -> dict:
    """A target whose potential falls without bound along a ray (an improper density)."""
    rise = probe['potential_at_mode'] - probe['potential_far']
    how = (f"grows without bound along a direction from the mode (log p rises by {rise:.3g} nats "
           if probe.get("falling", True) else "does not decay along a direction from the mode "
           f"(log p changes by {rise:.3g} nats ")
    return not_converged(f"the log density {how}at {probe['distance']:.3g} sds; the same within "
                         f"{probe.get('tube_sds', 0):g} sds of that ray): an improper target "
                         "(infinite mass) has no Gaussian optimum", step, improper=probe)


def budget_verdict(rec, rule, num_steps: int) -> dict:
    """Why a monitored run ended without the stopping rule firing: the averaging phase ran its
    course, or the budget ended it; either way whether F_hat was still falling (unconverged)."""
    from .averaging import AVERAGING_FACTOR

    falling = rule.falling()
    out = {"step": rec.steps[-1], "decrease": rule.decrease, "stderr": rule.stderr,
           "converged": False}
    if rec.avg_start is not None:
        out["averaging_from"] = rec.avg_start
        cut = rec.steps[-1] >= num_steps and num_steps < rec.avg_start * (1 + AVERAGING_FACTOR)
        out["converged"] = not (falling or cut)
        out["reason"] = ("averaging finished" if not (falling or cut) else
                         "NOT CONVERGED: num_steps ended the averaging phase early"
                         + (" with F_hat still falling" if falling else ""))
    else:
        out["reason"] = ("NOT CONVERGED: num_steps reached with F_hat still falling" if falling else
                         "NOT CONVERGED: num_steps reached before the objective was seen to "
                         "plateau")
    return out


def with_quality(stopped: Optional[dict], quality: dict) -> dict:
    """The verdict with the approximation's quality (`vi.quality`): its numbers (Pareto k-hat, PSIS
    ESS) and, when q is unreliable (k-hat > 0.7), a problem; `converged` (the optimiser's) kept."""
    out = dict(stopped or {})
    out["quality"] = {k: quality[k] for k in ("verdict", "khat", "ess", "num_draws", "message")}
    out["numbers"] = {**(out.get("numbers") or {}), "pareto_khat": quality["khat"],
                      "psis_ess": quality["ess"]}
    if quality["verdict"] == "unreliable":
        out["problems"] = [*(out.get("problems") or []), quality["message"]]
    return out
def as_verdict(stopped: Optional[dict], diverged: Optional[dict] = None) -> Verdict:
    """The `inertia.verdict.Verdict` of a fit's stop record: its reason the one problem when it
    did not converge (or diverged), its other entries the numbers."""
    if not stopped:
        return Verdict(False, ("no verdict",))
    numbers = {k: v for k, v in stopped.items()
               if k not in ("reason", "converged", "numbers", "problems", "quality")}
    numbers.update(stopped.get("numbers") or {})
    if stopped.get("quality"):  # beside the optimiser's verdict (vi.quality), not a problem of it
        numbers["approximation_quality"] = stopped["quality"]["verdict"]
    if stopped.get("converged") and not diverged:
        return Verdict(True, (), numbers)
    reason = str(stopped.get("reason") or "diverged")
    return Verdict(False, (reason.removeprefix("NOT CONVERGED: "),), numbers)


def headline(stopped: Optional[dict]) -> Optional[str]:
    """The NOT CONVERGED line of the printed results, or None when the run converged."""
    v = as_verdict(stopped)
    return None if v.converged else v.line()


__all__ = ["as_verdict", "not_converged", "diverged_verdict", "trace_verdict", "boundary_verdict",
           "improper_verdict", "budget_verdict", "with_quality", "headline", "PLATEAU_TOL"]
