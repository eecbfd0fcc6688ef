"""Tail averaging after the plateau (Polyak-Ruppert; F is convex in (m, A), so the average of the
iterates beats their mean F): the stopping rule's first verdict starts a running average at a
quarter of the step, run for AVERAGING_FACTOR times the updates it took to get there; `extend`
restarts it at half the step while F_hat still falls at its end, and the lowest of those averages
(same draws) is the answer."""
from __future__ import annotations

from .monitor import StoppingRule

AVERAGING_FACTOR = 4  # averaging runs 4x as many updates as it took to reach the plateau
AVERAGING_STEP_DECAY = 4.0  # the averaging phase runs at a quarter of the step: a smaller bias
EXTENSION_STEP_DECAY = 2.0  # each extension halves the step again
MAX_EXTENSIONS = 4  # averaging restarts while F_hat still falls at the end of the phase


class Averaging:
    """The averaging phase of a monitored run: `start` at the plateau, `extend` at the end of the
    queue, `finish` (the earlier averages and the best plain iterate compete with the last)."""

    def __init__(self, enabled: bool, extend: bool):
        self.enabled, self.extensible = bool(enabled), bool(extend)
        self.extended = 0
        self.earlier = []  # the averages before each extension

    def start(self, runner, loop, verdict: dict) -> bool:
        """Start averaging at the first plateau (True); False leaves the stop to the caller."""
        rec = loop.rec
        if not (self.enabled and rec.avg_start is None):
            return False
        runner.events.append({"event": "averaging", **verdict})
        rec.start_averaging()
        loop.rule = StoppingRule(runner.opts.tol, runner.opts.window, confident=True)
        runner.rescale(AVERAGING_STEP_DECAY)  # smaller steps: a smaller bias
        until = min(loop.num_steps, rec.steps[-1] * (1 + AVERAGING_FACTOR))
        loop.queue = [q for q in loop.queue if q[0] < until]
        return True

    def extend(self, runner, loop) -> bool:
        """The queue ran out with F_hat still falling (by more than 1 s.e.): restart the average
        here at half the step for as many updates again (True), at most MAX_EXTENSIONS times."""
        rec, rule = loop.rec, loop.rule
        if not (self.extensible and rec.avg_start is not None and rule is not None
                and rule.falling(z=1.0) and rec.steps[-1] < loop.num_steps
                and self.extended < MAX_EXTENSIONS):
            return False
        self.extended += 1
        event = {"event": "averaging extended", "step": rec.steps[-1],
                 "decrease": rule.decrease, "stderr": rule.stderr}
        self.earlier.append(rec.final)
        rec.start_averaging()
        loop.rule = StoppingRule(runner.opts.tol, runner.opts.window, confident=True)
        runner.rescale(EXTENSION_STEP_DECAY)
        runner.events.append({**event, "step_size": runner.rule.eta})
        until = min(loop.num_steps, rec.steps[-1] * 2)
        loop.queue = loop.checkpoints(rec.steps[-1], until)
        return True

    def finish(self, runner, loop):
        """Report an earlier average, or the best iterate before averaging, where it beats the last
        average (the recorder's `keep_lowest`, `keep_best`); each as an event."""
        rec = loop.rec
        if self.earlier and loop.diverged is None:
            kept = rec.keep_lowest(self.earlier)
            if kept:
                runner.events.append(kept)
        if rec.avg_start is not None:
            kept = rec.keep_best()
            if kept:
                runner.events.append(kept)


__all__ = ["Averaging", "AVERAGING_FACTOR", "AVERAGING_STEP_DECAY", "MAX_EXTENSIONS"]
