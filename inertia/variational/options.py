"""`FitOptions`: the switches of `inertia.vi.fit` beyond its named arguments, and their defaults.

Fields left at None are decided per run by `resolve`: on in automatic mode, off in paper mode.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from .registry import Method


@dataclasses.dataclass(frozen=True)
class FitOptions:
    """How `fit` runs and watches a method (None: decided by `resolve`); every field in docs/vi.md.

    Run: `accelerated`, `s`, `checkpoint_every`, `evaluate`, `keep_iterates`. Automatic mode: `restart`,
    `recover`, `max_recoveries`, `widen`, `monitor`, `monitor_draws`, `tol`, `window`, `average`, `extend`,
    `whiten`, `hessian_check`. Either mode: `quality`, `ensure`, `reparam`, `family`, `rank`.
    """

    accelerated: Optional[bool] = None
    s: Optional[float] = None
    checkpoint_every: Optional[int] = None
    evaluate: bool = True
    keep_iterates: bool = False
    restart: Optional[bool] = None
    recover: Optional[bool] = None
    widen: Optional[bool] = None
    monitor: Optional[bool] = None
    tol: Optional[float] = None
    average: Optional[bool] = None
    extend: Optional[bool] = None
    window: int = 10
    monitor_draws: int = 256
    max_recoveries: int = 4
    whiten: Optional[bool] = None
    hessian_check: Optional[bool] = None
    quality: bool = True
    ensure: Optional[str] = None
    reparam: object = False
    family: Optional[str] = None
    rank: Optional[int] = None

    def __post_init__(self):
        if self.family not in (None, "full-rank", "factor"):
            raise ValueError(f"family must be None, 'full-rank' or 'factor', got {self.family!r}")
        if self.rank is not None and (not isinstance(self.rank, (int, np.integer)) or self.rank < 1):
            raise ValueError(f"rank must be a positive integer, got {self.rank!r}")
        if self.ensure not in (None, "adequate", "usable"):
            raise ValueError(f"ensure must be None, 'adequate' or 'usable', got {self.ensure!r}")
        every = self.checkpoint_every
        if every is not None and (not isinstance(every, (int, np.integer)) or every < 1):
            raise ValueError(f"checkpoint_every must be a positive integer, got {every!r}")

    def replace(self, **changes) -> "FitOptions":
        return dataclasses.replace(self, **changes)


FIELDS = tuple(f.name for f in dataclasses.fields(FitOptions))


def method_options(method: Method) -> tuple:
    """Names of the keyword options `method`'s kernel builder takes (plus `set_bounds` where it has a set)."""
    return tuple(method.options) + (("set_bounds",) if method.feasible else ())


def split(options: Optional[FitOptions], keywords: dict, method: Method):
    """(FitOptions with keyword overrides, the method's own options); TypeError for any other keyword."""
    if options is None:
        options = FitOptions()
    elif not isinstance(options, FitOptions):
        raise TypeError(f"options must be a FitOptions, got {type(options).__name__}")
    takes = method_options(method)
    unknown = sorted(k for k in keywords if k not in FIELDS and k not in takes)
    if unknown:
        own = ", ".join(takes) if takes else "none"
        raise TypeError(f"fit() got unknown option(s) {unknown}; FitOptions fields: "
                        f"{', '.join(FIELDS)}; options of method {method.name!r}: {own}")
    overrides = {k: v for k, v in keywords.items() if k in FIELDS}
    rest = {k: v for k, v in keywords.items() if k not in FIELDS}
    return (options.replace(**overrides) if overrides else options), rest


def resolve(options: FitOptions, target, method: Method, auto: bool) -> FitOptions:
    """The automatic switches of `options` decided for this run (`auto`: automatic mode)."""
    o = options
    acc = method.accelerable if o.accelerated is None else o.accelerated
    tol = (1e-4 if auto else None) if o.tol is None else float(o.tol)
    monitor = bool(o.evaluate and (auto or tol is not None or target.expectations is None)
                   ) if o.monitor is None else bool(o.monitor)
    if tol is not None and not monitor:
        raise ValueError("the stopping rule (tol=) needs the objective monitor (monitor=True)")
    average = (tol is not None) if o.average is None else bool(o.average)
    return o.replace(
        restart=bool(auto and acc) if o.restart is None else bool(o.restart),
        recover=auto if o.recover is None else bool(o.recover),
        widen=auto if o.widen is None else bool(o.widen),
        monitor=monitor, tol=tol, average=average, window=int(o.window),
        whiten=bool(auto and target.expectations is None) if o.whiten is None else bool(o.whiten),
        extend=bool(average) if o.extend is None else bool(o.extend))


__all__ = ["FitOptions", "FIELDS", "method_options", "split", "resolve"]
