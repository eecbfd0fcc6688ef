"""Warm-up of the exact (Metropolis-adjusted) HFHR kernel: preconditioner, dual averaging, trajectory.

1. Fit N(m, L L^T) (`warmup.fit_gaussian`: Laplace, VI where that is unusable) and run the chains
   on V_w(z) = V(m + L z) (`warmup.whiten`).
2. Stage 1 (STAGE1 iterations): alpha = 0, gamma = 0, trajectory time T0 = 1.5 (in whitened units,
   about a quarter period of a unit-scale direction); the step size by dual averaging to
   `target_accept` (Hoffman & Gelman 2014, algorithm 5, on the chains' mean acceptance).
3. Spectrum: eigenvalues lambda = 1 / eig(Cov z) of the covariance of the second half of the
   stage-1 draws (per-coordinate variances when there are too few draws for a dense estimate).
4. Trajectory length n, friction gamma and alpha by `choose_trajectory`: the fewest gradients per
   effective sample on N(0, diag(1/lambda)) at the dual-averaged h and the measured acceptance.
5. Stage 2 (STAGE2 iterations): dual averaging again at that (T = n h, gamma, alpha); its averaged
   step size and T / h are the sampling parameters. While the second half of stage 2 has
   divergences (the step is too large for a region the chains reach) it is rerun with target acceptance 1 - (1 - delta)/2, at
   most MAX_RAISES times (0.8 -> 0.9 -> 0.95 -> 0.975).
"""
from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from .kernels.base import Params

TARGET_ACCEPT = 0.8
STAGE1, STAGE2 = 150, 150  # equal: one compilation
T0 = 1.5
MAX_RAISES = 3  # stage 2 reruns with target acceptance 1 - (1 - delta)/2 while warm-up diverges
MAX_LEAPFROG = 256  # cap on the mean trajectory length (NUTS's default depth 10 allows 1023)
# dual averaging constants of Hoffman & Gelman (2014)
DA_GAMMA, DA_T0, DA_KAPPA = 0.05, 10.0, 0.75


def value_and_grad_fn(target):
    """(V, grad V) of a target in one pass (autodiff of its potential)."""
    return _vg(target)


@functools.lru_cache(maxsize=32)
def _vg(target):
    return jax.value_and_grad(target.potential)


@functools.lru_cache(maxsize=16)
def _adapt_runner(method, vg, num_iters: int):
    """jit of a scan over iterations: every chain steps at the shared h = exp(log h), then the
    dual-averaging state (shrinking towards log h = mu) moves with the chains' mean acceptance. Trajectory time T > 0 sets
    n = clip(T / h, 1, MAX_LEAPFROG)."""

    def run(states, key, log_h0, mu, gamma, alpha, time, delta):
        nc = states.position.shape[0]

        def body(carry, i):
            st, log_h, log_hbar, hbar = carry
            h = jnp.exp(log_h)
            n = jnp.clip(time / h, 1.0, MAX_LEAPFROG)
            coeffs = method.prepare(Params(h, gamma, alpha, n))
            keys = jax.random.split(jax.random.fold_in(key, i), nc)
            st, info = jax.vmap(lambda k, s: method.step(k, s, coeffs, vg))(keys, st)
            acc = jnp.mean(jnp.nan_to_num(info.acceptance_rate))
            t = i + 1.0
            hbar = (1.0 - 1.0 / (t + DA_T0)) * hbar + (delta - acc) / (t + DA_T0)
            log_h = mu - jnp.sqrt(t) / DA_GAMMA * hbar
            w = t ** (-DA_KAPPA)
            log_hbar = w * log_h + (1.0 - w) * log_hbar
            return (st, log_h, log_hbar, hbar), (st.position, info.acceptance_rate,
                                                  info.diverging, info.num_grads)

        init = (states, log_h0, log_h0, jnp.float64(0.0))
        (st, _, log_hbar, _), rec = jax.lax.scan(body, init, jnp.arange(num_iters))
        return st, jnp.exp(log_hbar), rec

    return jax.jit(run)


def _spectrum(z):
    """1 / eigenvalues of the pooled covariance of draws (chain, draw, d); diagonal when the draws
    are too few for a dense estimate (fewer than 10 d)."""
    flat = z.reshape(-1, z.shape[-1])
    flat = flat[np.all(np.isfinite(flat), axis=1)]
    d = z.shape[-1]
    if flat.shape[0] < 2:
        return np.ones(d)
    if flat.shape[0] >= 10 * d:
        w = np.linalg.eigvalsh(np.atleast_2d(np.cov(flat, rowvar=False)))
    else:
        w = flat.var(axis=0, ddof=1)
    return 1.0 / np.clip(w, 1e-8, 1e8)


def _flow_acceptance(lam, eps, num=2000, seed=0):
    """Mean MALA acceptance of step eps on N(0, diag(1/lam)) (Monte Carlo, fixed seed)."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((num, lam.size)) / np.sqrt(lam)
    y = q - eps * lam * q + math.sqrt(2.0 * eps) * rng.standard_normal(q.shape)
    v = 0.5 * (lam * q * q).sum(1)
    vy = 0.5 * (lam * y * y).sum(1)
    fwd = ((y - q + eps * lam * q) ** 2).sum(1)
    bwd = ((q - y + eps * lam * y) ** 2).sum(1)
    return float(np.mean(np.minimum(1.0, np.exp(np.minimum(v - vy + (fwd - bwd) / (4 * eps), 0.0)))))


def _length_weights(ns, kmax, points=512):
    """P(K = k) for k = 1..kmax under K = max(1, round(n (1/2 + u))), one row per n."""
    u = (np.arange(points) + 0.5) / points
    K = np.maximum(1, np.round(np.asarray(ns)[:, None] * (0.5 + u[None, :]))).astype(int)
    W = np.zeros((len(ns), kmax))
    for i, row in enumerate(K):
        W[i] = np.bincount(np.minimum(row, kmax) - 1, minlength=kmax)[:kmax] / points
    return W


def choose_trajectory(eigenvalues, step_size, acceptance=TARGET_ACCEPT) -> dict:
    """Fewest gradients per effective sample of the exact kernel on N(0, diag(1/lambda)).

    On a Gaussian the leapfrog/refresh trajectory is linear: E[q_K | q_0] = a_K q_0 per direction
    (a_K the (q, q) entry of the product of leapfrog maps and partial refreshes e^{-gamma h}), and
    a MALA step of size eps has a = 1 - eps lambda. With acceptance r (trajectory: the measured
    rate; MALA: its Monte Carlo rate on that Gaussian) and a rejection keeping q, the lag-1
    autocorrelations of q and q^2 are rho1 = r E a + 1 - r and rho2 = r E a^2 + 1 - r (products over
    the two halves), and tau = (1 + rho)/(1 - rho). Minimises E[gradients per iteration] times the
    largest tau over directions and over q, q^2, on a grid of n (mean leapfrog steps), gamma
    (0, 1/4 .. 2 sqrt(lambda_min)) and eps lambda_max (0 .. 1); alpha = eps / h.
    """
    lam = np.sort(np.asarray(eigenvalues, dtype=np.float64))
    h = float(step_size)
    r = float(np.clip(acceptance, 0.05, 1.0))
    ns = np.unique(np.round(np.geomspace(1, MAX_LEAPFROG, 40))).astype(int)
    kmax = int(np.ceil(1.5 * ns[-1])) + 1
    W = _length_weights(ns, kmax)
    cost_k = W @ np.arange(1, kmax + 1)
    gammas = np.array([0.0, 0.25, 0.5, 1.0, 2.0]) * math.sqrt(lam[0])
    flows = np.array([0.0, 0.1, 0.3, 0.6, 1.0])
    best = None
    for g in gammas:
        eta = math.exp(-g * h)
        # leapfrog B A B on V = lam q^2 / 2 as a 2x2 map per direction, then O = diag(1, eta)
        phi = np.empty((lam.size, 2, 2))
        phi[:, 0, 0] = 1 - 0.5 * h * h * lam
        phi[:, 0, 1] = h
        phi[:, 1, 0] = -h * lam * (1 - 0.25 * h * h * lam)
        phi[:, 1, 1] = 1 - 0.5 * h * h * lam
        step = phi @ np.diag([1.0, eta])
        M = phi.copy()
        a = np.empty((kmax, lam.size))
        for k in range(kmax):
            a[k] = M[:, 0, 0]
            M = step @ M
        ea, ea2 = W @ a, W @ a**2  # (n, d)
        r1t, r2t = r * ea + 1 - r, r * ea2 + 1 - r
        for f in flows:
            if f > 0:
                eps = f / lam[-1]
                rm = _flow_acceptance(lam, eps)
                am = 1 - eps * lam
                r1m, r2m = rm * am + 1 - rm, rm * am**2 + 1 - rm
            else:
                eps, rm, r1m, r2m = 0.0, 1.0, 1.0, 1.0
            r1, r2 = r1t * r1m, r2t * r2m
            with np.errstate(divide="ignore", invalid="ignore"):
                tau = np.maximum((1 + r1) / (1 - r1), (1 + r2) / (1 - r2))
            tau = np.where((np.abs(r1) < 1) & (r2 < 1), tau, np.inf).max(axis=1)
            cost = (cost_k + (f > 0)) * tau
            i = int(np.argmin(cost))
            if best is None or cost[i] < best["grads_per_ess"]:
                best = {"num_leapfrog": float(ns[i]), "gamma": float(g), "alpha": eps / h,
                        "grads_per_ess": float(cost[i]), "tau": float(tau[i]),
                        "flow_acceptance": rm}
    best.update(step_size=h, acceptance=r, eigenvalues=[float(lam[0]), float(lam[-1])])
    return best


def run_adaptation(target, method, num_chains, key, *, precondition="auto", init=None, seed=0,
                   target_accept=TARGET_ACCEPT):
    """The whole warm-up; returns (whitened target, fit, Params, chain states, report)."""
    from .sample import _start
    from .warmup import fit_gaussian, whiten

    fit = fit_gaussian(target, precondition, seed=seed)
    wt = whiten(target, fit.mean, fit.factor)
    vg = value_and_grad_fn(wt)
    d = target.dim
    k0, k1, k2, k3 = jax.random.split(key, 4)
    z0 = np.asarray(jax.random.normal(k0, (num_chains, d), dtype=jnp.float64))
    if init is not None:
        x = np.broadcast_to(np.asarray(init, dtype=np.float64), (num_chains, d))
        z0 = np.linalg.solve(fit.factor, (x - fit.mean).T).T
    state = _start(method, vg, z0, jax.random.split(k1, num_chains))
    delta = jnp.float64(target_accept)
    h0 = min(1.0, 1.5 * d ** -0.25)
    run1 = _adapt_runner(method, vg, STAGE1)
    log_h0 = jnp.log(jnp.float64(h0))
    state, h1, (z1, acc1, div1, ng1) = run1(state, k2, log_h0, log_h0 + math.log(10.0),
                                            jnp.float64(0.0), jnp.float64(0.0), jnp.float64(T0),
                                            delta)
    h1 = float(h1)
    z1, acc1 = np.asarray(z1), np.asarray(acc1)
    half = STAGE1 // 2
    lam = _spectrum(np.swapaxes(z1[half:], 0, 1))
    r1 = float(np.nanmean(acc1[half:]))
    choice = choose_trajectory(lam, h1, r1)
    T = choice["num_leapfrog"] * h1
    run2 = _adapt_runner(method, vg, STAGE2)
    chain_grads = int(np.sum(np.asarray(ng1))) + num_chains
    h, accept, stages = h1, float(target_accept), []
    for attempt in range(MAX_RAISES + 1):
        log_h = jnp.log(jnp.float64(h))
        state, h2, (_, acc2, div2, ng2) = run2(
            state, jax.random.fold_in(k3, attempt), log_h, log_h, jnp.float64(choice["gamma"]), jnp.float64(choice["alpha"] * h1 / h), jnp.float64(T),
            jnp.float64(accept))
        chain_grads += int(np.sum(np.asarray(ng2)))
        h = float(h2)
        late = np.asarray(div2)[STAGE2 // 2:]  # once dual averaging has settled
        stages.append({"iterations": STAGE2, "target_accept": accept, "step_size": h,
                       "acceptance": float(np.nanmean(np.asarray(acc2)[STAGE2 // 2:])),
                       "divergences": int(np.sum(np.asarray(div2))),
                       "late_divergences": int(np.sum(late))})
        # divergences: the step is too large for a region the chains reach; demand more acceptance
        if stages[-1]["late_divergences"] == 0 or attempt == MAX_RAISES:
            break
        accept = 1.0 - 0.5 * (1.0 - accept)
    n = float(np.clip(T / h, 1.0, MAX_LEAPFROG))
    params = Params(h, choice["gamma"], choice["alpha"] * h1 / h, n)  # keep alpha h fixed
    report = {
        "kind": "adaptation", "precondition": fit.kind,
        "fit": {**fit.info, "grad_evals": fit.grad_evals},
        "target_accept": float(target_accept), "stage1": {
            "iterations": STAGE1, "step_size": h1, "acceptance": r1,
            "divergences": int(np.sum(np.asarray(div1)))},
        "spectrum": [float(lam.min()), float(lam.max())], "choice": choice,
        "stage2": stages[-1], "stage2_runs": stages, "final_accept": accept,
        "chain_grad_evals": chain_grads,  # all warm-up chains together, initial gradients included
        "grad_evals": int(fit.grad_evals + chain_grads),
    }
    return wt, fit, params, state, vg, report


def describe_adaptation(t: dict) -> str:
    """One paragraph on how the exact kernel's warm-up chose its parameters."""
    c, s1, s2 = t["choice"], t["stage1"], t["stage2"]
    found = "found" if t["fit"].get("map_converged") else "NOT converged"
    runs = t["stage2_runs"]
    div = s1["divergences"] + sum(r["divergences"] for r in runs)
    raised = (f", raised to {t['final_accept']:.3g} after warm-up divergences"
              if len(runs) > 1 else "")
    return (f"{t['precondition']} preconditioner (x = m + L z; MAP {found}); step size by dual "
            f"averaging to acceptance {t['target_accept']:.2f}{raised} ({s1['iterations']} + "
            f"{len(runs)} x {s2['iterations']} iterations: h = {s1['step_size']:.3g} then "
            f"{s2['step_size']:.3g}, acceptance {s2['acceptance']:.2f}, {div} warm-up "
            f"divergences); whitened spectrum from warm-up draws [{t['spectrum'][0]:.3g}, "
            f"{t['spectrum'][1]:.3g}]; trajectory length {c['num_leapfrog']:.0f} leapfrog steps, "
            f"gamma = {c['gamma']:.3g}, alpha = {c['alpha']:.3g} by the fewest gradients per "
            f"effective sample on a Gaussian with that spectrum ({c['grads_per_ess']:.1f})")


def chain_summary(info: dict, burn: int = 0) -> dict:
    """Per chain: mean acceptance rate (trajectory test, and gradient-flow step), divergences,
    gradients."""
    sl = slice(burn, None)
    return {"acceptance_rate": np.nanmean(info["acceptance_rate"][:, sl], axis=1).tolist(),
            "flow_acceptance_rate": np.nanmean(info["flow_acceptance_rate"][:, sl], axis=1).tolist(),
            "divergences": np.sum(info["diverging"][:, sl], axis=1).astype(int).tolist(),
            "step_size": float(np.asarray(info["step_size"]).reshape(-1)[0]),
            "grad_evals": np.sum(info["num_grads"], axis=1).astype(int).tolist()}


def verdict_problems(summary: dict, target_accept: float) -> list:
    """Reasons an exact run is not to be trusted beyond R-hat and ESS: divergences after warm-up,
    a chain whose acceptance collapsed, chains that disagree on acceptance."""
    out = []
    div = summary["divergences"]
    if sum(div) > 0:
        bad = [str(c) for c, n in enumerate(div) if n]
        out.append(f"{sum(div)} divergent transitions after warm-up (|energy error| > 1000; chains "
                   f"{', '.join(bad)}): one global step size h = {summary['step_size']:.3g} cannot "
                   "resolve the curvature in some region (e.g. a funnel's neck), which the chains "
                   "then under-sample, so the estimates are biased; reparameterise the model (e.g. "
                   "non-centred hierarchical parameters)")
    acc = np.asarray(summary["acceptance_rate"])
    if acc.size and np.nanmin(acc) < 0.5 * target_accept:
        c = int(np.nanargmin(acc))
        out.append(f"acceptance collapsed in chain {c} ({acc[c]:.2f} against the "
                   f"{target_accept:.2f} target): the step size does not fit the geometry that chain "
                   "met; reparameterise the model")
    elif acc.size > 1 and np.nanmax(acc) - np.nanmin(acc) > 0.2:
        out.append(f"chains disagree on acceptance ({np.nanmin(acc):.2f} to {np.nanmax(acc):.2f}): "
                   "they see different geometry; reparameterise the model")
    return out


__all__ = ["run_adaptation", "choose_trajectory", "chain_summary", "verdict_problems",
           "describe_adaptation", "value_and_grad_fn", "TARGET_ACCEPT"]
