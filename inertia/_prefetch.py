"""Modules a run needs only at its end, imported in a background thread while it compiles and runs,
in the `inertia` command's own process only (docs/howto/speed.md).
"""
from __future__ import annotations

import importlib
import os
import sys
import threading

from ._tiers import speed_on

_STARTED: set = set()
_LOCK = threading.Lock()
_ALLOWED = [False]  # set by the `inertia` command for its own process


def allow(on: bool = True) -> None:
    """Let `module` start background imports in this process (the `inertia` command's)."""
    _ALLOWED[0] = bool(on)


def cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def enabled() -> bool:
    """Allowed (the command), two or more cores, and $INERTIA_PREFETCH / $INERTIA_SPEED not off."""
    off = os.environ.get("INERTIA_PREFETCH", "").strip().lower() in ("off", "0", "false", "no")
    return _ALLOWED[0] and not off and speed_on() and cores() >= 2


def _load(name: str) -> None:
    try:
        importlib.import_module(name)
    except Exception:  # noqa: BLE001 - the run's own import reports it
        pass


def module(name: str) -> bool:
    """Start importing `name` in a daemon thread, once per process; whether a thread was started."""
    with _LOCK:
        if name in sys.modules or name in _STARTED or not enabled():
            return False
        _STARTED.add(name)
    threading.Thread(target=_load, args=(name,), name=f"inertia-import-{name}",
                     daemon=True).start()
    return True
