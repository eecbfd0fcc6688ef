"""The run state the policies between blocks act on (`policy(state) -> (state, events)`, in the
manner of optax's `apply_if_finite` and `reduce_on_plateau`): the policies read it and return it
changed, with their events; the runner applies the change (rebuilds the kernel, restarts from the
last checkpoint, starts the running average, runs the new queue)."""
from __future__ import annotations

from typing import Callable, NamedTuple, Optional


class RunState(NamedTuple):
    """What the policies read and change, and what they ask the runner to do.

    Read: the last checkpoint's update `step`, the number of `checkpoints`, the budget `num_steps`,
    the checkpoint spacing `every`, the last checkpoint's factors `last_A` and its reported
    (means, factors) `final`, and `covariance` ((means, factors) stacked over seeds -> covariances).
    Changed: the blocks still to run `queue`, the stopping `rule`, the update the running average
    started at `averaging_from`, the `target` (its bounds), the feasible set `set_bounds`, the step's
    multiplier `eta_scale` (the step is `base_step` x `eta_scale`), the policies' own counters, and
    the requests `restart` (from the last checkpoint, momentum reset), `start_average` (at the last
    checkpoint) and `hvps` (Hessian-vector products spent outside the updates)."""

    step: int
    checkpoints: int
    num_steps: int
    every: int
    last_A: object
    final: object
    covariance: Callable
    queue: tuple
    rule: Optional[object]
    averaging_from: Optional[int]
    target: object
    set_bounds: tuple
    eta_scale: float
    base_step: float
    widen_low: int = 0  # checkpoints in a row on the feasible set's lower side
    widen_high: int = 0  # ... and on its upper side
    recoveries: int = 0
    extensions: int = 0  # averaging restarts
    earlier: tuple = ()  # the (means, factors) reported before each averaging restart
    restart: bool = False
    start_average: bool = False
    hvps: int = 0

    @property
    def step_size(self) -> float:
        """The step of the kernel this state describes."""
        return self.base_step * self.eta_scale

    def checkpoint_blocks(self, start: int, until: int) -> tuple:
        """Blocks of one checkpoint each from update `start` to `until` (`checkpoint_blocks`)."""
        return checkpoint_blocks(start, until, self.every)


MAX_BLOCKS = 50  # host round trips per run; checkpoints inside a block share one compiled scan
QUEUE_WINDOW = 1024  # checkpoint blocks listed at a time; a mark continues the queue


def checkpoint_blocks(start: int, until: int, every: int) -> tuple:
    """Blocks (start, 1, length) of one checkpoint each from update `start` to `until`, at most
    QUEUE_WINDOW of them, then (when more remain) the mark (next start, 0, until) from which the
    runner lists the next window: a budget of 10^12 updates under the stopping rule is not listed
    up front."""
    stop = min(until, start + QUEUE_WINDOW * every)
    blocks = tuple((i, 1, min(every, until - i)) for i in range(start, stop, every))
    return blocks + (((stop, 0, until),) if stop < until else ())


def fixed_every(num_steps: int, checkpoint_every=None) -> int:
    """The checkpoint spacing asked for, else ~100 checkpoints over the run."""
    return int(checkpoint_every or max(1, num_steps // 100))


def fixed_blocks(num_steps: int, every: int) -> list:
    """Blocks (start, chunks, chunk length) covering a run without stopping rule, checkpoints
    every `every` updates, in at most about MAX_BLOCKS blocks."""
    nfull, rem = divmod(num_steps, every)
    per = max(1, -(-nfull // MAX_BLOCKS))
    out = [(i * every, min(per, nfull - i), every) for i in range(0, nfull, per)]
    if rem:
        out.append((nfull * every, 1, rem))
    return out


__all__ = ["RunState", "checkpoint_blocks", "fixed_blocks", "fixed_every", "QUEUE_WINDOW",
           "MAX_BLOCKS"]
