"""Preconditioning frames of the exact sampler for large d: x = m + F z at O(d r) per gradient.

The warm-up runs the chains on V_w(z) = V(m + F z). Up to DENSE_MAX_DIM parameters F is a dense
factor (`adapt`: the Laplace fit, or up to VI_FRAME_MAX_DIM a VI fit where the Laplace fit is a
poor frame, refined by the warm-up draws' covariance; O(d^2) per gradient, O(d^3) to build); up
to LAPLACE_DENSE_MAX_DIM it is still the dense Laplace fit where that whitens the target
(`warmup.good_laplace_fit`). Otherwise the frame is one of FRAMES:

- "diagonal": F = diag(s), O(d) per gradient;
- "low-rank": F = diag(s) (I + U diag(sqrt(lam) - 1) U^T), U (d, r) orthonormal: covariance
  diag(s) (I + U diag(lam - 1) U^T) diag(s), O(d r) per gradient.

The rule (`choose`): the start frame is diagonal at the MAP, with s = diag(hess V)^-1/2 estimated
from PROBES Hessian-vector products with Rademacher vectors (Bekas, Kokiopoulou & Saad 2007); the
stage-1 warm-up draws and their gradients g then set s by s_i (sd(z_i) / sd(g_i))^1/2
(`pair_scale`, the Fisher-divergence diagonal nutpie adapts, Seyboldt, Carlson & Carpenter) and,
after that scaling, the eigen-directions of their covariance whose eigenvalue lies above the
Marchenko-Pastur bulk of an identity covariance (for the draws' effective number, their lag-1
autocorrelation read as AR(1); at most MAX_RANK, the eigenvalue corrected for the spiked-covariance
bias, Baik & Silverstein 2006) become U, each variance capped at the one the Hessian at the
draws' mean reads along its direction and dropped below STRETCH_MIN_VARIANCE
(`confirmed_directions`, one HVP a direction). When there is at least one left, stage 2 (dual
averaging of the step size) runs twice from the same chain positions, in that low-rank frame and in
the diagonal one (the same diag(s) without U), and the trajectory rule (`adapt.choose_trajectory`)
predicts each frame's gradients per effective sample from its own stage-2 step size, acceptance and
draws' denoised spectrum, each variance capped by the inverse of the smallest eigenvalue of the
whitened Hessian at the draws' mean (`curvature_range`, `capped_eigenvalues`; where that eigenvalue
is not positive and the draws few against d, each spike at most the variance the draws' gradients
read along its direction and at least SADDLE_MIN_VARIANCE, `pair_variances`); the cheaper is kept
(low-rank on a tie).
Directions that the draws show but the target's geometry does not reward (a transient of
the early warm-up, or a covariance direction along which the local curvature is much higher than
its variance implies, as in hierarchical models) cost the low-rank frame its step size, and the
diagonal frame wins. The chains start at m + F z0, z0 ~ N(0, I); a start draw whose gradient is not
finite (the start frame's scale of a nearly flat coordinate, e.g. a group scale whose log is driven
far down at a hierarchical model's MAP, can reach overflow) moves halfway to the MAP until it is
finite. `sample(..., frame=...)` forces a kind ("dense" at any d; "diagonal"; "low-rank").
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
    """x = mean + F z with F = diag(scale) (I + U diag(root) U^T) (root = sqrt(lam) - 1; U None:
    diagonal). Methods take one point (d,) or rows (..., d), NumPy or JAX arrays."""

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
        """The same frame without its stretched directions (F = diag(s)): the diagonal frame,
        whose chains run the diagonal program (O(d) per gradient, no d x r products)."""
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
    """jax.value_and_grad of the target's potential, one per target (compiled programs key on it),
    batched over the chains as `batching.batched` decides (one call per chain on the CPU for a
    large model that gathers or scatters; vmap otherwise)."""
    return batched(jax.value_and_grad(target.potential), target.dim, target.dtype)


def uses_dense(d: int, frame: str = "auto") -> bool:
    """Whether the warm-up starts from a dense Gaussian fit: forced, or auto with d <=
    DENSE_MAX_DIM (beyond VI_FRAME_MAX_DIM only where the Laplace fit is a good frame)."""
    if frame not in KINDS:
        raise ValueError(f"frame must be one of {', '.join(map(repr, KINDS))}; got {frame!r}")
    return frame == "dense" or (frame == "auto" and d <= DENSE_MAX_DIM)


def start_frame(target, mode, probes: int = PROBES, seed: int = 0) -> Frame:
    """Diagonal frame at `mode` with s_i = (estimated hess V_ii)^-1/2 (`targets.mode.probed_scale`)."""
    return Frame(np.asarray(mode, np.float64), probed_scale(target, mode, seed, probes))


def finite_start(method, vg, z0, keys, halvings: int = START_HALVINGS):
    """Chain states at z0 (chains, d) in a frame whose mean is the MAP: a chain whose gradient is
    not finite there moves halfway towards the mean (z = 0), at most `halvings` times; then
    `start.start`, which raises if one still is not. Chains that start finite keep z0."""
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
    """The population eigenvalue lam > 1 + sqrt(c) whose sample eigenvalue is `ell` in the spiked
    covariance model, ell = lam + c lam / (lam - 1) (Baik & Silverstein 2006); `ell` must lie
    above the bulk edge (1 + sqrt(c))^2."""
    b = ell + 1.0 - c
    return 0.5 * (b + np.sqrt(np.maximum(b * b - 4.0 * ell, 0.0)))


def effective_draws(z) -> float:
    """n (1 - rho) / (1 + rho) for draws z (chain, draw, d): rho the median over coordinates of
    the lag-1 autocorrelation within chains (an AR(1) reading of the draws' dependence)."""
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
    """F^T grad V at the draws z (chain, draw, d) taken in `frame` (one program, GRAD_BATCH draws
    at a time: the memory of the chains' own gradient), NaN rows where a draw is not finite."""
    shape = np.shape(z)
    flat = np.asarray(z, np.float64).reshape(-1, shape[-1])
    ok = np.all(np.isfinite(flat), axis=1)
    g = np.full(flat.shape, np.nan)
    if ok.any():
        x = frame.to_x(flat[ok])
        g[ok] = frame.transpose(np.asarray(_batched_grad(target)(jax.device_put(x)), np.float64))
    return g.reshape(shape)


def pair_scale(z, g):
    """sqrt(sd(z) / sd(g)) per coordinate of draws z and their gradients g (chain, draw, d) in a
    frame: the diagonal rescaling minimising the Fisher divergence of the diagonal family (nutpie's
    diagonal, Seyboldt et al.); exact for any draws of a Gaussian with diagonal covariance, and
    unaffected by draws that under-explore a coordinate (both spreads shrink alike); 1 where
    either spread is zero or not finite."""
    flat_z = np.asarray(z, np.float64).reshape(-1, np.shape(z)[-1])
    flat_g = np.asarray(g, np.float64).reshape(-1, np.shape(g)[-1])
    ok = np.all(np.isfinite(flat_z), axis=1) & np.all(np.isfinite(flat_g), axis=1)
    if ok.sum() < 2:
        return np.ones(flat_z.shape[1])
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.sqrt(flat_z[ok].std(0) / flat_g[ok].std(0))
    return np.where(np.isfinite(a) & (a > 0), np.clip(a, 1e-4, 1e4), 1.0)


def from_draws(frame: Frame, z, g, kind: str = "auto", max_rank: int = MAX_RANK) -> Frame:
    """The diagonal `frame` refined by warm-up draws z (chain, draw, d) taken in it and their frame
    gradients g (`draws_gradients`): their mean and `pair_scale` set the diagonal; for
    "auto" / "low-rank", the top eigen-directions of the scaled draws' covariance above the
    Marchenko-Pastur edge (1 + sqrt(c))^2, c = d / n_eff, give U; n_eff is the smaller of half
    the draws and `effective_draws` (strongly autocorrelated draws, as early warm-up chains at
    large d, spread the sample eigenvalues of an identity covariance far past the edge for n / 2)."""
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
    """(frame, HVPs): each stretched direction u of `frame` with its variance lam capped at the one
    the Hessian reads along it at the frame's centre, 1 / (s u)^T hess V(m) (s u) where that is
    positive (exact for a Gaussian target), and dropped where the capped variance is below
    `min_variance`; one Hessian-vector product a direction. Where the Hessian is not positive along
    u it says nothing and lam is kept. Without directions (or an HVP) the frame is returned as it
    is."""
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
    """(d standard normals, each stretched direction of a frame's map around one gradient) in
    gradients of the target, from the flops XLA counts in its gradient (NORMAL_FLOPS a normal; the
    low-rank map's two d x r products 4 d a direction): the costs `adapt.choose_trajectory`
    weighs. (0, 0) off the CPU, or where the count is unavailable."""
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
    """The trial (dicts with "predicted_cost_per_ess", the first the low-rank frame) with the
    least predicted cost per effective sample in gradients (`step_costs`); the first (low-rank)
    on a tie."""
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
    """sqrt(var(z v) / var(g v)) along each unit direction v (k, d) of draws z and their frame
    gradients g (chain, draw, d): `pair_scale` squared on the projections, the Fisher-divergence
    variance along a direction, exact for an eigen-direction of a Gaussian whatever the draws'
    spread (draws that drift or are over-dispersed along v inflate both variances alike)."""
    vt = np.atleast_2d(np.asarray(v, np.float64)).T
    return pair_scale(np.asarray(z, np.float64) @ vt, np.asarray(g, np.float64) @ vt) ** 2


def eigenvalues(z, g=None):
    """Denoised eigenvalues of the covariance of draws (chain, draw, d), without a d x d matrix
    (the large-d counterpart of `adapt.denoised_eigenvalues`): with c = d / (half the draws),
    sample eigenvalues above the bulk edge (1 + sqrt(c))^2 are spike-corrected, those below
    (1 - sqrt(c))^2 (c < 1) divided by it, the rest (and those the draws cannot see) are 1. With
    the draws' frame gradients g, each spike is at most its direction's `pair_variances`, and at
    least SADDLE_MIN_VARIANCE (`capped_eigenvalues` passes g at a saddle, `bounds_spikes`):
    warm-up chains still moving, at d far above their number of draws, show tens of spikes of
    20-150 on a hierarchical logistic at d = 3,000-10,000 whose variance the gradients put near
    1.2-1.4."""
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
    """(smallest, largest) eigenvalue of the whitened Hessian F^T hess V(x) F at the draws' mean
    x = m + F mean(z) (z: draws (chain, draw, d) in the frame), by Lanczos on Hessian-vector
    products (scipy's ARPACK, each end to relative accuracy `tol`), and the number of
    HVPs spent. Autocorrelated warm-up draws at d >> their number inflate the top eigenvalues of
    their covariance far beyond the target's (`eigenvalues`); the curvature at the centre has no
    such noise, and on a near-Gaussian target its inverse is the largest variance."""
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
    """Whether `capped_eigenvalues` of draws z (chain, draw, d) bounds their spikes by their
    gradients: the curvature at their centre not positive, and c = d / (half the draws) at least
    SADDLE_MIN_RATIO."""
    n = finite_rows(z).shape[0]
    saddle = not (np.isfinite(curvature_min) and curvature_min > 0)
    return bool(saddle and np.shape(z)[-1] / max(0.5 * n, 1.0) >= SADDLE_MIN_RATIO)


def capped_eigenvalues(z, curvature_min: float, g=None):
    """`eigenvalues` of the draws with the variances above 1 / curvature_min (the largest variance
    a Gaussian with the centre's curvature has) set to it. Where that curvature is not positive (a
    saddle: the centre says nothing of the spread), the draws' spectrum, each spike at most its
    direction's variance by the frame gradients g (`eigenvalues(z, g)`) where they are given and
    the draws few against d (`bounds_spikes`); with a positive curvature g is not used: a noisy
    sample direction mixes a true spike with the bulk, and its gradients then read far less than
    the spike (3.5 and 1.3 where the curvature bounds the variance at 28 and 7, a GLMM and a
    latent field at d = 3,000: chains 2.4 and 1.8 x costlier)."""
    if np.isfinite(curvature_min) and curvature_min > 0:
        return np.minimum(eigenvalues(z), max(1.0 / curvature_min, 1.0))
    return eigenvalues(z, g if bounds_spikes(z, curvature_min) else None)


def frame_value_and_grad(target, frame: Frame):
    """(V_w, grad V_w) of V_w(z) = V(m + F z) as a pytree function whose frame arrays are traced
    (one compilation of the chains for every frame of the same kind and rank)."""

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
    """Whether a chains' (V, grad V) is a diagonal or low-rank frame's (`frame_value_and_grad`):
    their kernel skips the refresh normals at gamma = 0 (`kernels.adjusted_hfhr.langevin_trajectory`,
    lean), which the dense frame's chains keep drawing (their numbers stay bit for bit)."""
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
