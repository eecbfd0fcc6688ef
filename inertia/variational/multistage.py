"""Multistage batch schedule (Ghadimi & Lan 2013): restart with a growing batch until a gap is met
(docs/guide.md).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional, Sequence

import numpy as np

from .fit import FitResult, fit, make_kernel
from .auto import prepare


@dataclasses.dataclass(repr=False)
class MultistageResult(FitResult):
    """A `FitResult` whose history concatenates the stages; `stages` lists each stage's settings."""

    stages: list = dataclasses.field(default_factory=list)
    target_gap: Optional[float] = None
    reached: Optional[bool] = None


def default_stage_steps(target, method, batch_size, accelerated=None, growth=4.0, **kw) -> int:
    """Updates per stage: ceil(2 s ln(2 growth)) with s the method's acceleration parameter."""
    _, _, _, acc, rule = make_kernel(target, method, accelerated=accelerated,
                                     batch_size=batch_size, **kw)
    s = rule.s if (acc and rule.s) else 1.0 / (rule.eta * target.alpha)
    return max(20, int(math.ceil(2.0 * s * math.log(2.0 * growth))))


def fit_multistage(target, method: str, *, target_gap: Optional[float] = None,
                   batch_sizes: Optional[Sequence[int]] = None, batch_size: int = 1,
                   growth: float = 4.0, max_stages: int = 8,
                   stage_steps: Optional[int | Sequence[int]] = None,
                   max_grad_evals: Optional[float] = None, seed: int = 0,
                   checkpoints_per_stage: int = 10, init=None, accelerated=None,
                   step_size=None, s=None, progress: bool = False, **options) -> MultistageResult:
    """Ghadimi-Lan multistage schedule around `fit`: batch_sizes[k] (default batch_size * growth^k)."""
    if np.ndim(seed) != 0:
        raise ValueError("fit_multistage runs one seed (warm starts are per seed); loop over seeds")
    if target.alpha is None or target.beta is None:  # any target: estimated bounds, Laplace start

        prep = prepare(target, init, seed=int(seed))
        target, init = prep.target, prep.init
    if target_gap is not None:
        if not target_gap > 0:
            raise ValueError(f"target_gap must be positive, got {target_gap}")
        target.require_expectations("stopping at target_gap")
    if batch_sizes is None:
        if not growth > 1:
            raise ValueError(f"growth must exceed 1, got {growth}")
        batch_sizes = [int(round(batch_size * growth ** k)) for k in range(int(max_stages))]
    batch_sizes = [int(b) for b in batch_sizes]
    if not batch_sizes or min(batch_sizes) < 1:
        raise ValueError("batch_sizes must be a non-empty list of positive integers")
    if stage_steps is None or np.ndim(stage_steps) == 0:
        steps = [stage_steps] * len(batch_sizes)
    else:
        steps = [int(n) for n in stage_steps]
        if len(steps) != len(batch_sizes):
            raise ValueError("stage_steps and batch_sizes must have the same length")
    kw = dict(accelerated=accelerated, step_size=step_size, s=s, **options)
    results, stages, current = [], [], init
    total_steps, total_grads = 0, 0
    for k, b in enumerate(batch_sizes):
        g_growth = (b / batch_sizes[k - 1]) if k else growth
        n = steps[k] or default_stage_steps(target, method, b, growth=max(g_growth, 1.5), **kw)
        if max_grad_evals is not None and results:
            g_per = results[-1].cost_per_update[0] * b / max(results[-1].batch_size, 1)
            if total_grads + n * g_per > max_grad_evals:
                break
        res = fit(target, method, batch_size=b, num_steps=int(n), seed=seed + 1000003 * k,
                  checkpoint_every=max(1, int(n) // checkpoints_per_stage), init=current,
                  evaluate=target.expectations is not None, **kw)
        results.append(res)
        gap_end = res.final_gap
        stages.append({"stage": k, "batch_size": b, "num_steps": res.num_steps,
                       "first_step": total_steps, "last_step": total_steps + res.num_steps,
                       "step_size": res.step_rule["eta"], "momentum": res.step_rule["rho"],
                       "gap": gap_end, "seconds": float(res.history["seconds"][-1]),
                       "compile_seconds": res.compile_seconds})
        total_steps += res.num_steps
        total_grads += int(res.history["grad_evals"][-1])
        if progress:
            print(f"  stage {k}: b = {b}, {res.num_steps} updates, gap {gap_end}", flush=True)
        if res.diverged is not None:
            break
        current = (res.mean, res.factor)
        if target_gap is not None and gap_end is not None and gap_end <= target_gap:
            break
    return _combine(results, stages, target_gap)


def _combine(results, stages, target_gap) -> MultistageResult:
    keys = ("step", "grad_evals", "hvp_evals", "seconds")
    hist = {k: [] for k in keys}
    gap, objective = [], []
    offs = dict.fromkeys(keys, 0)
    for i, r in enumerate(results):
        sl = slice(0 if i == 0 else 1, None)  # a stage's first checkpoint is the previous end
        for k in keys:
            hist[k].append(np.asarray(r.history[k])[sl] + offs[k])
            offs[k] = hist[k][-1][-1] if len(hist[k][-1]) else offs[k]
        if r.history["gap"] is not None:
            gap.append(np.asarray(r.history["gap"])[sl])
            objective.append(np.asarray(r.history["objective"])[sl])
    history = {k: np.concatenate(v) for k, v in hist.items()}
    history["gap"] = np.concatenate(gap) if gap else None
    history["objective"] = np.concatenate(objective) if objective else None
    last = results[-1]
    fields = {f.name: getattr(last, f.name) for f in dataclasses.fields(FitResult)}
    fields.update(history=history, num_steps=int(history["step"][-1]),
                  compile_seconds=float(sum(r.compile_seconds for r in results)),
                  diverged=next((r.diverged for r in results if r.diverged), None))
    out = MultistageResult(**fields, stages=stages, target_gap=target_gap)
    if target_gap is not None:
        out.reached = out.final_gap is not None and out.final_gap <= target_gap
    return out


__all__ = ["fit_multistage", "MultistageResult", "default_stage_steps"]
