"""The shape every result shares: attributes for values (mean, cov, names, converged), methods for
what takes options (summary, table, to_arviz, save, predictive); short reprs."""
from __future__ import annotations

import warnings

import numpy as np


class _CallableArray(np.ndarray):
    """An array that still answers the old method call `res.mean(burn_in)` (deprecated)."""

    def __call__(self, *args, **kwargs):
        fn, name = getattr(self, "_inertia_fn", None), getattr(self, "_inertia_name", "value")
        if fn is None:
            raise TypeError("'numpy.ndarray' object is not callable")
        warnings.warn(f"{name} is an attribute now; {name}(burn_in) is deprecated and will be "
                      f"removed in the next release: use {name} or moments(burn_in)",
                      DeprecationWarning, stacklevel=2)
        return np.asarray(fn(*args, **kwargs))

    def __array_wrap__(self, obj, context=None, return_scalar=False):
        out = np.asarray(obj).view(np.ndarray)  # results of arithmetic are plain arrays
        return out[()] if return_scalar else out

    def __repr__(self) -> str:
        return repr(self.view(np.ndarray))


def callable_array(value, fn, name: str) -> np.ndarray:
    """`value` as an ndarray that can also be called like the old method `fn` (with a warning)."""
    out = np.asarray(value).view(_CallableArray)
    out._inertia_fn, out._inertia_name = fn, name
    return out


def verdict_word(verdict) -> str:
    """"converged" or "NOT CONVERGED" (a result's `verdict`)."""
    return "converged" if verdict.converged else "NOT CONVERGED"


def fit_repr(res) -> str:
    seeds = f", {len(res.seeds)} seeds" if len(res.seeds) > 1 else ""
    return (f"<FitResult {res.method} on {res.target_name or 'target'}: d = {res.dim}, "
            f"{res.num_steps} updates{seeds}, {verdict_word(res.verdict)}>")


def sample_repr(res) -> str:
    c, n, d = res.draws.shape
    return (f"<SampleResult {res.method}: {c} chains x {n} draws, d = {d}, "
            f"{verdict_word(res.verdict)}>")


def calibration_repr(res) -> str:
    c, n, d = res.draws.shape
    return (f"<CalibrationResult: {c} chains x {n} draws, d = {d}, "
            f"{verdict_word(res.verdict)}{', warning' if res.warning else ''}>")


__all__ = ["callable_array", "fit_repr", "sample_repr", "calibration_repr"]
