"""Tail averaging after the plateau (Polyak-Ruppert; F is convex in (m, A), so the average of the
iterates beats their mean F), as policies of the run state (`inertia.variational.runstate`): the stopping
rule's first verdict starts a running average at a quarter of the step, run for AVERAGING_FACTOR
times the updates it took to get there; the extension restarts it at half the step while F_hat
still falls at its end, and the lowest of those averages (same draws) is the answer (the runner's
`finish`)."""
from __future__ import annotations

from .monitor import StoppingRule

AVERAGING_FACTOR = 4  # averaging runs 4x as many updates as it took to reach the plateau
AVERAGING_STEP_DECAY = 4.0  # the averaging phase runs at a quarter of the step: a smaller bias
EXTENSION_STEP_DECAY = 2.0  # each extension halves the step again
MAX_EXTENSIONS = 4  # averaging restarts while F_hat still falls at the end of the phase


def averaging(enabled: bool, tol, window):
    """Policy `start(state, verdict)`: at the first plateau (the stopping rule's `verdict`) start
    the running average at a quarter of the step (an event); no event leaves the stop to the
    caller."""
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
    """Policy: the queue ran out with F_hat still falling (by more than 1 s.e.): restart the
    average here at half the step for as many updates again (an event), at most MAX_EXTENSIONS
    times."""
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
