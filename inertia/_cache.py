"""JAX's persistent compilation cache in inertia's folder, for the CLI and the Python API.

A small model's fit or sample is ~15 XLA compilations of 0.01-2 s each; a re-run in a new
process redoes them all unless they are cached. Every program is cached, the small ones too (a
re-run of a 4-parameter model's `inertia fit`: 3.8 s with programs under 0.05 s recompiled, 3.2 s
with all of them cached). Folder: $INERTIA_JAX_CACHE, else <user cache dir>/inertia/jax;
INERTIA_JAX_CACHE=off disables it. A cache the user configured for JAX is left as it is.
"""
from __future__ import annotations

import os
import sys

MIN_COMPILE_SECONDS = 0.0
MAX_BYTES = 1 << 30  # beyond it, the oldest entries go at the next import, down to half of it


def cache_path():
    """The folder inertia points JAX's cache at, or None when switched off."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = os.environ.get("INERTIA_JAX_CACHE", os.path.join(base, "inertia", "jax"))
    return None if not path or path.lower() == "off" else path


def prune(path, max_bytes: int = MAX_BYTES) -> int:
    """Delete the oldest-written entries while the folder holds more than max_bytes, down to half
    of it; returns the bytes deleted. JAX's own cap (jax_compilation_cache_max_size) is not used:
    it lists the folder and reads a timestamp file per entry at every write."""
    try:
        stats = [(e.stat(), e.path) for e in os.scandir(path) if e.is_file(follow_symlinks=False)]
        entries = [(st.st_mtime, st.st_size, name) for st, name in stats]
    except OSError:
        return 0
    total = sum(size for _, size, _ in entries)
    freed = 0
    if total <= max_bytes:
        return 0
    for _, size, name in sorted(entries):
        if total - freed <= max_bytes // 2:
            break
        try:
            os.remove(name)
            freed += size
        except OSError:
            pass
    return freed


def enable() -> None:
    """Use inertia's cache folder unless JAX already has one or it is switched off (before JAX's
    first compilation: JAX decides once per process whether a cache is used)."""
    path = cache_path()
    if path is None:
        return
    jax = sys.modules.get("jax")
    if jax is None:  # JAX reads these when it is imported
        if os.environ.get("JAX_COMPILATION_CACHE_DIR"):
            return
        os.environ["JAX_COMPILATION_CACHE_DIR"] = path
        os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", str(MIN_COMPILE_SECONDS))
    else:
        if jax.config.jax_compilation_cache_dir:
            return
        jax.config.update("jax_compilation_cache_dir", path)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    prune(path)
