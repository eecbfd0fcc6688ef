"""MAP argmin V at any conditioning: L-BFGS, then trust-region Newton, checked by the Newton decrement.

L-BFGS (scipy) gets near the mode cheaply but stops early on badly conditioned potentials (an
uncentred regression has kappa ~ 1e10). From its end point x1 the search continues with scipy's
trust-region Newton method in coordinates x = x1 + C z:

- d <= MATRIX_FREE_DIM: on the exact Hessian (`trust-exact`), C the Cholesky factor of
  hess V(x1)^-1 when that is positive definite (the trust region is then the Dikin ellipsoid, not a
  sphere in the user's units) and diag(hess V)^-1/2 otherwise;
- d > MATRIX_FREE_DIM: matrix-free, no d x d array anywhere: Newton-CG on Hessian-vector products
  (`trust-krylov`), C = diag(s) with s = diag(hess V(x1))^-1/2 estimated from Rademacher HVP probes
  (`hessian_diagonal`), and the decrement by conjugate gradients on HVPs,
  preconditioned by diag(s^2).

Convergence is the Newton decrement lambda^2 / 2 = g^T H^-1 g / 2 (the predicted decrease of V,
in nats; affine-invariant) at most `tol`, with H positive definite; anything else is reported as
not converged, with the reason. `probe_unbounded` walks rays from the mode and names a direction
along which V falls without bound (an improper density).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional

import jax
import numpy as np

from .._compile import device, jit
from .base import Target, TargetError, jitted, potential_on_rows

# Up to this d the mode search and the curvature estimate (`targets.curvature`) form the dense
# Hessian (d HVPs in one batched call, O(d^2) memory, O(d^3) factorisations); above it nothing
# forms a d x d matrix: Newton-CG and Lanczos on HVPs, a diagonal Laplace factor. At d = 1000 one
# d x d float64 matrix is 8 MB and its factorisation ~0.1 s; at d = 10,000, 800 MB and ~100 s.
MATRIX_FREE_DIM = 1000
DENSE_MAX_DIM = MATRIX_FREE_DIM  # the name the dense branches test against
DECREMENT_TOL = 1e-6  # lambda^2 / 2 in nats: the mode within 0.0014 posterior sds (Laplace metric)


@dataclasses.dataclass
class Mode:
    """`x`: the mode found; `converged`, `reason`; `decrement`: lambda^2 / 2 at x (NaN when the
    Hessian there is not positive definite); `hessian`: dense hess V(x) when d <= DENSE_MAX_DIM;
    `grad_evals`, `hvp_evals`: queries spent; `method`: the Newton variant that finished;
    `scale`: the probed diag(hess V)^-1/2 of the matrix-free search (None when dense)."""

    x: np.ndarray
    converged: bool
    reason: str
    decrement: float
    hessian: Optional[np.ndarray]
    grad_evals: int
    hvp_evals: int
    method: str
    scale: Optional[np.ndarray] = None
    others: tuple = ()  # further modes found on the two sides of a saddle point (`find_mode`)


MAP_RESTARTS = 10  # L-BFGS restarts of the MAP search (fresh memory) while a run still lowers V
MAP_GAIN = 1e-6  # nats: a run lowering V by less ends the MAP search


def inverse_factor(H: np.ndarray) -> np.ndarray:
    """Lower-triangular C with C C^T = H^-1 from one Cholesky factorisation of the reversed H (no
    explicit inverse, no product to refactor: the accuracy of chol(H) at condition number kappa,
    not kappa^2). J H J = M M^T (J the reversal) gives C = J M^-T J."""
    from scipy.linalg import solve_triangular

    M = np.linalg.cholesky(H[::-1, ::-1])
    Minv_T = solve_triangular(M, np.eye(H.shape[0]), lower=True).T
    return np.ascontiguousarray(Minv_T[::-1, ::-1])


def _lbfgs(vg, x0, max_iter):
    """(end point, gradient evaluations, V there) of scipy's L-BFGS-B from x0."""
    from scipy.optimize import minimize

    count = [0]

    def fun(x):
        count[0] += 1
        v, g = vg(device(x))
        v = float(v)
        if not math.isfinite(v):
            return 1e300, np.zeros_like(x)  # makes the line search back off
        return v, np.asarray(g, dtype=np.float64)

    res = minimize(fun, x0, jac=True, method="L-BFGS-B",
                   options={"maxiter": max_iter, "gtol": 1e-8, "ftol": 1e-15, "maxcor": 20})
    return np.asarray(res.x), count[0], float(res.fun)


def _dense_hessian(target, x):
    H = np.asarray(jitted(target, "hessian")(device(x)), dtype=np.float64)
    return 0.5 * (H + H.T)


def _frame(H, d):
    """C for the Newton search: chol(H^-1) when H is positive definite, else diag(|H_ii|)^-1/2."""
    if H is not None and np.all(np.isfinite(H)):
        try:
            return inverse_factor(H)
        except np.linalg.LinAlgError:
            diag = np.abs(np.diag(H))
            return np.diag(1.0 / np.sqrt(np.where(diag > 0, diag, 1.0)))
    return np.eye(d)


def _decrement(H, g):
    """g^T H^-1 g / 2, or NaN when H is not positive definite."""
    try:
        L = np.linalg.cholesky(H)
    except np.linalg.LinAlgError:
        return math.nan
    from scipy.linalg import solve_triangular

    w = solve_triangular(L, g, lower=True)
    return 0.5 * float(w @ w)


def _decrement_cg(hvp, x, g, d, scale=None):
    """g^T H^-1 g / 2 with H^-1 g by conjugate gradients on HVPs (preconditioned by diag(scale^2)
    when given); NaN when CG meets curvature <= 0."""
    from scipy.sparse.linalg import LinearOperator, cg

    count = [0]
    negative = [False]

    def mv(v):
        count[0] += 1
        out = np.asarray(hvp(device(x), device(np.ravel(v))), dtype=np.float64)
        if float(np.ravel(v) @ out) <= 0.0:
            negative[0] = True
        return out

    M = None if scale is None else LinearOperator(
        (d, d), matvec=lambda v: np.asarray(scale) ** 2 * np.ravel(v), dtype=np.float64)
    sol, _ = cg(LinearOperator((d, d), matvec=mv, dtype=np.float64), g, rtol=1e-8,
                maxiter=10 * d, M=M)
    return (math.nan if negative[0] else 0.5 * float(g @ sol)), count[0]


RESTARTS = 4  # further starts when the first does not converge: 0, then uniform in [-2, 2]^d


def find_mode(target: Target, init=None, *, max_iter: int = 2000, newton_iter: int = 200,
              tol: float = DECREMENT_TOL, dense_max_dim: int = DENSE_MAX_DIM,
              restarts: int = RESTARTS, seed: int = 0) -> Mode:
    """argmin V: L-BFGS from `init` (default 0), then trust-region Newton in the frame of the
    Hessian there; converged when the Newton decrement lambda^2 / 2 <= `tol` nats. When that search
    does not converge, up to `restarts` more from 0 (the centre of a constrained space: logit 0,
    log 1) and from points uniform in [-2, 2]^d (NumPyro's default start box), stopping at the
    first that converges: the converged mode of lowest V, else the end point of lowest V, with
    every start's queries counted."""
    kw = dict(max_iter=max_iter, newton_iter=newton_iter, tol=tol, dense_max_dim=dense_max_dim)
    try:
        first = _search(target, init, **kw)
    except TargetError as err:  # V or grad V not finite at the first start: try the others
        if restarts <= 0:
            raise
        first, failed = None, err
    if first is not None and (first.converged or restarts <= 0):
        return first
    d = target.dim
    rng = np.random.default_rng(seed)
    starts = [] if init is None or not np.any(np.asarray(init)) else [np.zeros(d)]
    starts += [rng.uniform(-2.0, 2.0, d) for _ in range(restarts - len(starts))]
    found = [] if first is None else [first]
    saddle, two, sides = _saddle(first), False, []
    if saddle is not None:  # down either side of it first
        sides = _down_both_sides(target, first.x, saddle, kw)
        found += sides
        if all(m.converged for m in sides):
            two = _warn_saddle(target, first.x, saddle, sides)
            starts = []
    for x0 in starts:
        try:
            found.append(_search(target, x0, **kw))
        except TargetError:  # not finite at that start
            continue
        if found[-1].converged:
            break
    if not found:
        raise TargetError(f"{failed} (nor at any of {len(starts)} further starts: 0 and uniform "
                          "draws in [-2, 2]^d)") from failed
    first_reason = (first.reason if first is not None else
                    "the potential or its gradient is not finite at the first start")
    vg = jitted(target, "value_and_grad")

    def value(m):
        v = float(vg(device(m.x))[0]) if np.all(np.isfinite(m.x)) else math.inf
        return v if math.isfinite(v) else math.inf

    pool = [m for m in found if m.converged] or found
    best = min(pool, key=value)
    tried = f"{len(found)} starts"
    reason = (f"{best.reason} (from start {[m is best for m in found].index(True) + 1} of {tried}; "
              f"the first did not converge: {first_reason})" if best.converged
              else f"{best.reason} (best of {tried})")
    others = tuple(np.asarray(m.x) for m in sides if m is not best) if two else ()
    return dataclasses.replace(best, reason=reason, grad_evals=sum(m.grad_evals for m in found)
                               + len(found), hvp_evals=sum(m.hvp_evals for m in found),
                               others=others)


def _saddle(m: Optional[Mode]):
    """(eigenvalue, unit eigenvector) of the most negative curvature at the end point of a search
    that did not converge, when hess V has a negative eigenvalue there (a saddle point or a
    maximum where the search stalled; dense Hessians only); else None."""
    if m is None or m.converged or m.hessian is None or not np.all(np.isfinite(m.hessian)):
        return None
    w, U = np.linalg.eigh(np.asarray(m.hessian, dtype=np.float64))
    if not w[0] < 0:
        return None
    return float(w[0]), U[:, 0]


def _down_both_sides(target, x, saddle, kw) -> list:
    """Mode searches from x +- 2 / sqrt(-lambda) u (u the direction of negative curvature lambda):
    the two sides of a saddle point, where a symmetric start (a mixture's midpoint) stalls."""
    lam, u = saddle
    out = []
    for sign in (1.0, -1.0):
        try:
            out.append(_search(target, np.asarray(x) + sign * 2.0 / math.sqrt(-lam) * u, **kw))
        except TargetError:
            continue
    return out


def _warn_saddle(target, x, saddle, sides) -> bool:
    """A RuntimeWarning naming the saddle point and the two modes on its sides: the posterior has
    two or more modes, and a Gaussian fit or a frame at one of them describes that one only.
    True when the sides' modes are two."""
    import warnings

    names = (getattr(target, "info", None) or {}).get("names")
    names = list(names) if names is not None and len(names) == target.dim else None
    lam, u = saddle
    i = int(np.argmax(np.abs(u)))
    name = names[i] if names else f"x[{i}]"
    a, b = (float(np.asarray(m.x)[i]) for m in sides)
    if abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b)):
        return False
    warnings.warn(f"the mode search met a saddle point of the potential at {name} = "
                  f"{float(np.asarray(x)[i]):.4g} (Hessian eigenvalue {lam:.3g} there, no mode): "
                  f"going down either side found two modes, at {name} = {min(a, b):.4g} and "
                  f"{max(a, b):.4g}; the posterior is multimodal, and a Gaussian fit, or a "
                  "sampler's frame, at one mode describes that mode only", RuntimeWarning,
                  stacklevel=3)
    return True


def nan_points(target: Target, points) -> Optional[str]:
    """A sentence naming the first of `points` where V or grad V is NaN (not +inf: a wall of -inf
    log density is a support boundary), or None: a log density NaN somewhere near the mode is a
    model that is not defined there, whatever else its curvature says."""
    vg = jitted(target, "value_and_grad")
    names = (getattr(target, "info", None) or {}).get("names")
    d = target.dim
    names = list(names) if names is not None and len(names) == d else [f"x[{i}]" for i in range(d)]
    for x in points:
        v, g = vg(device(np.asarray(x, np.float64)))
        if math.isnan(float(v)) or np.any(np.isnan(np.asarray(g))):
            what = "log density" if math.isnan(float(v)) else "gradient of the log density"
            at = ", ".join(f"{n} = {float(c):.4g}" for n, c in list(zip(names, np.ravel(x)))[:4])
            return (f"the {what} is NaN at {at}{', ...' if d > 4 else ''} (near the mode "
                    "search's end point): the model is not defined there; give it a value "
                    "everywhere (-inf outside its support), or map a constrained parameter from "
                    "the real line (e.g. x = exp(u) for x > 0)")
    return None


def _search(target: Target, init=None, *, max_iter: int = 2000, newton_iter: int = 200,
            tol: float = DECREMENT_TOL, dense_max_dim: int = DENSE_MAX_DIM) -> Mode:
    """One mode search from `init` (default 0): L-BFGS, then trust-region Newton."""
    from scipy.optimize import minimize

    d = target.dim
    vg = jitted(target, "value_and_grad")
    x0 = np.zeros(d) if init is None else np.asarray(init, dtype=np.float64).reshape(d)
    v0, g0 = vg(device(x0))
    if not (np.isfinite(float(v0)) and np.all(np.isfinite(np.asarray(g0)))):
        raise TargetError("the potential or its gradient is not finite at the starting point; "
                          "pass init= a point where the log density is finite")
    x1, grads, _ = _lbfgs(vg, x0, max_iter)
    grads += 1
    dense = d <= dense_max_dim
    hvps = 0
    H1 = None
    if dense:
        H1 = _dense_hessian(target, x1)
        hvps += d
    hvp = jitted(target, "hvp")
    g1 = np.asarray(vg(device(x1))[1], dtype=np.float64)
    if dense and np.all(np.isfinite(H1)) and np.all(np.isfinite(g1)):
        dec = _decrement(H1, g1)
        if math.isfinite(dec) and dec <= tol:  # L-BFGS already there
            return Mode(x1, True, f"Newton decrement {dec:.2g} nats <= {tol:g}", dec, H1,
                        grads + 1, hvps, "L-BFGS")
    scale = None
    if dense:
        C = _frame(H1, d)
        to_x, tr = (lambda z: x1 + C @ z), (lambda g: C.T @ g)
    else:  # C = diag(s): a vector, never a d x d matrix
        scale = probed_scale(target, x1)
        hvps += PROBES
        to_x, tr = (lambda z: x1 + scale * z), (lambda g: scale * g)

    def fun(z):
        v, g = vg(device(to_x(z)))
        v = float(v)
        g = np.asarray(g, dtype=np.float64)
        if not (math.isfinite(v) and np.all(np.isfinite(g))):
            return math.inf, np.zeros(d)  # the trust region shrinks
        return v, tr(g)

    cache = {}

    def value(z):
        key = z.tobytes()
        if key not in cache:
            cache.clear()
            cache[key] = fun(z)
        return cache[key]

    count = {"g": 0, "h": 0}

    def f(z):
        count["g"] += 1
        return value(z)[0]

    def jac(z):
        return value(z)[1]

    if dense:
        def hess(z):
            count["h"] += d
            H = _dense_hessian(target, x1 + C @ z)
            return C.T @ H @ C
        kw, method = {"hess": hess}, "trust-exact"
    else:
        def hessp(z, p):
            count["h"] += 1
            return scale * np.asarray(hvp(device(to_x(z)), device(scale * p)))
        kw, method = {"hessp": hessp}, "trust-krylov"
    x, reason = x1, ""
    try:
        res = minimize(f, np.zeros(d), jac=jac, method=method,
                       options={"maxiter": newton_iter, "gtol": 1e-12}, **kw)
        if math.isfinite(float(res.fun)) and res.fun <= float(vg(device(x1))[0]):
            x = to_x(np.asarray(res.x))
        # scipy's own stopping test (a gradient norm) is not ours: its "success" is not repeated
        # beside a decrement that failed
        reason = "" if res.success else f"{method}: {res.message}"
    except (np.linalg.LinAlgError, ValueError) as err:  # a singular / non-finite Hessian
        reason = f"{method} failed: {err}"
    grads += count["g"] + 1
    hvps += count["h"]
    g = np.asarray(vg(device(x))[1], dtype=np.float64)
    H = None
    if dense:
        H = _dense_hessian(target, x)
        hvps += d
        dec = _decrement(H, g) if np.all(np.isfinite(H)) else math.nan
    else:
        dec, n = _decrement_cg(hvp, x, g, d, scale)
        hvps += n
    converged = bool(math.isfinite(dec) and dec <= tol and np.all(np.isfinite(x)))
    if converged:
        reason = f"Newton decrement {dec:.2g} nats <= {tol:g}"
    elif not math.isfinite(dec):
        reason = ("the Hessian at the end point is not positive definite (no strict local mode "
                  "there" + (f"; {reason})" if reason else ")"))
    else:
        reason = (f"Newton decrement {dec:.2g} nats > {tol:g} at the end point"
                  + (f" ({reason})" if reason else ""))
    return Mode(x, converged, reason, dec, H, int(grads), int(hvps), method, scale)


PROBES = 32  # Rademacher HVP probes of diag(hess V) (the matrix-free frame; the sampler's start frame)


def hessian_diagonal(target, x, probes: int = PROBES, seed: int = 0):
    """E[v * (hess V(x) v)] over `probes` Rademacher vectors v: an unbiased estimate of
    diag hess V(x) (Bekas et al. 2007), in one batched call of `probes` HVPs."""
    rng = np.random.default_rng(seed)
    V = rng.choice([-1.0, 1.0], size=(target.dim, probes))
    fn = jit(lambda x, M: jax.vmap(lambda v: target.hvp(x, v), in_axes=1, out_axes=1)(M))
    HV = np.asarray(fn(np.asarray(x, np.float64), V), dtype=np.float64)
    return np.mean(V * HV, axis=1)


def probed_scale(target: Target, x, seed: int = 0, probes: int = PROBES) -> np.ndarray:
    """s = diag(hess V(x))^-1/2 from `probes` Rademacher HVPs (`hessian_diagonal`); entries that
    are not positive (noise, or negative curvature) take the median of the positive ones: the
    diagonal frame of the matrix-free search, the diagonal Laplace factor above MATRIX_FREE_DIM
    and the sampler's start frame (`mcmc.frames.start_frame`)."""
    h = hessian_diagonal(target, np.asarray(x, np.float64), probes, seed)
    good = np.isfinite(h) & (h > 0)
    fill = float(np.median(h[good])) if good.any() else 1.0
    h = np.where(good, np.maximum(h, 1e-3 * fill), fill)
    return 1.0 / np.sqrt(h)


FLAT_NATS = 1.0  # V at most this far above V(mode) along a whole tube: the density does not decay
FAR_DOUBLINGS = 28  # the confirmation walks 2^28 times further than the first look


def probe_unbounded(target: Target, mode, factor, *, num_random: int = 8, seed: int = 0,
                    max_scale: float = 2.0 ** 12, tube: float = 0.5) -> Optional[dict]:
    """A direction u (in the frame of `factor`) along which exp(-V) does not decay: an improper
    density (infinite mass). Rays: +-each column of `factor` (at most 64) and `num_random` random unit
    vectors from `mode`, at t = 2, 4, ..., `max_scale` sds; a ray whose V stays at most FLAT_NATS
    above V(mode) over its last 4 doublings (falling without bound, or flat: separable data under a
    flat prior) is then confirmed out to 2^FAR_DOUBLINGS times further, on the ray and at 4 random
    points `tube` sds off it: V <= V(mode) + FLAT_NATS on that whole tube of fixed width means
    infinite mass. A proper density fails the confirmation (its V rises somewhere along the tube:
    the prior far away, or off a measure-zero ray such as a funnel's neck); so does a ray that
    leaves the support (V = inf), and a ray whose V at its far end lies above its lowest point on
    the tube (a bowl seen from high on its wall: a failed search's end point). None when no ray is
    confirmed."""
    d = target.dim
    rng = np.random.default_rng(seed)
    dirs = [_unit(d, i) * s for i in range(min(d, 64)) for s in (1.0, -1.0)]
    r = rng.standard_normal((num_random, d))
    dirs += list(r / np.linalg.norm(r, axis=1, keepdims=True))
    F = np.asarray(factor, dtype=np.float64)  # (d, d), or (d,): the diagonal factor diag(F)
    Z = np.asarray(dirs)  # (rays, d) in the frame of `factor`
    ts = 2.0 ** np.arange(1, int(math.log2(max_scale)) + 1)
    V = _on_rays(target, mode, F, Z, ts)
    v0 = float(jitted(target, "value_and_grad")(device(mode))[0])  # compiled already
    evals = V.size + 1
    with np.errstate(invalid="ignore"):  # inf - inf: a ray leaving the support is not a candidate
        low = np.all(V[:, -4:] <= v0 + FLAT_NATS, axis=1)
    far = ts[-1] * 2.0 ** np.arange(1, FAR_DOUBLINGS + 1)
    for i in np.argsort(np.where(low, V[:, -1], np.inf))[:int(low.sum())]:
        offsets = rng.standard_normal((4, d))
        offsets -= np.outer(offsets @ Z[i], Z[i]) / (Z[i] @ Z[i])  # perpendicular to the ray
        norms = np.linalg.norm(offsets, axis=1, keepdims=True)
        offsets = (offsets * tube / norms) if d > 1 else np.zeros((0, d))  # d = 1: the ray alone
        Vt = _on_rays(target, mode, F, Z[i][None], far, offsets=np.vstack([np.zeros(d), offsets]))
        evals += Vt.size
        # flat or falling out to the far end: V there no higher than anywhere nearer (a failed
        # search's end point high on a wall lies above a bowl whose far side rises again)
        if (np.all(np.isfinite(Vt)) and np.all(Vt <= v0 + FLAT_NATS)
                and np.all(Vt[:, -1] <= Vt.min(axis=1) + FLAT_NATS)):
            u = F * Z[i] if F.ndim == 1 else F @ Z[i]
            return {"direction": (u / np.linalg.norm(u)).tolist(), "distance": float(far[-1]),
                    "potential_at_mode": v0, "potential_far": float(Vt[0, -1]),
                    "falling": bool(Vt[0, -1] < v0 - FLAT_NATS), "tube_sds": tube,
                    "potential_evals": int(evals)}
    return None


def _unit(d, i):
    e = np.zeros(d)
    e[i] = 1.0
    return e


def _on_rays(target, mode, F, Z, ts, offsets=None):
    """V at mode + F (t z + o) for rays z (rows of Z), distances ts and offsets o (rows; default 0):
    (rays, len(ts)) without offsets, else (offsets, len(ts)) along the single ray Z[0]."""
    d = target.dim
    if offsets is None:
        pts = ts[None, :, None] * Z[:, None, :]  # (rays, distances, d)
    else:
        pts = ts[None, :, None] * Z[0][None, None, :] + offsets[:, None, :]
    X = np.asarray(mode)[None, None] + (pts * F if F.ndim == 1 else pts @ F.T)
    return potential_on_rows(target.potential, X.reshape(-1, d)).reshape(pts.shape[:2])


def map_estimate(target, x0, max_iter: int = 2000, restarts: int = MAP_RESTARTS, stop=None):
    """(MAP, gradient evaluations) by L-BFGS restarted from its end point with fresh memory while a
    run lowers V by more than MAP_GAIN nats: L-BFGS-B also stops when one iteration barely lowers
    V (relative reduction <= ftol), which a non-centred hierarchical model meets far from the mode
    while a group scale collapses (a Poisson GLMM at d = 1,000: V = 10,558 there, 7,889 at the
    mode), and a start frame from the Hessian there is wrong by orders of magnitude.
    `stop(x)` (None: never) is asked after the first run whether to end the search there (a
    spike of a centred hierarchy, down which V falls without bound: every restart would go on
    down it to max_iter)."""
    vg = jitted(target, "value_and_grad")
    x, grads, v = _lbfgs(vg, np.asarray(x0, np.float64), max_iter)
    if stop is not None and stop(x):
        return x, grads
    for _ in range(restarts):
        x1, g, v1 = _lbfgs(vg, x, max_iter)
        grads += g
        if not v1 < v - MAP_GAIN:
            if v1 <= v:
                x = x1
            break
        x, v = x1, v1
    return x, grads


__all__ = ["Mode", "find_mode", "nan_points", "RESTARTS", "inverse_factor", "probe_unbounded",
           "DENSE_MAX_DIM", "MATRIX_FREE_DIM", "FLAT_NATS", "probed_scale", "map_estimate",
           "MAP_RESTARTS", "MAP_GAIN"]
