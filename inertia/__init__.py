"""inertia: momentum-accelerated Bayesian inference on JAX.

Importing inertia turns on JAX float64 (``jax_enable_x64``): objective gaps are reported to 1e-10.
It also points JAX's persistent compilation cache at inertia's folder (``inertia._cache``; set
INERTIA_JAX_CACHE=off to keep it off), unless JAX already has a cache folder.
"""
import os as _os
import sys as _sys

if "jax" in _sys.modules:
    _sys.modules["jax"].config.update("jax_enable_x64", True)
else:
    # JAX reads this when it is first imported; importing inertia stays free of JAX until a
    # subpackage needs it (the CLI parses its arguments first).
    _os.environ["JAX_ENABLE_X64"] = "1"

from . import _cache

_cache.enable()

__version__ = "0.1.0"


def compile_tier(name: str):
    """Context manager: `fit` and `sample` inside it compile their XLA programs at tier `name`,
    "fast" (quickest to compile), "lean" (LLVM -O1) or "optimized" (XLA's default); see
    inertia._compile."""
    from ._compile import tier

    return tier(name)


def load(path):
    """A result saved by `res.save(path)` or `inertia fit|sample --save PATH.nc` (needs arviz)."""
    from .results import load as _load

    return _load(path)
