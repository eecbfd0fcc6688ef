"""Memory a VI run will need, and memory the machine has, for failing fast before compiling
(docs/vi.md, "Which Gaussian family").
"""
from __future__ import annotations

import math
import os
from typing import Optional

FLOAT = 8  # bytes of a float64
# live d x d arrays per seed, by coordinates: Cholesky (A, previous A, momentum point, gradient,
# projection workspace), symmetric root (the same plus eigenvectors and a reconstructed matrix),
# Bures-Wasserstein (m, Sigma) (Sigma, its root, gradient, workspace); XLA keeps about 2x that
# around a scan step (inputs and outputs of the compiled block)
DXD_ARRAYS = {"chol": 6, "sym": 8, "bw": 6}
XLA_FACTOR = 2.0


def estimate_fit_bytes(method_coords: str, d: int, batch: int, seeds: int = 1, *,
                       needs_hvp: bool = False) -> int:
    """Peak bytes of a fit: XLA_FACTOR x 8 x seeds x (k d^2 + [b d^2 if HVPs] + 4 b d)."""
    if method_coords not in DXD_ARRAYS:
        raise ValueError(f"unknown coordinates {method_coords!r}; choose from {sorted(DXD_ARRAYS)}")
    d, batch, seeds = int(d), max(int(batch), 1), max(int(seeds), 1)
    per_seed = DXD_ARRAYS[method_coords] * d * d + 4 * batch * d
    if needs_hvp:
        per_seed += batch * d * d
    return int(XLA_FACTOR * FLOAT * seeds * per_seed)


def largest_dim(method_coords: str, batch: int, seeds: int = 1, *, needs_hvp: bool = False,
                budget: Optional[int] = None) -> int:
    """The largest d whose `estimate_fit_bytes` fits in `budget` (default `available_bytes()`)."""
    budget = available_bytes() if budget is None else int(budget)
    k = DXD_ARRAYS[method_coords] + (max(int(batch), 1) if needs_hvp else 0)
    a = XLA_FACTOR * FLOAT * max(int(seeds), 1)
    b_lin = 4 * max(int(batch), 1)
    # a (k d^2 + b_lin d) <= budget
    d = int((-b_lin + math.sqrt(b_lin * b_lin + 4 * k * budget / a)) / (2 * k))
    while d > 0 and estimate_fit_bytes(method_coords, d, batch, seeds, needs_hvp=needs_hvp) > budget:
        d -= 1
    return max(d, 0)


def _meminfo_available() -> Optional[int]:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _cgroup_limit() -> Optional[int]:
    for path, usage in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                        ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                         "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            with open(path) as fh:
                raw = fh.read().strip()
        except OSError:
            continue
        if raw == "max" or not raw.isdigit() or int(raw) >= 1 << 60:
            return None
        try:
            with open(usage) as fh:
                used = int(fh.read().strip())
        except (OSError, ValueError):
            used = 0
        return max(int(raw) - used, 0)
    return None


def _rlimit() -> Optional[int]:
    try:
        import resource
    except ImportError:
        return None
    limits = []
    for name in ("RLIMIT_AS", "RLIMIT_DATA"):
        soft, _ = resource.getrlimit(getattr(resource, name))
        if soft != resource.RLIM_INFINITY:
            limits.append(int(soft))
    return min(limits) if limits else None


DRAW_COPIES = 3  # the draws, their constrained copy and the diagnostics' array


def check_draws(num_chains: int, num_steps: int, thinning: int, dim: int) -> None:
    """Before sampling: MemoryError when DRAW_COPIES copies of the kept draws exceed free memory."""
    kept = int(num_chains) * (int(num_steps) // max(int(thinning), 1))
    need, have = DRAW_COPIES * FLOAT * kept * int(dim), available_bytes()
    if need > have:
        top = have // (DRAW_COPIES * FLOAT * int(num_chains) * int(dim)) * max(int(thinning), 1)
        raise MemoryError(f"num_steps = {num_steps:,} keeps {kept:,} draws of {dim} numbers "
                          f"({num_chains} chains, thinning {thinning}): about "
                          f"{need / 2**30:,.0f} GiB, and {have / 2**30:.1f} GiB is free; at most "
                          f"about num_steps = {top:,} fits (or raise thinning)")


def available_bytes() -> int:
    """Memory this process can still use: min(MemAvailable, cgroup limit - usage, rlimit)."""
    found = [v for v in (_meminfo_available(), _cgroup_limit(), _rlimit()) if v is not None]
    if found:
        return min(found)
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 1 << 62
