"""Process-wide settings, each one opt-in: importing inertia changes none of them.

inertia's entry points compute in float64 inside JAX's thread-local x64 whatever these say. For what
lies outside them: `enable_x64()`, `enable_compilation_cache(path=None)`, `compile_tier(name)`.
"""
from __future__ import annotations

from . import _cache
from ._compile import tier


def enable_x64(use: bool = True) -> None:
    """Turn JAX's float64 on (or off, use=False) for the whole process: `jax_enable_x64`."""
    import jax

    jax.config.update("jax_enable_x64", bool(use))


def enable_compilation_cache(path=None, max_bytes: int = _cache.MAX_BYTES):
    """Point JAX's persistent compilation cache at `path` (default $INERTIA_JAX_CACHE) before compiling."""
    folder = _cache.enable(path)
    if folder is not None and max_bytes != _cache.MAX_BYTES:
        _cache.prune(folder, max_bytes)
    return folder


def compile_tier(name: str):
    """Context manager: entry points called inside compile at tier "fast", "lean" or "optimized"."""
    return tier(name)


__all__ = ["enable_x64", "enable_compilation_cache", "compile_tier"]
