"""`FitResult`: the outcome of `inertia.vi.fit` (final Gaussian, checkpoint history, verdict)."""
from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Callable, Optional

import numpy as np

from .. import _warnings
from .._random import host_normal
from .._scope import float64_methods
from ..results.base import Result
from ..results.build import fit_summary
from ..verdict import Verdict
from ..posterior import format_table
from .quality import corrected_rows, resample
from ..targets.reparam import describe_reparam
from .._cost import describe


@float64_methods  # draws, predictive checks, tables in float64 (inertia._scope)
@dataclasses.dataclass(repr=False)
class FitResult(Result):
    """Outcome of `fit` (a leading seed axis with several seeds).

    `history`: step, gap, objective, grad_evals, hvp_evals, seconds over checkpoints (NaN: unavailable).
    """

    method: str
    accelerated: bool
    batch_size: int
    num_steps: int
    dim: int
    seeds: list
    mean: np.ndarray
    cov: np.ndarray
    factor: np.ndarray
    coords: str
    history: dict
    step_rule: dict
    f_star: Optional[float]
    cost_per_update: tuple
    compile_seconds: float
    diverged: Optional[dict] = None
    target_name: str = ""
    curvature: Optional[dict] = None  # how estimated bounds were found (targets.curvature)
    bounds: Optional[dict] = None  # alpha, beta used; whether estimated; feasible-set bounds
    events: list = dataclasses.field(default_factory=list)  # recoveries, widenings
    # the stop (numbers["stop"], ["step"], ...; `variational.verdict`) and q's quality (`variational.quality`)
    verdict: Verdict = dataclasses.field(default_factory=lambda: Verdict(False, ("no verdict",)))
    averaged: Optional[dict] = None  # tail averaging of the last checkpoints
    restarts: int = 0  # momentum restarts (adaptive restart)
    names: Optional[list] = None  # parameter names of the flat coordinates
    constrain: Optional[Callable] = dataclasses.field(default=None, repr=False)
    dtype: str = "float64"  # the float type the updates ran in (history and results: float64)
    model_info: Optional[dict] = dataclasses.field(default=None, repr=False)  # results.build
    quality: Optional[dict] = None  # Pareto k-hat, PSIS ESS and verdict of q (variational.quality)
    quality_weights: Optional[np.ndarray] = dataclasses.field(default=None, repr=False)
    cost: Optional[dict] = None  # seconds per gradient, compile seconds, memory (inertia._cost)
    kind = "fit"

    @property
    def final_gap(self):
        g = self.history["gap"]
        if g is None or len(g) == 0:
            return None
        last = np.asarray(g[-1])
        return float(np.mean(last)) if np.all(np.isfinite(last)) else None

    @property
    def final_objective(self):
        """Seed-mean objective estimate F_hat at the last checkpoint (None without the monitor)."""
        f = self.history.get("objective_estimate")
        if f is None or len(f) == 0:
            return None
        last = np.asarray(f[-1])
        return float(np.mean(last)) if np.all(np.isfinite(last)) else None

    @property
    def multi_seed(self) -> bool:
        return len(self.seeds) > 1

    def sample(self, key, num: int) -> np.ndarray:
        """Draws from the fitted Gaussian(s): (num, d), or (seed, num, d) for several seeds."""
        mean, factor = np.asarray(self.mean), np.asarray(self.factor)
        if mean.ndim == 1:
            xi = np.asarray(host_normal(key, (num, self.dim), mean.dtype))
            return mean + xi @ factor.T
        xi = np.asarray(host_normal(key, (mean.shape[0], num, self.dim), mean.dtype))
        return mean[:, None, :] + np.einsum("snj,sij->sni", xi, factor)

    def to_dict(self) -> dict:
        """JSON-ready summary (the `inertia fit --json` contract)."""
        h = self.history
        rows = []
        est = h.get("objective_estimate")
        for i, step in enumerate(h["step"]):
            gap = np.asarray(h["gap"][i]) if h["gap"] is not None else None
            objective = np.asarray(h["objective"][i]) if h["objective"] is not None else None
            extra = {} if est is None else {
                "objective_estimate": _num(np.mean(est[i])),
                "objective_stderr": _num(np.mean(h["objective_stderr"][i]))}
            rows.append({**extra,
                "step": int(step),
                "gap": _num(np.mean(gap)) if gap is not None else None,
                "objective": _num(np.mean(objective)) if objective is not None else None,
                "grad_evals": int(h["grad_evals"][i]),
                "hvp_evals": int(h["hvp_evals"][i]),
                "seconds": float(h["seconds"][i]),
                **({"gap_per_seed": [_num(v) for v in gap]} if self.multi_seed and gap is not None
                   else {}),
            })
        return {
            "method": self.method, "accelerated": self.accelerated, "batch_size": self.batch_size,
            "num_steps": self.num_steps, "dim": self.dim, "seeds": self.seeds,
            "target": self.target_name, "coords": self.coords,
            "mean": np.asarray(self.mean).tolist(), "cov": np.asarray(self.cov).tolist(),
            "checkpoints": rows, "final_gap": self.final_gap, "f_star": self.f_star,
            "step_size": self.step_rule["eta"], "momentum": self.step_rule["rho"],
            "cost_per_update": {"grad_evals": self.cost_per_update[0],
                                "hvp_evals": self.cost_per_update[1]},
            "compile_seconds": self.compile_seconds, "diverged": self.diverged,
            "names": self.names or [f"x[{i}]" for i in range(self.dim)],
            "final_objective": self.final_objective, "bounds": self.bounds,
            "curvature": self.curvature, "events": self.events, "averaged": self.averaged,
            "restarts": self.restarts, "dtype": self.dtype, **self.verdict_dict(),
            "quality": self.quality, "cost": self.cost, "reparam": getattr(self, "reparam", None),
        }

    def summary(self, num_draws: int = 4000, seed: int = 0) -> list:
        """Rows (name, mean, sd, 5 %, 95 %) of q's marginals, with PSIS-corrected twins where k-hat <= 0.7."""
        line = None if self.converged else self.verdict.line()
        if line is not None:
            _warnings.warn(f"{self.method}: {line}; these marginals are not to be trusted",
                          RuntimeWarning)
        elif self.verdict.quality == "unreliable":
            _warnings.warn(f"{self.method}: {self.quality['message']}", RuntimeWarning)
        return corrected_rows(self, fit_summary(self, num_draws, seed))

    def table(self, **kw) -> str:
        """The summary as an aligned text table, headed by its verdict lines."""
        with warnings.catch_warnings():  # said in the table itself
            warnings.simplefilter("ignore", RuntimeWarning)
            rows = self.summary(**kw)
        return "\n".join([*self.verdict_lines(), format_table(rows, table_columns(rows))])

    def verdict_lines(self) -> list:
        """NOT CONVERGED and its reason, the approximation's quality, and which columns are corrected."""
        out = super().verdict_lines()
        if self.quality is not None:
            out.append(self.quality["message"])
            if self.quality.get("corrected"):
                out.append("columns *_psis: importance-corrected (PSIS) estimates; the others are "
                           "the Gaussian's")
        return out

    def report(self) -> str:
        """How the fit ran and ended: optimiser verdict, approximation quality, the table."""
        out = self.to_dict()
        with warnings.catch_warnings():  # said in the report itself
            warnings.simplefilter("ignore", RuntimeWarning)
            out["summary"] = self.summary()
        return report_text(self, out, None)

    def psis_draws(self, num_draws: Optional[int] = None, seed: int = 0) -> np.ndarray:
        """(num_draws, d) draws of q resampled by their PSIS weights; refused when k-hat > 0.7."""
        return resample(self, num_draws, seed)

    def _shape(self) -> str:
        seeds = f", {len(self.seeds)} seeds" if len(self.seeds) > 1 else ""
        return (f"{self.method} on {self.target_name or 'target'}: d = {self.dim}, "
                f"{self.num_steps} updates{seeds}")


def table_columns(rows) -> list:
    """mean, sd, q5, q95 and, when the rows have them, their PSIS-corrected twins."""
    cols = ["mean", "sd", "q5", "q95"]
    if rows and "mean_psis" in rows[0]:
        cols += ["mean_psis", "sd_psis", "q5_psis", "q95_psis"]
    return cols


def _num(v):
    v = float(v)
    return v if math.isfinite(v) else None


def hitting_step(result: FitResult, threshold: float, *, relative: bool = False):
    """First checkpoint step where the seed-mean gap is <= threshold (x initial gap if relative), or None."""
    g = result.history["gap"]
    if g is None:
        raise ValueError("this fit has no gap history")
    mean = np.asarray(g, dtype=float).reshape(len(result.history["step"]), -1).mean(axis=1)
    level = threshold * mean[0] if relative else threshold
    hit = np.nonzero(mean <= level)[0]
    return int(result.history["step"][hit[0]]) if hit.size else None


def report_text(res, out, total) -> str:
    """The printed result: how it ran, whether it converged, and the posterior table."""
    last = out["checkpoints"][-1]
    lines = [f"{res.method} ({'accelerated' if res.accelerated else 'plain'}), b = "
             f"{res.batch_size}, {res.num_steps} updates | {last['grad_evals']} gradient + "
             f"{last['hvp_evals']} HVP queries | "
             f"{'' if res.dtype == 'float64' else res.dtype + ' | '}updates {last['seconds']:.2f} s "
             f"(their compile {res.compile_seconds:.2f} s"
             + ("" if total is None else f"; whole run {total:.2f} s") + ")"]
    if res.curvature:
        c = res.curvature
        where = ("in coordinates whitened by the Laplace start; target's "
                 if res.bounds.get("whitened") else "")
        lines.append(f"bounds estimated: alpha = {res.bounds['alpha']:.3g}, beta = "
                     f"{res.bounds['beta']:.3g} ({where}Hessian spectrum "
                     f"[{min(c['lambda_min']):.3g}, {max(c['lambda_max']):.3g}] at the MAP and "
                     f"Laplace draws, margin x{c['margin']:g})")
    if out["final_gap"] is not None:
        lines.append(f"final gap {out['final_gap']:.3e} nats (exact)")
    if out.get("final_objective") is not None:
        se = last.get("objective_stderr")
        lines.append(f"objective F(q) = {out['final_objective']:.6g}"
                     + (f" +- {se:.2g} (Monte Carlo s.e.)" if se is not None else ""))
    v = res.verdict
    if "stop" in v.numbers:
        lines.append(f"stopped at update {v.numbers['step']}: "
                     + (v.numbers["stop"] if v.converged else v.line()))
    if getattr(res, "reparam", None):
        lines.append(describe_reparam(res.reparam))
    for e in res.events:
        if e["event"] == "reparameterised":
            continue
        lines.append(f"note: {e['event']} at update {e['step']}"
                     + (f" ({e['reason']})" if "reason" in e else ""))
    if res.diverged:
        lines.append(f"warning: diverged at step {res.diverged['step']} "
                     f"({res.diverged['reason']}); result is the last finite state")
    if not res.converged:
        lines.append(out.get("verdict") or "NOT CONVERGED")
    if res.quality is not None:
        q = res.quality
        lines.append(q["message"])
    if getattr(res, "cost", None):
        lines.append(describe(res.cost))
    lines.append("posterior (Gaussian approximation; constrained marginals"
                 + ("; *_psis columns importance-corrected (PSIS)"
                    if res.quality is not None and res.quality.get("corrected") else "")
                 + ("); NOT CONVERGED, not to be trusted:" if not res.converged else "):"))
    lines.append(format_table(out["summary"], table_columns(out["summary"])))
    return "\n".join(lines)


__all__ = ["FitResult", "hitting_step"]
