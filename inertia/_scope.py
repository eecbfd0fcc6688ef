"""The scope of an inertia entry point: what `fit`, `sample`, `calibrate` and `from_numpyro` set for
their own duration, restored on return (see docs/howto/speed.md and the `inertia.config` module).

- Float64: the call runs inside JAX's thread-local `jax.enable_x64(True)`, so its programs trace,
  compile and return in float64 whatever the process-wide `jax_enable_x64` is, and that flag (and
  every other thread's setting) is the same after the call as before. Scoping the flag, rather than
  passing a dtype to every array inertia creates, keeps one code path for both settings and covers
  a user's model code (NumPyro's distributions create float64 constants only under x64).
- Compile tiers (`inertia._compile`): a context variable, so each thread has its own.

Nothing here is set at import, and nothing outlives the call.
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
    """Decorator of a public entry point: the call runs in `scope()`; with `driver` ("fit" or
    "sample") its programs also compile at the tier of its target and run length
    (`inertia._compile.per_target`)."""
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
    """`tree` with its float16/float32 JAX-array leaves cast to float64: arrays a caller made with
    float64 off (JAX truncates them to float32 there) enter a float64 computation as float64."""
    import jax
    import jax.numpy as jnp

    def cast(a):
        if (isinstance(a, jax.Array) and jnp.issubdtype(a.dtype, jnp.floating)
                and jnp.finfo(a.dtype).bits < 64):
            return jnp.asarray(a, dtype=jnp.float64)
        return a

    return jax.tree_util.tree_map(cast, tree)


def in_float64(fn):
    """Decorator: `fn` runs in JAX's thread-local x64 (a target builder: the arrays and quadrature
    rules it creates are float64 whatever the caller's flag)."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        import jax

        with jax.enable_x64(True):
            return fn(*args, **kwargs)

    return run


def float64_methods(cls):
    """Class decorator: the public methods and properties of a result class run in JAX's
    thread-local x64, as the entry point that made the result did (its draws, predictive checks and
    tables come out in float64 whatever the caller's flag)."""
    for name, attr in list(vars(cls).items()):
        if name.startswith("_"):
            continue
        if isinstance(attr, property) and attr.fget is not None:
            setattr(cls, name, property(in_float64(attr.fget), attr.fset, attr.fdel, attr.__doc__))
        elif callable(attr) and not isinstance(attr, (type, staticmethod, classmethod)):
            setattr(cls, name, in_float64(attr))
    return cls
