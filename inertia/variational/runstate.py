"""The run state the policies between blocks act on (`policy(state) -> (state, events)`, as optax's
`apply_if_finite`); the runner applies the change.
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Optional


class RunState(NamedTuple):
    """What the policies read (step, budget, factors) and change (queue, rule, step, requests)."""

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
    """Blocks (start, 1, length) of one checkpoint each, at most QUEUE_WINDOW, then a mark for the next."""
    stop = min(until, start + QUEUE_WINDOW * every)
    blocks = tuple((i, 1, min(every, until - i)) for i in range(start, stop, every))
    return blocks + (((stop, 0, until),) if stop < until else ())


def fixed_every(num_steps: int, checkpoint_every=None) -> int:
    """The checkpoint spacing asked for, else ~100 checkpoints over the run."""
    return int(checkpoint_every or max(1, num_steps // 100))


def fixed_blocks(num_steps: int, every: int) -> list:
    """Blocks (start, chunks, chunk length) covering a run without stopping rule, at most ~MAX_BLOCKS."""
    nfull, rem = divmod(num_steps, every)
    per = max(1, -(-nfull // MAX_BLOCKS))
    out = [(i * every, min(per, nfull - i), every) for i in range(0, nfull, per)]
    if rem:
        out.append((nfull * every, 1, rem))
    return out


__all__ = ["RunState", "checkpoint_blocks", "fixed_blocks", "fixed_every", "QUEUE_WINDOW",
           "MAX_BLOCKS"]
