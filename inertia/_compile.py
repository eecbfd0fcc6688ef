"""XLA optimisation tiers: a small problem's programs compile for compile time, a large one's for run time.

"fast" (LLVM -O0), "lean" (-O1) or XLA's default "optimized", chosen from the target's HLO cost times the
run's length, never from timing. `INERTIA_COMPILE=fast|lean|optimized` forces one tier; `with tier(...)`
sets it for a block. The tiers and their measured costs: docs/howto/speed.md.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import weakref

import jax
import numpy as np

from . import _hoist
from ._tiers import (FAST_MAX_LENGTH, FAST_WORK, HOT_FAST_WORK, LEAN_WORK, TIERS,  # noqa: F401
                     forced as _forced, run_length, tiers)

# (cold, hot, kept) tiers or None; "kept" is the tier of the programs that are always compiled for
# run time (jit(..., optimized=True)): "optimized" unless a tier is forced
_TIER = contextvars.ContextVar("inertia_compile_tier", default=None)
_WORK = weakref.WeakKeyDictionary()  # potential function -> work


@contextlib.contextmanager
def tier(name: str):
    """Compile inertia's programs called inside the block at tier `name` ("fast", "lean", "optimized")."""
    if name not in TIERS:
        raise ValueError(f"unknown compile tier {name!r}; choose one of {sorted(TIERS)}")
    with _set((name, name, name)):
        yield name


@contextlib.contextmanager
def _set(pair):
    token = _TIER.set(pair)
    try:
        yield pair
    finally:
        _TIER.reset(token)


def current(hot: bool = False, optimized: bool = False) -> str:
    """The current tier of the hot programs (hot=True), of the optimized=True ones, or of the others."""
    pair = _TIER.get()
    return "optimized" if pair is None else pair[2 if optimized else 1 if hot else 0]


@functools.lru_cache(maxsize=None)
def _options_of(name: str, backend: str):
    opts = TIERS[name]
    return tuple(sorted(opts.items())) if opts and backend == "cpu" else ()


def options(hot: bool = False, optimized: bool = False) -> dict | None:
    """The XLA compiler options of the current tier (the fast tiers' are CPU options only)."""
    return dict(_options_of(current(hot, optimized), jax.default_backend())) or None


def gradient_flops(target) -> float:
    """Flops of one value-and-gradient evaluation of the target's potential (HLO cost analysis)."""
    return float(target.gradient_flops())


def work(target) -> float:
    """Flops of one update: a value-and-gradient evaluation + 8 d^2 + d^3 / 8; cached per potential."""
    key = getattr(target, "potential", None)
    try:
        return _WORK[key]
    except (KeyError, TypeError):
        pass
    d = float(target.dim)
    value = d ** 3 / 8.0 + 8.0 * d ** 2
    if value <= max(FAST_WORK.values()):  # a larger d is optimized whatever its gradient costs
        value += gradient_flops(target)
    try:
        _WORK[key] = value
    except TypeError:
        pass
    return value


def tiers_of(target, driver: str = "fit", length: float = 1.0,
             hot_length: float | None = None) -> tuple:
    """(tier of a run's programs, tier of its hot programs): work x length against the driver's budgets."""
    forced = _forced()
    if forced:
        return forced, forced
    if length > FAST_MAX_LENGTH:
        return "optimized", "optimized"
    try:
        w = work(target)
    except Exception:  # a bad target or potential fails later, with the driver's own error
        return "optimized", "optimized"
    return tiers(w, driver, length, hot_length)


@contextlib.contextmanager
def tier_for(target, driver: str = "fit", length: float = 1.0, hot_length: float | None = None):
    """Context manager: the tiers of a run (`tiers_of`), keeping tiers already set; yields the run's tier."""
    if _TIER.get() is not None:
        yield current()
        return
    with _set(tiers_of(target, driver, length, hot_length) + (_forced() or "optimized",)) as pair:
        yield pair[0]


def per_target(driver: str, hot_length=None):
    """Decorator: fn(target, ...) compiled at its run's tier; the result remembers it (`compile_tier`)."""
    def wrap(fn):
        @functools.wraps(fn)
        def run(target, *args, **kwargs):
            length = run_length(driver, kwargs)
            hot = None if hot_length is None else hot_length(target, kwargs, length)
            with tier_for(target, driver, length, hot) as name:
                out = fn(target, *args, **kwargs)
            try:
                out.compile_tier = name
            except AttributeError:
                pass
            return out
        return run
    return wrap


def of_result(fn):
    """Decorator: fn(result, ...) compiled at the result's tier, in float64."""
    @functools.wraps(fn)
    def run(res, *args, **kwargs):
        name = getattr(res, "compile_tier", None)
        with jax.enable_x64(True):
            if name not in TIERS or _TIER.get() is not None:  # post-processing has no hot program
                return fn(res, *args, **kwargs)
            with tier(name):
                return fn(res, *args, **kwargs)
    return run


class _Jit:
    """jax.jit of one function per tier, the tier read at each call (and lowering)."""

    def __init__(self, fun, kwargs, hot=False, optimized=False):
        self._fun, self._kwargs, self._jits = fun, kwargs, {}
        self._hot, self._optimized = hot, optimized
        functools.update_wrapper(self, fun)

    def _get(self, key):
        fn = self._jits.get(key)
        if fn is None:
            fn = self._jits[key] = _hoist.Hoisting(self._fun, dict(key) or None, **self._kwargs)
        return fn

    def _call(self, method, args, kwargs):
        key = _options_of(current(self._hot, self._optimized), jax.default_backend())
        if not key:
            return getattr(self._get(()), method)(*args, **kwargs)
        try:
            return getattr(self._get(key), method)(*args, **kwargs)
        except ValueError as err:  # inside another program: the outermost jit's options apply
            if "compiler_options" not in str(err):
                raise
            return getattr(self._get(()), method)(*args, **kwargs)

    def __call__(self, *args, **kwargs):
        return self._call("__call__", args, kwargs)

    def lower(self, *args, **kwargs):
        return self._call("lower", args, kwargs)


def jit(fun=None, *, hot: bool = False, optimized: bool = False, **kwargs):
    """jax.jit whose XLA options follow the current tier (hot=True: the hot one; optimized=True: default)."""
    if fun is None:
        return lambda f: _Jit(f, kwargs, hot, optimized)
    return _Jit(fun, kwargs, hot, optimized)


def device(x, dtype=None):
    """`x` as a device array of `dtype`, compiling nothing (eager `jnp.asarray` compiles per shape)."""
    return jax.device_put(np.asarray(x, dtype=dtype))
