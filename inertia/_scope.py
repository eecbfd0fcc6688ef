"""The scope of an inertia entry point: float64 (JAX's thread-local x64) and the compile tier, set for
the call's duration and restored on return (docs/howto/speed.md). Nothing here is set at import.
"""
from __future__ import annotations

import contextlib
import functools

import jax

from ._compile import per_target


@contextlib.contextmanager
def scope():
    """Float64 (JAX's thread-local x64) for the block."""
    with jax.enable_x64(True):
        yield


def entry_point(driver: str | None = None, hot_length=None):
    """Decorator of a public entry point: runs in `scope()`; with `driver`, at its run's compile tier."""
    def wrap(fn):
        inner = fn
        if driver is not None:
            inner = per_target(driver, hot_length)(fn)

        @functools.wraps(fn)
        def run(*args, **kwargs):
            with scope():
                return inner(*args, **kwargs)

        return run

    return wrap


def float64_leaves(tree):
    """`tree` with its float16/float32 JAX-array leaves cast to float64."""
    import jax
    import jax.numpy as jnp

    def cast(a):
        if (isinstance(a, jax.Array) and jnp.issubdtype(a.dtype, jnp.floating)
                and jnp.finfo(a.dtype).bits < 64):
            return jnp.asarray(a, dtype=jnp.float64)
        return a

    return jax.tree_util.tree_map(cast, tree)


def in_float64(fn):
    """Decorator: `fn` runs in JAX's thread-local x64."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        import jax

        with jax.enable_x64(True):
            return fn(*args, **kwargs)

    return run


def float64_methods(cls):
    """Class decorator: a result class's public methods and properties run in JAX's thread-local x64."""
    for name, attr in list(vars(cls).items()):
        if name.startswith("_"):
            continue
        if isinstance(attr, property) and attr.fget is not None:
            setattr(cls, name, property(in_float64(attr.fget), attr.fset, attr.fdel, attr.__doc__))
        elif callable(attr) and not isinstance(attr, (type, staticmethod, classmethod)):
            setattr(cls, name, in_float64(attr))
    return cls
