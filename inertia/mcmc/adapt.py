"""Warm-up of the exact (Metropolis-adjusted) HFHR kernel: preconditioner, dual averaging, trajectory.

1. Fit N(m, L L^T) (`warmup.fit_gaussian`: Laplace, VI where that is unusable) and run the chains
   on V_w(z) = V(m + L z) (`warmup.whiten`).
2. Stage 1 (STAGE1 iterations): alpha = 0, gamma = 0, trajectory time T0 = 1.5 (in whitened units,
   about a quarter period of a unit-scale direction); the step size by dual averaging to
   `target_accept` (Hoffman & Gelman 2014, algorithm 5, on the chains' mean acceptance).
3. Frame: when the second half of the stage-1 draws agrees with the fit (no late divergence, mean
   within FRAME_SHIFT of 0 per coordinate, every denoised covariance eigenvalue within FRAME_TOL
   of 1, `keeps_frame`) and their acceptance is that of a Gaussian in it (the energy-error model's
   calibration factor within CALIBRATION), the fit's frame and the stage-1 step size are kept and
   stage 2 is skipped. Otherwise their covariance S (shrunk towards I; per-coordinate variances when there
   are too few draws for a dense estimate) refines the frame, z = mean + C w with C C^T = S (what
   NUTS's dense mass matrix adapts), and
4. stage 2 (STAGE2 iterations) runs dual averaging again in the new frame, still at T0; its
   averaged step size is the sampling one.
5. Trajectory length n, friction gamma and alpha by `choose_trajectory`: the fewest gradients per
   effective sample on N(0, diag(1/lambda)), lambda = 1 / eig of the covariance of the last
   warm-up draws (`denoised_eigenvalues`), at that h and the measured acceptance (in the diagonal
   and low-rank frames the least cost, the momentum normals and the frame's map counted in
   gradients, `frames.step_costs`). In a kept frame
   (unless the target acceptance was given) the rule also chooses the spread of the trajectory
   length (1/2 or NEAR_SPREAD) and the step size (STEP_SCALES x h; acceptance per length from the
   calibrated model, a mean of at least MIN_MODEL_ACCEPT), robustly to eigenvalues off by ROBUST
   factors. While the second half of the
   last stage-2 run has divergences (the step is too large for a region the chains reach),
   stage 2 is rerun at the chosen trajectory with target acceptance 1 - (1 - delta)/2, at most
   MAX_RAISES times (0.8 -> 0.9 -> 0.95 -> 0.975).
"""
from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from scipy.special import ndtr, ndtri

from .. import _compile
from . import chains, frames
from .chains import MAX_LEAPFROG
from .kernels.base import Params
from .kernels.adjusted_hfhr import LENGTH_SPREAD
from .start import start as _start
from ..targets.base import TargetError, jitted
from .warmup import fit_gaussian, SWITCH_KAPPA, whiten, LAPLACE_KAPPA, GaussianFit, good_laplace_fit
from ..targets.curvature import DEGENERATE_RATIO
from ..targets.mode import hessian_diagonal, map_estimate

TARGET_ACCEPT = 0.8
STAGE1, STAGE2 = 150, 150  # equal: one compilation
T0 = 1.5
SHRINK = 10.0  # pseudo-draws of the identity in the warm-up covariance
# stage-1 windows of the diagonal and low-rank frames: the frame re-estimated from each window's
# draws and gradients while they move it (Stan's windows, nutpie's diagonal rule)
MAX_WINDOWS = 6
MAX_RAISES = 3  # stage 2 reruns with target acceptance 1 - (1 - delta)/2 while warm-up diverges
FRAME_SHIFT = 0.5  # largest whitened mean of the stage-1 draws (per coordinate) keeping the frame
FRAME_TOL = 1.5  # largest factor between a denoised stage-1 variance and 1 keeping the frame
NEAR_SPREAD = 0.2  # the narrower trajectory-length spread a kept frame may use
STEP_SCALES = (0.8, 0.85, 0.9, 0.95, 1.0, 1.05, 1.1, 1.2, 1.3)  # tried in a kept frame, x the tuned h
MIN_MODEL_ACCEPT = TARGET_ACCEPT  # smallest modelled mean acceptance of a new step size
ROBUST = (0.8, 1.0, 1.25)  # a kept frame's eigenvalues are trusted to these factors
# energy-error scale (measured / Gaussian model) keeping the frame: an exact Gaussian at d = 8
# reads 0.97 +- 0.11 (48 seeds), so both ends are > 4 sd away; the Student-t of the benchmarks
# (Laplace scale off by sqrt((nu + d) / (nu - 2))) reads 0.45 .. 0.6 and keeps its frame
CALIBRATION = (0.4, 1.5)


def value_and_grad_fn(target):
    """(V, grad V) of a target in one pass (autodiff of its potential), as a pytree function."""
    return jax.tree_util.Partial(_vg(target))


def frame_value_and_grad(target, mean, factor):
    """(V_w, grad V_w) of V_w(z) = V(mean + factor z) as a pytree function whose arrays are traced:
    one compilation of the chains serves every frame of the same shapes."""
    return jax.tree_util.Partial(_frame_fn(target), _compile.device(mean, np.float64),
                                 _compile.device(factor, np.float64))


_vg = frames.value_and_grad_of  # one cached (V, grad V) per target, shared with the frames


def _frame_vg(parent, mean, factor, z):
    v, g = parent(mean + factor @ z)
    return v, factor.T @ g


@functools.lru_cache(maxsize=32)
def _frame_fn(target):
    return functools.partial(_frame_vg, _vg(target))


def _adapt_runner(method, num_iters: int):
    """Dual averaging over `num_iters` iterations (`chains.program` in warm-up mode): every chain
    steps at the shared h = exp(log h), then the dual-averaging state (shrinking towards
    log h = mu) moves with the chains' mean acceptance. Trajectory time T > 0 sets
    n = clip(T / h, 1, MAX_LEAPFROG). Returns (states, averaged h, (positions, acceptance,
    divergences, gradients, step sizes)), each record (num_iters, chains)."""

    def run(vg, states, key, log_h0, mu, gamma, alpha, time, delta):
        nc = states.position.shape[0]
        ch = chains.Chains(states, np.zeros((nc, 2), dtype=np.uint32),
                           np.zeros(nc, dtype=np.int64), np.zeros(nc, dtype=np.int64))
        t = chains.tuning(log_h0, mu=mu, gamma=gamma, alpha=alpha, time=time, delta=delta,
                          adapt=True, num_iters=num_iters)
        ch, h, (pos, info) = chains.run_block(method, vg, ch, key, t)
        return ch.state, h, (pos, info.acceptance_rate, info.diverging, info.num_grads,
                             info.step_size)

    return run


def draws_covariance(z):
    """(mean, covariance) of draws (chain, draw, d) pooled, shrunk towards I by SHRINK pseudo-draws;
    diagonal when there are fewer than 10 d draws."""
    flat = z.reshape(-1, z.shape[-1])
    flat = flat[np.all(np.isfinite(flat), axis=1)]
    d = z.shape[-1]
    n = flat.shape[0]
    if n < 2:
        return np.zeros(d), np.eye(d)
    S = np.atleast_2d(np.cov(flat, rowvar=False)) if n >= 10 * d else np.diag(flat.var(0, ddof=1))
    S = np.clip(S, -1e8, 1e8)
    return flat.mean(0), (n * S + SHRINK * np.eye(d)) / (n + SHRINK)


def denoised_eigenvalues(z):
    """Eigenvalues of the covariance of draws (chain, draw, d) with the sampling noise of an
    identity covariance removed: with c = d / n (n = half the pooled draws, for autocorrelation),
    eigenvalues inside the Marchenko-Pastur bulk [(1 - sqrt c)^2, (1 + sqrt c)^2] become 1 and the
    others are divided by the nearer edge."""
    _, S = draws_covariance(z)
    w = np.clip(np.linalg.eigvalsh(S), 1e-8, 1e8)
    c = min(z.shape[-1] / max(0.5 * z.shape[0] * z.shape[1], 1.0), 0.25)
    lo, hi = (1 - math.sqrt(c)) ** 2, (1 + math.sqrt(c)) ** 2
    return np.where(w > hi, w / hi, np.where(w < lo, w / lo, 1.0))


def frame_moved(z, g, late_divergences: int = 0) -> dict:
    """How far warm-up draws z (chain, draw, d) taken in a diagonal frame, with their frame
    gradients g, would move it (`frames.from_draws`): the largest factor between a new scale
    (nutpie's sqrt(sd(z) / sd(g))) and 1, and the largest |mean| per coordinate in draws' sds.
    Settled when the scale change is within FRAME_TOL or z of its standard errors (z the two-sided
    Bonferroni quantile at 1 % over the d coordinates, sqrt(1 / (2 n)) the log scale's with n
    from `frames.effective_draws`: at large d the largest of d noisy estimates passes a fixed
    tolerance by chance), the mean within FRAME_SHIFT, z / sqrt(n) or 4 times the log-scale
    tolerance (the short windows' means are noisier than the lag-1 reading of n says; the final
    refinement recentres the frame anyway), and the window's second half did not diverge."""
    flat = z.reshape(-1, z.shape[-1])
    ok = np.all(np.isfinite(flat), axis=1)
    if ok.sum() < 2:
        return {"settled": False, "scale_change": math.inf, "shift": math.inf,
                "late_divergences": int(late_divergences)}
    n = max(frames.effective_draws(z), 2.0)
    sd = frames.pair_scale(z, g)
    log_change = float(np.max(np.abs(np.log(sd))))
    spread = flat[ok].std(0)
    shift = float(np.max(np.abs(flat[ok].mean(0)) / np.where(spread > 0, spread, 1.0)))
    zq = float(ndtri(1.0 - 0.005 / flat.shape[1]))  # Bonferroni: 1 % over the d coordinates
    tol_scale = max(math.log(FRAME_TOL), zq * math.sqrt(0.5 / n))
    tol_shift = max(FRAME_SHIFT, zq / math.sqrt(n))
    return {"settled": bool(log_change <= tol_scale and shift <= max(tol_shift, 4.0 * tol_scale)
                            and late_divergences == 0),
            "scale_change": math.exp(log_change), "shift": shift,
            "late_divergences": int(late_divergences), "effective_draws": n}


def keeps_frame(z) -> bool:
    """Whether draws (chain, draw, d) in a frame agree with N(0, I) up to sampling noise: every
    coordinate's mean within FRAME_SHIFT and every denoised covariance eigenvalue within a factor
    FRAME_TOL of 1."""
    flat = z.reshape(-1, z.shape[-1])
    flat = flat[np.all(np.isfinite(flat), axis=1)]
    if flat.shape[0] < 2:
        return False
    w = denoised_eigenvalues(z)
    return bool(np.max(np.abs(flat.mean(0))) <= FRAME_SHIFT
                and np.all((w <= FRAME_TOL) & (w >= 1.0 / FRAME_TOL)))


def energy_error_moments(eigenvalues, step_size, kmax):
    """Mean and variance of the energy error of K = 1..kmax leapfrog steps of size h from
    (q, p) ~ N(0, diag(1/lambda)) x N(0, I), summed over the directions: with M_K the K-step map
    and H = diag(lambda, 1), dH = x'(M_K' H M_K - H) x / 2, so E = tr(A S)/2, Var = tr((A S)^2)/2."""
    lam = np.asarray(eigenvalues, dtype=np.float64)
    h = float(step_size)
    phi = _leapfrog_maps(lam, h)
    M = phi.copy()
    mean, var = np.empty(kmax), np.empty(kmax)
    for k in range(kmax):
        # A S per direction for S = diag(1/lambda, 1): entries of M'HM - H scaled by columns
        a11 = lam * M[:, 0, 0] ** 2 + M[:, 1, 0] ** 2 - lam
        a12 = lam * M[:, 0, 0] * M[:, 0, 1] + M[:, 1, 0] * M[:, 1, 1]
        a22 = lam * M[:, 0, 1] ** 2 + M[:, 1, 1] ** 2 - 1.0
        b11, b12, b21, b22 = a11 / lam, a12, a12 / lam, a22
        mean[k] = 0.5 * np.sum(b11 + b22)
        var[k] = 0.5 * np.sum(b11 ** 2 + 2 * b12 * b21 + b22 ** 2)
        M = phi @ M
    return mean, var


def metropolis_acceptance(mean, var):
    """E min(1, exp(-dH)) for dH ~ N(mean, var) (elementwise)."""
    mean, var = np.asarray(mean, dtype=np.float64), np.maximum(np.asarray(var, np.float64), 1e-300)
    s = np.sqrt(var)
    with np.errstate(over="ignore", invalid="ignore"):
        tail = np.exp(np.clip(-mean + 0.5 * var, None, 700.0)) * ndtr(mean / s - s)
    return np.clip(ndtr(-mean / s) + np.nan_to_num(tail), 0.0, 1.0)


def calibrate_energy_error(eigenvalues, step_size, acceptance, num_leapfrog,
                           spread=LENGTH_SPREAD):
    """The factor c for which the Gaussian model's mean acceptance, with dH's mean and variance
    times c, equals the measured acceptance of trajectories at steps h_t of mean lengths n_t (1 for
    an exactly Gaussian target in its own frame). `step_size` and `num_leapfrog` are scalars or the
    iterations' values (dual averaging's h_t move while the acceptance is measured: the model is
    averaged over them, since its acceptance at a mean h is not the mean acceptance)."""
    hs, ns = np.broadcast_arrays(np.atleast_1d(np.asarray(step_size, dtype=np.float64)),
                                 np.atleast_1d(np.asarray(num_leapfrog, dtype=np.float64)))
    pairs, count = np.unique(np.stack([hs.ravel(), np.maximum(ns.ravel(), 1.0)], axis=1), axis=0,
                             return_counts=True)
    kmax = int(np.ceil((1 + spread) * pairs[:, 1].max())) + 1
    W = _length_weights(pairs[:, 1], kmax, spread) * (count / count.sum())[:, None]
    mv = np.array([energy_error_moments(eigenvalues, h, kmax) for h in pairs[:, 0]])
    mean, var = mv[:, 0], mv[:, 1]  # (pairs, kmax)
    r = float(np.clip(acceptance, 1e-3, 1 - 1e-6))

    def model(logc):
        c = math.exp(logc)
        return float(np.sum(W * metropolis_acceptance(c * mean, c * var)))

    lo, hi = -12.0, 12.0  # acceptance decreases in c
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if model(mid) > r else (lo, mid)
    return math.exp(0.5 * (lo + hi))


def _leapfrog_maps(lam, h):
    """B A B on V = lam q^2 / 2 as a 2x2 map per direction."""
    phi = np.empty((lam.size, 2, 2))
    phi[:, 0, 0] = 1 - 0.5 * h * h * lam
    phi[:, 0, 1] = h
    phi[:, 1, 0] = -h * lam * (1 - 0.25 * h * h * lam)
    phi[:, 1, 1] = 1 - 0.5 * h * h * lam
    return phi


def _length_weights(ns, kmax, spread=LENGTH_SPREAD, points=512):
    """P(K = k) for k = 1..kmax under K = max(1, round(n (1 + s (2u - 1)))), one row per n."""
    u = (np.arange(points) + 0.5) / points
    K = np.maximum(1, np.round(np.asarray(ns)[:, None] * (1.0 + spread * (2.0 * u[None, :] - 1.0)))
                   ).astype(int)
    W = np.zeros((len(ns), kmax))
    for i, row in enumerate(K):
        W[i] = np.bincount(np.minimum(row, kmax) - 1, minlength=kmax)[:kmax] / points
    return W


def choose_trajectory(eigenvalues, step_size, acceptance=TARGET_ACCEPT, *,
                      spreads=(LENGTH_SPREAD,), step_scales=(1.0,), calibration=None,
                      robust=(1.0,), normal_cost=0.0, frame_cost=0.0) -> dict:
    """Fewest gradients per effective sample of the exact kernel on N(0, diag(1/lambda)).

    On a Gaussian the leapfrog/refresh trajectory is linear: E[q_K | q_0] = a_K q_0 per direction
    (a_K the (q, q) entry of the product of leapfrog maps and partial refreshes e^{-gamma h}), and
    a MALA step of size eps has a = 1 - eps lambda. With acceptance r_K of a K-step trajectory and
    a rejection keeping q, the lag-1 autocorrelations of q and q^2 are rho1 = E[r_K a_K + 1 - r_K]
    and rho2 = E[r_K a_K^2 + 1 - r_K] over the length distribution (products over the two halves;
    a flow step of eps = h^2/2 is one leapfrog step from a fresh momentum), and
    tau = (1 + rho)/(1 - rho). Minimises E[gradients per iteration] times the largest tau over
    directions (each lambda times every `robust` factor) and over q, q^2, on a grid of n (mean
    leapfrog steps), gamma (0, 1/4 .. 2 sqrt(lambda_min); 0 only with `calibration`, where the
    energy-error model has no refresh), eps in {0, 1/2, 1} h^2/2, the length
    spreads and the step sizes step_scales x h; alpha = eps / h. r_K is the measured acceptance
    without `calibration`; with it, the Gaussian model's acceptance of K steps
    (`metropolis_acceptance` of `energy_error_moments` times the calibration factor), and step
    sizes whose modelled mean acceptance is below MIN_MODEL_ACCEPT are not chosen; tau is then the
    mean of those of q and q^2 (the gradients per ESS of means and of second moments weighted
    equally, which lets a length with antithetic means win a near tie on q^2).
    With `normal_cost` (one draw of d standard normals, in gradients) or `frame_cost` (the frame's
    map around each gradient, in gradients) the rule minimises the cost of an iteration of the
    lean chains (`kernels.adjusted_hfhr.langevin_trajectory`) instead: (E[K] + flow) (1 + frame_cost)
    gradients, plus normal_cost for the momentum, the flow step's noise and, at gamma > 0, each
    leapfrog step's refresh; `grads_per_ess` stays the gradients alone, `cost_per_ess` the total.
    """
    lam = np.sort(np.asarray(eigenvalues, dtype=np.float64))
    lam_r = np.concatenate([lam * f for f in robust])
    r = float(np.clip(acceptance, 0.05, 1.0))
    ns = np.unique(np.round(np.geomspace(1, MAX_LEAPFROG, 40))).astype(int)
    kmax = int(np.ceil((1 + max(spreads)) * ns[-1])) + 1
    weights = {s: _length_weights(ns, kmax, s) for s in spreads}
    gammas = np.array([0.0, 0.25, 0.5, 1.0, 2.0] if calibration is None else [0.0]) * math.sqrt(
        lam[0])
    flows = np.array([0.0, 0.5, 1.0])
    best = None
    for scale in step_scales:
        h = float(step_size) * float(scale)
        if calibration is None:
            acc_k = np.full(kmax, r)
        else:
            m, v = energy_error_moments(lam, h, kmax)
            acc_k = metropolis_acceptance(calibration * m, calibration * v)
        phi = _leapfrog_maps(lam_r, h)
        for g in gammas:
            step = phi @ np.diag([1.0, math.exp(-g * h)])  # leapfrog, then O = diag(1, eta)
            M = phi.copy()
            a = np.empty((kmax, lam_r.size))
            for k in range(kmax):
                a[k] = M[:, 0, 0]
                M = step @ M
            for spread, W in weights.items():
                mean_acc = W @ acc_k
                ok = (mean_acc >= MIN_MODEL_ACCEPT) | (calibration is None) | (scale == 1.0)
                cost_k = W @ np.arange(1, kmax + 1)
                # E[r_K a_K + 1 - r_K] and E[r_K a_K^2 + 1 - r_K]: (n, directions)
                r1t = W @ (acc_k[:, None] * a) + (1 - mean_acc)[:, None]
                r2t = W @ (acc_k[:, None] * a**2) + (1 - mean_acc)[:, None]
                for f in flows:
                    if f > 0:
                        eps = f * h * h / 2
                        rm = r if calibration is None else float(acc_k[0])
                        am = 1 - eps * lam_r
                        r1m, r2m = rm * am + 1 - rm, rm * am**2 + 1 - rm
                    else:
                        eps, rm, r1m, r2m = 0.0, 1.0, 1.0, 1.0
                    r1, r2 = r1t * r1m, r2t * r2m
                    with np.errstate(divide="ignore", invalid="ignore"):
                        t1, t2 = (1 + r1) / (1 - r1), (1 + r2) / (1 - r2)
                        tau = np.maximum(t1, t2) if calibration is None else 0.5 * (t1 + t2)
                    tau = np.where((np.abs(r1) < 1) & (r2 < 1), tau, np.inf).max(axis=1)
                    grads = cost_k + (f > 0)
                    normals = 1.0 + (f > 0) + (cost_k if g > 0 else 0.0)
                    per_iter = grads * (1.0 + frame_cost) + normal_cost * normals
                    cost = np.where(ok, per_iter * tau, np.inf)
                    i = int(np.argmin(cost))
                    if best is None or cost[i] < best["cost_per_ess"]:
                        best = {"num_leapfrog": float(ns[i]), "gamma": float(g),
                                "alpha": float(eps / h), "grads_per_ess": float(grads[i] * tau[i]),
                                "cost_per_ess": float(cost[i]),
                                "tau": float(tau[i]), "flow_acceptance": rm,
                                "length_spread": float(spread), "step_size": h,
                                "step_scale": float(scale), "acceptance": float(mean_acc[i])}
    best.update(measured_acceptance=r, calibration=calibration,
                eigenvalues=[float(lam[0]), float(lam[-1])])
    return best


def raised(accept):
    """The next target acceptance after divergences: 1 - (1 - delta) / 2."""
    return 1.0 - 0.5 * (1.0 - accept)


def _stage2(method, vg, state, key, h, gamma, eps, time, accept, keep=False):
    """STAGE2 iterations of dual averaging at trajectory time `time`, friction gamma and flow step
    eps, from step h: (states, averaged h, record, gradients, second-half draws if `keep`)."""
    f = lambda x: _compile.device(x, np.float64)  # noqa: E731
    log_h = f(math.log(h))  # XLA's float64 log and libm's agree to the bit
    state, h2, (z, acc, div, ng, _) = _adapt_runner(method, STAGE2)(
        vg, state, key, log_h, log_h, f(gamma), f(eps / h), f(time), f(accept))
    acc, div = np.asarray(acc), np.asarray(div)
    stage = {"iterations": STAGE2, "target_accept": float(accept), "step_size": float(h2),
             "acceptance": float(np.nanmean(acc[STAGE2 // 2:])), "divergences": int(div.sum()),
             "late_divergences": int(div[STAGE2 // 2:].sum())}  # once dual averaging has settled
    z = np.swapaxes(np.asarray(z)[STAGE2 // 2:], 0, 1) if keep else None
    return state, float(h2), stage, int(np.sum(np.asarray(ng))), z


def readapt(method, vg, state, key, params: Params, report: dict, to_new=None):
    """After divergences while sampling: stage 2 again from the chains' states at the raised target
    acceptance (same trajectory time, gamma and alpha h); with `to_new` (`refit_frame`) the chains
    first move into the refitted frame whose (V, grad V) is `vg`. Updates `report`, returns
    (Params, states)."""
    accept = raised(report["final_accept"])
    T = params.step_size * params.num_leapfrog
    eps = params.alpha * params.step_size
    if to_new is not None:  # the same points, in the new frame's coordinates
        k_start, key = jax.random.split(jnp.asarray(key))
        z = to_new(np.asarray(state.position, np.float64))
        state = _start(method, vg, z, np.asarray(jax.random.split(k_start, z.shape[0])))
        report["chain_grad_evals"] += z.shape[0]
        report["grad_evals"] += z.shape[0]
    h, g = params.step_size, 0
    for attempt in range(MAX_RAISES + 1):  # raised again while its own late draws diverge
        if attempt:
            accept = raised(accept)
            report["stage2_runs"].append(stage)
        k = key if attempt == 0 else jax.random.fold_in(key, attempt)
        state, h, stage, gi, _ = _stage2(method, vg, state, k, h, params.gamma, eps, T, accept)
        g += gi
        stage["after_sampling_divergences"] = True
        if stage["late_divergences"] == 0 or not (h > 0 and math.isfinite(h)):
            break
    if not (h > 0 and math.isfinite(h)):  # dual averaging drove the step to 0: say why
        raise TargetError(
            "the chains kept diverging and the step size adapted down to 0: the log density is "
            "-inf, NaN or discontinuous where the chains go (e.g. written as -inf outside a "
            "support such as x < 0); sample an unconstrained parameter instead (x = exp(u), or a "
            "NumPyro site with a constrained distribution such as HalfNormal)")
    stage["frame_refitted"] = to_new is not None
    report["readapts"] = report.get("readapts", 0) + 1
    report["stage2_runs"].append(stage)
    report.update(stage2=stage, final_accept=accept)
    report["chain_grad_evals"] += g
    report["grad_evals"] += g
    return Params(h, params.gamma, eps / h, float(np.clip(T / h, 1.0, MAX_LEAPFROG)),
                  params.length_spread), state


READAPT_DRAWS = 250  # draws per chain (thinned) of a halted run that refit its frame


def refit_frame(target, pre, draws):
    """The frame re-estimated from a sampling run's draws (chain, draw, d) taken in the frame
    `pre` = (mean, factor): dense, their covariance (`draws_covariance`, as NUTS's dense mass
    matrix); diagonal or low-rank, `frames.from_draws` on the draws and their gradients in x
    (nutpie's rule). Returns (new pre, its (V, grad V), z_old -> z_new, gradients spent)."""
    draws = np.asarray(draws, np.float64)
    step = max(1, math.ceil(draws.shape[1] / READAPT_DRAWS))
    zs = draws[:, step - 1::step]
    mean, factor = pre
    if hasattr(factor, "to_x"):  # a diagonal or low-rank frame
        fr = jax.tree_util.tree_map(np.asarray, factor)
        d = zs.shape[-1]
        xs = fr.to_x(zs)
        ident = frames.Frame(np.zeros(d), np.ones(d))
        gx = frames.draws_gradients(target, ident, xs)
        new = frames.from_draws(ident, xs, gx, "low-rank" if fr.rank() else "diagonal")
        return ((new.mean, new), frames.frame_value_and_grad(target, new),
                lambda z: new.to_z(fr.to_x(z)), int(np.sum(np.all(np.isfinite(gx), axis=-1))))
    mz, S = draws_covariance(zs)
    C = np.linalg.cholesky(S)
    mean2 = np.asarray(mean) + np.asarray(factor) @ mz
    factor2 = np.asarray(factor) @ C
    return ((mean2, factor2), frame_value_and_grad(target, mean2, factor2),
            lambda z: np.linalg.solve(C, (z - mz).T).T, 0)


@functools.lru_cache(maxsize=8)
def _warmup_keys(num_chains: int, d: int, raises: int):
    """key -> the warm-up's starting draws z0 (num_chains, d) and keys, in one program (eager
    random calls are a compilation each): k0..k3 = split(key, 4); z0 ~ N(0, I) from k0; the chains'
    start keys split(k1, chains) and, in the refined frame, split(fold_in(k1, 1), chains); stage 1
    at k2; stage-2 runs at fold_in(k3, a), a = 0..raises."""

    def keys(key):
        k0, k1, k2, k3 = jax.random.split(key, 4)
        return {"z0": jax.random.normal(k0, (num_chains, d), dtype=jnp.float64),
                "start": jax.random.split(k1, num_chains),
                "restart": jax.random.split(jax.random.fold_in(k1, 1), num_chains),
                "stage1": k2,
                # one batched threefry, not raises + 1 unrolled ones: the same keys, ~0.1 s less
                "stage2": jax.vmap(lambda a: jax.random.fold_in(k3, a))(jnp.arange(raises + 1))}

    return _compile.jit(keys)


def _settle(method, vg, state, keys, choice, stage, target_accept):
    """The chosen trajectory at its step size, stage 2 rerun at a raised target acceptance while
    the warm-up's late draws diverge (at most MAX_RAISES times): (state, Params, stages, chain
    gradients, final target acceptance)."""
    h = choice["step_size"]
    T, eps = choice["num_leapfrog"] * h, choice["alpha"] * h
    accept, stages, grads = float(target_accept), [stage], 0
    # divergences: the step is too large for a region the chains reach; demand more acceptance
    for attempt in range(1, MAX_RAISES + 1):
        if stages[-1]["late_divergences"] == 0:
            break
        accept = raised(accept)
        state, h, stage, g, _ = _stage2(method, vg, state, keys["stage2"][attempt], h,
                                        choice["gamma"], eps, T, accept)
        grads += g
        stages.append(stage)
    params = Params(h, choice["gamma"], eps / h, float(np.clip(T / h, 1.0, MAX_LEAPFROG)),
                    choice["length_spread"])
    return state, params, stages, grads, accept


def run_adaptation(target, method, num_chains, key, *, precondition="auto", init=None, seed=0,
                   target_accept=TARGET_ACCEPT, tune_step=True, frame="auto", note=None):
    """The whole warm-up; returns (whitened target, fit, Params, chain states, value_and_grad,
    report). tune_step False keeps dual averaging's step size (a target acceptance was asked for).
    `frame`: the preconditioner's form (`frames.uses_dense`: dense up to frames.DENSE_MAX_DIM or
    with a `precondition` other than "auto", the Laplace fit or, up to frames.VI_FRAME_MAX_DIM, a
    VI fit where the Laplace fit is a poor frame; else up to frames.LAPLACE_DENSE_MAX_DIM the
    dense Laplace fit where it whitens the target, and otherwise diagonal or low-rank by the
    warm-up draws)."""
    if not frames.uses_dense(target.dim, frame) and (precondition == "auto" or frame != "auto"):
        return _run_scaled(target, method, num_chains, key, init=init, seed=seed,
                           target_accept=target_accept, kind=frame, tune_step=tune_step,
                           note=note)
    if precondition == "auto" and frame == "auto" and target.dim > frames.VI_FRAME_MAX_DIM:
        return _run_scaled(target, method, num_chains, key, init=init, seed=seed,
                           target_accept=target_accept, kind=frame, tune_step=tune_step,
                           laplace_kappa=SWITCH_KAPPA, note=note)
    fit = fit_gaussian(target, precondition, seed=seed)
    return _run_dense(target, method, num_chains, key, fit, init=init,
                      target_accept=target_accept, tune_step=tune_step)


def _run_dense(target, method, num_chains, key, fit, *, init, target_accept, tune_step):
    """The warm-up in the dense frame of a Gaussian fit: stage 1, the frame kept or refined by the
    draws' covariance, stage 2, the trajectory rule and the divergence raises."""
    vg = frame_value_and_grad(target, fit.mean, fit.factor)
    d = target.dim
    keys = {k: np.asarray(v) for k, v in _warmup_keys(num_chains, d, MAX_RAISES)(key).items()}
    z0, k2 = keys["z0"], keys["stage1"]
    if init is not None:
        x = np.broadcast_to(np.asarray(init, dtype=np.float64), (num_chains, d))
        z0 = np.linalg.solve(fit.factor, (x - fit.mean).T).T
    elif fit.info.get("other_modes"):  # modes beside a saddle: chain c starts at mode c mod k
        modes = [np.zeros(d)] + [np.linalg.solve(fit.factor, np.asarray(x) - fit.mean)
                                 for x in fit.info["other_modes"]]
        z0 = z0 + np.stack([modes[c % len(modes)] for c in range(num_chains)])
    state = _start(method, vg, z0, keys["start"])
    h0 = min(1.0, 1.5 * d ** -0.25)
    f = lambda x: _compile.device(x, np.float64)  # noqa: E731
    log_h0 = math.log(h0)
    state, h1, (z1, acc1, div1, ng1, hs1) = _adapt_runner(method, STAGE1)(
        vg, state, k2, f(log_h0), f(log_h0 + math.log(10.0)), f(0.0), f(0.0), f(T0),
        f(target_accept))
    h1 = float(h1)
    z1, acc1 = np.asarray(z1), np.asarray(acc1)
    half = STAGE1 // 2
    zs = np.swapaxes(z1[half:], 0, 1)
    acc_late = float(np.nanmean(acc1[half:]))
    chain_grads = int(np.sum(np.asarray(ng1))) + num_chains
    keep = int(np.sum(np.asarray(div1)[half:])) == 0 and keeps_frame(zs)
    cal = None
    if keep:  # and the energy errors are those of a Gaussian in that frame
        hs = np.asarray(hs1)[half:, 0]  # the iterations' step sizes (shared by the chains)
        cal = calibrate_energy_error(1.0 / denoised_eigenvalues(zs), hs, acc_late,
                                     np.clip(T0 / hs, 1.0, MAX_LEAPFROG))
        keep = CALIBRATION[0] <= cal <= CALIBRATION[1]
    if keep:  # the fit's frame already whitens the target: stage 1's step size is the tuned one
        h2, w2 = h1, zs
        stage = {"iterations": 0, "target_accept": float(target_accept), "step_size": h1,
                 "acceptance": acc_late, "divergences": 0, "late_divergences": 0,
                 "frame_kept": True}
    else:
        # refine the frame by the covariance of the draws (as NUTS's dense mass matrix): z = mz + C w
        mz, S = draws_covariance(zs)
        C = np.linalg.cholesky(S)
        fit = dataclasses.replace(fit, mean=np.asarray(fit.mean) + np.asarray(fit.factor) @ mz,
                                  factor=np.asarray(fit.factor) @ C,
                                  kind=f"{fit.kind} + warm-up covariance")
        vg = frame_value_and_grad(target, fit.mean, fit.factor)
        w_last = np.linalg.solve(C, (np.asarray(state.position) - mz).T).T
        state = _start(method, vg, w_last, keys["restart"])
        chain_grads += num_chains
        # stage 2: dual averaging in the new frame at the stage-1 trajectory time
        state, h2, stage, g, w2 = _stage2(method, vg, state, keys["stage2"][0], h1, 0.0,
                                          0.0, T0, target_accept, keep=True)
        chain_grads += g
    wt = whiten(target, fit.mean, fit.factor)
    lam = 1.0 / denoised_eigenvalues(w2)
    if keep and tune_step:
        choice = choose_trajectory(lam, h2, stage["acceptance"], spreads=(LENGTH_SPREAD, NEAR_SPREAD),
                                   step_scales=STEP_SCALES, calibration=cal, robust=ROBUST)
    else:
        choice = choose_trajectory(lam, h2, stage["acceptance"])
    state, params, stages, g, accept = _settle(method, vg, state, keys, choice, stage,
                                               target_accept)
    chain_grads += g
    report = {
        "kind": "adaptation", "precondition": fit.kind,
        "fit": {**fit.info, "grad_evals": fit.grad_evals},
        "target_accept": float(target_accept), "stage1": {
            "iterations": STAGE1, "step_size": h1, "acceptance": acc_late,
            "divergences": int(np.sum(np.asarray(div1)))},
        "spectrum": [float(lam.min()), float(lam.max())], "choice": choice,
        "stage2": stages[-1], "stage2_runs": stages, "final_accept": accept,
        "chain_grad_evals": chain_grads,  # all warm-up chains together, initial gradients included
        "grad_evals": int(fit.grad_evals + chain_grads),
    }
    return wt, fit, params, state, vg, report


def _mode_or_none(target, x0, stop=None):
    """(MAP, gradients, None), or (start point, gradients, why) where the mode search failed: it
    raised, or ended at a point where V or its gradient is not finite. A mode is a head start of
    the warm-up, never a requirement. `stop`: `map_estimate`'s (end the search early)."""
    try:
        mode, grads = map_estimate(target, x0, stop=stop)
        v, g = jitted(target, "value_and_grad")(_compile.device(mode, np.float64))
        if np.isfinite(float(v)) and np.all(np.isfinite(np.asarray(g))):
            return np.asarray(mode, np.float64), grads, None
        why = "the mode search ended where V or its gradient is not finite"
    except (ValueError, ArithmeticError, np.linalg.LinAlgError) as err:
        why, grads = f"the mode search failed ({type(err).__name__})", 0
    start = np.where(np.isfinite(x0), x0, 0.0)
    return start, grads, why


def _spike(target, mode, x0, seed):
    """(the diagonal start frame at `mode`, None, probe sets), or (that frame, why, probe sets)
    where the mode search ended at a spike rather than a mode: the largest curvature its Hessian
    probes read there exceeds the start point's by more than `targets.curvature.DEGENERATE_RATIO` (a centred
    hierarchy's MAP, where a group scale collapses to 0 and the curvature of its members grows
    without bound; the same test as the Laplace fit's, `estimate_curvature`)."""
    fr = frames.start_frame(target, mode, seed=seed)  # diagonal: the diagonal program
    if np.array_equal(np.asarray(mode), np.asarray(x0)):
        return fr, None, 1
    at_mode = float(np.max(1.0 / np.square(fr.scale)))
    h0 = hessian_diagonal(target, np.where(np.isfinite(x0), x0, 0.0), seed=seed)
    at_start = float(np.max(h0[np.isfinite(h0)], initial=0.0))
    if not (at_start > 0 and at_mode > DEGENERATE_RATIO * at_start):
        return fr, None, 2
    return fr, (f"the mode search ended at a spike, not a mode (its largest curvature "
                f"{at_mode:.3g}, {at_mode / at_start:.3g} x the start point's)"), 2


def _run_scaled(target, method, num_chains, key, *, init, seed, target_accept, kind,
                tune_step=True, laplace_kappa=None, note=None):
    """The warm-up in a diagonal or low-rank frame (`frames`), O(d r) per gradient and no d x d
    matrix: MAP by L-BFGS, the diagonal start frame from Hessian probes, stage 1, the frame refined
    by its draws and their gradients (directions kept where the Hessian confirms them,
    `frames.confirmed_directions`), stage 2, then the trajectory rule on the draws' denoised
    spectrum capped by the whitened Hessian's curvature, and the divergence raises of the dense
    warm-up. Up to frames.LAPLACE_DENSE_MAX_DIM (frame "auto") the dense Laplace fit at the MAP
    is tried first and taken when it whitens the target (`warmup.good_laplace_fit`, its whitened
    kappa_hat under `laplace_kappa`, None: warmup.LAPLACE_KAPPA). `note(message)` (None:
    silent) is told each phase's outcome and cost (the progress bar's `note`)."""
    d = target.dim
    x0 = np.asarray(target.info.get("init", np.zeros(d)), dtype=np.float64).reshape(d)
    early = []  # the first L-BFGS run's end point tested for a spike: no restarts down it

    def spiked(x):
        early.append(_spike(target, x, x0, seed) + (np.array(x, np.float64),))
        return early[-1][1] is not None

    mode, grads, no_mode = _mode_or_none(target, x0, stop=spiked)
    fr = None
    if no_mode is None:  # a spike is no head start: its frame is off by orders of magnitude
        sets = sum(e[2] for e in early)  # Hessian-probe sets (PROBES HVPs each) spent
        if early and (early[-1][1] is not None or np.array_equal(early[-1][3], mode)):
            fr, spike = early[-1][:2]
        else:
            fr, spike, n = _spike(target, mode, x0, seed)
            sets += n
        # the start frame's set is counted with the fit below; the others with the search
        grads += 2 * frames.PROBES * (sets - (spike is None))
        if spike is not None:  # the start point's own diagonal frame (unit where not finite)
            no_mode, mode = spike, np.where(np.isfinite(x0), x0, 0.0)
            fr = frames.start_frame(target, mode, seed=seed)
            grads += 2 * frames.PROBES
    say = note or (lambda message: None)
    say(f"warm-up: mode search {grads:,} gradients" + (f" ({no_mode})" if no_mode else ""))
    laplace_why = None
    above = f"d = {d} > " + str(frames.VI_FRAME_MAX_DIM if d <= frames.DENSE_MAX_DIM
                                else frames.DENSE_MAX_DIM)
    if kind == "auto" and d <= frames.LAPLACE_DENSE_MAX_DIM and no_mode is None:
        lap, g, laplace_why = good_laplace_fit(
            target, mode, seed=seed, max_kappa=laplace_kappa or LAPLACE_KAPPA)
        grads += g
        if lap is not None:  # a dense frame that whitens the target: the dense warm-up
            lap.info["why"] = f"{above}, <= {frames.LAPLACE_DENSE_MAX_DIM}: {laplace_why}"
            lap = dataclasses.replace(lap, grad_evals=grads)
            return _run_dense(target, method, num_chains, key, lap, init=init,
                              target_accept=target_accept, tune_step=tune_step)
    keys = {k: np.asarray(v) for k, v in _warmup_keys(num_chains, d, MAX_RAISES)(key).items()}
    if no_mode is None:  # fr: the diagonal start frame at the mode (`_spike`)
        g_mode = np.asarray(jitted(target, "value_and_grad")(_compile.device(mode, np.float64))[1])
        decrement = 0.5 * float(np.sum((fr.scale * g_mode) ** 2))  # in the start frame's metric
        fit_grads = grads + 1 + 2 * frames.PROBES
    else:  # no mode: dispersed starts, uniform(-2, 2) about the start point, in the unit frame
        # (after a spike, in the start point's probed diagonal frame where that is finite)
        unit = fr is None or not np.all(np.isfinite(fr.scale) & (fr.scale > 0))
        fr = frames.Frame(mode, np.ones(d)) if unit else fr
        decrement, fit_grads = math.inf, grads
        k_uniform = jax.random.fold_in(keys["stage1"], MAX_WINDOWS + 1)  # the windows use 1..
        keys["z0"] = np.asarray(jax.random.uniform(k_uniform, (num_chains, d), jnp.float64,
                                                   -2.0, 2.0))
    vg = frames.frame_value_and_grad(target, fr)
    if init is None:  # draws around the MAP, moved towards it where the model overflows
        state = frames.finite_start(method, vg, keys["z0"], keys["start"])
    else:
        z0 = fr.to_z(np.broadcast_to(np.asarray(init, dtype=np.float64), (num_chains, d)))
        state = _start(method, vg, z0, keys["start"])
    h0 = min(1.0, 1.5 * d ** -0.25)
    f = lambda x: _compile.device(x, np.float64)  # noqa: E731
    log_h0 = math.log(h0)
    state, h1, (z1, acc1, div1, ng1, _) = _adapt_runner(method, STAGE1)(
        vg, state, keys["stage1"], f(log_h0), f(log_h0 + math.log(10.0)), f(0.0), f(0.0), f(T0),
        f(target_accept))
    h1 = float(h1)
    zs = np.swapaxes(np.asarray(z1)[STAGE1 // 2:], 0, 1)
    acc_late = float(np.nanmean(np.asarray(acc1)[STAGE1 // 2:]))
    chain_grads = int(np.sum(np.asarray(ng1))) + num_chains
    gs = frames.draws_gradients(target, fr, zs)  # the draws' gradients set the diagonal with them
    chain_grads += int(np.prod(np.shape(zs)[:2]))
    windows = []
    for w in range(1, MAX_WINDOWS + 1):  # more windows while the draws move the frame
        moved = frame_moved(zs, gs, int(np.sum(np.asarray(div1)[STAGE1 // 2:])))
        windows.append(moved)
        say(f"warm-up: stage-1 window {w}: h = {h1:.3g}, acceptance {acc_late:.2f}, "
            f"{chain_grads:,} chain gradients so far; the draws "
            + ("keep the frame" if moved["settled"] else
               f"move the frame (scale x{moved['scale_change']:.3g}, mean shift "
               f"{moved['shift']:.3g} sd): refitted, another window"))
        if moved["settled"]:
            break
        x_now = fr.to_x(np.asarray(state.position))
        fr = frames.from_draws(fr, zs, gs, "diagonal")
        vg = frames.frame_value_and_grad(target, fr)
        state = _start(method, vg, fr.to_z(x_now), keys["restart"])
        log_h = math.log(h1)
        state, h1, (z1, acc1, div1, ng1, _) = _adapt_runner(method, STAGE1)(
            vg, state, np.asarray(jax.random.fold_in(keys["stage1"], w)), f(log_h),
            f(log_h + math.log(10.0)), f(0.0), f(0.0), f(T0), f(target_accept))
        h1 = float(h1)
        zs = np.swapaxes(np.asarray(z1)[STAGE1 // 2:], 0, 1)
        acc_late = float(np.nanmean(np.asarray(acc1)[STAGE1 // 2:]))
        gs = frames.draws_gradients(target, fr, zs)
        chain_grads += int(np.sum(np.asarray(ng1))) + num_chains + int(np.prod(np.shape(zs)[:2]))
    x_last = fr.to_x(np.asarray(state.position))
    fr = frames.from_draws(fr, zs, gs, kind)
    found = fr.rank()
    if kind == "auto":  # only directions the Hessian confirms are worth a trial
        fr, hvps = frames.confirmed_directions(target, fr)
        chain_grads += 2 * hvps
    confirmed = fr.rank()
    costs = frames.step_costs(target)
    tried = [_frame_trial(method, target, fr, x_last, keys, h1, target_accept, costs)]
    if kind == "auto" and fr.rank():  # the same stage 2 without the directions
        tried.append(_frame_trial(method, target, fr.without_directions(), x_last, keys, h1,
                                  target_accept, costs))
    best = frames.cheaper(tried)
    fr, vg, state, stage, choice, lam = (best[k] for k in ("frame", "vg", "state", "stage",
                                                            "choice", "lam"))
    chain_grads += sum(t["grads"] for t in tried)
    state, params, stages, g, accept = _settle(method, vg, state, keys, choice, stage,
                                               target_accept)
    chain_grads += g
    say(f"warm-up: {fr.kind} frame (rank {fr.rank()}), h = {params.step_size:.3g}, "
        f"{params.num_leapfrog:.0f} leapfrog steps, stage-2 acceptance "
        f"{stages[-1]['acceptance']:.2f}; {chain_grads:,} chain gradients in all")
    kind_name = f"{fr.kind} frame (rank {fr.rank()})" if fr.rank() else "diagonal frame"
    why = above if kind == "auto" else "frame=" + kind
    if no_mode is not None:
        why += f"; {no_mode}: the warm-up started from uniform(-2, 2) draws in the unit frame"
    if laplace_why is not None:
        why += f"; no dense Laplace frame: {laplace_why}"
    if found > confirmed:
        why += (f"; {found - confirmed} of the warm-up draws' {found} directions dropped: the "
                f"Hessian reads a variance below {frames.STRETCH_MIN_VARIANCE:g} along them")
    if len(tried) > 1:
        why += "; " + frames.describe_trial(tried)
    if len(windows) > 1:
        why += (f"; {len(windows)} stage-1 windows: the draws moved the frame (largest scale "
                f"change x{windows[0]['scale_change']:.3g}, mean shift {windows[0]['shift']:.3g} sd)")
    info = {"map_converged": bool(decrement <= 1e-3), "frame": fr.kind, "rank": fr.rank(),
            "windows": windows,
            "directions_found": found, "directions_confirmed": confirmed,
            "why": why, "frames_tried": [{k: t[k] for k in ("kind", "rank", "step_size", "curvature",
                                                            "hessian_vector_products",
                                                            "predicted_grads_per_ess",
                                                            "predicted_cost_per_ess")}
                                         for t in tried]}
    fit = GaussianFit(fr.mean, fr, kind_name, fit_grads, info)
    report = {
        "kind": "adaptation", "precondition": kind_name,
        "fit": {**info, "grad_evals": fit_grads},
        "target_accept": float(target_accept), "stage1": {
            "iterations": STAGE1, "step_size": h1, "acceptance": acc_late,
            "divergences": int(np.sum(np.asarray(div1)))},
        "spectrum": [float(lam.min()), float(lam.max())], "choice": choice,
        "stage2": stages[-1], "stage2_runs": stages, "final_accept": accept,
        "chain_grad_evals": chain_grads, "grad_evals": int(fit_grads + chain_grads),
    }
    return frames.whiten(target, fr), fit, params, state, vg, report


def _frame_trial(method, target, fr, x, keys, h1, target_accept, costs=None) -> dict:
    """Stage 2 in frame `fr` from the chains at x (restarted there), and the trajectory rule on its
    draws' denoised spectrum capped by the whitened Hessian at their mean, or where that is a saddle
    and the draws few against d each spike at most its direction's variance by the draws'
    gradients (`frames.capped_eigenvalues`): the frame's predicted gradients and cost per
    effective sample at its tuned step size (`choose_trajectory`; `costs`:
    `frames.step_costs(target)`, computed where None), with what the warm-up continues from."""
    vg = frames.frame_value_and_grad(target, fr)

    state = _start(method, vg, fr.to_z(x), keys["restart"])
    state, h2, stage, g, w2 = _stage2(method, vg, state, keys["stage2"][0], h1, 0.0, 0.0, T0,
                                      target_accept, keep=True)
    lo, hi, hvps = frames.curvature_range(target, fr, w2)
    bound = frames.bounds_spikes(w2, lo)  # then the draws' gradients bound their spikes
    g2 = frames.draws_gradients(target, fr, w2) if bound else None
    lam = 1.0 / frames.capped_eigenvalues(w2, lo, g2)
    normal, per_direction = frames.step_costs(target) if costs is None else costs
    choice = choose_trajectory(np.unique(lam), h2, stage["acceptance"],  # max over directions
                               normal_cost=normal, frame_cost=per_direction * fr.rank())
    return {"frame": fr, "vg": vg, "state": state, "stage": stage, "choice": choice, "lam": lam,
            "grads": g + int(np.shape(x)[0]) + 2 * hvps + bound * int(np.prod(np.shape(w2)[:2])),
            "step_size": float(h2),
            "curvature": [lo, hi], "hessian_vector_products": hvps,
            "kind": fr.kind, "rank": fr.rank(),
            "predicted_grads_per_ess": float(choice["grads_per_ess"]),
            "predicted_cost_per_ess": float(choice["cost_per_ess"])}


def describe_adaptation(t: dict) -> str:
    """One paragraph on how the exact kernel's warm-up chose its parameters."""
    c, s1, s2 = t["choice"], t["stage1"], t["stage2"]
    found = "found" if t["fit"].get("map_converged") else "NOT converged"
    runs = t["stage2_runs"]
    div = s1["divergences"] + sum(r["divergences"] for r in runs)
    raised = (f", raised to {t['final_accept']:.3g} after warm-up divergences"
              if len(runs) > 1 else "")
    kept = runs[0].get("frame_kept", False)
    stages = (f"{s1['iterations']} iterations, the fit's frame kept: h = {s1['step_size']:.3g}"
              if kept else f"{s1['iterations']} + {len(runs)} x {s2['iterations']} iterations: "
              f"h = {s1['step_size']:.3g} then {s2['step_size']:.3g}")
    step = (f"; step size {c['step_scale']:.2g} x h by the model (acceptance "
            f"{c['acceptance']:.2f})" if c.get("step_scale", 1.0) != 1.0 else "")
    return (f"{t['precondition']} preconditioner (x = m + L z; MAP {found}); step size by dual "
            f"averaging to acceptance {t['target_accept']:.2f}{raised} ({stages}, acceptance "
            f"{s2['acceptance']:.2f}, {div} warm-up divergences); whitened spectrum from warm-up "
            f"draws [{t['spectrum'][0]:.3g}, {t['spectrum'][1]:.3g}]; trajectory length "
            f"{c['num_leapfrog']:.0f} leapfrog steps (spread {c.get('length_spread', 0.5):.2g}), "
            f"gamma = {c['gamma']:.3g}, alpha = {c['alpha']:.3g}{step} by the least cost per "
            f"effective sample on a Gaussian with that spectrum ({c['grads_per_ess']:.1f} "
            f"gradients{_with_costs(c)})")


def _with_costs(c: dict) -> str:
    """The clause on a choice's cost beyond its gradients, where the rule weighed any."""
    cost = c.get("cost_per_ess", c["grads_per_ess"])
    if cost <= c["grads_per_ess"] * 1.0005:
        return ""
    return f"; {cost:.1f} counting the normals and the frame's map as gradients"


def chain_summary(info: dict, burn: int = 0) -> dict:
    """Per chain: mean acceptance rate (trajectory test, and gradient-flow step), divergences,
    gradients."""
    sl = slice(burn, None)
    return {"acceptance_rate": np.nanmean(info["acceptance_rate"][:, sl], axis=1).tolist(),
            "flow_acceptance_rate": np.nanmean(info["flow_acceptance_rate"][:, sl], axis=1).tolist(),
            "divergences": np.sum(info["diverging"][:, sl], axis=1).astype(int).tolist(),
            "step_size": float(np.asarray(info["step_size"]).reshape(-1)[0]),
            "grad_evals": np.sum(info["num_grads"], axis=1).astype(int).tolist()}


def verdict_problems(summary: dict, target_accept: float, tuning=None, unconverged=False) -> list:
    """Reasons an exact run is not to be trusted beyond R-hat and ESS: divergences after warm-up,
    a chain whose acceptance collapsed, chains that disagree on acceptance; and, when the run is
    not converged for any reason, warm-up divergences that forced the target acceptance up."""
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
    runs = (tuning or {}).get("stage2_runs", [])
    if (out or unconverged) and len(runs) > 1:
        out.append(f"divergences in warm-up forced the target acceptance up to "
                   f"{tuning['final_accept']:.3g} (h = {summary['step_size']:.3g}): the curvature "
                   "varies more than one global step size can follow (e.g. a funnel's neck); "
                   "reparameterise the model")
    return out


__all__ = ["run_adaptation", "choose_trajectory", "chain_summary", "verdict_problems",
           "describe_adaptation", "value_and_grad_fn", "TARGET_ACCEPT"]
