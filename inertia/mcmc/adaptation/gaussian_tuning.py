"""The unadjusted schemes' warm-up (`inertia.mcmc.warmup`; docs/hfhr.md, "Automatic tuning")."""
from __future__ import annotations

import jax
import numpy as np

from ... import _compile
from .. import blocks, gradcheck
from ..gaussian import GaussianDiagnostics
from ..kernels.base import Params
from ..start import start as _start
from ..tuning import default_parameters
from ..warmup import BLOCK, run_warmup
from .base import (Accounting, Report, Scheme, initial_positions, never, no_problems, no_readapt,
                   no_summary)


def run(target, method, keys, s, bar):
    """(states, Params, Report): the tuning, or the given parameters."""
    if not s.tuned:
        bar.phase("compile")
        params = resolve_params(target, method, s.step_size, s.gamma, s.alpha)
        check_stability(target, method, params)
        q0 = initial_positions(target, s.init, keys[:, 0])
        state = _start(method, target.grad, q0, keys[:, 1])
        return state, params, Report(target.grad, None, None, _gaussian_bias(target, method, params),
                                     1000, 0, 0, 0.5, None, target)
    bar.phase("warm-up (compile, fit, tune)")
    state, params, report = _tuned(target, method, keys, s.num_chains, s.precondition, s.bias_tol,
                                   s.init, s.seed)
    # V and grad V agree before a long run (given parameters run as given)
    checked = gradcheck.check_gradient(report.target, state.position, s.seed)
    return state, params, report._replace(checked=checked)


def account(method, report, info, discarded, num_steps, num_chains) -> Accounting:
    """Gradients of fixed-length steps: the initial one and `grads_per_step` per step."""
    grad_evals = 1 + method.grads_per_step * int(num_steps)
    return Accounting(None, grad_evals, report.warm_grads,
                      report.total_warm + num_chains * grad_evals)


def resolve_params(target, method: Method, step_size=None, gamma=None, alpha=None) -> Params:
    """Fill parameters left as None with `tuning.default_parameters` (from the curvature bounds)."""
    if step_size is None or (gamma is None and "gamma" in method.uses) or (
            alpha is None and "alpha" in method.uses):
        d = default_parameters(target, method.name)
        step_size = d["step_size"] if step_size is None else step_size
        gamma = d.get("gamma") if gamma is None else gamma
        alpha = d.get("alpha") if alpha is None else alpha
    return Params(float(step_size), float(1.0 if gamma is None else gamma),
                  float(0.0 if alpha is None else alpha))


def check_stability(target, method: Method, params: Params):
    """Clear errors for invalid or unstable parameters (alpha h L >= 2; exact check on Gaussians)."""
    msg = method.check(params, target.beta)
    if msg:
        raise ValueError(f"{method.name}: {msg}")
    info = getattr(target, "info", None) or {}
    if "precision" in info and method.transition is not None and target.dim <= 2000:
        rho = GaussianDiagnostics(target).contraction_rate(
            method, step_size=params.step_size, gamma=params.gamma, alpha=params.alpha)
        if not rho < 1.0:
            raise ValueError(
                f"{method.name}: step_size={params.step_size:g}, gamma={params.gamma:g}, "
                f"alpha={params.alpha:g} give an unstable chain on this Gaussian target (exact "
                f"contraction rate {rho:.6g} >= 1); reduce step_size or raise gamma")


def _tuned(target, m, split3, num_chains, precondition, bias_tol, init, seed):
    """The unadjusted schemes' warm-up (`warmup.run_warmup`) with this module's chains."""
    if m.transition is None:
        raise ValueError(f"{m.name}: automatic tuning needs a one-gradient linear scheme "
                         "(hfhr, hfhr-split, klmc, ula); pass step_size, gamma, alpha")

    zeros = np.zeros(num_chains, dtype=np.int64)

    def wrunner(wt, pd, start, key, steps):
        p = Params(*(None if v is None else _compile.device(v, np.float64)
                     for v in _params_of(pd)))
        ks = jax.random.split(key, 2 * num_chains)
        st = _start(m, wt.grad, start, ks[:num_chains]) if not hasattr(start, "grad") else start
        c = (st, ks[num_chains:], zeros, zeros)
        c, dr, _ = blocks.advance(m, wt.grad, c, p, steps, 1, BLOCK)
        return c[0], dr, np.asarray(c[2]) > 0

    run_target, fit, tuned, state, tuning = run_warmup(
        target, m, num_chains, split3[0, 0], precondition=precondition, bias_tol=bias_tol,
        init=init, runner=wrunner, seed=seed)
    warm_grads = int(tuning["grad_evals"])
    chain_warm = warm_grads - int(tuning["fit"]["grad_evals"]) - 2 * int(tuning["hvp_evals"])
    chk = tuning["bias_checks"][-1] if tuning["bias_checks"] else {}
    bias = {"where": "preconditioned curvature", "sd_rel_exact_gaussian": tuned["sd_bias"],
            "mean_exact_gaussian": 0.0, "warmup_bias_mean": chk.get("rms_bias_mean"),
            "warmup_bias_sd": chk.get("rms_bias_sd"), "warmup_p_mean": chk.get("p_mean"),
            "warmup_p_sd": chk.get("p_sd")}
    report = Report(run_target.grad, (fit.mean, fit.factor), tuning, bias, BLOCK, warm_grads,
                    warm_grads - chain_warm + num_chains * chain_warm, 0.0, None, run_target)
    return state, _params_of(tuned), report


def _params_of(d: dict) -> Params:
    return Params(float(d["step_size"]), float(d.get("gamma", 1.0)), float(d.get("alpha", 0.0)))


def _gaussian_bias(target, m, params):
    """Exact stationary sd error of given parameters on a Gaussian target (None otherwise)."""
    info = getattr(target, "info", None) or {}
    if "precision" not in info or m.transition is None or target.dim > 2000:
        return None

    diag = GaussianDiagnostics(target)
    try:
        A, Q = diag.coordinate_maps(m, step_size=params.step_size, gamma=params.gamma,
                                    alpha=params.alpha)
        st = diag.stationary(m, step_size=params.step_size, gamma=params.gamma, alpha=params.alpha)
    except ValueError:
        return None
    var_q = np.diag(diag.U.T @ st.cov @ diag.U)
    err = float(np.max(np.abs(np.sqrt(var_q * diag.lam) - 1.0)))
    return {"where": "target's exact curvature", "sd_rel_exact_gaussian": err,
            "mean_exact_gaussian": 0.0}


SCHEME = Scheme("gaussian-tuning", run, options=("precondition", "bias_tol"),
                rule={"max_growth": None, "strict": False}, halted=never, readapt=no_readapt,
                account=account, summarise=no_summary, problems=no_problems)
