"""`sample(target, method, ...)`: vmapped chains of one registry kernel, compiled once per shape."""
from __future__ import annotations

import dataclasses
import functools
import inspect
import math
from typing import NamedTuple, Optional

import jax
import numpy as np

from .. import _warnings
from .. import _compile, _cost, resources
from .. import convergence
from .._random import check_seed
from .._scope import entry_point, float64_methods
from ..progress import warn_long_run, progress as progress_bar
from ..results.base import Result
from ..verdict import Verdict
from . import blocks, reparam_run
from .adaptation import Report, Settings, get_scheme
from .kernels import Params, get_method
from .options import SampleOptions
from .adapt import describe_adaptation
from ..diagnostics import default_names, count_nonfinite_potential, diagnose
from ..results.build import model_info
from ..targets.reparam import describe_reparam


@float64_methods  # draws, predictive checks, tables in float64 (inertia._scope)
@dataclasses.dataclass(repr=False)
class SampleResult(Result):
    """Draws (chain, draw, dim), per-step info (chain, step), gradient counts and the run's settings.

    Fields `grad_evals`, `warmup_grad_evals`, `total_grad_evals`, `chains`, `diverged_at`,
    `diagnostics`, `tuning` and `bias`: docs/hfhr.md, "API" and "Warm-up and tuning".
    """

    draws: np.ndarray
    info: dict
    method: str
    params: dict
    num_steps: int
    thinning: int
    grad_evals: int
    seed: int
    diverged_at: np.ndarray
    final_state: object = None
    diagnostics: object = None
    tuning: Optional[dict] = None
    bias: Optional[dict] = None
    names: Optional[list] = None
    warmup_grad_evals: int = 0
    burn_in_default: float = 0.5
    preconditioner: Optional[tuple] = None  # (mean, factor): the chains ran on z, x = mean + factor z
    model_info: Optional[dict] = dataclasses.field(default=None, repr=False)  # results.build
    total_grad_evals: int = 0
    chains: Optional[dict] = None
    reparam: Optional[dict] = None  # sites rewritten and their centredness (mcmc.reparam_run)
    cost: Optional[dict] = None  # seconds per gradient of the sampling phase, compile, memory (_cost)
    fit: object = None  # the fit an escalation started from (`workflows.escalate`)
    escalated: Optional[str] = None  # why an escalation ran the sampler (`workflows.escalate`)
    stopped: Optional[dict] = None  # why the run stopped, its re-adaptations (`_sample_until_converged`)
    kind = "sample"

    @property
    def verdict(self) -> Verdict:
        """The run's `inertia.verdict.Verdict`: the diagnostics' problems and the numbers behind them."""
        if self.diagnostics is None:
            return Verdict(False, ("not diagnosed (too few draws after burn-in, or "
                                   "diagnostics=False)",))
        v = self.diagnostics.verdict
        if self.escalated:
            v = v.with_numbers(escalated=self.escalated)
        if self.chains:
            v = v.with_numbers(divergences=int(np.sum(self.chains["divergences"])),
                               min_acceptance_rate=float(np.min(self.chains["acceptance_rate"])))
        if self.reparam:
            v = v.with_numbers(reparameterised={k: s["centredness"]
                                                for k, s in self.reparam["sites"].items()})
        return v

    @property
    def num_chains(self) -> int:
        return self.draws.shape[0]

    def _kept(self, burn_in):
        n = self.draws.shape[1]
        burn_in = self.burn_in_default if burn_in is None else burn_in
        start = int(round(burn_in * n)) if isinstance(burn_in, float) else int(burn_in)
        if not 0 <= start < n:
            raise ValueError(f"burn_in leaves no draws ({start} of {n})")
        return self.draws[:, start:]

    def moments(self, burn_in=None) -> tuple:
        """(mean, covariance) of the draws after burn_in (fraction or count; 0 after a warm-up)."""
        x = self._kept(burn_in)
        return x.mean(axis=(0, 1)), np.atleast_2d(np.cov(x.reshape(-1, x.shape[2]), rowvar=False))

    @property
    def mean(self) -> np.ndarray:
        """Mean of the kept draws in the unconstrained coordinates (`names`)."""
        return self._kept(None).mean(axis=(0, 1))

    @property
    def cov(self) -> np.ndarray:
        """Covariance of the kept draws in the unconstrained coordinates."""
        return self.moments()[1]

    def ess(self, burn_in=None) -> np.ndarray:
        """Bulk effective sample size per coordinate of the kept draws (rank-normalised)."""
        return convergence.ess_bulk(self._kept(burn_in))

    def report(self, max_rows: Optional[int] = 40) -> str:
        """Human-readable account: parameters and how they were chosen, summary table, bias, verdict."""
        lines = [f"{self.method} {_fmt_params(self.params)}: {self.num_chains} chains x "
                 f"{self.num_steps} steps (thinning {self.thinning}); {self.grad_evals} gradients per "
                 f"chain + {self.warmup_grad_evals} in warm-up; {self.total_grad_evals} in all "
                 "(fit, warm-up and every chain)"]
        if self.tuning:
            lines.append("tuning: " + describe_tuning(self.tuning))
        if self.reparam:
            lines.append(describe_reparam(self.reparam))
        if self.chains:
            c = self.chains
            lines.append(f"exact (Metropolis-adjusted) chains, step size {c['step_size']:.4g}: "
                         + ("; ".join(f"chain {i}: acceptance {a:.3f}, {n} divergences"
                                      for i, (a, n) in enumerate(zip(c["acceptance_rate"],
                                                                     c["divergences"])))
                            if len(c["divergences"]) <= 8 else  # many chains: the range
                            f"{len(c['divergences'])} chains, acceptance "
                            f"{min(c['acceptance_rate']):.3f} to {max(c['acceptance_rate']):.3f}"
                            f", {sum(c['divergences'])} divergences in all"))
        if self.diagnostics is not None:
            lines.append(self.diagnostics.table(max_rows))
        if self.bias:
            lines.append(describe_bias(self.bias, self.diagnostics))
        if self.cost:
            lines.append(_cost.describe(self.cost))
        if self.diagnostics is not None:
            lines.append(self.diagnostics.line(self.verdict))
        return "\n".join(lines)


@functools.lru_cache(maxsize=8)
def _chain_keys(num_chains: int):
    """seed -> (num_chains, 3, 2) keys: split(split(PRNGKey(seed), num_chains)[c], 3), one program."""
    return _compile.jit(lambda seed: jax.vmap(lambda k: jax.random.split(k, 3))(
        jax.random.split(jax.random.PRNGKey(seed), num_chains)))


def _fmt_params(p: dict) -> str:
    return "(" + ", ".join(f"{k} = {v:.4g}" for k, v in p.items()) + ")"


def describe_tuning(t: dict) -> str:
    """One paragraph on how the warm-up chose the parameters."""
    if t.get("kind") == "adaptation":
        return describe_adaptation(t)
    tu = t["tuning"]
    cur = "; ".join(f"{c['where']}: [{c['min']:.3g}, {c['max']:.3g}]" for c in t["curvature"])
    chk = t["bias_checks"][-1] if t["bias_checks"] else None
    found = "found" if t["fit"]["map_converged"] else "NOT converged"
    out = (f"{t['precondition']} preconditioner (x = m + L z; MAP {found}); "
           f"whitened Hessian eigenvalues {cur}; (h, gamma, alpha) with the fewest gradients per "
           f"effective sample on a Gaussian with that spectrum ({tu['tau']:.1f}) and stationary sd "
           f"within {100 * t['bias_tol']:.0f} %; warm-up runs of {t['warmup_steps']} steps")
    if chk:
        out += (f"; h vs h/2 check {'passed' if chk['passed'] else 'FAILED'} "
                f"(significant excess bias {chk['excess']:.3g})")
    if t["retunes"]:
        out += "; " + "; ".join(t["retunes"])
    return out


def describe_bias(b: dict, dg=None) -> str:
    """Discretisation bias beside the Monte Carlo error, both in posterior sds."""
    parts = []
    if b.get("sd_rel_exact_gaussian") is not None:
        parts.append(f"exact-Gaussian stationary bias at the {b['where']}: sds off by up to "
                     f"{100 * b['sd_rel_exact_gaussian']:.1f} %, means exact")
    if b.get("warmup_bias_mean") is not None:
        seen = [f"{v:.3f} sd in means" if k == "mean" else f"{100 * v:.1f} % in sds"
                for k, v, p in (("mean", b["warmup_bias_mean"], b["warmup_p_mean"]),
                                ("sd", b["warmup_bias_sd"], b["warmup_p_sd"])) if p < 1e-3]
        parts.append("h vs h/2 on warm-up draws: " + (
            "significant RMS bias " + ", ".join(seen) if seen else
            f"no bias beyond Monte Carlo noise (chi-square p = {b['warmup_p_mean']:.2g} for means, "
            f"{b['warmup_p_sd']:.2g} for sds)"))
    if dg is not None and np.isfinite(dg.sd).all() and np.all(dg.sd > 0):
        parts.append(f"Monte Carlo error of the means: up to {np.max(dg.mcse_mean / dg.sd):.3f} sd")
    return "discretisation bias: " + "; ".join(parts) + (
        ". Lower h (step_size) when the bias is comparable to the Monte Carlo error you need."
        if parts else "")


def parameter_names(target, names=None) -> list:
    """Names of the coordinates: given names, target.info["names"], NumPyro sites, or x[i]."""
    if names is not None:
        names = [str(n) for n in names]
        if len(names) != target.dim:
            raise ValueError(f"{len(names)} names for a target of dimension {target.dim}")
        return names
    info = getattr(target, "info", None) or {}
    if info.get("names") is not None and len(info["names"]) == target.dim:
        return [str(n) for n in info["names"]]
    if "sites" in info:
        out = []
        for site in sorted(info["sites"]):
            shape = tuple(info["sites"][site])
            size = int(np.prod(shape)) if shape else 1
            out += [site] if not shape else [f"{site}[{','.join(map(str, i))}]"
                                             for i in np.ndindex(*shape)][:size]
        if len(out) == target.dim:
            return [f"{n} (unconstrained)" for n in out]
    return default_names(target.dim)


def summary_draws(target, draws, names):
    """Draws and names for the printed table: NumPyro models in their constrained sites."""
    info = getattr(target, "info", None) or {}
    if "constrain" in info:
        try:
            sites = info["constrain"](draws)
        except Exception:  # the table falls back to the unconstrained coordinates
            return draws, names
        cols, labels = [], []
        for site in sorted(sites):
            v = np.asarray(sites[site], dtype=np.float64)
            if v.shape[:2] != draws.shape[:2]:
                continue
            flat = v.reshape(v.shape[0], v.shape[1], -1)
            cols.append(flat)
            shape = v.shape[2:]
            labels += [site] if not shape else [f"{site}[{','.join(map(str, i))}]"
                                                for i in np.ndindex(*shape)]
        if len(cols) == 1:  # one site: its draws as they are, not a copy
            return cols[0], labels
        if cols:
            return np.concatenate(cols, axis=2), labels
    return draws, names


DEFAULT_TARGET_ESS = 400.0
DEFAULT_METHOD = "hfhr-exact"
# exact kernel: warm-ups again after divergences (the frame refitted to the halted run's draws, a
# higher target acceptance): the budget of discarded attempts
MAX_RETRIES = 3
BUDGET = 100  # max_steps by default: BUDGET x num_steps per chain (the run's extensions stop there)
READAPTS = 1  # warm-ups again, from the chains' positions, after the chains disagree


@entry_point("sample")  # float64, one BLAS thread, fewer GC passes, the target's compile tier
def sample(target, method: str = DEFAULT_METHOD, *, num_chains: int = 4,
           num_steps: Optional[int] = None, seed: int = 0, init=None, progress: bool = False,
           names=None, options: Optional[SampleOptions] = None, **keywords) -> SampleResult:
    """Run `num_chains` chains of `method` until converged; keep every `thinning`-th state; diagnose.

    `init`: None (the warm-up's states), a point (dim,) or points (num_chains, dim). num_steps None:
    a first block of 1,000 steps, extended until target_ess 400. `options` (a `SampleOptions`), or
    its fields by keyword (`sample(t, step_size=0.1)`), override. What each does: docs/hfhr.md.
    """
    o = SampleOptions.of(options, keywords)

    sites = reparam_run.applies(target, o.reparam, init=init, manual=o.manual)
    if sites:
        return reparam_run.sample_reparameterised(
            sample, diagnose_result, target, sites, names=parameter_names(target, names),
            method=method, num_chains=num_chains, num_steps=num_steps, seed=seed,
            progress=progress, options=o)
    m = get_method(method) if isinstance(method, str) else method
    seed, num_steps, target_ess = _check_args(target, m, o, seed=seed, num_steps=num_steps,
                                              num_chains=num_chains, init=init)
    resources.check_draws(num_chains, num_steps, o.thinning, target.dim)  # before any work
    warn_long_run(o.max_steps if target_ess is not None and o.max_steps else num_steps)
    names = parameter_names(target, names)
    scheme = get_scheme(m.warmup)  # the registry entry's warm-up
    split3 = np.asarray(_chain_keys(num_chains)(seed))  # host-side indexing compiles nothing

    meter = _cost.Meter().start()  # compile seconds and wall time of this call (`result.cost`)
    bar = progress_bar(f"sample {m.name}", progress)
    settings = Settings(num_chains, step_size=o.step_size, gamma=o.gamma, alpha=o.alpha,
                        num_leapfrog=o.num_leapfrog, target_accept=o.target_accept,
                        precondition=o.precondition, bias_tol=o.bias_tol, init=init, seed=seed,
                        frame=o.frame)
    state, params, w = scheme.run(target, m, split3, settings, bar)  # warm-up
    run = _sample_until_converged(target, m, scheme, state, params, w, split3,
                                  num_steps=num_steps, thinning=o.thinning, target_ess=target_ess,
                                  max_steps=o.max_steps, names=names, bar=bar, progress=progress,
                                  settings=settings)
    bar.close()
    w = run.report  # the last warm-up's (a re-adaptation replaces the first)
    _check_divergence(m, run, o.thinning, o.on_divergence)
    res = _result(target, m, scheme, w, run, thinning=o.thinning, seed=seed, names=names)
    if o.diagnostics:
        res.diagnostics = _diagnose(target, m, scheme, w, res, run.judged)
    res.cost = _cost.summary(run_seconds=run.timed[0], gradients=run.timed[1], meter=meter.stop())
    return res


def _diagnose(target, m, scheme, w, res: SampleResult, judged=None):
    """The kept draws' diagnostics with the warm-up scheme's own problems; a warning when not converged."""
    start = int(round(w.burn * res.draws.shape[1]))
    if res.draws.shape[1] - start < 4:
        return None
    same = judged is not None and judged[0] is res.draws  # `_draws_x`: with the same burn-in
    dg = diagnose_result(target, res, judged[1] if same else None)
    dg.verdict = dg.verdict.merge(Verdict.of(scheme.problems(
        res.chains, w.target_accept, w.tuning, unconverged=not dg.converged)))
    add_stop_reason(dg, res.stopped)
    if not dg.converged:
        _warnings.warn(f"{m.name}: " + dg.line(), RuntimeWarning)
    return dg


def add_stop_reason(dg, stopped) -> None:
    """Put a run's stop reason and its way out first among the problems of failing diagnostics."""
    if not dg.converged and stopped and stopped.get("problem"):
        dg.verdict = Verdict.of((stopped["problem"],)).merge(dg.verdict)


def rediagnose(target, res: SampleResult, burn_in: float, target_accept=None):
    """`res` diagnosed again after another burn-in fraction (diagnostics, chain summary, scheme problems)."""
    scheme = get_scheme(get_method(res.method).warmup)
    res.burn_in_default = burn_in
    dg = res.diagnostics = diagnose_result(target, res)
    res.chains = scheme.summarise(res.info, burn_in)
    dg.verdict = dg.verdict.merge(Verdict.of(scheme.problems(
        res.chains, target_accept, res.tuning, unconverged=not dg.converged)))
    return dg


def _check_args(target, m, o: SampleOptions, *, seed, num_steps, num_chains, init) -> tuple:
    """Clear errors for invalid arguments; (seed, num_steps, target_ess) with the run's defaults."""
    num_leapfrog, target_accept, target_ess, thinning = (o.num_leapfrog, o.target_accept,
                                                         o.target_ess, o.thinning)
    on_divergence, precondition, max_steps = o.on_divergence, o.precondition, o.max_steps
    if num_leapfrog is not None and "num_leapfrog" not in m.uses:
        raise ValueError(f"{m.name}: num_leapfrog applies to the exact kernel only")
    if target_accept is not None and not (
            "target_accept" in get_scheme(m.warmup).options and 0.0 < target_accept < 1.0):
        raise ValueError("target_accept must be in (0, 1) and applies to the exact kernel only")
    seed = check_seed(seed)
    if num_steps is None:  # run until the diagnostics can pass (Vehtari et al. 2021: ESS >= 400)
        num_steps, target_ess = 1000, (DEFAULT_TARGET_ESS if target_ess is None else target_ess)
    if on_divergence not in ("raise", "stop"):
        raise ValueError("on_divergence must be 'raise' or 'stop'")
    if precondition not in ("auto", "laplace", "vi", "none"):
        raise ValueError("precondition must be 'auto', 'laplace', 'vi' or 'none'")
    for name, v in (("num_chains", num_chains), ("num_steps", num_steps), ("thinning", thinning)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) and int(v) != v or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if num_steps % thinning:
        raise ValueError(f"num_steps ({num_steps}) must be a multiple of thinning ({thinning})")
    if max_steps is not None and (isinstance(max_steps, bool) or int(max_steps) != max_steps
                                  or max_steps < num_steps):
        raise ValueError(f"max_steps (the budget) must be an integer >= num_steps ({num_steps}), "
                         f"got {max_steps!r}")
    if target_ess is not None and not target_ess > 0:
        raise ValueError(f"target_ess must be positive, got {target_ess!r}")
    if init is not None and np.shape(init) not in ((target.dim,), (num_chains, target.dim)):
        raise ValueError(f"init must have shape ({target.dim},) or (num_chains, {target.dim}) = "
                         f"({num_chains}, {target.dim}); got {np.shape(init)}")
    return seed, num_steps, target_ess


class Run(NamedTuple):
    """The sampling run: final chains, draws and info of its last attempt, parameters, discarded gradients."""

    carry: tuple
    chunks: list
    infos: list
    done: int
    params: Params
    discarded: int
    timed: tuple = (0.0, 0)  # (seconds, gradients) of the sampling blocks, compilation excluded
    judged: Optional[tuple] = None  # the last judgement's (draws in x, (table draws, labels))
    report: Optional[Report] = None  # the last warm-up's report
    stopped: Optional[dict] = None  # why the run stopped, re-adaptations, the reason's text


def _sample_until_converged(target, m, scheme, state, params, w: Report, split3, *, num_steps,
                            thinning, target_ess, max_steps, names, bar, progress,
                            settings=None) -> Run:
    """`convergence.run_until_converged` over compiled blocks: stop, readapt, warm up again or extend."""
    num_chains = split3.shape[0]
    zeros = np.zeros(num_chains, dtype=np.int64)
    carry = (state, split3[:, 2], zeros, zeros)
    jparams = Params(*(None if v is None else _compile.device(v, np.float64) for v in params))
    goal = num_steps // thinning
    cap = (int(max_steps) if max_steps is not None else BUDGET * num_steps) // thinning
    block = max(1, min(goal, math.ceil(w.block / thinning)))
    bar.phase("sampling", total=goal * thinning)
    rule = convergence.StopRule(target_ess, cap=cap, block=block, **scheme.rule)
    budget = f"max_steps = {cap * thinning:,}"
    readapts = READAPTS if settings is not None else 0
    notes = []  # the run's decisions, in order (`Run.stopped["decisions"]`)

    def say(msg):
        notes.append(msg)
        bar.note(msg)

    def show(n):
        bar.update(n * thinning)

    discarded, retries, readapted = 0, 0, 0
    while True:
        chunks, xs, infos, run, last = [], [], [], {"carry": carry}, {}
        timed = [0.0, 0]

        def advance(n):
            meter = _cost.Meter().start()  # this block's compilation, if any, is not its run time
            run["carry"], dr, inf = blocks.advance(m, w.run_fn, run["carry"], jparams, n, thinning,
                                                   block, show if progress else None)
            meter.stop()
            chunks.append(dr)
            infos.append(inf)
            timed[0] += max(meter.wall - meter.compile_seconds, 0.0)
            timed[1] += (int(np.sum(inf["num_grads"])) if "num_grads" in inf else
                         m.grads_per_step * n * thinning * dr.shape[0])

        def judged():
            while len(xs) < len(chunks):  # each block mapped to x once
                xs.append(_to_x(chunks[len(xs)], w.pre))
            x = xs[0] if len(xs) == 1 else np.concatenate(xs, axis=1)
            start = int(round(w.burn * x.shape[1]))
            table = summary_draws(target, x[:, start:], names)
            last["judged"] = (x, table)  # the result's draws and diagnosis reuse them
            return table[0]

        def label(i):
            labels = last["judged"][1][1]
            return labels[i] if i is not None and i < len(labels) else "?"

        def stop(x, j):
            done = sum(c.shape[1] for c in chunks)
            dis = convergence.chains_disagree(x)
            if dis is not None:
                last["disagree"] = dis
                why = (f"chains disagree beyond their Monte Carlo errors on {dis.count} of "
                       f"{x.shape[2]} parameters (Cochran's Q {dis.q:.3g} > {dis.bound:.3g} on "
                       f"{label(dis.index)}; max R-hat {j.rhat:.3g})")
                if readapted < readapts:
                    say(f"{why} after {done * thinning:,} draws: a failed warm-up; warming up "
                        + ("again, the frame refitted to these draws" if takes_draws(scheme) else
                           "again from the chains' positions"))
                    return "disagree"
                last["disagree_text"] = (
                    why + " after a second warm-up: the chains sample different regions (modes, "
                    "or a funnel's neck and mouth); reparameterise (reparam=\"auto\" on NumPyro "
                    "models; non-centred sites), or start the chains elsewhere (init)")
            # the draws the bulk ESS rate predicts (ESS grows as the draws; j.ess, under the
            # strict rule's MCSE(sd) term, grows faster and would overstate them)
            bulk = convergence.finite_min(convergence.chain_stats(x, ("ess_bulk",))["ess_bulk"])
            need = math.ceil(done * target_ess / max(bulk, 1e-12))
            if need > cap:
                why = last.get("disagree_text") or (
                    f"R-hat {j.rhat:.3g} on {label(j.rhat_at)}" if j.rhat > rule.rhat_max
                    else f"bulk ESS {j.ess:.0f} on {label(j.ess_at)}")
                last["problem"] = (
                    f"stopped after {done * thinning:,} draws per chain: {why}; at the ESS rate "
                    f"measured (bulk ESS {bulk:.0f}) ESS {target_ess:g} needs about "
                    f"{need * thinning:,} draws per chain, beyond the budget {budget} (pass "
                    f"max_steps={need * thinning} to run on)")
                say(last["problem"])
                return "budget"
            return None

        def extend(g, j):
            done = sum(c.shape[1] for c in chunks)
            why = (f"R-hat {j.rhat:.3g} on {label(j.rhat_at)}" if j.rhat > rule.rhat_max else
                   f"bulk ESS {j.ess:.0f} on {label(j.ess_at)} (goal {target_ess:g})")
            say(f"{why} after {done * thinning:,} draws: extending to {g * thinning:,} draws")
            bar.extend(g * thinning)

        done, why = convergence.run_until_converged(
            advance, goal, rule, view=judged,
            halt=lambda: bool(np.asarray(run["carry"][2]).any()) or scheme.halted(infos),
            on_judge=lambda j: bar.update(0, min_ess=round(j.ess), max_rhat=j.rhat),
            on_extend=extend, stop=stop)
        carry = run["carry"]
        if why == "disagree":
            readapted += 1
            again = (_readapt(scheme, m, w, carry[0], jax.random.fold_in(split3[0, 1], 100 + readapted),
                              params, infos, chunks) if takes_draws(scheme) else None)
            if again is not None:  # the scheme's re-adaptation, its frame refitted to the draws
                params, state, spent, w = again
                carry = (state,) + tuple(carry[1:])
            else:  # the whole warm-up again, from where the chains are
                spent = timed[1] + w.total_warm + int(w.checked)
                init = last["judged"][0][:, -1, :]
                keys = np.asarray(_fold_keys(split3, readapted))
                state, params, w = scheme.run(target, m, keys, settings._replace(init=init), bar)
                carry = (state, keys[:, 2], zeros, zeros)
            discarded += spent
            jparams = Params(*(None if v is None else _compile.device(v, np.float64)
                               for v in params))
            bar.phase("sampling (after a second warm-up)", total=goal * thinning)
            continue
        if why == "cap" and target_ess is not None:
            last["problem"] = f"stopped at the budget {budget} draws per chain"
            say(last["problem"] + " (pass a larger max_steps to run on)")
        # divergences make the verdict NOT CONVERGED however long the chains run
        if why != "halted" or np.asarray(carry[2]).any() or retries == MAX_RETRIES:
            break
        again = _readapt(scheme, m, w, carry[0], jax.random.fold_in(split3[0, 1], retries), params,
                         infos, chunks)
        retries += 1
        if again is None:
            break
        params, state, spent, w = again
        discarded += spent  # the halted attempt's gradients
        jparams = Params(*(_compile.device(v, np.float64) for v in params))
        carry = (state,) + tuple(carry[1:])
    seen = last.get("judged")
    stopped = {"why": why, "readapted": readapted, "decisions": notes,
               "problem": last.get("problem") or last.get("disagree_text")}
    return Run(carry, chunks, infos, done, params, discarded, tuple(timed),
               seen if seen is not None and seen[0].shape[1] == sum(c.shape[1] for c in chunks)
               else None, w, stopped)


def takes_draws(scheme) -> bool:
    """Whether the scheme's re-adaptation refits its frame to the halted attempt's draws."""
    return "draws" in inspect.signature(scheme.readapt).parameters


def _readapt(scheme, m, w, state, key, params, infos, chunks):
    """`Scheme.readapt` with the attempt's draws: (Params, states, gradients spent, Report), or None."""
    kw = {"draws": np.concatenate(chunks, axis=1)} if chunks and takes_draws(scheme) else {}
    again = scheme.readapt(m, w, state, key, params, infos, **kw)
    if again is None:
        return None
    return tuple(again[:3]) + (again[3] if len(again) > 3 else w,)


@functools.lru_cache(maxsize=4)
def _fold_keys_fn():
    return _compile.jit(lambda keys, i: jax.vmap(jax.vmap(lambda k: jax.random.fold_in(k, i)))(
        keys))


def _fold_keys(split3, i: int):
    """The chains' keys (chains, 3, 2) folded with i: the i-th re-adaptation's, one program."""
    return _fold_keys_fn()(split3, np.uint32(i))


def _check_divergence(m, run: Run, thinning, on_divergence) -> None:
    """A chain's non-finite position or gradient: FloatingPointError ("raise") or a warning."""
    diverged = np.asarray(run.carry[2])
    if not diverged.any():
        return
    p, num_chains = run.params, diverged.shape[0]
    c = int(np.argmax(diverged > 0))
    msg = (f"{m.name}: chain {c} diverged at step {int(diverged[c])} of {run.done * thinning} "
           f"(non-finite position or gradient; {int((diverged > 0).sum())} of {num_chains} "
           f"chains): the step is too large for the curvature met there (now h = "
           f"{p.step_size:g}" + (f", alpha = {p.alpha:g}" if "alpha" in m.uses else "")
           + "), or the model is not finite in a region the chain entered")
    if on_divergence == "raise":
        raise FloatingPointError(msg)
    _warnings.warn(msg + "; later draws of diverged chains are NaN", RuntimeWarning)


def _result(target, m, scheme, w: Report, run: Run, *, thinning, seed, names) -> SampleResult:
    """The SampleResult of a run: draws in the target's coordinates, per-step info, gradient counts."""
    num_chains = run.carry[2].shape[0]
    num_steps = run.done * thinning
    info = {k: np.concatenate([i[k] for i in run.infos], axis=1) for k in run.infos[0]}
    counts = scheme.account(m, w, info, run.discarded, num_steps, num_chains)

    return SampleResult(
        draws=_draws_x(run, w.pre), info=info, method=m.name,
        params={k: v for k, v in run.params._asdict().items() if k in m.uses},
        num_steps=int(num_steps), thinning=int(thinning),
        grad_evals=counts.grad_evals, seed=int(seed), diverged_at=np.asarray(run.carry[2]),
        final_state=jax.tree_util.tree_map(np.asarray, run.carry[0]), tuning=w.tuning,
        bias=w.bias, names=names, burn_in_default=w.burn, chains=counts.chains,
        warmup_grad_evals=counts.warmup_grad_evals + int(round(w.checked / num_chains)),
        preconditioner=w.pre, total_grad_evals=counts.total_grad_evals + int(w.checked),
        model_info=model_info(target), stopped=run.stopped)


def diagnose_result(target, res: SampleResult, table=None):
    """Diagnostics of the kept draws, potential checked at each, non-finite gradients counted."""
    kept = res._kept(None)
    energy = res.info.get("energy") if res.thinning == 1 else None
    if energy is not None and np.shape(energy)[:2] == res.draws.shape[:2]:
        # the exact kernel's V(q) + |p|^2 / 2 at every draw: finite exactly where V is
        nf_pot = int(np.sum(~np.isfinite(np.asarray(energy)[:, res.draws.shape[1] - kept.shape[1]:])))
    else:
        nf_pot = count_nonfinite_potential(target.potential, kept)
    nf_grad = int(np.sum(~np.asarray(res.info["is_finite"], dtype=bool)))
    x, labels = summary_draws(target, kept, res.names) if table is None else table
    return diagnose(x, labels, nonfinite_potential=nf_pot, nonfinite_grad=nf_grad,
                    num_potential_checked=int(np.prod(kept.shape[:2])))


def _draws_x(run: Run, pre) -> np.ndarray:
    """The run's draws in the target's coordinates (its last judgement's where it judged every draw)."""
    if run.judged is not None:
        return run.judged[0]
    return np.concatenate([_to_x(c, pre) for c in run.chunks], axis=1)


def _to_x(z, pre):
    """Draws z of the chains (chain, draw, d) in the target's coordinates: m + F z (NumPy)."""
    if pre is None:
        return z
    mean, factor = pre
    if hasattr(factor, "to_x"):  # a diagonal or low-rank frame (mcmc.frames), on the host
        host = jax.tree_util.tree_map(np.asarray, factor)
        x = np.multiply(host._inner(z, host.root) if host.rank() else z, host.scale)
        x += host.mean  # m + F z in one new array (no stretched direction: m + s z)
        return x
    return np.asarray(mean) + np.einsum("cnj,ij->cni", z, np.asarray(factor))


