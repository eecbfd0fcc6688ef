"""Data values checked by entry, before a model sees them: names of the offending entries (`y[7]`)."""
from __future__ import annotations

import numpy as np

INT64_MAX = np.iinfo(np.int64).max
SHOWN = 3  # entries named in one message; the rest are counted


def _where(name: str, shape: tuple, flat: int) -> str:
    if not shape:
        return name
    idx = np.unravel_index(flat, shape)
    return f"{name}[{', '.join(str(int(i)) for i in idx)}]"


def bad_entries(name: str, value, ok=None) -> str:
    """"" when every entry passes `ok` (default: finite), else "y[7] = nan (and 2 more)"."""
    a = np.asarray(value)
    if a.dtype.kind not in "fiub":
        return ""
    good = np.isfinite(a) if ok is None else np.broadcast_to(np.asarray(ok, dtype=bool), a.shape)
    bad = np.flatnonzero(~np.asarray(good))
    if bad.size == 0:
        return ""
    flat = a.reshape(-1)
    shown = ", ".join(f"{_where(name, a.shape, i)} = {flat[i].item()!r}" for i in bad[:SHOWN])
    more = f" (and {bad.size - SHOWN} more)" if bad.size > SHOWN else ""
    return shown + more


def int64_notes(data) -> str:
    """"" or a sentence naming entries of `data` that are whole numbers beyond int64's range."""
    found = []
    for name, value in (data or {}).items():
        try:
            a = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            continue
        big = np.isfinite(a) & (np.abs(a) > INT64_MAX) & (a == np.round(a))
        if np.any(big):
            found.append(bad_entries(name, np.asarray(value), ~big))
    if not found:
        return ""
    return (f"{'; '.join(found)}: beyond int64's range (at most {INT64_MAX}), so no shape, size or "
            "index can take it; check the data file's entry")


__all__ = ["bad_entries", "int64_notes", "INT64_MAX"]
