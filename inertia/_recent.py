"""Per-target caches bounded by recency: the compiled functions of the KEPT most recently used keys
(docs/howto/speed.md, "Many models in one process").
"""
from __future__ import annotations

import collections
import threading

KEPT = 16  # keys (potential functions or targets) a cache keeps


class Recent:
    """A mapping of at most `kept` keys, the least recently used dropped first; thread-safe."""

    def __init__(self, kept: int = KEPT):
        self.kept = int(kept)
        self._items: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()

    def setdefault(self, key, default):
        """The value of `key` (now the most recent), set to `default` when absent."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            self._items[key] = default
            while len(self._items) > self.kept:
                self._items.popitem(last=False)
            return default

    def get(self, key, default=None):
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            return default

    def __contains__(self, key) -> bool:
        with self._lock:
            return key in self._items

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
