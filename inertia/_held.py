"""A process-wide setting held while any thread is inside: set by the first to enter, restored by
the last to leave (a count under a lock), for the settings an entry point changes that are not
per-thread (BLAS pools, garbage-collection thresholds)."""
from __future__ import annotations

import contextlib
import threading


class Held:
    """`with held():` runs `apply()` when no thread is inside yet and `restore(token)` with what it
    returned when the last thread leaves."""

    def __init__(self, apply, restore):
        self._apply, self._restore = apply, restore
        self._lock, self._count, self._token = threading.Lock(), 0, None

    @contextlib.contextmanager
    def __call__(self):
        with self._lock:
            if self._count == 0:
                self._token = self._apply()
            self._count += 1
        try:
            yield
        finally:
            with self._lock:
                self._count -= 1
                if self._count == 0:
                    token, self._token = self._token, None
                    self._restore(token)


__all__ = ["Held"]
