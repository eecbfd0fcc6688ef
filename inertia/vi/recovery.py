"""Divergence recovery: a block whose iterate became non-finite or exploded (or whose q put mass
where V is not finite) restarts from the last finite checkpoint at a quarter of the step, with new
keys, at most `max_recoveries` times; past that, or when a smaller step cannot help (V non-finite
at the start's own draws), the run stops and returns the last finite state."""
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
    """The Failure of a block whose chunk `good` failed (`ok`: (seeds, chunks, steps) finite flags;
    `bad_draws`: the recorder's index of a checkpoint whose q-draws met a non-finite V, or None)."""
    reason = ("potential V non-finite on draws of q (the log density is NaN or -inf where q puts "
              "mass)" if bad_draws is not None else
              "non-finite or exploding iterate (gradient or step too large)")
    hopeless = bad_draws is not None and bool(np.any(rec.est_bad[0] > 0))
    chunk = min(good, ok.shape[1] - 1)
    bad_seeds = [seeds[i] for i in np.where(~ok[:, chunk].all(axis=1))[0]]
    return Failure(step, reason, hopeless, bad_seeds)


class Recovery:
    """`recover(runner, loop, failure)`: restart at a smaller step (True), or give up (False)."""

    def __init__(self, enabled: bool, max_recoveries: int):
        self.enabled, self.max_recoveries = bool(enabled), int(max_recoveries)
        self.attempt = 0

    def __call__(self, runner, loop, fail: Failure) -> bool:
        if not (self.enabled and self.attempt < self.max_recoveries and not fail.hopeless):
            return False
        self.attempt += 1
        runner.rescale(RECOVERY_STEP_DECAY)
        rec = loop.rec
        runner.events.append({"event": "recovery", "step": fail.step,
                              "restart_from": rec.steps[-1], "reason": fail.reason,
                              "step_size": runner.rule.eta})
        _warnings.warn(f"{runner.m_spec.name}: {fail.reason} at step {fail.step}; restarting from "
                      f"step {rec.steps[-1]} with step size {runner.rule.eta:.3g}",
                      RuntimeWarning)
        loop.restart(runner.kernel)
        loop.rekey(self.attempt)
        loop.queue = loop.checkpoints(rec.steps[-1], loop.num_steps)
        return True


def diverged(runner, loop, fail: Failure) -> dict:
    """The run's `diverged` record (with a warning): it stops at its last finite state."""
    last = loop.rec.steps[-1]
    _warnings.warn(f"{runner.m_spec.name}: divergence at step {fail.step} ({fail.reason}); stopping "
                  f"and returning the last finite state (step {last})", RuntimeWarning)
    return {"step": fail.step, "last_finite_step": last, "seeds": fail.seeds or loop.seeds,
            "reason": fail.reason}


__all__ = ["Failure", "failure", "Recovery", "diverged", "RECOVERY_STEP_DECAY"]
