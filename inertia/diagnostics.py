"""Convergence diagnostics of draws (chain, draw, dim), shared by `inertia.mcmc` and `inertia.sgmcmc`.

Statistics from `inertia.convergence.chain_stats` (Vehtari et al. 2021). Converged: every R-hat <= 1.01,
bulk ESS >= 100, and no non-finite position, potential or gradient.
"""
from __future__ import annotations

import dataclasses
import warnings
from typing import Optional, Sequence

import numpy as np

from .convergence import ESS_MIN, ONE_CHAIN, RHAT_MAX, chain_stats  # noqa: F401
from .verdict import Verdict
from .targets.base import BATCH, potential_on_rows


def default_names(dim: int, prefix: str = "x") -> list:
    return [f"{prefix}[{i}]" for i in range(dim)]


@dataclasses.dataclass
class Diagnostics:
    """Per-parameter summary (mean, sd, 5 %/95 % quantiles, R-hat, ESS, MCSE), non-finite counts, verdict."""

    names: list
    mean: np.ndarray
    sd: np.ndarray
    q05: np.ndarray
    q95: np.ndarray
    rhat: np.ndarray
    ess_bulk: np.ndarray
    ess_tail: np.ndarray
    mcse_mean: np.ndarray
    mcse_sd: np.ndarray
    num_chains: int
    num_draws: int
    nonfinite_draws: int = 0
    nonfinite_potential: int = 0
    nonfinite_grad: int = 0
    rhat_max: float = RHAT_MAX
    ess_min: float = ESS_MIN
    verdict: Optional[Verdict] = None

    @property
    def converged(self) -> bool:
        return self.verdict.converged

    @property
    def worst_rhat(self) -> float:
        return float(np.nanmax(self.rhat)) if np.isfinite(self.rhat).any() else float("nan")

    @property
    def min_ess_bulk(self) -> float:
        return float(np.nanmin(self.ess_bulk)) if np.isfinite(self.ess_bulk).any() else float("nan")

    @property
    def min_ess_tail(self) -> float:
        return float(np.nanmin(self.ess_tail)) if np.isfinite(self.ess_tail).any() else float("nan")

    def table(self, max_rows: Optional[int] = 40) -> str:
        """The summary as aligned text, the least converged rows kept when cut to max_rows."""
        cols = ("mean", "sd", "5%", "95%", "mcse", "r_hat", "ess_bulk", "ess_tail")
        if max_rows is not None and (isinstance(max_rows, bool) or int(max_rows) != max_rows
                                     or max_rows < 0):
            raise ValueError(f"max_rows must be a whole number >= 0 or None, got {max_rows!r}")
        rows = np.arange(len(self.names))
        cut = max_rows is not None and len(rows) > max_rows
        if cut:  # keep the least converged parameters
            score = np.nan_to_num(self.rhat, nan=np.inf) - np.nan_to_num(self.ess_bulk, nan=0.0) * 1e-9
            rows = np.sort(np.argsort(-score, kind="stable")[:max_rows])
        w = max([8] + [len(str(self.names[i])) for i in rows])
        lines = [f"{'':<{w}} " + " ".join(f"{c:>9}" for c in cols)]
        for i in rows:
            vals = (self.mean[i], self.sd[i], self.q05[i], self.q95[i], self.mcse_mean[i])
            cells = [f"{v:>9.4g}" for v in vals]
            cells.append(f"{self.rhat[i]:>9.3f}")
            cells += [f"{v:>9.0f}" if np.isfinite(v) else f"{'nan':>9}"
                      for v in (self.ess_bulk[i], self.ess_tail[i])]
            bad = ((self.num_chains > 1 and not self.rhat[i] <= self.rhat_max)
                   or not self.ess_bulk[i] >= self.ess_min)
            flag = "  <-" if bad else ""
            lines.append(f"{str(self.names[i]):<{w}} " + " ".join(cells) + flag)
        if cut and len(rows):
            lines.append(f"... {len(self.names) - len(rows)} more parameters (the {len(rows)} least "
                         "converged are shown)")
        elif cut:
            lines.append(f"... {len(self.names)} parameters (none shown: max_rows = 0)")
        return "\n".join(lines)

    def line(self, verdict: Optional[Verdict] = None) -> str:
        """One line: chains, draws, worst R-hat and least ESS, then converged or every reason it is not."""
        v = self.verdict if verdict is None else verdict
        rhat = (f"max R-hat {self.worst_rhat:.3f}" if self.num_chains > 1 else ONE_CHAIN)
        head = (f"{self.num_chains} chain{'s' if self.num_chains > 1 else ''} x {self.num_draws} "
                f"draws; {rhat}, min bulk ESS {self.min_ess_bulk:.0f}, min tail ESS "
                f"{self.min_ess_tail:.0f}")
        if v.converged:
            rule = (f"R-hat <= {self.rhat_max:.2f}, " if self.num_chains > 1 else "") + \
                f"bulk ESS >= {self.ess_min:.0f}"
            return head + f": converged ({rule})"
        return head + ": " + v.line()

    def to_dict(self) -> dict:
        d = {k: v.tolist() if isinstance(v, np.ndarray) else v
             for k, v in dataclasses.asdict(self).items() if k != "verdict"}
        d.update(converged=self.converged, problems=list(self.verdict.problems),
                 max_rhat=self.worst_rhat, min_ess_bulk=self.min_ess_bulk,
                 min_ess_tail=self.min_ess_tail)
        return d


def diagnose(draws, names: Optional[Sequence[str]] = None, *, nonfinite_potential: int = 0,
             nonfinite_grad: int = 0, num_potential_checked: Optional[int] = None,
             rhat_max: float = RHAT_MAX, ess_min: float = ESS_MIN) -> Diagnostics:
    """Summary and verdict for draws (chain, draw, dim) against rhat_max, ess_min and non-finite counts."""
    x = np.asarray(draws, dtype=np.float64)
    if x.ndim == 2:
        x = x[None]
    if x.ndim != 3 or x.shape[1] < 4:
        raise ValueError(f"draws must be shaped (chain, draw >= 4, dim); got {np.shape(draws)}")
    c, n, d = x.shape
    names = default_names(d) if names is None else [str(s) for s in names]
    if len(names) != d:
        raise ValueError(f"{len(names)} names for {d} parameters")
    bad_rows = ~np.all(np.isfinite(x), axis=2)
    flat = x.reshape(-1, d)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        mean, sd = np.mean(flat, axis=0), np.std(flat, axis=0, ddof=1)
        q05, q95 = np.quantile(flat, [0.05, 0.95], axis=0)
    stats = chain_stats(x)
    problems = []
    if bad_rows.any():
        problems.append(f"{int(bad_rows.sum())} of {c * n} draws are not finite (diverged chains)")
    checked = c * n if num_potential_checked is None else num_potential_checked
    if nonfinite_potential:
        problems.append(f"the potential is not finite at {nonfinite_potential} of {checked} draws "
                        f"({100.0 * nonfinite_potential / max(checked, 1):.1f} %): the chains entered "
                        "a region where the model is NaN/inf (a finite or zero gradient there hides it "
                        "from the sampler); fix the model")
    if nonfinite_grad:
        problems.append(f"the gradient was not finite at {nonfinite_grad} steps")
    r, e = stats["rhat"], stats["ess_bulk"]
    # a coordinate equal in every draw (e.g. the fixed 1 and 0 entries of an LKJ Cholesky factor)
    # has no R-hat (NaN) and nothing to converge
    with np.errstate(all="ignore"):
        constant = np.all(np.isfinite(flat), axis=0) & (
            np.ptp(flat, axis=0) <= 1e-12 * (1.0 + np.abs(mean)))
    bad_r = [names[i] for i in np.flatnonzero(~(r <= rhat_max) & ~constant)] if c > 1 else []
    bad_e = [names[i] for i in np.flatnonzero(~(e >= ess_min) & ~constant)]
    if bad_r:
        problems.append(f"R-hat > {rhat_max:g} for {len(bad_r)} of {d} parameters (max "
                        f"{np.nanmax(r) if np.isfinite(r).any() else np.nan:.3f}: "
                        f"{', '.join(bad_r[:5])}{', ...' if len(bad_r) > 5 else ''})")
    if bad_e:
        problems.append(f"bulk ESS < {ess_min:g} for {len(bad_e)} of {d} parameters (min "
                        f"{np.nanmin(e) if np.isfinite(e).any() else np.nan:.0f}: "
                        f"{', '.join(bad_e[:5])}{', ...' if len(bad_e) > 5 else ''})")
    dg = Diagnostics(names=names, mean=mean, sd=sd, q05=q05, q95=q95, num_chains=c, num_draws=n,
                     nonfinite_draws=int(bad_rows.sum()), nonfinite_potential=int(nonfinite_potential),
                     nonfinite_grad=int(nonfinite_grad), rhat_max=rhat_max, ess_min=ess_min, **stats)
    dg.verdict = Verdict.of(problems, max_rhat=dg.worst_rhat, min_ess_bulk=dg.min_ess_bulk,
                            min_ess_tail=dg.min_ess_tail, num_chains=c, num_draws=n,
                            nonfinite_draws=dg.nonfinite_draws,
                            nonfinite_potential=dg.nonfinite_potential,
                            nonfinite_grad=dg.nonfinite_grad)
    return dg


def summary(draws, names: Optional[Sequence[str]] = None, max_rows: Optional[int] = 40) -> str:
    """Printable table (mean, sd, 5 %/95 %, MCSE, R-hat, bulk/tail ESS) and verdict of draws."""
    dg = diagnose(draws, names)
    return dg.table(max_rows) + "\n" + dg.line()


def count_nonfinite_potential(potential, draws, batch: Optional[int] = None) -> int:
    """Number of draws (chain, draw, dim) at which potential(x) is NaN or infinite."""
    x = np.asarray(draws, dtype=np.float64)
    flat = x.reshape(-1, x.shape[-1])
    flat = flat[np.all(np.isfinite(flat), axis=1)]
    if flat.shape[0] == 0:
        return 0
    return int(np.sum(~np.isfinite(potential_on_rows(potential, flat, batch or BATCH,
                                                      optimized=False))))


__all__ = ["Diagnostics", "diagnose", "summary", "chain_stats", "count_nonfinite_potential",
           "RHAT_MAX", "ESS_MIN"]
