"""XLA optimisation tiers: a small problem's programs are compiled for compile time, a large one's
for run time.

Almost all of a small model's first `fit` or `sample` is XLA compilation: at the CPU backend's
default (LLVM -O2, fusion emitters) a 4-parameter model's programs take ~3.3 s to compile and
~0.3 s to run. The "fast" tier (LLVM -O0, the classic elementwise emitters) compiles the same
programs ~3.5x faster and runs their elementwise work ~2-3x slower (library calls, dot products
and factorisations, run at full speed). It is chosen when a target's `work` per update is within
the driver's budget (FAST_WORK, measured where the fast and default tiers' first runs break
even); everything else keeps XLA's default ("optimized"). The hot programs (`jit(..., hot=True)`:
the VI block, the chains), which the cache serves again on re-runs, are fast only under a smaller
budget (HOT_FAST_WORK); up to a larger one (LEAN_WORK) they take the "lean" tier (LLVM -O1,
classic emitters: a third of the default's compile time, elementwise work up to ~1.5x slower).
Small programs whose compile time the tiers barely change and that do much of a run's arithmetic
(`jit(..., optimized=True)`: the objective monitor's batched potential) keep XLA's default. The
choice depends on the target's HLO cost analysis only, never on timing, so a seed gives the same
numbers run after run; the tiers can differ in the last bits of transcendental functions
(relative 1e-15 in float64).
`INERTIA_COMPILE=fast|lean|optimized` forces one tier; `with tier(...)` sets it for a block of code.
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
    """Compile inertia's programs called inside the block at tier `name` ("fast", "lean",
    "optimized")."""
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
    """The tier programs are compiled at here: of the hot programs (hot=True), of those always
    compiled for run time (optimized=True), or of the others."""
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
    """Flops of one value-and-gradient evaluation of the target's potential (HLO cost analysis of
    its lowered program; the lowering is reused when that program is compiled later)."""
    return float(target.gradient_flops())


def work(target) -> float:
    """Model-dependent flops of one update: a value-and-gradient evaluation, 8 d^2 (the outer
    products and triangular updates of a batch) and d^3 / 8 (the dense factorisations, which run
    at full speed in both tiers and count less); cached per potential."""
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
    """(tier of a run's programs, tier of its hot programs) for a run of `driver` ("fit" or
    "sample") on a target, `length` times the driver's default run: "fast" when length is at most
    FAST_MAX_LENGTH and work x length at most FAST_WORK[driver] (work x `hot_length`, default
    `length`, at most HOT_FAST_WORK[driver] for the hot programs, which are "lean" while
    work x length is at most LEAN_WORK[driver]), else "optimized";
    $INERTIA_COMPILE=fast|lean|optimized forces both."""
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
    """Context manager: the tiers of a run (see tiers_of); yields the tier of its programs other
    than the hot ones. Tiers already set are kept (a driver calling another, on a whitened
    target, compiles at its caller's tiers)."""
    if _TIER.get() is not None:
        yield current()
        return
    with _set(tiers_of(target, driver, length, hot_length) + (_forced() or "optimized",)) as pair:
        yield pair[0]


def per_target(driver: str, hot_length=None):
    """Decorator: fn(target, ...) run with its programs compiled at the tier of that run; the
    result remembers it (`compile_tier`) for its post-processing (see `of_result`).
    `hot_length(target, kwargs, length)`: the hot programs' run length where it differs from the
    run's (fit: its block's batch)."""
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
    """Decorator: fn(result, ...) (draws, constraints, tables) compiled at the result's tier, in
    float64 (JAX's thread-local x64, as the entry points)."""
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
    """jax.jit whose XLA compiler options follow the current tier: of the hot programs (hot=True,
    a program a run calls thousands of times), or XLA's default unless a tier is forced
    (optimized=True, a small program whose compile time the tiers barely change); usable as a
    decorator."""
    if fun is None:
        return lambda f: _Jit(f, kwargs, hot, optimized)
    return _Jit(fun, kwargs, hot, optimized)


def device(x, dtype=None):
    """`x` (array-like, host) as a device array of `dtype`, compiling nothing (an eager
    `jnp.asarray` of a NumPy array compiles a small program per shape and dtype)."""
    return jax.device_put(np.asarray(x, dtype=dtype))
