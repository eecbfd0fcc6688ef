"""The exact kernel's warm-up (`inertia.mcmc.adapt`): preconditioner, step size by dual averaging
to a target acceptance, trajectory length, gamma and alpha by the fewest gradients per effective
sample; after divergences while sampling, stage 2 again at a raised target acceptance. Given
parameters (gamma, alpha default to 0, num_leapfrog to 1) run as given."""
from __future__ import annotations

import numpy as np

from .. import adapt, frames, gradcheck
from ..kernels.base import Params
from ..start import start
from ...targets.whiten import whiten
from .base import Accounting, Report, Scheme, initial_positions


# draws per chain in a unit of the run: its first 1,000 are two, and an extension (at least 1.5x
# the draws so far, `convergence.StopRule.next_goal`) rounds up to whole units, so a run that
# narrowly misses the rule at 1,000 runs 1,500, not 2,000 (the chains' compiled block of
# `chains.BLOCK` = 1,000 iterations runs any prefix of itself: no new compilation)
BLOCK = 500


def run(target, method, keys, s, bar):
    """(states, Params, Report): the adaptation, or the given parameters."""
    tune_step = s.target_accept is None  # a given target acceptance keeps its step size
    target_accept = adapt.TARGET_ACCEPT if s.target_accept is None else float(s.target_accept)
    if not s.tuned:
        bar.phase("compile")
        return _given(target, method, keys, s, target_accept)
    bar.phase("warm-up (compile, fit, tune)")
    run_target, fit, params, state, run_fn, tuning = adapt.run_adaptation(
        target, method, s.num_chains, keys[0, 0], precondition=s.precondition, init=s.init,
        seed=s.seed, target_accept=target_accept, tune_step=tune_step, frame=s.frame,
        note=bar.note)
    # V and grad V agree before a long run (given parameters run as given)
    checked = gradcheck.check_gradient(run_target, state.position, s.seed)
    return state, params, Report(
        run_fn, (fit.mean, fit.factor), tuning, None, BLOCK,
        int(fit.grad_evals + round(tuning["chain_grad_evals"] / s.num_chains)),
        int(tuning["grad_evals"]), 0.0, target_accept, run_target, checked, source=target)


def _given(target, method, keys, s, target_accept):
    """The exact kernel at given parameters (gamma, alpha default to 0, num_leapfrog to 1)."""
    if s.step_size is None:
        raise ValueError(f"{method.name}: pass step_size (gamma, alpha default to 0, "
                         "num_leapfrog to 1), or none of them for the automatic warm-up")
    params = Params(float(s.step_size), float(s.gamma or 0.0), float(s.alpha or 0.0),
                    float(1.0 if s.num_leapfrog is None else s.num_leapfrog))
    msg = method.check(params, None)
    if msg:
        raise ValueError(f"{method.name}: {msg}")
    run_fn = adapt.value_and_grad_fn(target)
    q0 = initial_positions(target, s.init, keys[:, 0])
    state = start(method, run_fn, q0, keys[:, 1])
    return state, params, Report(run_fn, None, None, None, BLOCK, 0, s.num_chains, 0.5,
                                 target_accept, target)  # total_warm: the initial gradients


def halted(infos) -> bool:
    """A divergent transition while sampling: stop, and warm up again."""
    return any(np.asarray(i["diverging"]).any() for i in infos)


def readapt(method, report, state, key, params, infos, draws=None):
    """Stage 2 again from the chains' states at a raised target acceptance (tuned runs only), in
    the frame refitted to the halted run's `draws` (chain, draw, d; in the chains' frame) where
    given (`adapt.refit_frame`): (Params, states, gradients of the halted attempt, the `Report`
    the sampling run continues with)."""
    if report.tuning is None:
        return None
    spent = int(sum(np.sum(i["num_grads"]) for i in infos))
    vg, to_new = report.run_fn, None
    if draws is not None and report.source is not None and report.pre is not None \
            and np.shape(draws)[1] >= 2:
        pre, vg, to_new, g = adapt.refit_frame(report.source, report.pre, draws)
        report.tuning["chain_grad_evals"] += g
        report.tuning["grad_evals"] += g
        report = report._replace(run_fn=vg, pre=pre, target=_whitened(report.source, pre))
    params, state = adapt.readapt(method, vg, state, key, params, report.tuning, to_new=to_new)
    return params, state, spent, report


def _whitened(target, pre):
    """The target in the frame `pre` = (mean, factor) (dense, diagonal or low-rank)."""
    mean, factor = pre
    if hasattr(factor, "to_x"):
        return frames.whiten(target, factor)
    return whiten(target, mean, factor)


def summarise(info, burn: float) -> dict:
    """Per-chain acceptance, divergences, step size and gradients after a burn-in fraction."""
    return adapt.chain_summary(info, int(round(burn * info["num_grads"].shape[1])))


def account(method, report, info, discarded, num_steps, num_chains) -> Accounting:
    """Gradients counted from the trajectories (random lengths), the discarded attempts' with the
    warm-up's."""
    chains = summarise(info, report.burn)
    per_chain = np.asarray(chains["grad_evals"])
    if report.tuning is None:  # the initial gradient is the sampling run's
        return Accounting(chains, int(round(float(np.mean(per_chain)))) + 1, report.warm_grads,
                          report.total_warm + int(per_chain.sum()) + discarded)
    t = report.tuning
    total_warm = int(t["grad_evals"]) + discarded
    warm = int(t["fit"]["grad_evals"] + round((t["chain_grad_evals"] + discarded) / num_chains))
    return Accounting(chains, int(round(float(np.mean(per_chain)))), warm,
                      total_warm + int(per_chain.sum()))


def problems(chains, target_accept, tuning, unconverged) -> list:
    """Divergences after warm-up, collapsed or disagreeing acceptance (`adapt.verdict_problems`)."""
    accept = adapt.TARGET_ACCEPT if target_accept is None else target_accept
    return adapt.verdict_problems(chains, accept, tuning, unconverged=unconverged)


SCHEME = Scheme("dual-averaging", run, options=("target_accept", "precondition", "frame"),
                rule={"max_growth": 4.0, "strict": True},  # an early ESS estimate is noisy
                halted=halted, readapt=readapt, account=account, summarise=summarise,
                problems=problems)
