"""Fewer cyclic-garbage collections while an entry point traces and compiles.

Tracing and lowering a run's programs allocate millions of short-lived Python objects; at CPython's
default thresholds (700, 10, 10) that triggers hundreds of young and several full collections,
each full one walking every object JAX, NumPyro and ArviZ have loaded (~0.5 s of a small model's
`sample`, ~0.3 s of its `fit`, on one core). The entry points (`vi.fit`, `mcmc.sample`,
`targets.from_numpyro`) raise the young-generation threshold for their duration and restore the
caller's thresholds on exit; garbage is still collected, in fewer, larger batches. `inertia` CLI
commands also skip the collections of interpreter teardown (`skip_teardown_collections`).
"""
from __future__ import annotations

import contextlib
import gc

YOUNG_THRESHOLD = 50_000  # allocations between young collections inside an entry point
_DEPTH = [0]


@contextlib.contextmanager
def fewer_collections():
    """Raise gen-0's collection threshold to YOUNG_THRESHOLD for the block (outermost call only);
    `@fewer_collections()` decorates a function the same way."""
    if _DEPTH[0]:
        yield
        return
    old = gc.get_threshold()
    raised = (max(old[0], YOUNG_THRESHOLD),) + tuple(old[1:])
    gc.set_threshold(*raised)
    _DEPTH[0] += 1
    try:
        yield
    finally:
        _DEPTH[0] -= 1
        if gc.get_threshold() == raised:  # unless the caller changed them meanwhile
            gc.set_threshold(*old)


def skip_teardown_collections() -> None:
    """Freeze every live object out of the collector: the interpreter's exit then skips its full
    collections over them (0.4-0.9 s with JAX and ArviZ loaded). For a process about to exit only:
    cyclic garbage made after this call is never collected (Python does not promise finalizers at
    exit either)."""
    gc.freeze()
