"""Preconditioning frames of the exact sampler for large d: x = m + F z at O(d r) per gradient.

Dense up to DENSE_MAX_DIM (`adapt`), else one of FRAMES: "diagonal", F = diag(s); "low-rank",
F = diag(s) (I + U diag(sqrt(lam) - 1) U^T). How `choose` picks and refines them: docs/hfhr.md,
"Warm-up and tuning".
"""
from __future__ import annotations

import functools
import math

import jax
import numpy as np

from .. import _compile
from .._compile import jit
from ..targets.base import Target, jitted
from ..targets.mode import PROBES, probed_scale  # noqa: F401  (PROBES: the start frame's)
from .batching import batched
from .start import init_fn, start

DENSE_MAX_DIM = 100  # up to this d the frame is dense (measured ahead of dense NUTS there; at d = 303
# the low-rank frame took 7.6x fewer gradients per ESS than the dense one on a hierarchical logistic)
# up to this d (auto) a Laplace fit that is a poor frame gives way to a short VI fit's dense
# frame (warmup.fit_gaussian); beyond it, up to DENSE_MAX_DIM, to the frames below as beyond
# DENSE_MAX_DIM (the dense Laplace frame kept where warmup.SWITCH_KAPPA says it is good). The VI fit
# is a fixed ~17,000 gradients (300 updates of 50 draws, HVPs): on the non-centred hierarchical
# logistic at d = 100 the scaled frames took 0.27 of diagonal NUTS's gradients per ESS where the
# VI frame took 0.68; the posterior suite's VI-frame posteriors all have d <= 53
VI_FRAME_MAX_DIM = 64
# up to this d (beyond DENSE_MAX_DIM) the frame is the dense Laplace fit where that whitens the
# target (warmup.good_laplace_fit): latent field d = 289, 11 against 21 gradients per ESS; a
# logistic regression with AR(0.9) predictors at d = 200, 16 against 91; at d = 1,024 the dense
# frame lost (57 against 34, 29 against 12 s)
LAPLACE_DENSE_MAX_DIM = 300
MAX_RANK = 16  # eigen-directions of the low-rank frame
# one float64 standard normal (threefry bits and the inverse error function) costs on the CPU about
# as much as NORMAL_FLOPS flops of a model's gradient as XLA's cost analysis counts them: measured
# 6-10 ns a normal against 17-47 ps a counted flop (hierarchical logistic, Poisson GLMM and latent
# field, d = 300-3,025), so d normals cost 0.3-0.5 of a gradient there and 2-4 on the field
NORMAL_FLOPS = 200.0
START_HALVINGS = 30  # halvings towards the MAP of a start draw whose gradient is not finite
LANCZOS_TOL = 1e-2  # relative accuracy of the whitened Hessian's extreme eigenvalues
LANCZOS_ITERS = 50  # ARPACK restarts at most, per extreme eigenvalue
# where the whitened Hessian at the draws' centre is a saddle, each spike of the warm-up draws is at
# most the variance their gradients read along it, and at least this (twice the bulk's sd): the
# gradients' reading of a noisy sample direction falls short of a true spike, and a hierarchical
# model's saddle (its group scale) mixes slower than its Gaussian reading says (hierarchical
# logistic, gradients per ESS with floors 1, 2, 4: 58, 53, 40 at d = 3,000; 65, 62, 54 at 10,000)
SADDLE_MIN_VARIANCE = 4.0
# ... and only where the draws are few against d: c = d / (half the draws) at least this
# (d >= 1,500 at the warm-up's 300 draws). At c = 2 and 6.7 the bound cost a stochastic volatility
# model (its scale and persistence a saddle) 1.4-3.2 x the gradients per ESS, and at c = 2 its
# convergence; at c = 20 it saved 10 % there, and 72-86 % on the hierarchical logistic (c = 20
# and 67)
SADDLE_MIN_RATIO = 10.0
# a direction of the warm-up draws is stretched only where the Hessian at their centre leaves it a
# variance of at least this (twice the diagonal frame's sd): warm-up chains still moving at d far
# above their number of draws show spikes of 5-58 along which the Hessian reads a variance of 1-2
# (hierarchical logistic, Poisson GLMM, latent field, d = 300 and 1,000); stretched as the draws
# say, the frame's curvature along them was 11-376 at d = 300-10,000 and the low-rank frame lost
# every trial
STRETCH_MIN_VARIANCE = 4.0


@jax.tree_util.register_pytree_node_class
class Frame:
    """x = mean + F z, F = diag(scale) (I + U diag(root) U^T), root = sqrt(lam) - 1 (U None: diagonal)."""

    def __init__(self, mean, scale, U=None, root=None):
        self.mean, self.scale, self.U, self.root = mean, scale, U, root

    @property
    def kind(self) -> str:
        return "low-rank" if self.rank() else "diagonal"

    def tree_flatten(self):
        return (self.mean, self.scale, self.U, self.root), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)

    def _inner(self, z, root):
        if self.U is None:
            return z
        return z + ((z @ self.U) * root) @ self.U.T

    def to_x(self, z):
        """m + F z."""
        return self.mean + self.scale * self._inner(z, self.root)

    def transpose(self, g):
        """F^T g (the gradient in the frame)."""
        return self._inner(self.scale * g, self.root)

    def to_z(self, x):
        """F^-1 (x - m)."""
        w = (x - self.mean) / self.scale
        if self.U is None:
            return w
        return self._inner(w, 1.0 / (1.0 + self.root) - 1.0)

    def without_directions(self) -> "Frame":
        """The same frame without its stretched directions (F = diag(s)): the diagonal frame."""
        return Frame(self.mean, self.scale)

    def rank(self) -> int:
        """The number of stretched directions."""
        return 0 if self.U is None else int(np.count_nonzero(np.asarray(self.root)))

    def on_device(self) -> "Frame":
        """The frame with float64 device arrays (an argument of the compiled chains)."""
        return jax.tree_util.tree_map(lambda a: jax.device_put(np.asarray(a, np.float64)), self)


FRAMES = {"diagonal": "diag(s)", "low-rank": "diag(s) (I + U diag(sqrt(lam) - 1) U^T)"}
KINDS = ("auto", "dense") + tuple(FRAMES)



@functools.lru_cache(maxsize=32)
def value_and_grad_of(target):
    """jax.value_and_grad of the target's potential, one per target, batched over chains (`batching`)."""
    return batched(jax.value_and_grad(target.potential), target.dim, target.dtype)


def uses_dense(d: int, frame: str = "auto") -> bool:
    """Whether the warm-up starts from a dense Gaussian fit (forced, or auto with d <= DENSE_MAX_DIM)."""
    if frame not in KINDS:
        raise ValueError(f"frame must be one of {', '.join(map(repr, KINDS))}; got {frame!r}")
    return frame == "dense" or (frame == "auto" and d <= DENSE_MAX_DIM)


def start_frame(target, mode, probes: int = PROBES, seed: int = 0) -> Frame:
    """Diagonal frame at `mode` with s_i = (estimated hess V_ii)^-1/2 (`targets.mode.probed_scale`)."""
    return Frame(np.asarray(mode, np.float64), probed_scale(target, mode, seed, probes))


def finite_start(method, vg, z0, keys, halvings: int = START_HALVINGS):
    """Chain states at z0, a non-finite start moved halfway towards the MAP (z = 0) up to `halvings` times."""
    z = np.array(z0, dtype=np.float64)
    for _ in range(halvings):
        state = init_fn(method, vg)(z, keys)  # the same program at every call
        bad = ~np.all(np.isfinite(np.asarray(state.grad)), axis=1) | \
            ~np.all(np.isfinite(z), axis=1)
        if not bad.any():
            return state
        z[bad] *= 0.5
    return start(method, vg, z, keys)


def spiked_eigenvalue(ell, c):
    """Spike lam of sample eigenvalue ell = lam + c lam / (lam - 1) (Baik & Silverstein 2006)."""
    b = ell + 1.0 - c
    return 0.5 * (b + np.sqrt(np.maximum(b * b - 4.0 * ell, 0.0)))


def effective_draws(z) -> float:
    """Effective draws n (1 - rho) / (1 + rho), rho the median lag-1 autocorrelation (AR(1) reading)."""
    z = np.asarray(z, np.float64)
    c = z - z.mean(1, keepdims=True)
    num = np.sum(c[:, 1:] * c[:, :-1], axis=(0, 1))
    den = np.sum(c * c, axis=(0, 1))
    rho = float(np.clip(np.nanmedian(num / np.where(den > 0, den, np.nan)), 0.0, 0.99))
    return z.shape[0] * z.shape[1] * (1 - rho) / (1 + rho)


def finite_rows(z) -> np.ndarray:
    """Draws (..., d) as float64 rows (n, d), those with a non-finite entry dropped."""
    flat = np.asarray(z, np.float64).reshape(-1, np.shape(z)[-1])
    return flat[np.all(np.isfinite(flat), axis=1)]


GRAD_BATCH = 4  # draws per vmapped gradient call in `draws_gradients` (the chains' own batch)


@functools.lru_cache(maxsize=32)
def _batched_grad(target):
    def grads(x):
        return jax.lax.map(lambda r: value_and_grad_of(target)(r)[1], x, batch_size=GRAD_BATCH)

    return jit(grads)


def draws_gradients(target, frame: Frame, z):
    """Frame gradients F^T grad V at draws z (chain, draw, d), GRAD_BATCH at a time; NaN where not finite."""
    shape = np.shape(z)
    flat = np.asarray(z, np.float64).reshape(-1, shape[-1])
    ok = np.all(np.isfinite(flat), axis=1)
    g = np.full(flat.shape, np.nan)
    if ok.any():
        x = frame.to_x(flat[ok])
        g[ok] = frame.transpose(np.asarray(_batched_grad(target)(jax.device_put(x)), np.float64))
    return g.reshape(shape)


def pair_scale(z, g):
    """Per-coordinate scale sqrt(sd(z) / sd(g)): the Fisher-divergence diagonal (nutpie, Seyboldt et al.)."""
    flat_z = np.asarray(z, np.float64).reshape(-1, np.shape(z)[-1])
    flat_g = np.asarray(g, np.float64).reshape(-1, np.shape(g)[-1])
    ok = np.all(np.isfinite(flat_z), axis=1) & np.all(np.isfinite(flat_g), axis=1)
    if ok.sum() < 2:
        return np.ones(flat_z.shape[1])
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.sqrt(flat_z[ok].std(0) / flat_g[ok].std(0))
    return np.where(np.isfinite(a) & (a > 0), np.clip(a, 1e-4, 1e4), 1.0)


def from_draws(frame: Frame, z, g, kind: str = "auto", max_rank: int = MAX_RANK) -> Frame:
    """The frame refined by warm-up draws: mean, `pair_scale`, directions above the Marchenko-Pastur edge."""
    flat = finite_rows(z)
    n, d = flat.shape
    if n < 2:
        return frame
    mu = flat.mean(0)
    sd = pair_scale(z, g)
    out = Frame(frame.to_x(mu), frame.scale * sd)  # x = m + s (mu + sd w)
    if kind == "diagonal":
        return out
    y = (flat - mu) / sd
    c = d / max(min(0.5 * n, effective_draws(z)), 1.0)
    _, s, vt = np.linalg.svd(y / math.sqrt(n - 1), full_matrices=False)
    ell = s ** 2
    keep = np.flatnonzero(ell > (1.0 + math.sqrt(c)) ** 2)[:max_rank]
    if keep.size == 0:
        return out
    lam = spiked_eigenvalue(ell[keep], c)
    return Frame(out.mean, out.scale, vt[keep].T, np.sqrt(lam) - 1.0)


def confirmed_directions(target, frame: Frame, min_variance: float = STRETCH_MIN_VARIANCE):
    """(frame, HVPs): stretched directions capped at the Hessian's variance 1 / (s u)^T hess V(m) (s u)."""
    r = frame.rank()
    if not r or target.hvp is None:
        return frame, 0
    hvp = jitted(target, "hvp")
    x = jax.device_put(np.asarray(frame.mean, np.float64))
    U = np.asarray(frame.U, np.float64)[:, :r]
    lam = (1.0 + np.asarray(frame.root, np.float64)[:r]) ** 2
    scale = np.asarray(frame.scale, np.float64)
    for k in range(r):
        w = scale * U[:, k]
        curv = float(w @ np.asarray(hvp(x, jax.device_put(w)), np.float64))
        if math.isfinite(curv) and curv > 0:
            lam[k] = min(lam[k], 1.0 / curv)
    keep = np.flatnonzero(lam >= min_variance)
    if keep.size == 0:
        return Frame(frame.mean, frame.scale), r
    return Frame(frame.mean, frame.scale, U[:, keep], np.sqrt(lam[keep]) - 1.0), r


def step_costs(target) -> tuple:
    """(normal, direction) costs of a frame's map in gradients, from XLA's flop count; (0, 0) off the CPU."""
    if jax.default_backend() != "cpu":
        return 0.0, 0.0
    try:
        flops = _compile.gradient_flops(target)
    except Exception:  # a potential XLA cannot analyse: gradients alone
        return 0.0, 0.0
    if not flops > 0:
        return 0.0, 0.0
    d = float(target.dim)
    return NORMAL_FLOPS * d / flops, 4.0 * d / flops


def cheaper(trials):
    """The trial with the least predicted gradients per ESS; the first (low-rank) on a tie."""
    return min(trials, key=lambda t: t["predicted_cost_per_ess"])


def describe_trial(trials) -> str:
    """One clause: the frames tried and their predicted cost, and which was kept."""
    best = cheaper(trials)

    def one(t):
        rank = f" (rank {t['rank']})" if t["rank"] else ""
        return (f"{t['kind']}{rank}: h = {t['step_size']:.3g}, "
                f"{t['predicted_grads_per_ess']:.0f} gradients per ESS predicted "
                f"(cost {t['predicted_cost_per_ess']:.0f})")

    return ("frames tried from the same stage-1 draws: " + "; ".join(map(one, trials))
            + f"; {best['kind']} kept")


def pair_variances(z, g, v):
    """Fisher-divergence variances sqrt(var(z v) / var(g v)) along unit directions v (k, d)."""
    vt = np.atleast_2d(np.asarray(v, np.float64)).T
    return pair_scale(np.asarray(z, np.float64) @ vt, np.asarray(g, np.float64) @ vt) ** 2


def eigenvalues(z, g=None):
    """Denoised eigenvalues of the draws' covariance without a d x d matrix, spikes bounded by gradients."""
    flat = finite_rows(z)
    n, d = flat.shape
    out = np.ones(d)
    if n < 2:
        return out
    c = d / max(0.5 * n, 1.0)
    centred = (flat - flat.mean(0)) / math.sqrt(n - 1)
    if g is not None:
        _, s, vt = np.linalg.svd(centred, full_matrices=False)
    else:
        s = np.linalg.svd(centred, compute_uv=False)
    ell = np.clip(s ** 2, 1e-8, 1e8)
    k = ell.size
    spike = ell > (1.0 + math.sqrt(c)) ** 2
    out[:k] = np.where(spike, spiked_eigenvalue(ell, c), 1.0)
    if g is not None and spike.any():
        top = np.flatnonzero(spike)
        read = np.maximum(pair_variances(z, g, vt[top]), SADDLE_MIN_VARIANCE)
        out[top] = np.minimum(out[top], read)
    if c < 1:
        lo = (1.0 - math.sqrt(c)) ** 2
        out[:k] = np.where(ell < lo, ell / lo, out[:k])
    return np.sort(out)


def curvature_range(target, frame: Frame, z, tol: float = LANCZOS_TOL):
    """(min, max) eigenvalue of the whitened Hessian at the draws' mean (Lanczos), and HVPs spent."""
    from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh

    flat = finite_rows(z)
    d = flat.shape[1]
    if target.hvp is None or flat.shape[0] == 0:  # nothing to probe: no cap
        return float("nan"), float("nan"), 0
    hvp = jitted(target, "hvp")  # the frame applied on the host: no program per frame
    x = jax.device_put(np.asarray(frame.to_x(flat.mean(0)), np.float64))
    count = [0]

    def mv(v):
        count[0] += 1
        w = frame.scale * frame._inner(np.asarray(v, np.float64).reshape(d), frame.root)
        return np.asarray(frame.transpose(np.asarray(hvp(x, jax.device_put(w)), np.float64)))

    def extreme(which):
        try:
            return float(eigsh(LinearOperator((d, d), matvec=mv, dtype=np.float64), k=1,
                               which=which, tol=tol, maxiter=LANCZOS_ITERS,
                               v0=np.ones(d), return_eigenvectors=False)[0])
        except ArpackNoConvergence as e:
            return float(e.eigenvalues[0]) if len(e.eigenvalues) else float("nan")

    lo, hi = extreme("SA"), extreme("LA")
    return lo, hi, count[0]


def bounds_spikes(z, curvature_min: float) -> bool:
    """Whether `capped_eigenvalues` bounds spikes by gradients (a saddle, c >= SADDLE_MIN_RATIO)."""
    n = finite_rows(z).shape[0]
    saddle = not (np.isfinite(curvature_min) and curvature_min > 0)
    return bool(saddle and np.shape(z)[-1] / max(0.5 * n, 1.0) >= SADDLE_MIN_RATIO)


def capped_eigenvalues(z, curvature_min: float, g=None):
    """`eigenvalues` of the draws with each variance capped at 1 / curvature_min (docs/hfhr.md, step 4)."""
    if np.isfinite(curvature_min) and curvature_min > 0:
        return np.minimum(eigenvalues(z), max(1.0 / curvature_min, 1.0))
    return eigenvalues(z, g if bounds_spikes(z, curvature_min) else None)


def frame_value_and_grad(target, frame: Frame):
    """(V_w, grad V_w) of V_w(z) = V(m + F z) with traced frame arrays (one compilation per kind and rank)."""

    return jax.tree_util.Partial(_frame_fn(value_and_grad_of(target)), frame.on_device())


@functools.lru_cache(maxsize=32)
def _frame_fn(vg):
    def full(frame, z):
        v, g = vg(frame.to_x(z))
        return v, frame.transpose(g)

    def diagonal(frame, z):
        v, g = vg(frame.mean + frame.scale * z)
        return v, frame.scale * g

    def fn(frame, z):  # the frame's kind is its pytree structure: one program per kind and rank
        return diagonal(frame, z) if frame.U is None else full(frame, z)

    fn.scaled_frame = True
    return fn


def is_scaled(vg) -> bool:
    """Whether (V, grad V) is a scaled frame's: their kernel skips refresh normals at gamma = 0."""
    return bool(getattr(getattr(vg, "func", None), "scaled_frame", False))


def whiten(target, frame: Frame):
    """V_w(z) = V(m + F z) with gradient F^T grad V and HVP F^T hess V F v (no d x d matrix)."""
    def hvp(z, v):
        return frame.transpose(target.hvp(frame.to_x(z), frame._inner(v, frame.root) * frame.scale))

    return Target(dim=target.dim, potential=lambda z: target.potential(frame.to_x(z)),
                  grad=lambda z: frame.transpose(target.grad(frame.to_x(z))), hvp=hvp,
                  name=f"{target.name}-whitened")


__all__ = ["whiten", "Frame", "FRAMES", "DENSE_MAX_DIM", "VI_FRAME_MAX_DIM", "MAX_RANK",
           "uses_dense", "start_frame",
           "confirmed_directions",
           "finite_start", "is_scaled", "effective_draws", "from_draws", "eigenvalues",
           "frame_value_and_grad",
           "spiked_eigenvalue", "pair_variances", "bounds_spikes",
           "curvature_range", "capped_eigenvalues",
           "pair_scale", "draws_gradients", "step_costs", "NORMAL_FLOPS"]
