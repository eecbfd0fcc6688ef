"""inertia: momentum-accelerated Bayesian inference on JAX.

Importing inertia changes nothing outside it: JAX's float64 flag, its compilation cache, the
environment, warning filters, BLAS pools and the garbage collector stay as they were. The entry
points (`fit`, `sample`, `calibrate`, `from_numpyro`) compute in float64 inside JAX's thread-local
x64 context and restore everything they set on return; process-wide switches are opt-in in
`inertia.config` (`enable_x64()`, `enable_compilation_cache()`).
"""
__version__ = "0.1.0"


def compile_tier(name: str):
    """Context manager: `fit` and `sample` inside it compile their XLA programs at tier `name`,
    "fast" (quickest to compile), "lean" (LLVM -O1) or "optimized" (XLA's default); the same as
    `inertia.config.compile_tier`."""
    from ._compile import tier

    return tier(name)


def load(path):
    """A result saved by `res.save(path)` or `inertia fit|sample --save PATH.nc`."""
    from .results import load as _load

    return _load(path)


def __getattr__(name):
    if name == "config":  # `inertia.config` without an explicit import
        import importlib

        return importlib.import_module(".config", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
