"""Fewer cyclic-garbage collections while an entry point traces and compiles.

Tracing and lowering a run's programs allocate millions of short-lived Python objects; at CPython's
default thresholds (700, 10, 10) that triggers hundreds of young and several full collections,
each full one walking every object JAX, NumPyro and ArviZ have loaded (~0.5 s of a small model's
`sample`, ~0.3 s of its `fit`, on one core). The entry points (`vi.fit`, `mcmc.sample`,
`sgmcmc.calibrate`, `targets.from_numpyro`) raise the young-generation threshold for their duration
and restore the caller's thresholds when the last of them running in the process returns (the
thresholds are process-wide: a count under a lock); garbage is still collected, in fewer, larger
batches. The `inertia` command (its own process) also skips the collections of interpreter
teardown (`skip_teardown_collections`).
"""
from __future__ import annotations

import contextlib
import gc

from ._held import Held

YOUNG_THRESHOLD = 50_000  # allocations between young collections inside an entry point


def _raise():
    """Gen-0's threshold raised to YOUNG_THRESHOLD; (the caller's thresholds, the raised ones)."""
    old = gc.get_threshold()
    raised = (max(old[0], YOUNG_THRESHOLD),) + tuple(old[1:])
    gc.set_threshold(*raised)
    return old, raised


def _restore(token):
    """The caller's thresholds back."""
    old, raised = token
    if gc.get_threshold() == raised:  # unless the caller changed them meanwhile
        gc.set_threshold(*old)


_HELD = Held(_raise, _restore)  # entry points running in any thread hold the raised threshold


@contextlib.contextmanager
def fewer_collections():
    """Raise gen-0's collection threshold to YOUNG_THRESHOLD for the block (the first block to
    start raises it, the last to finish restores the caller's thresholds unless they were changed
    meanwhile); `@fewer_collections()` decorates a function the same way."""
    with _HELD():
        yield


def skip_teardown_collections() -> None:
    """Freeze every live object out of the collector: the interpreter's exit then skips its full
    collections over them (0.4-0.9 s with JAX and ArviZ loaded). For the `inertia` command's own
    process, about to exit, only: cyclic garbage made after this call is never collected."""
    gc.freeze()
