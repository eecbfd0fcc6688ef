"""Hitting times on a checkpoint grid, matched accelerated/plain comparisons, log-log slopes.

Conventions of the paper's App. D.4: the hitting time at relative threshold delta
is the first recorded checkpoint whose seed-mean gap is <= delta * g0 (g0 the common initial mean
gap); a checkpoint counts only when every seed's gap there is finite; a run that never gets there is
right-censored (None); in a comparison a finite crossing beats a missing one.
"""
from __future__ import annotations

import math
from typing import Iterable, Optional, Sequence

import numpy as np
from scipy import stats

OUTCOMES = ("acc", "plain", "equal", "neither")  # Table 4 order: acc earlier / plain earlier / ...


def mean_gap(gaps) -> np.ndarray:
    """Seed-mean gap per checkpoint; NaN where any seed is missing (None / NaN / inf)."""
    g = np.asarray(gaps, dtype=float)
    if g.ndim == 1:
        g = g[:, None]
    if g.ndim != 2:
        raise ValueError(f"gaps must be (checkpoints,) or (checkpoints, seeds); got shape {g.shape}")
    ok = np.all(np.isfinite(g), axis=1)
    out = np.full(g.shape[0], np.nan)
    out[ok] = g[ok].mean(axis=1)
    return out


def hitting_time(steps: Sequence[int], gaps, threshold: float, *, relative: bool = True,
                 g0: Optional[float] = None) -> Optional[int]:
    """First checkpoint step with mean gap <= threshold (x g0 if relative), None if censored.

    `gaps` is (checkpoints,) or (checkpoints, seeds); `g0` defaults to the mean gap at the first
    checkpoint. Checkpoints with a missing seed never count as crossings.
    """
    steps = np.asarray(steps)
    mean = mean_gap(gaps)
    if steps.shape != mean.shape:
        raise ValueError(f"steps ({steps.shape}) and gaps ({mean.shape[0]} checkpoints) disagree")
    if not threshold > 0:
        raise ValueError(f"threshold must be positive, got {threshold}")
    if relative:
        g0 = float(mean[0]) if g0 is None else float(g0)
        if not (math.isfinite(g0) and g0 > 0):
            raise ValueError(f"relative thresholds need a finite positive initial gap, got {g0}")
        level = threshold * g0
    else:
        level = threshold
    hit = np.flatnonzero(np.isfinite(mean) & (mean <= level))
    return int(steps[hit[0]]) if hit.size else None


def compare(acc: Optional[int], plain: Optional[int]) -> str:
    """'acc' / 'plain' (earlier crossing; a finite one beats a missing one), 'equal' or 'neither'."""
    if acc is None and plain is None:
        return "neither"
    if plain is None or (acc is not None and acc < plain):
        return "acc"
    if acc is None or plain < acc:
        return "plain"
    return "equal"


def count_outcomes(outcomes: Iterable[str]) -> dict:
    """{'acc': n, 'plain': n, 'equal': n, 'neither': n} over a list of `compare` results."""
    counts = dict.fromkeys(OUTCOMES, 0)
    for o in outcomes:
        if o not in counts:
            raise ValueError(f"unknown comparison outcome {o!r}")
        counts[o] += 1
    return counts


def format_counts(counts: dict) -> str:
    """'a/p/e/n' as in the paper's Table 4."""
    return "/".join(str(counts[k]) for k in OUTCOMES)


def pair_comparisons(runs: dict, pairs: Sequence[str], thresholds: Sequence[float],
                     groups: Sequence, *, g0: Optional[dict] = None) -> dict:
    """Counts of `compare` per (pair, threshold) over `groups` (datasets, batches, ...).

    `runs[(group, method, accelerated)] = (steps, gaps)`; `g0[group]` is the common initial gap of a
    group (default: the accelerated run's first mean gap). Missing runs are skipped.
    Returns {(pair, threshold): {"counts": {...}, "cells": {group: (outcome, t_acc, t_plain)}}}.
    """
    table = {}
    for pair in pairs:
        for thr in thresholds:
            cells = {}
            for grp in groups:
                a, p = runs.get((grp, pair, True)), runs.get((grp, pair, False))
                if a is None or p is None:
                    continue
                base = None if g0 is None else g0[grp]
                if base is None:
                    base = float(mean_gap(a[1])[0])
                ta = hitting_time(a[0], a[1], thr, g0=base)
                tp = hitting_time(p[0], p[1], thr, g0=base)
                cells[grp] = (compare(ta, tp), ta, tp)
            table[(pair, thr)] = {"counts": count_outcomes(c[0] for c in cells.values()),
                                  "cells": cells}
    return table


def loglog_slope(x, y, level: float = 0.95) -> dict:
    """Least-squares slope of log y on log x with its standard error and a t-interval."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape or x.size < 3 or np.any(x <= 0) or np.any(y <= 0):
        raise ValueError("log-log fit needs >= 3 positive (x, y) pairs")
    r = stats.linregress(np.log(x), np.log(y))
    q = stats.t.ppf(0.5 + level / 2, x.size - 2)
    return {"slope": float(r.slope), "intercept": float(r.intercept), "stderr": float(r.stderr),
            "level": level, "low": float(r.slope - q * r.stderr),
            "high": float(r.slope + q * r.stderr), "r2": float(r.rvalue**2), "n": int(x.size)}
