"""ESS, R-hat and MCSE of draws (chain, draw, dim), and the run-until-converged loop.

`chain_stats` computes rank-normalised split R-hat, bulk and tail ESS and MCSE (Vehtari et al. 2021)
with ArviZ's conventions, vectorised over coordinates (NumPyro's estimators); `run_until_converged`
extends chains in blocks until a `StopRule` is met or capped. How they compare with ArviZ: docs/hfhr.md.
"""
from __future__ import annotations

import functools
import math
import sys
import threading
import warnings
from typing import Callable, NamedTuple, Optional

import numpy as np

from . import _prefetch

RHAT_MAX = 1.01
ESS_MIN = 100.0
ONE_CHAIN = "R-hat needs two or more chains (one chain is judged by ESS alone)"


_IMPORT_LOCK = threading.Lock()  # one thread at a time saves and restores the warning filters


def _arviz():
    with _IMPORT_LOCK, warnings.catch_warnings():  # ArviZ 0.2x announces its refactor on import
        warnings.simplefilter("ignore", FutureWarning)
        try:
            import arviz
        except ImportError as err:  # pragma: no cover - arviz is a core dependency
            raise ImportError("diagnostics need arviz: pip install arviz") from err
        except OSError:  # its notice's daily stamp under the user cache folder (a read-only HOME)
            arviz = _arviz_without_stamp()
    return arviz


def _arviz_without_stamp():
    """ArviZ imported with its import-time notice off (which writes a stamp file under the user cache)."""
    import importlib

    preview = sys.modules.get("arviz.preview") or importlib.import_module("arviz.preview")
    saved = preview.info
    preview.info = saved + "".join(f"\narviz_{p} available" for p in ("base", "stats", "plots"))
    try:
        import arviz
    finally:
        preview.info = saved
    return arviz


STATS = ("rhat", "ess_bulk", "ess_tail", "mcse_mean", "mcse_sd")
_LAST = threading.local()  # per thread: (fingerprint, stats so far) of the last draws summarised


def _fingerprint(x: np.ndarray) -> tuple:
    """Shape and SHA-1 digest of the draws' bytes: equal draws, equal key."""
    import hashlib

    return x.shape, hashlib.sha1(memoryview(np.ascontiguousarray(x)).cast("B"),
                                 usedforsecurity=False).digest()


def chain_stats(draws, which=STATS) -> dict:
    """Rank-normalised split R-hat, bulk/tail ESS and MCSE of mean and sd per coordinate (Vehtari 2021)."""
    x = np.asarray(draws, dtype=np.float64)
    if x.ndim != 3:
        raise ValueError(f"draws must be shaped (chain, draw, dim); got {x.shape}")
    which = tuple(which)
    unknown = sorted(set(which) - set(STATS))
    if unknown:
        raise ValueError(f"unknown statistics {unknown}; known: {list(STATS)}")
    key = _fingerprint(x)
    last = getattr(_LAST, "value", None)
    have = last[1] if last is not None and last[0] == key else {}
    missing = tuple(k for k in which if k not in have)
    if missing:
        have = {**have, **_stats(x, missing)}
        _LAST.value = (key, have)
    return {k: have[k].copy() for k in which}


def _split(x: np.ndarray) -> np.ndarray:
    """Each chain's first and last halves as two chains: (chain, draw, d) -> (2 chain, draw // 2, d)."""
    half = x.shape[1] // 2
    return np.concatenate([x[:, :half], x[:, x.shape[1] - half:]], axis=0)


def doubled_ranks(rows: np.ndarray) -> np.ndarray:
    """Twice the average ranks 1..n along the last axis (SciPy's rankdata "average" x 2), unstable sort."""
    order = np.argsort(rows, axis=-1)
    return _sorted_ranks(order, np.take_along_axis(rows, order, axis=-1))


def _sorted_ranks(order: np.ndarray, v: np.ndarray, scores=None) -> np.ndarray:
    """`doubled_ranks` of rows sorted by `order`; with `scores`, scores[doubled rank - 2] in sorted order."""
    starts = np.empty(v.shape, bool)  # where a run of equal sorted values begins (every row's first)
    starts[..., 0] = True
    np.not_equal(v[..., 1:], v[..., :-1], out=starts[..., 1:])
    first = np.flatnonzero(starts)
    count = np.diff(first, append=starts.size)
    mid = 2 * (first % v.shape[-1]) + count + 1  # twice the run's average rank
    if scores is not None:
        mid = scores[mid - 2]
    out = np.empty(v.shape, mid.dtype)
    np.put_along_axis(out, order, np.repeat(mid, count).reshape(v.shape), axis=-1)
    return out


def _z_scales(x: np.ndarray) -> tuple:
    """Blom rank-normal scores (offset 3/8) of x and of the folded |x - median(x)|, from one sort."""
    c, n, d = x.shape
    N = c * n
    rows = np.ascontiguousarray(x.reshape(N, d).T)  # each coordinate's draws contiguous
    order = np.argsort(rows, axis=-1)
    v = np.take_along_axis(rows, order, axis=-1)
    scores = _normal_scores(N)
    z = _sorted_ranks(order, v, scores).T.reshape(x.shape)
    med = v[:, (N - 1) // 2:N // 2 + 1].mean(axis=-1, keepdims=True)  # as np.median computes it
    h = N // 2  # v[:, :h] <= med <= v[:, h:]
    folded = np.concatenate([med - v[:, h - 1::-1], v[:, h:] - med], axis=-1)
    fo = np.concatenate([order[:, h - 1::-1], order[:, h:]], axis=-1)
    merge = np.argsort(folded, axis=-1, kind="stable")  # two sorted runs: a merge
    zf = _sorted_ranks(np.take_along_axis(fo, merge, axis=-1),
                       np.take_along_axis(folded, merge, axis=-1), scores)
    return z, zf.T.reshape(x.shape)


@functools.lru_cache(maxsize=8)
def _normal_scores(N: int) -> np.ndarray:
    """Blom's normal scores of the 2 N - 1 possible average ranks 1, 1.5, ..., N."""
    from scipy import special

    scores = special.ndtri((0.5 * np.arange(2, 2 * N + 1) - 0.375) / (N + 0.25))
    scores.flags.writeable = False  # shared by the threads that summarise blocks
    return scores


def _ess(x: np.ndarray) -> np.ndarray:
    """Stan's ESS per coordinate of x (chain, draw, d), as NumPyro's `effective_sample_size`, one thread."""
    from scipy import fft

    c, n = x.shape[:2]
    y = np.moveaxis(x, (0, 1), (-2, -1))  # (d, chain, draw)
    m2 = 2 * fft.next_fast_len(n, real=True)
    f = fft.rfft(y - y.mean(axis=-1, keepdims=True), n=m2, axis=-1, workers=1)
    acov = fft.irfft(f * np.conjugate(f), n=m2, axis=-1, workers=1)[..., :n] / n
    var_within = y.var(axis=-1, ddof=1).mean(axis=-1)
    var_est = var_within * (n - 1) / n
    if c > 1:
        var_est = var_est + y.mean(axis=-1).var(axis=-1, ddof=1)
    else:
        var_within = var_est
    with np.errstate(invalid="ignore", divide="ignore"):  # constant coordinates: set below
        rho = 1.0 - (var_within[..., None] - acov.mean(axis=-2)) / var_est[..., None]
        rho[..., 0] = 1.0
        pairs = rho[..., :-1:2] + rho[..., 1::2]  # Geyer's initial positive, then monotone, sequence
        pairs[..., 1:] = np.minimum.accumulate(np.clip(pairs[..., 1:], 0.0, None), axis=-1)
        ess = c * n / (2.0 * pairs.sum(axis=-1) - 1.0)
    constant = np.ptp(x, axis=(0, 1)) < np.finfo(float).resolution
    return np.where(constant, float(c * n), ess)


def _block_stats(x: np.ndarray, which: tuple) -> dict:
    """The statistics in `which` per coordinate of finite draws (chain, draw >= 4, d)."""
    from numpyro.diagnostics import gelman_rubin

    s, out = _split(x), {}
    flat = x.reshape(-1, x.shape[2])
    if "ess_bulk" in which or "rhat" in which:
        z, zf = _z_scales(s)
        out["ess_bulk"] = _ess(z)
        if x.shape[0] >= 2:  # rank R-hat: the worse of the bulk's and the folded draws'
            out["rhat"] = np.maximum(gelman_rubin(z), gelman_rubin(zf))
        else:  # R-hat compares chains: with one chain it is NaN (see ONE_CHAIN)
            out["rhat"] = np.full(x.shape[2], np.nan)
    if "ess_tail" in which:  # the least ESS of the 5 % and 95 % quantiles' indicators
        q05, q95 = np.quantile(flat, [0.05, 0.95], axis=0)
        out["ess_tail"] = np.minimum(_ess(_split((x <= q05).astype(np.float64))),
                                     _ess(_split((x <= q95).astype(np.float64))))
    if "mcse_mean" in which:
        out["mcse_mean"] = flat.std(axis=0, ddof=1) / np.sqrt(_ess(s))
    if "mcse_sd" in which:  # the delta method on the MCSE of the variance
        c2 = (x - flat.mean(axis=0)) ** 2
        ev = c2.reshape(-1, x.shape[2]).mean(axis=0)
        varvar = ((c2 ** 2).reshape(-1, x.shape[2]).mean(axis=0) - ev ** 2) / _ess(_split(c2))
        out["mcse_sd"] = np.sqrt(varvar / ev / 4.0)
    return out


_BLOCK = 1 << 18  # draws x coordinates per block (2 MB): bounded temporaries at any d and length


def _stats(x: np.ndarray, which: tuple) -> dict:
    """`which` per coordinate; NaN where a draw is not finite or there are fewer than 4 draws."""
    c, n, d = x.shape
    out = {k: np.full(d, np.nan) for k in which}
    if n < 4:
        return out
    with np.errstate(invalid="ignore"):  # NaN and inf reach the extremes: no array of flags
        finite = np.flatnonzero(np.isfinite(x.min(axis=(0, 1))) & np.isfinite(x.max(axis=(0, 1))))
    width = max(1, _BLOCK // (c * n))
    blocks = [finite[lo:lo + width] for lo in range(0, finite.size, width)]

    def one(cols):
        with np.errstate(all="ignore"):
            return cols, _block_stats(x[:, :, cols], which)

    if len(blocks) > 1 and _prefetch.cores() >= 2:  # NumPy's sorts and FFTs release the GIL
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(2, thread_name_prefix="inertia-stats") as pool:
            done = list(pool.map(one, blocks))
    else:
        done = [one(cols) for cols in blocks]
    for cols, got in done:
        for k in which:
            out[k][cols] = got[k]
    return {k: np.atleast_1d(v) for k, v in out.items()}


def ess_bulk(draws) -> np.ndarray:
    """Rank-normalised bulk ESS per coordinate of draws (chain, draw, dim)."""
    return chain_stats(draws, ("ess_bulk",))["ess_bulk"]


def finite_min(v) -> float:
    """The least finite entry of v, 0 where none is finite."""
    return float(np.nanmin(np.where(np.isfinite(v), v, np.nan))) if np.isfinite(v).any() else 0.0



class Judgement(NamedTuple):
    """One check of the draws: ESS against target, worst R-hat, whether the rule is met, worst coordinates."""

    ess: float
    rhat: float
    met: bool
    ess_at: Optional[int] = None
    rhat_at: Optional[int] = None


def _arg(v, best) -> Optional[int]:
    """Index of the least (best=np.nanargmin) or largest finite entry, None if none is finite."""
    return int(best(np.where(np.isfinite(v), v, np.nan))) if np.isfinite(v).any() else None


DISAGREE_LEVEL = 0.01  # the chains-disagree test's level over all coordinates (Bonferroni)


class Disagreement(NamedTuple):
    """Chains that disagree: where Cochran's Q is largest, Q, its chi-square bound, coordinates over it."""

    index: int
    q: float
    bound: float
    count: int


def chains_disagree(draws, level: float = DISAGREE_LEVEL) -> Optional[Disagreement]:
    """Cochran's Q of the chains' rank-normalised means per coordinate, Bonferroni-tested; None: agree."""
    from scipy.stats import chi2

    x = np.asarray(draws, dtype=np.float64)
    c, n, d = x.shape
    if c < 2 or n < 8:
        return None
    with np.errstate(invalid="ignore"):
        finite = np.flatnonzero(np.isfinite(x.min(axis=(0, 1))) & np.isfinite(x.max(axis=(0, 1))))
    q = np.zeros(d)
    width = max(1, _BLOCK // (c * n))
    for lo in range(0, finite.size, width):
        cols = finite[lo:lo + width]
        z = _z_scales(x[:, :, cols])[0]
        m = z.mean(axis=1)
        v = z.var(axis=1, ddof=1)
        halves = _split(z)
        with np.errstate(all="ignore"):
            # each chain's ESS from the autocorrelation within its halves, pooled over the chains
            # (each half centred on its own mean: no between-chain term)
            ess = _ess(halves - halves.mean(axis=1, keepdims=True)) / c
            w = ess / np.maximum(v, np.finfo(float).tiny)  # a chain stuck at one value: huge w
            mw = (w * m).sum(axis=0) / w.sum(axis=0)
            q[cols] = np.nan_to_num((w * (m - mw) ** 2).sum(axis=0), nan=0.0)
    bound = float(chi2.isf(level / d, c - 1))
    over = int(np.sum(q > bound))
    if not over:
        return None
    i = int(np.argmax(q))
    return Disagreement(i, float(q[i]), bound, over)


HEAVY_TAIL = 0.25  # Pareto k of |x - median| at or above it: no fourth moment, no MCSE of the sd


def tail_index(x: np.ndarray) -> np.ndarray:
    """Pareto k-hat of the upper tail of |x - median| per column of x (draws, k) (Vehtari et al. 2024)."""
    logs = np.log(np.abs(x - np.median(x, axis=0)) + np.finfo(float).tiny).T
    return np.atleast_1d(_arviz().psislw(np.ascontiguousarray(logs))[1])


class StopRule(NamedTuple):
    """When to stop and how far to run next.

    target_ess None: run the first goal and stop. cap: the most draws (None: none). block: goals are whole
    blocks. max_growth: at most this factor per extension. strict: also tail ESS and
    MCSE(sd) <= sd / (2 sqrt(N)) where the tail has a fourth moment (`tail_index` < HEAVY_TAIL).
    """

    target_ess: Optional[float]
    cap: Optional[int] = None
    block: int = 1
    max_growth: Optional[float] = None
    strict: bool = False
    rhat_max: float = RHAT_MAX

    def judge(self, draws) -> Judgement:
        """Judgement: every ESS >= target_ess and, with two or more chains, every R-hat <= rhat_max."""
        st = chain_stats(draws, STATS if self.strict else ("rhat", "ess_bulk"))
        ess = finite_min(st["ess_bulk"])
        if self.strict:  # tail ESS too (Vehtari et al. 2021), and MCSE(sd) <= sd / (2 sqrt(N))
            ess = min(ess, finite_min(st["ess_tail"]))
            flat = np.asarray(draws, dtype=np.float64).reshape(-1, draws.shape[-1])
            rel = 2.0 * st["mcse_sd"] / np.maximum(flat.std(axis=0), 1e-300) * math.sqrt(
                self.target_ess)
            rel = np.where(np.isfinite(rel), rel, 0.0)
            late = np.flatnonzero(rel > 1.0)  # short of the sd's goal: is its MCSE defined?
            if late.size:
                rel[late[tail_index(flat[:, late]) >= HEAVY_TAIL]] = 0.0
            ess = ess / max(float(rel.max(initial=0.0)), 1.0) ** 2
        one_chain = np.shape(draws)[0] < 2
        rhat = float("nan") if one_chain else float(np.nanmax(st["rhat"]))
        return Judgement(ess, rhat, bool(ess >= self.target_ess
                                         and (one_chain or rhat <= self.rhat_max)),
                         _arg(st["ess_bulk"], np.nanargmin),
                         None if one_chain else _arg(st["rhat"], np.nanargmax))

    def next_goal(self, done: int, ess: float) -> int:
        """Draws after the next extension: 1.1 x the ESS rate's prediction, 1.5-max_growth x done."""
        want = done * max(1.5, 1.1 * self.target_ess / max(ess, 1.0))
        if self.max_growth is not None:
            want = min(want, self.max_growth * done)
        goal = self.block * math.ceil(want / self.block)
        return int(goal if self.cap is None else min(self.cap, goal))


def run_until_converged(advance: Callable[[int], None], first: int, rule: StopRule, *,
                        view: Callable[[], Optional[np.ndarray]],
                        halt: Optional[Callable[[], bool]] = None,
                        on_judge: Optional[Callable[[Judgement], None]] = None,
                        on_extend: Optional[Callable[[int, Judgement], None]] = None,
                        stop: Optional[Callable[[np.ndarray, Judgement], Optional[str]]] = None
                        ) -> tuple:
    """Run `first` draws, then extend until the rule is met or capped; returns (draws run, why stopped).

    advance(n) runs n more draws; halt() true stops at once; view() gives the draws to judge or None;
    stop(draws, judgement) names a reason to stop instead of extending;
    on_extend(goal, judgement) hears of each extension.
    """
    done, goal = 0, int(first)
    while True:
        advance(goal - done)
        done = goal
        if halt is not None and halt():
            return done, "halted"
        if rule.target_ess is None:
            return done, "fixed"
        if rule.cap is not None and done >= rule.cap:
            return done, "cap"
        x = view()
        if x is None:
            return done, "unjudged"
        j = rule.judge(x)
        if on_judge is not None:
            on_judge(j)
        if j.met:
            return done, "converged"
        why = None if stop is None else stop(x, j)
        if why:
            return done, why
        goal = rule.next_goal(done, j.ess)
        if on_extend is not None:
            on_extend(goal, j)


__all__ = ["chain_stats", "STATS", "ess_bulk", "StopRule", "Judgement",
           "run_until_converged", "chains_disagree", "Disagreement", "DISAGREE_LEVEL", "RHAT_MAX",
           "ESS_MIN", "ONE_CHAIN", "finite_min"]
