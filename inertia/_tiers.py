"""The compile-tier policy on cost numbers alone (no JAX, nothing of inertia imported)."""
from __future__ import annotations

import os

import numpy as np

TIERS = {"fast": {"xla_backend_optimization_level": 0, "xla_cpu_use_fusion_emitters": False},
         "lean": {"xla_backend_optimization_level": 1, "xla_cpu_use_fusion_emitters": False},
         "optimized": {}}
# `work` x run length (relative to the driver's default run) at or under which the fast tier wins
FAST_WORK = {"fit": 5e5, "sample": 1.5e6}
FAST_MAX_LENGTH = 4.0  # a run over 4x the default is a production run: its run time comes first
# the hot programs (the VI block, the chains) take the fast tier only up to this work x hot length
HOT_FAST_WORK = {"fit": 1e5, "sample": 1e4}
# above that, up to LEAN_WORK, the hot programs take the "lean" tier (LLVM -O1, classic emitters)
LEAN_WORK = {"fit": 2e6, "sample": 2e6}


def speed_on() -> bool:
    """The speed machinery's one switch: $INERTIA_SPEED=off (or 0, false, no) turns it all off."""
    return os.environ.get("INERTIA_SPEED", "").strip().lower() not in ("off", "0", "false", "no")


def forced() -> str | None:
    """The tier $INERTIA_COMPILE forces, if any ("optimized" under INERTIA_SPEED=off)."""
    if not speed_on():
        return "optimized"
    name = os.environ.get("INERTIA_COMPILE", "").strip().lower()
    return name if name in TIERS else None


def tiers(work_per_update: float, driver: str = "fit", length: float = 1.0,
          hot_length: float | None = None) -> tuple:
    """(tier of a run's programs, tier of its hot programs) for `work_per_update` x `length`."""
    if length > FAST_MAX_LENGTH:
        return "optimized", "optimized"
    w = float(work_per_update)
    total, hot_total = w * length, w * (length if hot_length is None else hot_length)
    hot = ("fast" if hot_total <= HOT_FAST_WORK[driver] else "lean" if total <= LEAN_WORK[driver]
           else "optimized")
    return ("fast" if total <= FAST_WORK[driver] else "optimized"), hot


def _number(value, default):
    return float(value) if isinstance(value, (int, float)) and value > 0 else float(default)


def run_length(driver: str, kwargs: dict) -> float:
    """A call's run length relative to the driver's default run, from its keyword arguments."""
    steps = _number(kwargs.get("num_steps"), 1000) / 1000.0
    if driver == "fit":
        seeds = kwargs.get("seed", 0)
        n = 1 if np.ndim(seeds) == 0 else max(len(seeds), 1)
        return steps * n * _number(kwargs.get("batch_size"), 8) / 8.0
    return steps * _number(kwargs.get("num_chains"), 4) / 4.0
