"""Tail averaging after the plateau (Polyak-Ruppert) and its extension, as policies of the run state."""
from __future__ import annotations

from .monitor import StoppingRule

AVERAGING_FACTOR = 4  # averaging runs 4x as many updates as it took to reach the plateau
AVERAGING_STEP_DECAY = 4.0  # the averaging phase runs at a quarter of the step: a smaller bias
EXTENSION_STEP_DECAY = 2.0  # each extension halves the step again
MAX_EXTENSIONS = 4  # averaging restarts while F_hat still falls at the end of the phase


def averaging(enabled: bool, tol, window):
    """Policy: at the first plateau start the running average at a quarter of the step (an event)."""
    def start(s, verdict: dict):
        if not (enabled and s.averaging_from is None):
            return s, []
        until = min(s.num_steps, s.step * (1 + AVERAGING_FACTOR))
        return s._replace(start_average=True, averaging_from=s.step,
                          rule=StoppingRule(tol, window, confident=True),
                          eta_scale=s.eta_scale / AVERAGING_STEP_DECAY,  # a smaller bias
                          queue=tuple(q if q[1] else (q[0], 0, min(q[2], until))  # a mark
                                      for q in s.queue if q[0] < until)), \
            [{"event": "averaging", **verdict}]

    return start


def extension(enabled: bool, tol, window):
    """Policy: with F_hat still falling, restart the average at half the step (MAX_EXTENSIONS times)."""
    def extend(s):
        rule = s.rule
        if not (enabled and s.averaging_from is not None and rule is not None
                and rule.falling(z=1.0) and s.step < s.num_steps
                and s.extensions < MAX_EXTENSIONS):
            return s, []
        new = s._replace(extensions=s.extensions + 1, earlier=s.earlier + (s.final,),
                         start_average=True, averaging_from=s.step,
                         rule=StoppingRule(tol, window, confident=True),
                         eta_scale=s.eta_scale / EXTENSION_STEP_DECAY,
                         queue=s.checkpoint_blocks(s.step, min(s.num_steps, s.step * 2)))
        return new, [{"event": "averaging extended", "step": s.step, "decrease": rule.decrease,
                      "stderr": rule.stderr, "step_size": new.step_size}]

    return extend


__all__ = ["averaging", "extension", "AVERAGING_FACTOR", "AVERAGING_STEP_DECAY",
           "MAX_EXTENSIONS"]
