"""`inertia.vi.fit`: run a registered VI method, compiled once, with checkpointed exact gaps."""
from __future__ import annotations

import dataclasses
import math
import time
import warnings
from typing import Callable, NamedTuple, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ..parallel import shard_leading
from .._random import check_seed, host_normal
from .._threads import blas_limited
from ..targets.base import Target, TargetError, check_point
from . import objective as obj
from . import verdict as verdicts
from .verdict import headline
from .auto import DEFAULT_METHOD, boundary, choose_method, default_batch, prepare, warn_small_batch
from .monitor import ObjectiveMonitor, StoppingRule
from .recorder import _Recorder
from .registry import Method, StepRule, get_estimator, get_method, momentum
from .restart import with_restart

DIVERGENCE_LIMIT = 1e30  # |mean| or |factor| entries above this count as divergence


@dataclasses.dataclass
class FitResult:
    """Outcome of `fit`. With several seeds, arrays carry a leading seed axis.

    `history` holds numpy arrays over checkpoints: step, gap, objective, grad_evals, hvp_evals,
    seconds (gap/objective have a seed axis when several seeds ran; NaN where unavailable).
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
    stopped: Optional[dict] = None  # the stopping rule's verdict, when it ended the run
    averaged: Optional[dict] = None  # tail averaging of the last checkpoints
    restarts: int = 0  # momentum restarts (adaptive restart)
    names: Optional[list] = None  # parameter names of the flat coordinates
    constrain: Optional[Callable] = dataclasses.field(default=None, repr=False)
    dtype: str = "float64"  # the float type the updates ran in (history and results: float64)
    model_info: Optional[dict] = dataclasses.field(default=None, repr=False)  # results.build

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
    def converged(self) -> Optional[bool]:
        """The verdict of `stopped` (always set by `fit`; False after a divergence)."""
        from ..results.build import fit_verdict

        return fit_verdict(self)["converged"]

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
            "curvature": self.curvature, "events": self.events, "stopped": self.stopped,
            "averaged": self.averaged, "restarts": self.restarts, "dtype": self.dtype,
            "converged": self.converged, "verdict": headline(self.stopped) or "converged",
        }

    def summary(self, num_draws: int = 4000, seed: int = 0) -> list:
        """Rows (name, mean, sd, 5 %, 95 %) of q's marginals, constrained by site for NumPyro
        models (Monte Carlo over `num_draws` draws of q per seed, the draws of `to_arviz`)."""
        from ..results.build import fit_summary

        line = headline(self.stopped)
        if line is not None:
            warnings.warn(f"{self.method}: {line}; these marginals are not to be trusted",
                          RuntimeWarning, stacklevel=2)
        return fit_summary(self, num_draws, seed)

    def table(self, **kw) -> str:
        """The summary as an aligned text table, headed by NOT CONVERGED and the reason when the
        run did not converge."""
        from ..posterior import format_table

        line = headline(self.stopped)
        with warnings.catch_warnings():  # said in the table itself
            warnings.simplefilter("ignore", RuntimeWarning)
            text = format_table(self.summary(**kw))
        return text if line is None else f"{line}\n{text}"

    def to_arviz(self, num_draws: int = 4000, seed: int = 0, log_likelihood: bool = True):
        """InferenceData of `num_draws` draws of q per seed (chain = seed) pushed through the
        constraints, by site (NumPyro models) or parameter name; log_likelihood and observed_data
        for NumPyro models; q's mean and cov in the attributes (`inertia.results.build`)."""
        from ..results.build import fit_to_arviz

        return fit_to_arviz(self, num_draws, seed, log_likelihood=log_likelihood)

    def save(self, path, **kw):
        """Write the InferenceData, settings and verdict as netCDF (`inertia.load` reads it)."""
        from ..results.store import save

        return save(self, path, **kw)

    def predictive(self, rng_key, *model_args, **kwargs) -> dict:
        """Posterior predictive draws by site at q's draws (NumPyro's Predictive)."""
        from ..results.predictive import predictive

        return predictive(self, rng_key, *model_args, **kwargs)

    def __repr__(self) -> str:
        from ..results.api import fit_repr

        return fit_repr(self)


def _num(v):
    v = float(v)
    return v if math.isfinite(v) else None


def resolve_step(method: Method, target: Target, batch_size: int, accelerated: bool,
                 step_size=None, s=None) -> StepRule:
    """Default step size / acceleration parameter of spec §3 and §6, with overrides."""
    target.require_bounds()
    rule = method.step_rule(target.alpha, target.beta, target.dim, batch_size)
    eta = rule.eta if step_size is None else float(step_size)
    s = rule.s if s is None else float(s)
    if accelerated and s is None:
        raise ValueError(f"method {method.name!r} has no acceleration parameter")
    if not (eta > 0 and math.isfinite(eta)):
        raise ValueError(f"step size must be positive and finite, got {eta}")
    return StepRule(eta, s)


def make_kernel(target: Target, method: str | Method, *, accelerated=None, batch_size=1,
                step_size=None, s=None, **options):
    """(kernel, method, estimator, accelerated, StepRule) for a registered method on a target."""
    m = get_method(method) if isinstance(method, str) else method
    est = get_estimator(m)
    if accelerated is None:
        accelerated = m.accelerable
    if accelerated and not m.accelerable:
        raise ValueError(f"method {m.name!r} is a baseline without an accelerated variant; "
                         "pass accelerated=False")
    if not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    if est.exact:
        target.require_expectations(f"method {m.name!r}")
    if est.needs_hvp and target.hvp is None:
        raise TargetError(f"method {m.name!r} needs Hessian-vector products, which target "
                          f"{target.name!r} does not provide")
    rule = resolve_step(m, target, batch_size, accelerated, step_size, s)
    kernel = m.build(target, est, accelerated, int(batch_size), rule.eta, rule.s, options)
    return kernel, m, est, bool(accelerated), rule


def _initial(target, init, coords):
    d = target.dim
    if init is None:
        m0, A0 = jnp.zeros(d), jnp.eye(d)
    else:
        m0, A0 = (jnp.asarray(a, dtype=jnp.float64) for a in init)
        if m0.shape != (d,) or A0.shape != (d, d):
            raise ValueError(f"init must be (mean ({d},), factor ({d}, {d})); got "
                             f"{m0.shape}, {A0.shape}")
    check_point(target, m0)
    return m0, to_coords(A0, coords)


def to_coords(F, coords):
    """A factor F (F F^T = Sigma) in the kernel's coordinates: Cholesky, symmetric root, or as is
    for "cov" kernels (whose init squares it); kept bitwise when F is already of that form."""
    F = jnp.asarray(F)
    host = np.asarray(F)  # the form checks in numpy: no compilation for them
    if coords == "chol":
        return F if np.array_equal(host, np.tril(host)) else jnp.linalg.cholesky(F @ F.T)
    if coords == "sym" and not np.array_equal(host, host.T):
        w, Q = jnp.linalg.eigh(F @ F.T)
        return (Q * jnp.sqrt(jnp.maximum(w, 0.0))) @ Q.T
    return F


REESTIMATE_EVERY = 25  # checkpoints between curvature re-estimates at draws of q (auto mode)
AVERAGING_FACTOR = 4  # averaging runs 4x as many updates as it took to reach the plateau
AVERAGING_STEP_DECAY = 4.0  # the averaging phase runs at a quarter of the step: a smaller bias
MAX_EXTENSIONS = 4  # averaging restarts while F_hat still falls at the end of the phase
MAX_BLOCKS = 50  # host round trips per run; checkpoints inside a block share one compiled scan


def _schedule(num_steps, every):
    """Blocks (start, chunks, chunk length) covering num_steps with checkpoints every `every`."""
    nfull, rem = divmod(num_steps, every)
    per = max(1, -(-nfull // MAX_BLOCKS))
    out = [(i * every, min(per, nfull - i), every) for i in range(0, nfull, per)]
    if rem:
        out.append((nfull * every, 1, rem))
    return out


def _block_fn(kernel_at):
    """jit(vmap over seeds) of a block: scan over chunks of scanned steps, snapshots per chunk.

    `kernel_at(params)` builds the kernel inside the trace from the step parameters (eta, s), an
    unbatched argument: a new step size (averaging, recovery) reuses the compiled block."""
    def block(state, block_keys, params):  # block_keys: (chunks, chunk length, 2) for one seed
        kernel = kernel_at(params)

        def body(st, k):
            st, info = kernel.step(st, k)
            size = jnp.maximum(jnp.max(jnp.abs(st.m)), jnp.max(jnp.abs(st.A)))
            return st, (info.finite & (size < DIVERGENCE_LIMIT), jnp.asarray(info.restarted))

        def outer(st, ck):
            st, (ok, restarted) = jax.lax.scan(body, st, ck)
            return st, (st.m, st.A, ok, jnp.sum(restarted))

        return jax.lax.scan(outer, state, block_keys)

    return jax.jit(jax.vmap(block, in_axes=(0, 0, None)))


# what a kernel builder may raise when the step size it is given is a tracer (a Python-level use of
# the number): such methods compile the step size in as a constant instead
_CONCRETE_ONLY = (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError,
                  jax.errors.TracerIntegerConversionError)


class _Options(NamedTuple):
    restart: bool
    recover: bool
    widen: bool
    monitor: bool
    tol: Optional[float]
    average: bool
    window: int
    whiten: bool = False  # auto mode: run in coordinates where the start is N(0, I)
    extend: bool = False  # auto mode: restart averaging while F_hat still falls at its end


def _resolve(target, method, accelerated, restart, recover, widen, monitor, tol, average, window,
             evaluate, whiten=None, extend=None):
    auto = method is None or target.alpha is None or target.beta is None
    acc = get_method(method or DEFAULT_METHOD).accelerable if accelerated is None else accelerated
    restart = bool(auto and acc) if restart is None else bool(restart)
    recover = auto if recover is None else bool(recover)
    widen = auto if widen is None else bool(widen)
    tol = (1e-4 if auto else None) if tol is None else float(tol)
    monitor = bool(evaluate and (auto or tol is not None or target.expectations is None)
                   ) if monitor is None else bool(monitor)
    if tol is not None and not monitor:
        raise ValueError("the stopping rule (tol=) needs the objective monitor (monitor=True)")
    average = (tol is not None) if average is None else bool(average)
    return _Options(restart, recover, widen, monitor, tol, average, int(window),
                    bool(auto and target.expectations is None) if whiten is None else bool(whiten),
                    bool(average) if extend is None else bool(extend))


def fit(target: Target, method: Optional[str] = None, *, accelerated: Optional[bool] = None,
        batch_size: Optional[int] = None, num_steps: Optional[int] = None,
        seed: int | Sequence[int] = 0, checkpoint_every: Optional[int] = None,
        step_size: Optional[float] = None, s: Optional[float] = None, init=None,
        evaluate: bool = True, progress: bool = False, tol: Optional[float] = None,
        restart: Optional[bool] = None, recover: Optional[bool] = None,
        widen: Optional[bool] = None, monitor: Optional[bool] = None,
        average: Optional[bool] = None, window: int = 10, monitor_draws: int = 256,
        max_recoveries: int = 4, keep_iterates: bool = False, hessian_check: Optional[bool] = None,
        whiten: Optional[bool] = None, extend: Optional[bool] = None,
        dtype: str = "float64", **options) -> FitResult:
    """Fit N(m, Sigma) to the target with a registered method (spec §4); see `METHODS`.

    Paper mode (a method and curvature bounds given): the paper's algorithm, unchanged, for
    `num_steps` updates (default 1000) in at most ~50 compiled `lax.scan` blocks; several seeds are
    vmapped. Automatic mode (no method, or bounds missing): bounds estimated from the target
    (`inertia.targets.curvature`), start at the Laplace fit, default method `stl-proj`
    (`ngvi-reparam` when the whitened target's estimated kappa >= `auto.SWITCH_KAPPA`), adaptive
    momentum restart, divergence recovery with a smaller step, feasible-set widening, and the
    stopping rule on the common-random-number objective estimate (tol 1e-4 nats, at most
    `num_steps` = 20000 updates) followed by averaging the last `window` checkpoints (restarted at
    half the step while F_hat still falls at its end: `extend`); on targets without exact
    expectations the run happens in coordinates whitened by the start (`whiten`). Each switch
    can be set explicitly; `result.stopped["converged"]` is False when `num_steps` ended the run.
    Gaps F(q_k) - F* are exact for Gaussian targets and quadrature-exact for
    GLM / graph-probit targets; `history["objective_estimate"]` is F_hat for any target.
    `keep_iterates=True` adds history["mean"] (k, seeds, d) and ["factor"] (Cholesky of each
    checkpoint's covariance, (k, seeds, d, d)).
    `dtype="float32"` runs the updates (draws, the target's derivatives, the kernel's linear
    algebra) in float32 on `target.astype("float32")`; bounds, start, gaps, the objective monitor
    and the results stay float64 (docs/benchmarks/speed.md "float32 and the GPU path").
    """
    dtype = _dtype_name(dtype)
    source = target
    auto_method = method is None
    opts = _resolve(target, method, accelerated, restart, recover, widen, monitor, tol, average,
                    window, evaluate, whiten, extend)
    method = method or DEFAULT_METHOD
    if num_steps is None:
        num_steps = 20000 if opts.tol is not None else 1000
    if not isinstance(num_steps, (int, np.integer)) or num_steps < 0:
        raise ValueError(f"num_steps must be a non-negative integer, got {num_steps!r}")
    seeds = [check_seed(seed)] if np.ndim(seed) == 0 else [check_seed(x) for x in seed]
    if not seeds:
        raise ValueError("seed must be an integer or a non-empty sequence of integers")
    if checkpoint_every is not None and (not isinstance(checkpoint_every, (int, np.integer))
                                         or checkpoint_every < 1):
        raise ValueError(f"checkpoint_every must be a positive integer, got {checkpoint_every!r}")
    m_spec = get_method(method)
    if batch_size is None:
        batch_size = 1 if get_estimator(m_spec).exact else default_batch(method, target.dim)
    _check_memory(m_spec, target.dim, batch_size, len(seeds))
    from ..progress import progress as progress_bar

    bar = progress_bar("fit", progress)
    if target.alpha is None or target.beta is None:
        bar.phase("curvature bounds and start (MAP, Laplace)")
    prep = prepare(target, init, seed=seeds[0], verbose=progress)
    target, init = prep.target, prep.init
    wh = None
    if opts.whiten and init is not None and target.expectations is None:
        from .auto import whiten_start

        out = whiten_start(target, init, seed=seeds[0])
        if out is not None:
            target, init, wh = out
    chosen = choose_method(target, prep.curvature) if auto_method and wh is not None else None
    if chosen is not None:
        method, m_spec = chosen["method"], get_method(chosen["method"])
        opts = opts._replace(restart=opts.restart and m_spec.accelerable)  # the batch is kept
        _check_memory(m_spec, target.dim, batch_size, len(seeds))
    warn_small_batch(method, target.dim, batch_size)
    runner = _Runner(target, method, accelerated, batch_size, step_size, s, opts, options,
                     len(seeds), dtype=dtype)
    every = int(checkpoint_every or (min(runner.auto_every(opts.window, monitor_draws),
                                         max(1, num_steps // 100))
                                     if opts.tol is not None else max(1, num_steps // 100 or 1)))
    m0, A0 = _initial(target, init, runner.kernel.coords)
    if hessian_check is None:  # built-in targets with exact expectations are smooth by design
        hessian_check = target.expectations is None
    if runner.est.needs_hvp and hessian_check:
        _check_hessian(target, m0, A0, runner.kernel.coords, method)
    if wh is not None:
        runner.objective_offset = -wh.log_det
    bar.phase("fitting (compile, then updates)", total=num_steps)
    try:
        res = runner.run(m0, A0, seeds, num_steps, every, evaluate, bar if progress else None,
                         monitor_draws, max_recoveries, prep.curvature, keep_iterates)
    finally:
        bar.close()
    if prep.improper is not None:
        res.stopped = verdicts.improper_verdict(prep.improper, res.history["step"][-1])
        res.events.append({"event": "improper target", "step": 0, "reason": res.stopped["reason"]})
        warnings.warn(f"{res.method}: {res.stopped['reason']}", RuntimeWarning, stacklevel=2)
    if wh is not None:
        from .auto import unwhiten

        res.events.insert(0, {"event": "whitened", "step": 0, "log_det": wh.log_det,
                              "alpha": target.alpha, "beta": target.beta})
        if chosen is not None:
            res.events.insert(1, chosen)
        res = unwhiten(res, wh)
    res.dtype = dtype
    from ..results.build import model_info

    res.model_info = model_info(source)
    return res


def _dtype_name(dtype):
    """"float32" or "float64" (the float type of the updates); anything else is refused."""
    name = np.dtype(dtype).name if dtype is not None else "float64"
    if name not in ("float32", "float64"):
        raise ValueError(f"dtype must be 'float32' or 'float64', got {dtype!r}")
    return name


def _check_memory(m_spec, d, batch_size, num_seeds):
    """Refuse, before compiling, a run whose d x d (and b x d x d) arrays exceed free memory."""
    from ..resources import available_bytes, estimate_fit_bytes, largest_dim

    est = get_estimator(m_spec)
    coords = {"cov": "bw"}.get(est.coords, est.coords)
    need = estimate_fit_bytes(coords, d, batch_size, num_seeds, needs_hvp=est.needs_hvp)
    have = available_bytes()
    if need > have:
        top = largest_dim(coords, batch_size, num_seeds, needs_hvp=est.needs_hvp, budget=have)
        raise MemoryError(f"{m_spec.name} at d = {d}, batch {batch_size}, {num_seeds} seed(s) "
                          f"needs about {need / 2**30:.1f} GiB and {have / 2**30:.1f} GiB is free; "
                          f"the largest d that fits is about {top}")


def _check_hessian(target, m0, A0, coords, method):
    """Warn when HVP-based and gradient-only curvature disagree at the start (a kink in V)."""
    from .checks import Z_WARN, hessian_consistency

    F = A0 if coords != "cov" else jnp.linalg.cholesky(A0)
    z = hessian_consistency(target, m0, F)
    if z > Z_WARN:
        warnings.warn(f"{method}: Hessian-vector products and the gradient-only (Stein) estimate "
                      f"of E_q hess V disagree at the start (|z| = {z:.3g}): the potential is "
                      "probably not twice differentiable (|x|, hinges), and Hessian-based methods "
                      "then converge to the wrong Gaussian; use a gradient-only method such as "
                      "stl-proj", RuntimeWarning, stacklevel=3)


class _Runner:
    """Builds the kernel (rebuilt with a smaller step on divergence, a wider set on the boundary),
    compiles each block shape once, and drives blocks with checkpoints, monitor and stopping."""

    def __init__(self, target, method, accelerated, batch_size, step_size, s, opts, options,
                 num_seeds, dtype="float64"):
        self.dtype = dtype
        self.target, self.opts, self.options = target, opts, dict(options)
        self.batch_size, self.num_seeds = int(batch_size), num_seeds
        self.method, self.accelerated, self.step_size, self.s = method, accelerated, step_size, s
        self.set_bounds = (target.alpha, target.beta)
        self.eta_scale = 1.0
        self.compile_seconds = 0.0
        self.events = []
        self.traced = True  # step parameters as arguments of the compiled block (see _compiled)
        self.objective_offset = 0.0  # F_hat of the target = F_hat of the run + this (whitening)
        self._build()

    def _build(self):
        opts = dict(self.options)
        if (get_method(self.method).feasible
                and self.set_bounds != (self.target.alpha, self.target.beta)):
            opts["set_bounds"] = self.set_bounds  # only methods with a feasible set take it
        step = None
        s = self.s
        if self.eta_scale != 1.0:
            _, _, _, _, rule = make_kernel(self.target, self.method, accelerated=self.accelerated,
                                           batch_size=self.batch_size, step_size=self.step_size,
                                           s=self.s, **self.options)
            step = rule.eta * self.eta_scale
            s = rule.s / math.sqrt(self.eta_scale) if rule.s else None
        elif self.step_size is not None:
            step = self.step_size
        target = self.target.astype(self.dtype)
        kernel, self.m_spec, self.est, self.accelerated, self.rule = make_kernel(
            target, self.method, accelerated=self.accelerated, batch_size=self.batch_size,
            step_size=step, s=s, **opts)
        self.kernel = self._wrap(kernel)
        self.params = jnp.asarray([self.rule.eta, self.rule.s or 0.0], dtype=self.dtype)
        structure = (target, opts.get("set_bounds"), self.rule.s is None)  # new bounds: new target
        if self.traced and structure == getattr(self, "_structure", None):
            return  # only eta and s changed: the compiled blocks take them as arguments
        self._structure = structure
        if self.traced:
            m, est, acc, b, has_s = (self.m_spec, self.est, self.accelerated, self.batch_size,
                                     self.rule.s is not None)
            self.run_block = _block_fn(lambda p: self._wrap(m.build(
                target, est, acc, b, p[0], p[1] if has_s else None, opts)))
        else:
            self.run_block = _block_fn(lambda p, k=self.kernel: k)
        self.compiled = {}

    def _wrap(self, kernel):
        """The built kernel with float64 starts cast to the run's dtype and momentum restart."""
        if self.dtype != "float64":  # starts and restarts arrive in float64
            init, dt = kernel.init, jnp.dtype(self.dtype)
            kernel = kernel._replace(init=lambda m, A: init(m.astype(dt), A.astype(dt)))
        if self.opts.restart and self.accelerated and kernel.lookahead is not None:
            kernel = with_restart(kernel)
        return kernel

    def _reestimate(self, rec) -> bool:
        """Estimated bounds, re-measured at draws of the current q: a MAP's curvature can be far
        from the typical set's (funnels). Rebuild with the new step when beta moved > 3x."""
        from ..targets.curvature import bounds_under

        m, A = rec.final[0][0], rec.final[1][0]
        cov = np.asarray(rec.to_cov(jnp.asarray(m)[None, None], jnp.asarray(A)[None, None]))[0, 0]
        try:
            L = np.linalg.cholesky(cov)
        except np.linalg.LinAlgError:
            return False
        new = bounds_under(self.target, m, L, seed=len(rec.steps))
        if new is None:
            return False
        a, b, hvps = new
        rec.hvp_offset += hvps
        if 1.0 / 3.0 < b / self.target.beta < 3.0:
            return False
        a = min(a, b)
        self.events.append({"event": "bounds re-estimated", "step": rec.steps[-1],
                            "alpha": a, "beta": b, "previous": [self.target.alpha,
                                                                 self.target.beta]})
        self.target = self.target.replace(alpha=float(a), beta=float(b))
        self.set_bounds = (min(self.set_bounds[0], a), max(self.set_bounds[1], b))
        self._build()
        return True

    def auto_every(self, window, monitor_draws=None):
        """Checkpoint spacing for the stopping rule: a window spans ~4 s updates (s: the
        acceleration parameter; 1 / (eta alpha) for plain methods; 1 / eta for natural-gradient
        ones), the scale of one contraction; natural-gradient runs check at most every
        monitor_draws / b updates (the monitor's potential calls at most the updates' gradients)."""
        if self.m_spec.natural:
            s = 1.0 / self.rule.eta
            floor = math.ceil(monitor_draws / self.batch_size) if monitor_draws else 1
            return int(min(max(floor, round(4.0 * s / window)), 1000))
        s = self.rule.s if (self.accelerated and self.rule.s) else 1.0 / (
            self.rule.eta * self.target.alpha)
        return int(min(max(1, round(4.0 * s / window)), 1000))

    def _compiled(self, state, n, length):
        if (n, length) not in self.compiled:
            t0 = time.perf_counter()
            dummy = jnp.zeros((self.num_seeds, n, length, 2), dtype=jnp.uint32)
            try:
                lowered = self.run_block.lower(state, dummy, self.params)
            except _CONCRETE_ONLY:  # the method's builder needs concrete numbers
                self.traced = False
                self._structure = None
                self._build()
                lowered = self.run_block.lower(state, dummy, self.params)
            self.compiled[(n, length)] = lowered.compile()
            self.compile_seconds += time.perf_counter() - t0
        return self.compiled[(n, length)]

    def run(self, m0, A0, seeds, num_steps, every, evaluate, progress, monitor_draws,
            max_recoveries, curvature, keep_iterates=False):
        target, opts, kernel = self.target, self.opts, self.kernel
        state = jax.jit(jax.vmap(lambda _: kernel.init(m0, A0)))(jnp.arange(len(seeds)))
        state = shard_leading(state)
        rec = _Recorder(target, kernel, evaluate, opts.monitor, monitor_draws, seeds[0])
        rec.keep_iterates = bool(keep_iterates)
        rule = StoppingRule(opts.tol, opts.window) if opts.tol is not None else None
        rec.add(0, 0.0, np.asarray(state.m, np.float64)[None],
                np.asarray(state.A, np.float64)[None])
        keys = _keys(seeds, num_steps, 0)
        schedule = (_schedule(num_steps, every) if rule is None
                    else [(i, 1, min(every, num_steps - i)) for i in range(0, num_steps, every)])
        diverged, stopped, restarts = None, None, 0
        elapsed, attempt, low_hits, high_hits = 0.0, 0, 0, 0
        extended, earlier = 0, []  # averages before each extension
        queue = list(schedule)
        while True:
            if not queue:
                if not (opts.extend and rec.avg_start is not None and _falling(rule, z=1.0)
                        and rec.steps[-1] < num_steps and extended < MAX_EXTENSIONS):
                    break
                extended += 1  # still falling: restart the average here at half the step
                ev = {"event": "averaging extended", "step": rec.steps[-1],
                      "decrease": rule.decrease, "stderr": rule.stderr}
                earlier.append(rec.final)
                rec.start_averaging()
                rule = StoppingRule(opts.tol, opts.window, confident=True)
                self.eta_scale /= 2.0
                self._build()
                kernel = self.kernel
                self.events.append({**ev, "step_size": self.rule.eta})
                until = min(num_steps, rec.steps[-1] * 2)
                queue = [(i, 1, min(every, until - i)) for i in range(rec.steps[-1], until, every)]
                continue
            start, n, length = queue.pop(0)
            fn = self._compiled(state, n, length)
            t = time.perf_counter()
            bkeys = keys[:, start:start + n * length].reshape(len(seeds), n, length, -1)
            new_state, (bm, bA, ok, nr) = fn(state, bkeys, self.params)
            ok = np.asarray(jax.block_until_ready(ok))
            dt = time.perf_counter() - t
            restarts += int(np.asarray(nr).sum())
            chunk_ok = ok.all(axis=(0, 2))
            good = n if chunk_ok.all() else int(np.argmin(chunk_ok))
            bm = np.swapaxes(np.asarray(bm, np.float64)[:, :good], 0, 1)
            bA = np.swapaxes(np.asarray(bA, np.float64)[:, :good], 0, 1)
            steps_b = [start + (c + 1) * length for c in range(good)]
            secs = [elapsed + dt * (c + 1) / n for c in range(good)]
            bad_draws = rec.add_block(steps_b, secs, bm, bA)
            elapsed += dt
            if bad_draws is not None:  # V non-finite on draws of q at checkpoint index bad_draws
                good = bad_draws
            state = new_state
            failed = good < n
            if failed:
                bad_step = start + good * length + 1
                reason = ("potential V non-finite on draws of q (the log density is NaN or "
                          "-inf where q puts mass)" if bad_draws is not None else
                          "non-finite or exploding iterate (gradient or step too large)")
                hopeless = bad_draws is not None and bool(np.any(rec.est_bad[0] > 0))
                if opts.recover and attempt < max_recoveries and not hopeless:
                    attempt += 1
                    self.eta_scale /= 4.0
                    self._build()
                    self.events.append({"event": "recovery", "step": bad_step,
                                        "restart_from": rec.steps[-1], "reason": reason,
                                        "step_size": self.rule.eta})
                    warnings.warn(f"{self.m_spec.name}: {reason} at step {bad_step}; restarting "
                                  f"from step {rec.steps[-1]} with step size {self.rule.eta:.3g}",
                                  RuntimeWarning, stacklevel=3)
                    kernel = self.kernel
                    state = rec.restart_state(kernel)
                    resume = rec.steps[-1]
                    keys = _keys(seeds, num_steps, attempt)
                    queue = [(i, 1, min(every, num_steps - i)) for i in range(resume, num_steps,
                                                                                  every)]
                    continue
                bad_seeds = [seeds[i] for i in np.where(~ok[:, min(good, n - 1)].all(axis=1))[0]]
                diverged = {"step": bad_step, "last_finite_step": rec.steps[-1],
                            "seeds": bad_seeds or seeds, "reason": reason}
                warnings.warn(f"{self.m_spec.name}: divergence at step {bad_step} ({reason}); "
                              f"stopping and returning the last finite state "
                              f"(step {rec.steps[-1]})", RuntimeWarning, stacklevel=3)
                break
            if opts.widen and self.m_spec.feasible:
                sides = [boundary(self.m_spec.feasible, A, *self.set_bounds) for A in rec.last_A]
                low, high = any(x[0] for x in sides), any(x[1] for x in sides)
                low_hits, high_hits = (low_hits + 1) * low, (high_hits + 1) * high
                if low_hits >= 3 or high_hits >= 3:
                    a, b = self.set_bounds
                    self.set_bounds = (a / 4.0 if high_hits >= 3 else a,
                                       b * 4.0 if low_hits >= 3 else b)
                    self.events.append({"event": "widened", "step": rec.steps[-1],
                                        "side": "upper" if high_hits >= 3 else "lower",
                                        "set_bounds": list(self.set_bounds)})
                    warnings.warn(f"{self.m_spec.name}: the iterate sits on the "
                                  f"{'upper' if high_hits >= 3 else 'lower'} boundary of the "
                                  f"feasible set built from the estimated bounds; widening it",
                                  RuntimeWarning, stacklevel=3)
                    low_hits = high_hits = 0
                    self._build()
                    kernel = self.kernel
                    state = rec.restart_state(kernel)
            if (curvature is not None and rec.avg_start is None and len(rec.steps) >= 20
                    and len(rec.steps) % REESTIMATE_EVERY == 0 and self._reestimate(rec)):
                kernel = self.kernel
                state = rec.restart_state(kernel)
            if progress:
                _progress(progress, rec, self.objective_offset)
            if rule is not None and any(rule.update(rec.seed_mean_draws(i))
                                        for i in range(-good, 0)):
                verdict = {"step": rec.steps[-1], "decrease": rule.decrease,
                           "stderr": rule.stderr, "window_checkpoints": opts.window}
                if opts.average and rec.avg_start is None:  # plateau: average from here on
                    self.events.append({"event": "averaging", **verdict})
                    rec.start_averaging()
                    rule = StoppingRule(opts.tol, opts.window, confident=True)
                    self.eta_scale /= AVERAGING_STEP_DECAY  # smaller steps: a smaller bias
                    self._build()
                    kernel = self.kernel
                    until = min(num_steps, rec.steps[-1] * (1 + AVERAGING_FACTOR))
                    queue = [q for q in queue if q[0] < until]
                    continue
                stopped = {"reason": "objective converged", "converged": True, **verdict}
                break
        if earlier and diverged is None:
            kept = rec.keep_lowest(earlier)
            if kept:
                self.events.append(kept)
        if rec.avg_start is not None:
            kept = rec.keep_best()
            if kept:
                self.events.append(kept)
        if diverged is not None:
            stopped = verdicts.diverged_verdict(diverged, rec.steps[-1])
        elif stopped is None and rule is None:  # no stopping rule: judged from the trace
            stopped = verdicts.trace_verdict(rec, opts.window)
        if diverged is None and not opts.widen:  # given bounds: is the projection still binding?
            wrong = verdicts.boundary_verdict(self.m_spec.feasible, rec.last_A, self.set_bounds,
                                             rec.steps[-1], self.m_spec.name)
            if wrong is not None:
                self.events.append({"event": "bounds look wrong", "step": rec.steps[-1],
                                    "reason": wrong["reason"]})
                stopped = wrong
        if stopped is None and diverged is None and rule is not None:
            stopped = _budget_verdict(rec, rule, num_steps)
            if not stopped["converged"]:
                hint = ("; on a target that is not log-concave, method='ngvi-reparam' may "
                        "converge where stl-proj does not (docs/vi.md)"
                        if self.method == DEFAULT_METHOD else "")
                warnings.warn(f"{self.m_spec.name}: {stopped['reason']} (step {stopped['step']}); "
                              f"raise num_steps{hint}", RuntimeWarning, stacklevel=3)
        return rec.result(self, seeds, diverged, stopped, restarts, curvature)


def _falling(rule, z=None):
    """The stopping rule's last window shows a decrease of F_hat > max(tol, z s.e.) (z: the rule's)."""
    return (rule is not None and rule.decrease is not None
            and rule.decrease > max(rule.tol, (rule.z if z is None else z) * rule.stderr))


def _budget_verdict(rec, rule, num_steps):
    """Why a monitored run ended without the stopping rule firing: the averaging phase ran its
    course, or the budget ended it; either way whether F_hat was still falling (unconverged)."""
    falling = _falling(rule)
    out = {"step": rec.steps[-1], "decrease": rule.decrease, "stderr": rule.stderr,
           "converged": False}
    if rec.avg_start is not None:
        out["averaging_from"] = rec.avg_start
        cut = rec.steps[-1] >= num_steps and num_steps < rec.avg_start * (1 + AVERAGING_FACTOR)
        out["converged"] = not (falling or cut)
        out["reason"] = ("averaging finished" if not (falling or cut) else
                         "NOT CONVERGED: num_steps ended the averaging phase early"
                         + (" with F_hat still falling" if falling else ""))
    else:
        out["reason"] = ("NOT CONVERGED: num_steps reached with F_hat still falling" if falling else
                         "NOT CONVERGED: num_steps reached before the objective was seen to "
                         "plateau")
    return out


def _keys(seeds, num_steps, attempt):
    return jax.vmap(lambda sd: jax.random.split(
        jax.random.fold_in(jax.random.PRNGKey(sd), attempt) if attempt else jax.random.PRNGKey(sd),
        max(num_steps, 1)))(jnp.asarray(seeds))  # (seeds, steps, 2)


def _progress(bar, rec, offset=0.0):
    """The bar at the last checkpoint, with F_hat in the target's coordinates (offset: the
    whitening's log-determinant, as `unwhiten` applies it)."""
    f = rec.est_value[-1] if rec.est_value else None
    bar.update(max(rec.steps[-1] - bar.done, 0),
               F_hat=None if f is None else float(np.nanmean(f)) + offset)


def hitting_step(result: FitResult, threshold: float, *, relative: bool = False):
    """First checkpoint step where the seed-mean gap is <= threshold (x initial gap if relative).

    Returns None when the run never gets there (right-censored).
    """
    g = result.history["gap"]
    if g is None:
        raise ValueError("this fit has no gap history")
    mean = np.asarray(g, dtype=float).reshape(len(result.history["step"]), -1).mean(axis=1)
    level = threshold * mean[0] if relative else threshold
    hit = np.nonzero(mean <= level)[0]
    return int(result.history["step"][hit[0]]) if hit.size else None


fit = blas_limited(fit)  # one BLAS thread around the compiled work (inertia._threads)
