"""ESS, R-hat and MCSE of draws (chain, draw, dim) from ArviZ, and the run-until-converged loop.

The one backend: ArviZ's rank-normalised split R-hat, bulk and tail ESS and the Monte Carlo
standard errors of the mean and sd (Vehtari, Gelman, Simpson, Carpenter & Buerkner 2021). The one
loop: `run_until_converged` advances chains in blocks until `judge` says the draws meet a
`StopRule` (every ESS >= target_ess and, with two or more chains, every R-hat <= rhat_max), or the
rule's cap is reached; `StopRule.next_goal` (a pure function of the run's state, as optax's
schedules) says how far to run next. One chain is judged by ESS alone: R-hat compares chains.
"""
from __future__ import annotations

import contextlib
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
    return arviz


def prefetch() -> None:
    """In the `inertia` command's process, start importing ArviZ in a background thread where a
    second core is free, so that it is loaded when a run's chains finish (see inertia._prefetch)."""
    if "arviz" not in sys.modules:
        _prefetch.module("arviz")


def quiet_arviz_notice() -> None:
    """Ignore ArviZ 0.2x's import-time FutureWarning about its 1.0 refactor, process-wide: for the
    `inertia` command's own process only (a background import cannot scope it)."""
    warnings.filterwarnings("ignore", message=r"\s*ArviZ is undergoing a major refactor",
                            category=FutureWarning, module="arviz")


@contextlib.contextmanager
def _numpy_arviz(az):
    """ArviZ on its NumPy code paths for the call, restoring its Numba setting after: the same
    numbers whether or not Numba is installed (ArviZ 0.23's Numba MCSE(sd) raises TypeError)."""
    numba = getattr(az, "Numba", None)
    was = bool(getattr(numba, "numba_flag", False))
    if was:
        numba.disable_numba()
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            yield
    finally:
        if was:
            numba.enable_numba()


_LAST = threading.local()  # per thread: (fingerprint, stats) of the last draws summarised


def _fingerprint(x: np.ndarray) -> tuple:
    """Shape and a BLAKE2 digest of the draws' bytes (hashlib, ~1 GB/s): equal draws, equal key."""
    import hashlib

    return x.shape, hashlib.blake2b(memoryview(np.ascontiguousarray(x)).cast("B"),
                                    digest_size=16).digest()


def arviz_stats(draws) -> dict:
    """ArviZ's rank-normalised R-hat, bulk/tail ESS and MCSE of mean and sd per coordinate. The
    same draws twice in a row in a thread (the run's last judgement, then its diagnosis) are
    summarised once: at d = 10,000 one summary of 4 x 1,000 draws takes ArviZ about 30 s."""
    x = np.asarray(draws, dtype=np.float64)
    key = _fingerprint(x)
    last = getattr(_LAST, "value", None)
    if last is not None and last[0] == key:
        return {k: v.copy() for k, v in last[1].items()}
    out = _arviz_stats(x)
    _LAST.value = (key, out)
    return {k: v.copy() for k, v in out.items()}


def _arviz_stats(x: np.ndarray) -> dict:
    az = _arviz()
    ds = az.convert_to_dataset({"x": x})
    out = {}
    with _numpy_arviz(az):
        # R-hat compares chains: with one chain it is NaN (see ONE_CHAIN)
        out["rhat"] = (az.rhat(ds, method="rank")["x"].values if x.shape[0] >= 2
                       else np.full(x.shape[2:], np.nan))
        out["ess_bulk"] = az.ess(ds, method="bulk")["x"].values
        out["ess_tail"] = az.ess(ds, method="tail")["x"].values
        out["mcse_mean"] = az.mcse(ds, method="mean")["x"].values
        out["mcse_sd"] = az.mcse(ds, method="sd")["x"].values
    return {k: np.atleast_1d(np.asarray(v, dtype=np.float64)) for k, v in out.items()}


def ess_bulk(draws) -> np.ndarray:
    """ArviZ's rank-normalised bulk ESS per coordinate of draws (chain, draw, dim)."""
    az = _arviz()
    x = np.asarray(draws, dtype=np.float64)
    with _numpy_arviz(az):
        e = az.ess(az.convert_to_dataset({"x": x}), method="bulk")["x"].values
    return np.atleast_1d(np.asarray(e, dtype=np.float64))


def _finite_min(v) -> float:
    return float(np.nanmin(v)) if np.isfinite(v).any() else 0.0


class Judgement(NamedTuple):
    """What one check of the draws found: the ESS compared with the target, the worst R-hat (NaN
    with one chain) and whether the rule is met."""

    ess: float
    rhat: float
    met: bool


class StopRule(NamedTuple):
    """When to stop and how far to run next.

    target_ess None: run the first goal and stop. cap: the most draws (None: no cap). block: goals
    are whole blocks. max_growth: at most this factor per extension (None: no bound). strict: also
    tail ESS, and the sds to half the relative MCSE of the means (MCSE(sd) <= sd / (2 sqrt(N))).
    """

    target_ess: Optional[float]
    cap: Optional[int] = None
    block: int = 1
    max_growth: Optional[float] = None
    strict: bool = False
    rhat_max: float = RHAT_MAX

    def judge(self, draws) -> Judgement:
        """Judgement of draws (chain, draw, dim): every ESS >= target_ess and, with two or more
        chains, every rank R-hat <= rhat_max (one chain: ESS alone)."""
        st = arviz_stats(draws)
        ess = _finite_min(st["ess_bulk"])
        if self.strict:  # tail ESS too (Vehtari et al. 2021), and MCSE(sd) <= sd / (2 sqrt(N))
            ess = min(ess, _finite_min(st["ess_tail"]))
            sd = draws.reshape(-1, draws.shape[-1]).std(axis=0)
            rel = 2.0 * np.nanmax(st["mcse_sd"] / np.maximum(sd, 1e-300)) * math.sqrt(
                self.target_ess)
            ess = ess / max(rel, 1.0) ** 2
        one_chain = np.shape(draws)[0] < 2
        rhat = float("nan") if one_chain else float(np.nanmax(st["rhat"]))
        return Judgement(ess, rhat, bool(ess >= self.target_ess
                                         and (one_chain or rhat <= self.rhat_max)))

    def next_goal(self, done: int, ess: float) -> int:
        """Draws to have run after the next extension: 1.1 x the draws the ESS rate predicts,
        at least 1.5 x done, at most max_growth x done, rounded up to whole blocks, capped."""
        want = done * max(1.5, 1.1 * self.target_ess / max(ess, 1.0))
        if self.max_growth is not None:
            want = min(want, self.max_growth * done)
        goal = self.block * math.ceil(want / self.block)
        return int(goal if self.cap is None else min(self.cap, goal))


def run_until_converged(advance: Callable[[int], None], first: int, rule: StopRule, *,
                        view: Callable[[], Optional[np.ndarray]],
                        halt: Optional[Callable[[], bool]] = None,
                        on_judge: Optional[Callable[[Judgement], None]] = None,
                        on_extend: Optional[Callable[[int], None]] = None) -> tuple:
    """Run `first` draws, then extend until the rule is met or capped.

    advance(n) runs n more draws (the caller keeps them); halt() true stops at once (e.g. a chain
    diverged); view() gives the draws to judge (chain, draw, dim), or None when they cannot be
    judged (stop). Returns (draws run, why stopped: "halted", "fixed", "cap", "unjudged",
    "converged").
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
        goal = rule.next_goal(done, j.ess)
        if on_extend is not None:
            on_extend(goal)


__all__ = ["arviz_stats", "ess_bulk", "prefetch", "quiet_arviz_notice", "StopRule", "Judgement",
           "run_until_converged", "RHAT_MAX", "ESS_MIN", "ONE_CHAIN"]
