"""`inertia.vi.fit`: run a registered VI method, compiled once, with checkpointed exact gaps.

The driver is a composition: `prepare` (bounds and start, `auto`), whitening (`auto`), the method
choice, then `runner.Runner` whose loop consults the policies `recovery`, `widen`, `averaging` and
the stopping rule of `monitor`; `options.FitOptions` holds their switches.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from .. import _cost, _warnings, _prefetch
from .._random import check_seed
from .._scope import entry_point
from ..targets.base import Target
from . import verdict as verdicts
from .auto import (DEFAULT_METHOD, Prepared, choose_method, default_batch, prepare,
                   warn_small_batch, whiten_start, unwhiten)
from ..progress import warn_long_run, progress as progress_bar
from .build import check_init, initial, make_kernel, resolve_step, to_coords
from .checks import check_fixed_run, check_hessian, check_memory
from .runstate import fixed_every
from .options import FitOptions, resolve, split
from .prefit import mode_free_start, needs_prefit
from .registry import get_estimator, get_method
from .result import FitResult, hitting_step
from .runner import Runner
from .factor import choose_family, fit_family
from ..results.build import model_info
from .quality import assess


def fit(target: Target, method: Optional[str] = None, *, num_steps: Optional[int] = None,
        seed: int | Sequence[int] = 0, batch_size: Optional[int] = None,
        step_size: Optional[float] = None, init=None, progress: bool = False,
        dtype: str = "float64", options: Optional[FitOptions] = None, **keywords) -> FitResult:
    """Fit N(m, Sigma) to the target with a registered method; see `METHODS`.

    Paper mode (a method and curvature bounds given): the paper's algorithm, unchanged, for
    `num_steps` updates (default 1000) in at most ~50 compiled `lax.scan` blocks; several seeds are
    vmapped. Automatic mode (no method, or bounds missing): bounds estimated from the target
    (`inertia.targets.curvature`), start at the Laplace fit, default method `stl-proj`
    (`ngvi-reparam` when the whitened target's estimated kappa >= `auto.SWITCH_KAPPA`), adaptive
    momentum restart, divergence recovery with a smaller step, feasible-set widening, and the
    stopping rule on the common-random-number objective estimate (tol 1e-4 nats, at most
    `num_steps` = 20000 updates) followed by averaging the last `window` checkpoints; on targets
    without exact expectations the run happens in coordinates whitened by the start.
    `result.verdict` (`inertia.verdict.Verdict`, `numbers["stop"]` why the run stopped) is not
    converged when `num_steps` ended the run.

    `quality=True` (default) then judges q as an answer (`variational.quality`, either mode, the run
    unchanged): Pareto k-hat of the weights p~/q on 4000 (then up to 64,000) draws of q per seed,
    the PSIS ESS and a verdict (adequate k < 0.5, usable with correction 0.5-0.7, unreliable
    > 0.7) in `result.verdict.quality` and its numbers (the check's record: `result.quality`);
    PSIS-corrected columns in the summary where k <= 0.7. `ensure="adequate"` (or "usable"): when
    the fit did not converge or q falls short, run the exact sampler from draws of q and return its
    result (`.fit` this fit, `.escalated` why; `workflows.escalate`). Both are `FitOptions` fields.

    `options` (a `FitOptions`) sets any of these switches; each of its fields may also be given by
    keyword (`fit(t, tol=1e-5, restart=False)`), overriding `options`; other keywords are the
    method's own options (`Method.options`, e.g. `control=False` for ngvi). A name that is neither
    raises a TypeError listing the valid ones.
    Gaps F(q_k) - F* are exact for Gaussian targets and quadrature-exact for
    GLM / graph-probit targets; `history["objective_estimate"]` is F_hat for any target.
    `dtype="float32"` runs the updates (draws, the target's derivatives, the kernel's linear
    algebra) in float32 on `target.astype("float32")`; bounds, start, gaps, the objective monitor
    and the results stay float64 (docs/benchmarks/speed.md "float32 and the GPU path").
    """
    dtype = _dtype_name(dtype)
    meter = _cost.Meter().start()  # compile seconds and wall time of this fit (`result.cost`)
    source = target
    auto_method = method is None
    method = method or DEFAULT_METHOD
    m_spec = get_method(method)
    opts, method_options = split(options, keywords, m_spec)
    quality = opts.quality or opts.ensure is not None  # escalation needs the check
    if quality:  # PSIS (variational.quality) needs ArviZ at the end: import it meanwhile

        _prefetch.module("arviz")
    opts = resolve(opts, target, m_spec, auto_method or target.alpha is None
                   or target.beta is None)
    num_steps, seeds = _steps_and_seeds(num_steps, opts, seed)
    res = _factor_fit(target, None if auto_method else method, opts, seeds, num_steps,
                      batch_size, step_size, init, progress, dtype)
    if res is not None:  # Sigma = B B^T + D^2 (variational.factor): no d x d matrix
        res = _finish(res, source, target, Prepared(target, None, None), None, None, dtype,
                      quality)
        return _with_cost(res, meter, res.pop_programs())
    if batch_size is None:
        batch_size = 1 if get_estimator(m_spec).exact else default_batch(method, target.dim)
    check_memory(m_spec, target.dim, batch_size, len(seeds))
    bar = progress_bar("fit", progress)
    if target.alpha is None or target.beta is None:
        bar.phase("curvature bounds and start (MAP, Laplace)")
    if opts.tol is None:  # a fixed run: refused if its blocks cannot fit, announced if long
        check_fixed_run(num_steps, fixed_every(num_steps, opts.checkpoint_every), len(seeds))
        warn_long_run(num_steps)
    given = check_init(target, init)
    prep = prepare(target, given, seed=seeds[0], verbose=progress)
    target, init = prep.target, prep.init
    wh = None
    if opts.whiten and init is not None and target.expectations is None:
        out = whiten_start(target, init, seed=seeds[0])
        if out is not None:
            target, init, wh = out
    chosen = choose_method(target, prep.curvature) if auto_method and wh is not None else None
    if chosen is not None:
        method, m_spec = chosen["method"], get_method(chosen["method"])
        opts = opts.replace(restart=opts.restart and m_spec.accelerable)  # the batch is kept
        check_memory(m_spec, target.dim, batch_size, len(seeds))
    warn_small_batch(method, target.dim, batch_size)
    runner = Runner(target, method, opts, batch_size, step_size, method_options, len(seeds),
                    dtype=dtype)
    every = runner.checkpoint_every(num_steps)
    m0, A0 = initial(target, init, runner.kernel.coords)
    # built-in targets with exact expectations are smooth by design
    hessian_check = (target.expectations is None if opts.hessian_check is None
                     else opts.hessian_check)
    if runner.est.needs_hvp and hessian_check:
        check_hessian(target, m0, A0, runner.kernel.coords, method)
    if wh is not None:
        runner.objective_offset = -wh.log_det
    bar.phase("fitting (compile, then updates)", total=num_steps)
    try:
        res = runner.run(m0, A0, seeds, num_steps, every, bar if progress else None,
                         prep.curvature)
    finally:
        bar.close()
    if needs_prefit(prep.curvature, given is not None) and not res.verdict.converged:
        again = _mode_free(source, prep, res, None if auto_method else method, opts, seed,
                           num_steps, batch_size, step_size, progress, dtype, method_options)
        if again is not None:
            return again
    # `ensure` (the sampler where q falls short) is the public `inertia.vi.fit`'s (workflows.fit)
    res = _finish(res, source, target, prep, wh, chosen, dtype, quality)
    return _with_cost(res, meter, list(runner.compiled.values()))


def _steps_and_seeds(num_steps, opts, seed) -> tuple:
    """(num_steps, seeds) checked; num_steps defaults to 20000 under a stopping tolerance, else 1000."""
    if num_steps is None:
        num_steps = 20000 if opts.tol is not None else 1000
    if not isinstance(num_steps, (int, np.integer)) or num_steps < 0:
        raise ValueError(f"num_steps must be a non-negative integer, got {num_steps!r}")
    seeds = [check_seed(seed)] if np.ndim(seed) == 0 else [check_seed(x) for x in seed]
    if not seeds:
        raise ValueError("seed must be an integer or a non-empty sequence of integers")
    return num_steps, seeds


def _factor_fit(target, method, opts, seeds, num_steps, batch_size, step_size, init, progress,
                dtype):
    """The factor-family fit (`variational.factor`) where `choose_family` picks it for this d; else None."""
    family, why = choose_family(target.dim, method, opts.family,
                                batch_size or default_batch(method or DEFAULT_METHOD, target.dim),
                                len(seeds))
    if family != "factor":
        return None
    if method is not None:
        raise ValueError(f"method {method!r} fits the full-rank family; the factor family "
                         "takes no method (fit(target, family='factor'))")
    return fit_family(target, seeds=seeds, num_steps=num_steps, batch_size=batch_size,
                      step_size=step_size, init=check_init(target, init), opts=opts,
                      progress=progress, why=why, dtype=dtype)


def _mode_free(source, prep, first, named, opts, seed, num_steps, batch_size, step_size, progress,
               dtype, method_options):
    """The fit again from the start that needs no mode (`variational.prefit`), where the mode search did not
    converge and the run from the Laplace start at the search's start point did not converge
    either; None where that start is no better than the Laplace start. Every gradient of the first
    run and of the pre-fit counts in the result's."""
    start, event, grads = mode_free_start(prep.target, prep.init, num_steps=num_steps,
                                          tol=opts.tol, window=opts.window,
                                          seed=seed if np.ndim(seed) == 0 else seed[0],
                                          dtype=dtype)
    if not event["used"]:
        return None
    res = fit(source, named, num_steps=num_steps, seed=seed, batch_size=batch_size,
              step_size=step_size, init=start, progress=progress, dtype=dtype, options=opts,
              **method_options)
    spent = int(np.asarray(first.history["grad_evals"])[-1]) + grads
    res.history["grad_evals"] = np.asarray(res.history["grad_evals"]) + spent
    event["reason"] = (f"the run from the Laplace start ended: {first.verdict.line()}; "
                       + event["reason"])
    event["first_run"] = {"method": first.method, "steps": int(first.history["step"][-1]),
                          "verdict": first.verdict.line()}
    res.events.insert(0, event)
    return res


def _with_cost(res, meter, programs):
    """`res.cost` (`inertia._cost`): seconds per gradient of the compiled updates (their run time
    over their gradients, an HVP as two), compile seconds, program memory, peak RSS."""
    h = res.history
    g_per, h_per = res.cost_per_update
    seeds = len(res.seeds)
    res.cost = _cost.summary(run_seconds=float(np.asarray(h["seconds"])[-1]),
                             gradients=int(h["step"][-1]) * (g_per + 2 * h_per) * seeds,
                             meter=meter.stop(), programs=programs)
    return res


def _finish(res, source, target, prep, wh, chosen, dtype, quality=True):
    """The run's result in the user's coordinates, with the improper-target verdict, the
    whitening and method-choice events, the dtype, the model's description and the quality check."""
    if prep.improper is not None:
        res.verdict = verdicts.improper_verdict(prep.improper, res.history["step"][-1])
        res.events.append({"event": "improper target", "step": 0,
                           "reason": res.verdict.numbers["stop"]})
        _warnings.warn(f"{res.method}: {res.verdict.line()}", RuntimeWarning)
    if wh is not None:
        res.events.insert(0, {"event": "whitened", "step": 0, "log_det": wh.log_det,
                              "alpha": target.alpha, "beta": target.beta})
        if chosen is not None:
            res.events.insert(1, chosen)
        res = unwhiten(res, wh)
    res.dtype = dtype
    res.model_info = model_info(source)
    if quality:
        res.quality, res.quality_weights = assess(source, res)
        res.verdict = verdicts.with_quality(res.verdict, res.quality)
    return res


def _dtype_name(dtype):
    """"float32" or "float64" (the float type of the updates); anything else is refused."""
    name = np.dtype(dtype).name if dtype is not None else "float64"
    if name not in ("float32", "float64"):
        raise ValueError(f"dtype must be 'float32' or 'float64', got {dtype!r}")
    return name


def _block_length(target, kwargs, length):
    """The VI block's run length for its tier: the run's, with the default batch when none is given
    (the block's work grows with the batch; `run_length` counts a given one already)."""
    if kwargs.get("batch_size") is not None:
        return length
    return length * default_batch(DEFAULT_METHOD, getattr(target, "dim", 1)) / 8.0


# float64, one BLAS thread, fewer garbage collections, the target's compile tier (inertia._scope)
fit = entry_point("fit", _block_length)(fit)

__all__ = ["fit", "FitResult", "FitOptions", "hitting_step", "make_kernel", "resolve_step",
           "to_coords", "initial"]
