"""Process-wide settings, each one opt-in: importing inertia changes none of them.

inertia's entry points (`inertia.vi.fit`, `inertia.mcmc.sample`, `inertia.sgmcmc.calibrate`,
`inertia.targets.from_numpyro`, `from_logdensity` and the results' methods) compute in float64
whatever these say: each runs inside JAX's thread-local `jax.enable_x64(True)` and restores the
caller's setting on return. The functions here are for what lies outside those calls:

- `enable_x64()`: float64 for every JAX computation in the process (your own `jnp` code, and
  inertia's building blocks such as `inertia.sgmcmc.kernels` called directly), as
  `numpyro.enable_x64()` does.
- `enable_compilation_cache(path=None)`: JAX's persistent compilation cache, so a new process
  re-running a model skips its compilations (the `inertia` command turns it on by itself).
- `compile_tier(name)`: a context manager forcing the XLA tier of the programs compiled inside.

The `inertia` command is inertia's own process: it enables float64 and the compilation cache
itself (`INERTIA_JAX_CACHE=off` keeps the cache off, a folder of your own moves it).
"""
from __future__ import annotations

from . import _cache
from ._compile import tier


def enable_x64(use: bool = True) -> None:
    """Turn JAX's float64 on (or off, use=False) for the whole process: `jax_enable_x64`."""
    import jax

    jax.config.update("jax_enable_x64", bool(use))


def enable_compilation_cache(path=None, max_bytes: int = _cache.MAX_BYTES):
    """Point JAX's persistent compilation cache at `path` (default: $INERTIA_JAX_CACHE, else
    <user cache dir>/inertia/jax), caching every program, and delete its oldest entries while it
    holds more than `max_bytes` (down to half). Call it before the first compilation: JAX decides
    then whether a cache is used. Returns the folder (None when $INERTIA_JAX_CACHE is off and no
    path is given)."""
    folder = _cache.enable(path)
    if folder is not None and max_bytes != _cache.MAX_BYTES:
        _cache.prune(folder, max_bytes)
    return folder


def compile_tier(name: str):
    """Context manager: the entry points called inside compile their XLA programs at tier `name`:
    "fast" (quickest to compile), "lean" (LLVM -O1) or "optimized" (XLA's default). Without it a
    tier is chosen per run from the model's cost (docs/howto/speed.md)."""
    return tier(name)


__all__ = ["enable_x64", "enable_compilation_cache", "compile_tier"]
