"""What a run cost per gradient: steady-state seconds, compile seconds, program memory, peak RSS.

`Meter` sums JAX's compile events on its thread while open; `summary` makes a result's `cost` dict
(its fields: docs/vi.md, "What a run costs").
"""
from __future__ import annotations

import sys
import threading
import time
import weakref
from typing import Optional

import jax.monitoring

COMPILE_EVENTS = ("/jax/core/compile/jaxpr_trace_duration",
                  "/jax/core/compile/jaxpr_to_mlir_module_duration",
                  "/jax/core/compile/backend_compile_duration")
_LOCAL = threading.local()
_LOCK = threading.Lock()
_OPEN = [0]  # meters open in the process: the listener is registered while there is one


def _on_event(name, seconds, **_):
    if name in COMPILE_EVENTS:
        for meter in list(getattr(_LOCAL, "meters", ())):
            meter.compile_seconds += float(seconds)


def _acquire():
    with _LOCK:
        if _OPEN[0] == 0:
            jax.monitoring.register_event_duration_secs_listener(_on_event)
        _OPEN[0] += 1


def _release():
    with _LOCK:
        _OPEN[0] -= 1
        if _OPEN[0] == 0:
            jax.monitoring.unregister_event_duration_listener(_on_event)


class Meter:
    """Compile seconds (this thread's JAX compile events) and wall seconds since `start`."""

    def __init__(self):
        self.compile_seconds = 0.0
        self.t0 = time.perf_counter()
        self.wall = None
        self._held = None

    def start(self) -> "Meter":
        if self._held is None:
            _acquire()
            self._held = weakref.finalize(self, _release)
        self.t0 = time.perf_counter()
        meters = getattr(_LOCAL, "meters", None)
        if meters is None:
            meters = _LOCAL.meters = weakref.WeakSet()  # a meter never stopped is still collected
        meters.add(self)
        return self

    def stop(self) -> "Meter":
        getattr(_LOCAL, "meters", set()).discard(self)
        if self._held is not None:
            self._held()  # once: a finalizer runs at most one time
        self.wall = time.perf_counter() - self.t0
        return self


def peak_rss_bytes() -> Optional[int]:
    """Peak resident memory of this process so far (bytes), or None where unknown."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)  # Linux: KiB


def program_bytes(compiled) -> Optional[int]:
    """Bytes a compiled program holds while it runs (XLA's memory analysis), or None."""
    try:
        m = compiled.memory_analysis()
        total = (m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes
                 - m.alias_size_in_bytes)
    except Exception:  # noqa: BLE001 - not every backend or jax version reports it
        return None
    return int(total)


def summary(*, run_seconds: float, gradients: float, meter: Optional[Meter] = None,
            programs=(), compile_seconds: Optional[float] = None) -> dict:
    """The `cost` dict of a result; `gradients` counts the compiled updates' gradients, an HVP as two."""
    sizes = [b for b in (program_bytes(p) for p in programs) if b is not None]
    if meter is not None and meter.wall is None:
        meter.stop()
    compile_s = compile_seconds if compile_seconds is not None else (
        meter.compile_seconds if meter is not None else None)
    return {"seconds_per_gradient": (float(run_seconds) / gradients) if gradients > 0 else None,
            "gradients": int(gradients), "run_seconds": float(run_seconds),
            "compile_seconds": None if compile_s is None else float(compile_s),
            "wall_seconds": None if meter is None else float(meter.wall),
            "program_bytes": max(sizes) if sizes else None, "peak_rss_bytes": peak_rss_bytes()}


def _size(n: int) -> str:
    """Bytes in KiB, MiB or GiB."""
    for unit, k in (("GiB", 30), ("MiB", 20)):
        if n >= 2**k:
            return f"{n / 2**k:,.1f} {unit}"
    return f"{n / 2**10:,.1f} KiB"


def describe(cost: Optional[dict]) -> str:
    """One line: time per gradient, compile seconds, memory."""
    if not cost:
        return ""
    parts = []
    if cost.get("seconds_per_gradient") is not None:
        parts.append(f"{1e3 * cost['seconds_per_gradient']:.3g} ms per gradient (steady state, "
                     f"compile excluded; {cost['gradients']:,} gradients in "
                     f"{cost['run_seconds']:.3g} s)")
    if cost.get("compile_seconds") is not None:
        parts.append(f"compile of all programs {cost['compile_seconds']:.3g} s")
    if cost.get("wall_seconds") is not None:
        parts.append(f"wall {cost['wall_seconds']:.3g} s")
    if cost.get("program_bytes") is not None:
        parts.append(f"largest program {_size(cost['program_bytes'])}")
    if cost.get("peak_rss_bytes") is not None:
        parts.append(f"peak RSS {_size(cost['peak_rss_bytes'])}")
    return "cost: " + ", ".join(parts)


__all__ = ["Meter", "summary", "describe", "peak_rss_bytes", "program_bytes", "COMPILE_EVENTS"]
