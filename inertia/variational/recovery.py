"""Divergence recovery: restart a failed block from the last finite checkpoint at a quarter of the step,
with new keys, at most `max_recoveries` times; past that the run stops at its last finite state.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import _warnings

RECOVERY_STEP_DECAY = 4.0  # each recovery restarts at a quarter of the step


class Failure(NamedTuple):
    """Where and why a block failed."""

    step: int  # the first update that failed
    reason: str
    hopeless: bool  # V non-finite on the start's draws: a smaller step cannot help
    seeds: list  # the seeds that failed


def failure(rec, step: int, bad_draws, ok: np.ndarray, good: int, seeds) -> Failure:
    """The Failure of a block whose chunk `good` failed (finite flags `ok`, `bad_draws` or None)."""
    reason = ("potential V non-finite on draws of q (the log density is NaN or -inf where q puts "
              "mass)" if bad_draws is not None else
              "non-finite or exploding iterate (gradient or step too large)")
    hopeless = bad_draws is not None and bool(np.any(rec.est_bad[0] > 0))
    chunk = min(good, ok.shape[1] - 1)
    bad_seeds = [seeds[i] for i in np.where(~ok[:, chunk].all(axis=1))[0]]
    return Failure(step, reason, hopeless, bad_seeds)


def recovery(enabled: bool, max_recoveries: int, name: str):
    """Policy: restart from the last checkpoint at a quarter of the step with new keys, or give up."""
    def recover(s, fail: Failure):
        if not (enabled and s.recoveries < int(max_recoveries) and not fail.hopeless):
            return s, []
        new = s._replace(recoveries=s.recoveries + 1, restart=True,
                         eta_scale=s.eta_scale / RECOVERY_STEP_DECAY,
                         queue=s.checkpoint_blocks(s.step, s.num_steps))
        return new, [{"event": "recovery", "step": fail.step, "restart_from": s.step,
                      "reason": fail.reason, "step_size": new.step_size,
                      "warning": f"{name}: {fail.reason} at step {fail.step}; restarting from "
                                 f"step {s.step} with step size {new.step_size:.3g}"}]

    return recover


def diverged(name: str, last: int, seeds, fail: Failure) -> dict:
    """The run's `diverged` record (with a warning): it stops at its last finite state."""
    _warnings.warn(f"{name}: divergence at step {fail.step} ({fail.reason}); stopping "
                   f"and returning the last finite state (step {last})", RuntimeWarning)
    return {"step": fail.step, "last_finite_step": last, "seeds": fail.seeds or seeds,
            "reason": fail.reason}


__all__ = ["Failure", "failure", "recovery", "diverged", "RECOVERY_STEP_DECAY"]
