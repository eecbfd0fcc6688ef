"""Garbage-collection thresholds around the entry points (inertia._gc): raised inside, the caller's
restored after, nested calls and a caller's own change left alone."""
import gc

import numpy as np

from inertia import _gc
from inertia.targets import gaussian
from inertia.vi import fit


def test_threshold_raised_inside_and_restored_after():
    old = gc.get_threshold()
    try:
        gc.set_threshold(321, 7, 9)
        seen = []
        with _gc.fewer_collections():
            seen.append(gc.get_threshold())
            with _gc.fewer_collections():  # nested: the outer setting holds
                seen.append(gc.get_threshold())
        assert seen == [(_gc.YOUNG_THRESHOLD, 7, 9)] * 2
        assert gc.get_threshold() == (321, 7, 9)
        with _gc.fewer_collections():
            gc.set_threshold(1000, 1, 1)  # the caller's own change inside the block is kept
        assert gc.get_threshold() == (1000, 1, 1)
        gc.set_threshold(10 * _gc.YOUNG_THRESHOLD, 10, 10)  # a higher threshold is not lowered
        with _gc.fewer_collections():
            assert gc.get_threshold()[0] == 10 * _gc.YOUNG_THRESHOLD
    finally:
        gc.set_threshold(*old)


def test_fit_restores_thresholds_also_on_error():
    old = gc.get_threshold()
    target = gaussian(np.zeros(2), np.eye(2))
    fit(target, num_steps=50)
    assert gc.get_threshold() == old
    try:
        fit(target, num_steps=-5)
    except ValueError:
        pass
    else:  # pragma: no cover
        raise AssertionError("a negative step count must be refused")
    assert gc.get_threshold() == old
