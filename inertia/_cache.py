"""JAX's persistent compilation cache in inertia's folder: on in the `inertia` command, opt-in from
Python (`inertia.config.enable_compilation_cache()`); importing inertia leaves JAX's cache alone.

Folder: $INERTIA_JAX_CACHE (off: no cache), else <user cache dir>/inertia/jax (docs/howto/speed.md).
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
    """Delete the oldest entries while the folder holds more than max_bytes, down to half; bytes deleted."""
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
    """Point JAX's persistent compilation cache at `path`, caching every program, pruned to MAX_BYTES."""
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
    """matplotlib's configuration folder ($MPLCONFIGDIR, else $XDG_CONFIG_HOME/matplotlib or ~/.config)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.environ.get("MPLCONFIGDIR") or os.path.join(base, "matplotlib")


def command_caches() -> str | None:
    """The command's optional caches where their folders can be made; one line saying what is off, or None."""
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
    """The command's cache folder, through JAX's environment variables when JAX is not imported yet."""
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
