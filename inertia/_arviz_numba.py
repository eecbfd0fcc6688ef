"""ArviZ's Numba path, off for one call: with Numba installed (PyMC brings it) and NumPy >= 2.4,
ArviZ 0.2x's `mcse(method="sd")` fails (`float()` of a 1-element array); the NumPy path is right."""
from __future__ import annotations

import contextlib


@contextlib.contextmanager
def numba_off(az):
    """ArviZ's NumPy code path inside the block; its Numba flag as it was after it."""
    numba = getattr(az, "Numba", None)
    flag = getattr(numba, "numba_flag", False)
    if not flag:
        yield
        return
    numba.numba_flag = False
    try:
        yield
    finally:
        numba.numba_flag = flag
