"""JAX's persistent compilation cache in inertia's folder: on in the `inertia` command, opt-in from
Python (`inertia.config.enable_compilation_cache()`); importing inertia leaves JAX's cache alone.

A small model's fit or sample is ~15 XLA compilations of 0.01-2 s each; a re-run in a new
process redoes them all unless they are cached. Every program is cached, the small ones too (a
re-run of a 4-parameter model's `inertia fit`: 3.8 s with programs under 0.05 s recompiled, 3.2 s
with all of them cached). Folder: $INERTIA_JAX_CACHE, else <user cache dir>/inertia/jax;
INERTIA_JAX_CACHE=off keeps the command's cache off. A cache the user configured for JAX is left
as it is by the command.
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


def enable(path=None, keep_existing: bool = False):
    """Point JAX's persistent compilation cache at `path` (default: `cache_path()`), caching every
    program, and prune the folder to MAX_BYTES; returns the folder, or None when switched off (or,
    with keep_existing, when JAX already has a cache folder, which is kept). Takes effect for the
    compilations after the call (JAX decides at its first compilation whether a cache is used)."""
    import jax

    path = cache_path() if path is None else os.fspath(path)
    if path is None:
        return None
    if keep_existing and jax.config.jax_compilation_cache_dir:
        return None
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    prune(path)
    return path


def _creatable(path) -> str | None:
    """None when folder `path` exists or can be made (and written), else why not."""
    try:
        os.makedirs(path, exist_ok=True)
        if not os.access(path, os.W_OK):
            return f"{path}: not writable"
    except OSError as err:
        return f"{err.filename or path}: {err.strerror or err}"
    return None


def _matplotlib_dir() -> str:
    """The folder matplotlib keeps its configuration and font cache in ($MPLCONFIGDIR, else
    $XDG_CONFIG_HOME/matplotlib or ~/.config/matplotlib)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.environ.get("MPLCONFIGDIR") or os.path.join(base, "matplotlib")


def command_caches() -> str | None:
    """The `inertia` command's own process: the optional caches (JAX's compilation cache, ArviZ's
    and matplotlib's folders) where their folders can be made; where one cannot (a read-only
    HOME), the run goes on without it: JAX's cache off, matplotlib in a temporary folder (as it
    would choose itself, without its two log lines), ArviZ without its notice's stamp
    (`convergence._arviz`). Returns one line saying so, or None."""
    why = []
    path = cache_path()
    if path is not None and not os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        problem = _creatable(path)
        if problem:
            why.append(problem)
            os.environ["INERTIA_JAX_CACHE"] = "off"
    problem = _creatable(_matplotlib_dir())
    if problem:
        import atexit
        import shutil
        import tempfile

        why.append(problem)
        try:
            tmp = tempfile.mkdtemp(prefix="inertia-matplotlib-")
        except OSError:
            tmp = None
        if tmp is not None:
            os.environ["MPLCONFIGDIR"] = tmp
            atexit.register(shutil.rmtree, tmp, True)
    enable_for_command()
    if not why:
        return None
    return (f"cannot create cache folders ({'; '.join(why)}): running without JAX's "
            "compilation cache and ArviZ's and matplotlib's caches (set XDG_CACHE_HOME and "
            "XDG_CONFIG_HOME to a writable folder to keep them)")


def enable_for_command() -> None:
    """The `inertia` command's own process: inertia's cache folder unless JAX already has one or
    it is switched off, set through JAX's environment variables when JAX is not imported yet (so
    that `--help` and argument errors stay free of JAX)."""
    path = cache_path()
    if path is None:
        return
    jax = sys.modules.get("jax")
    if jax is None:  # JAX reads these when it is imported
        if os.environ.get("JAX_COMPILATION_CACHE_DIR"):
            return
        os.environ["JAX_COMPILATION_CACHE_DIR"] = path
        os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", str(MIN_COMPILE_SECONDS))
        prune(path)
    else:
        enable(path, keep_existing=True)
