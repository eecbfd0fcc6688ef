"""`inertia.vi.fit`: run a registered VI method, compiled once, with checkpointed exact gaps."""
from __future__ import annotations

import dataclasses
import math
import sys
import time
import warnings
from typing import Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ..parallel import shard_leading
from .._threads import blas_limited
from ..targets.base import Target, TargetError, check_point
from . import objective as obj
from .registry import Method, StepRule, get_estimator, get_method, momentum

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

    @property
    def final_gap(self):
        g = self.history["gap"]
        if g is None or len(g) == 0:
            return None
        last = np.asarray(g[-1])
        return float(np.mean(last)) if np.all(np.isfinite(last)) else None

    @property
    def multi_seed(self) -> bool:
        return len(self.seeds) > 1

    def sample(self, key, num: int) -> np.ndarray:
        """Draws from the fitted Gaussian(s): (num, d), or (seed, num, d) for several seeds."""
        mean, factor = jnp.asarray(self.mean), jnp.asarray(self.factor)
        if mean.ndim == 1:
            xi = jax.random.normal(key, (num, self.dim), dtype=mean.dtype)
            return np.asarray(mean + xi @ factor.T)
        xi = jax.random.normal(key, (mean.shape[0], num, self.dim), dtype=mean.dtype)
        return np.asarray(mean[:, None, :] + jnp.einsum("snj,sij->sni", xi, factor))

    def to_dict(self) -> dict:
        """JSON-ready summary (the `inertia fit --json` contract)."""
        h = self.history
        rows = []
        for i, step in enumerate(h["step"]):
            gap = np.asarray(h["gap"][i]) if h["gap"] is not None else None
            objective = np.asarray(h["objective"][i]) if h["objective"] is not None else None
            rows.append({
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
        }

    def to_arviz(self, num_draws: int = 1000, seed: int = 0):
        """Draws from q as an ArviZ object with groups posterior (chain = seed)."""
        from ..arviz_io import to_arviz_draws  # optional dependency

        draws = self.sample(jax.random.PRNGKey(seed), num_draws)
        if draws.ndim == 2:
            draws = draws[None]
        return to_arviz_draws(draws)


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
    if coords == "chol":
        A0 = jnp.tril(A0)
    return m0, A0


MAX_BLOCKS = 50  # host round trips per run; checkpoints inside a block share one compiled scan


def _schedule(num_steps, every):
    """Blocks (start, chunks, chunk length) covering num_steps with checkpoints every `every`."""
    nfull, rem = divmod(num_steps, every)
    per = max(1, -(-nfull // MAX_BLOCKS))
    out = [(i * every, min(per, nfull - i), every) for i in range(0, nfull, per)]
    if rem:
        out.append((nfull * every, 1, rem))
    return out


def fit(target: Target, method: str, *, accelerated: Optional[bool] = None, batch_size: int = 1,
        num_steps: int = 1000, seed: int | Sequence[int] = 0, checkpoint_every: Optional[int] = None,
        step_size: Optional[float] = None, s: Optional[float] = None, init=None,
        evaluate: bool = True, progress: bool = False, **options) -> FitResult:
    """Fit N(m, Sigma) to the target with a registered method (spec §4); see `METHODS`.

    Runs `num_steps` updates in at most ~50 compiled `lax.scan` blocks (compiled once), with several
    seeds vmapped when `seed` is a sequence; `seconds` inside a block are interpolated linearly. Gaps F(q_k) - F* are exact for Gaussian targets
    and quadrature-exact for GLM / graph-probit targets (None when the target has no expectations).
    """
    if not isinstance(num_steps, (int, np.integer)) or num_steps < 0:
        raise ValueError(f"num_steps must be a non-negative integer, got {num_steps!r}")
    kernel, m_spec, est, accelerated, rule = make_kernel(
        target, method, accelerated=accelerated, batch_size=batch_size, step_size=step_size, s=s,
        **options)
    seeds = [int(seed)] if np.ndim(seed) == 0 else [int(x) for x in seed]
    if not seeds:
        raise ValueError("seed must be an integer or a non-empty sequence of integers")
    every = int(checkpoint_every or max(1, num_steps // 100 or 1))
    if every < 1:
        raise ValueError("checkpoint_every must be a positive integer")
    m0, A0 = _initial(target, init, kernel.coords)
    state0 = jax.vmap(lambda _: kernel.init(m0, A0))(jnp.arange(len(seeds)))
    keys = jax.vmap(lambda sd: jax.random.split(jax.random.PRNGKey(sd), max(num_steps, 1)))(
        jnp.asarray(seeds))  # (seeds, steps, 2)
    state0, keys = shard_leading((state0, keys))  # seeds across devices when there are several

    def chunk(state, chunk_keys):
        def body(st, k):
            st, info = kernel.step(st, k)
            size = jnp.maximum(jnp.max(jnp.abs(st.m)), jnp.max(jnp.abs(st.A)))
            return st, info.finite & (size < DIVERGENCE_LIMIT)

        return jax.lax.scan(body, state, chunk_keys)

    def block(state, block_keys):  # block_keys: (chunks, chunk length, 2) for one seed
        def outer(st, ck):
            st, ok = chunk(st, ck)
            return st, (st.m, st.A, ok)

        return jax.lax.scan(outer, state, block_keys)

    run_block = jax.jit(jax.vmap(block))
    schedule = _schedule(num_steps, every)
    t0 = time.perf_counter()
    compiled = {}
    for _, n, length in schedule:
        if (n, length) not in compiled:
            compiled[(n, length)] = run_block.lower(
                state0, keys[:, : n * length].reshape(len(seeds), n, length, -1)).compile()
    compile_seconds = time.perf_counter() - t0

    to_cov = jax.jit(jax.vmap(jax.vmap(lambda m, A: kernel.gaussian(type(state0)(m, A, m, A))[1])))
    do_eval = evaluate and target.expectations is not None
    ref = obj.reference(target) if do_eval else None
    gap_rows, obj_rows = [], []

    def record(ms, As):  # ms (k, seeds, d), As (k, seeds, d, d): gaps now, factors not kept
        if not do_eval or ms.shape[0] == 0:
            return
        k, ns, d = ms.shape
        covs = np.asarray(to_cov(jnp.asarray(ms), jnp.asarray(As))).reshape(k * ns, d, d)
        hld = np.asarray(obj.half_logdet(jnp.asarray(As), kernel.coords)).reshape(k * ns)
        g, f = obj.gaps(target, ms.reshape(k * ns, d), covs, ref=ref, half_logdets=hld)
        gap_rows.append(g.reshape(k, ns))
        obj_rows.append(f.reshape(k, ns))

    record(np.asarray(state0.m)[None], np.asarray(state0.A)[None])
    snap_m, steps, seconds = [np.asarray(state0.m)], [0], [0.0]
    last_A = np.asarray(state0.A)
    state, elapsed, diverged = state0, 0.0, None
    for start, n, length in schedule:
        t = time.perf_counter()
        bkeys = keys[:, start:start + n * length].reshape(len(seeds), n, length, -1)
        state, (bm, bA, ok) = compiled[(n, length)](state, bkeys)
        ok = np.asarray(jax.block_until_ready(ok))  # (seeds, chunks, length)
        dt = time.perf_counter() - t
        chunk_ok = ok.all(axis=(0, 2))
        good = n if chunk_ok.all() else int(np.argmin(chunk_ok))
        bm = np.swapaxes(np.asarray(bm)[:, :good], 0, 1)  # (good, seeds, d)
        bA = np.swapaxes(np.asarray(bA)[:, :good], 0, 1)
        record(bm, bA)
        for c in range(good):
            snap_m.append(bm[c])
            steps.append(start + (c + 1) * length)
            seconds.append(elapsed + dt * (c + 1) / n)
        if good:
            last_A = bA[-1]
        elapsed += dt
        if good < n:
            flat = ok[:, good].all(axis=0)
            bad = start + good * length + int(np.argmin(flat))
            bad_seeds = [seeds[i] for i in np.where(~ok[:, good].all(axis=1))[0]]
            diverged = {"step": bad + 1, "last_finite_step": steps[-1], "seeds": bad_seeds,
                        "reason": "non-finite or exploding iterate (gradient or step too large)"}
            warnings.warn(f"{m_spec.name}: divergence at step {bad + 1} (seeds {bad_seeds}); "
                          f"stopping and returning the last finite state (step {steps[-1]})",
                          RuntimeWarning, stacklevel=2)
            break
        if progress:
            print(f"  step {steps[-1]}/{num_steps}  {elapsed:.1f}s", file=sys.stderr, flush=True)

    steps = np.asarray(steps)
    g_per, h_per = est.cost(target.dim, batch_size)
    gap = np.concatenate(gap_rows) if do_eval else None
    objective_vals = np.concatenate(obj_rows) if do_eval else None
    f_star = ref.value if do_eval else None
    history = {"step": steps, "gap": gap, "objective": objective_vals,
               "grad_evals": steps * g_per, "hvp_evals": steps * h_per,
               "seconds": np.asarray(seconds)}
    final_m = snap_m[-1]
    final_cov = np.asarray(to_cov(jnp.asarray(final_m)[None], jnp.asarray(last_A)[None]))[0]
    factor = last_A if kernel.coords != "cov" else np.linalg.cholesky(final_cov)
    single = len(seeds) == 1
    if single:
        final_m, final_cov, factor = final_m[0], final_cov[0], factor[0]
    return FitResult(
        method=m_spec.name, accelerated=accelerated, batch_size=int(batch_size),
        num_steps=int(steps[-1]), dim=target.dim, seeds=seeds, mean=final_m, cov=final_cov,
        factor=factor, coords=kernel.coords, history=history,
        step_rule={"eta": rule.eta, "s": rule.s,
                   "rho": momentum(rule.s) if accelerated and rule.s else 0.0},
        f_star=f_star, cost_per_update=(g_per, h_per), compile_seconds=compile_seconds,
        diverged=diverged, target_name=target.name)


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
