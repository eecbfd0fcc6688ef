"""inertia: momentum-accelerated Bayesian inference on JAX.

Importing inertia changes nothing outside it; entry points compute in float64 inside JAX's
thread-local x64 and restore what they set; process-wide switches are opt-in in `inertia.config`.
"""
__version__ = "0.1.0"


def compile_tier(name: str):
    """Context manager: `fit` and `sample` inside it compile at tier "fast", "lean" or "optimized"."""
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
