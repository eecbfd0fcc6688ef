"""The hard target family of the GVI lower bound (Theorem 3.1).

Ball B of radius a = (1 + R^{-1/2}) sqrt(d), d = ceil(R^4), hidden unit direction v,
K_v = B ∩ {v^T x <= R}, e_K(x) = dist(x, K)^2 / 2 and

    V_v = |x|^2/2 + (kappa - 1) e_{K_v},        V_B = |x|^2/2 + (kappa - 1) e_B,

so that I <= hess V <= kappa I (a.e.). The paper mollifies e_K at radius tau = (kappa - 1)^{-2};
these targets are the unmollified C^{1,1} potentials (the mollified ones are not offered: they
differ by at most (kappa-1) tau^2 / 2 in value and 1/(kappa-1) in gradient). The paper's defining
equation for R was lost in extraction; `R="asymptotic"` uses R^2 = 2 log kappa - 3 log log kappa,
`R="unit-energy"` solves (kappa - 1) E[(G - R)_+^2] / 2 = 1, G ~ N(0, 1) (a reconstruction with the
same expansion R^2 = 2 log kappa - 3 log log kappa + O(1) that makes the initial gap 1 + o(1)),
and a number sets R directly. See docs/lower-bound.md.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize
import scipy.special

from inertia.targets.base import Target, TargetError
from inertia._scope import in_float64

R_RULES = ("asymptotic", "unit-energy")


def _tail_sq(z):
    """E[(G - z)_+^2] for G ~ N(0, 1) (numpy, vectorised)."""
    z = np.asarray(z, dtype=float)
    return (1.0 + z * z) * scipy.special.ndtr(-z) - z * np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)


def radius(kappa: float, rule="asymptotic") -> float:
    """The cap offset R for condition number kappa under `rule` (or R itself if a number)."""
    if not (isinstance(kappa, (int, float)) and kappa > 1 and math.isfinite(kappa)):
        raise TargetError(f"kappa must be a finite number > 1, got {kappa!r}")
    if not isinstance(rule, str):
        R = float(rule)
        if not (R > 0 and math.isfinite(R)):
            raise TargetError(f"R must be a positive finite number, got {rule!r}")
        return R
    if rule == "asymptotic":
        L = math.log(kappa)
        R2 = 2.0 * L - 3.0 * math.log(L)
        if not R2 > 0:
            raise TargetError(f"R^2 = 2 log kappa - 3 log log kappa = {R2:.3g} <= 0 at kappa={kappa}; "
                              "pass R= explicitly")
        return math.sqrt(R2)
    if rule == "unit-energy":
        f = lambda r: 0.5 * (kappa - 1.0) * float(_tail_sq(r)) - 1.0
        if f(0.0) <= 0:
            raise TargetError(f"kappa={kappa} is too small for the unit-energy rule "
                              "((kappa-1)/4 <= 1); pass R= explicitly")
        return float(scipy.optimize.brentq(f, 0.0, 40.0, xtol=1e-14, rtol=1e-14))
    raise TargetError(f"unknown R rule {rule!r}; use one of {R_RULES} or a positive number")


def _safe_norm(x):
    n2 = x @ x
    pos = n2 > 0
    return jnp.where(pos, jnp.sqrt(jnp.where(pos, n2, 1.0)), 0.0)


def project_ball(x, a):
    """Euclidean projection onto the ball {|x| <= a}."""
    n = _safe_norm(x)
    out = n > a
    return x * jnp.where(out, a / jnp.where(out, n, 1.0), 1.0)


def project_capped_ball(x, v, R, a):
    """Exact Euclidean projection onto K = {|x| <= a} ∩ {v^T x <= R} (|v| = 1, 0 <= R < a).

    P_B(x) if it satisfies v^T y <= R; else the half-space projection x - (v^T x - R) v if it lies
    in the ball; else the nearest point R v + sqrt(a^2 - R^2) w/|w| of the circle where both
    boundaries meet (w = x - (v^T x) v).
    """
    t = x @ v
    pb = project_ball(x, a)
    ph = x - jnp.maximum(t - R, 0.0) * v
    w = x - t * v
    r = _safe_norm(w)
    rho = jnp.sqrt(a * a - R * R)
    rpos = r > 0
    # r = 0 and v^T x > R implies |P_H x| = R < a, so the circle branch is never taken there
    circle = R * v + rho * w / jnp.where(rpos, r, 1.0)
    pb_ok = pb @ v <= R
    ph_ok = r * r + jnp.minimum(t, R) ** 2 <= a * a
    return jnp.where(pb_ok, pb, jnp.where(ph_ok, ph, circle))


def in_hidden_region(x, v, R, a):
    """True where P_{K_v}(x) != P_B(x), i.e. v^T P_B(x) > R: exactly where V_v, V_B (or grads) differ."""
    return project_ball(x, a) @ v > R


@in_float64
def hard_family(kappa: float, *, R="asymptotic", dim=None, v=None, seed: int = 0,
                variant: str = "v", dtype="float64") -> Target:
    """V_v (variant="v") or the reference V_B (variant="ball") of Theorem 3.1, unmollified (its
    functions computing in `dtype`)."""
    if variant not in ("v", "ball"):
        raise TargetError(f"variant must be 'v' (hidden cap) or 'ball' (reference), got {variant!r}")
    Rval = radius(kappa, R)
    kappa = float(kappa)
    if dim is None:
        dim = max(2, math.ceil(Rval ** 4 - 1e-9))
    if not (isinstance(dim, (int, np.integer)) and dim >= 2):
        raise TargetError(f"dim must be an integer >= 2, got {dim!r}")
    dim = int(dim)
    a = (1.0 + Rval ** -0.5) * math.sqrt(dim)
    if not Rval < a:
        raise TargetError(f"the cap must cut the ball: need R < a, got R={Rval:.4g}, a={a:.4g} "
                          f"(dim={dim} is too small)")
    if v is None:
        vn = np.random.default_rng(seed).standard_normal(dim)
    else:
        vn = np.asarray(v, dtype=float)
        if vn.shape != (dim,):
            raise TargetError(f"hidden direction v must have shape ({dim},), got {vn.shape}")
    nv = np.linalg.norm(vn)
    if not (nv > 0 and np.isfinite(nv)):
        raise TargetError("hidden direction v must be a finite nonzero vector")
    vn = vn / nv
    vj = jnp.asarray(vn, dtype=dtype)
    c = kappa - 1.0

    if variant == "v":
        def proj(x):
            return project_capped_ball(x, vj, Rval, a)
    else:
        def proj(x):
            return project_ball(x, a)

    def potential(x):
        r = x - proj(x)
        return 0.5 * (x @ x) + 0.5 * c * (r @ r)

    def grad(x):
        return x + c * (x - proj(x))

    def hvp(x, u):
        return jax.jvp(grad, (x,), (u,))[1]

    def hidden(x):
        return in_hidden_region(x, vj, Rval, a)

    name = (f"hard-{'v' if variant == 'v' else 'ball'}(kappa={kappa:g},d={dim},R={Rval:.4g})")
    info = {"kappa": kappa, "R": Rval, "a": a, "d": dim, "v": vn, "variant": variant,
            "R_rule": R if isinstance(R, str) else "given", "tau": c ** -2, "mollified": False,
            "projection": proj, "in_hidden_region": hidden}
    return Target(dim=dim, potential=potential, grad=grad, hvp=hvp, alpha=1.0, beta=kappa,
                  name=name, info=info, dtype=jnp.dtype(dtype).name,
                  recast=lambda dt: hard_family(kappa, R=R, dim=dim, v=vn, variant=variant,
                                                dtype=dt))


@in_float64
def hard_pair(kappa: float, **kw) -> tuple[Target, Target]:
    """(V_v, V_B) sharing R, d, a and v."""
    kw.pop("variant", None)
    return hard_family(kappa, variant="v", **kw), hard_family(kappa, variant="ball", **kw)


# ---- Gaussian objective F(q) = E_q V - (1/2) log det Sigma (constant -(d/2) log(2 pi e) dropped) ----

def halfspace_energy(kappa, R, mu_t, s2_t):
    """(kappa - 1) E[(t - R)_+^2] / 2 for t ~ N(mu_t, s2_t): the cap energy seen by the half-space."""
    s = np.sqrt(s2_t)
    return 0.5 * (kappa - 1.0) * s2_t * _tail_sq((R - mu_t) / s)


def _halfspace_1d(kappa, R, mu, sig):
    return 0.5 * (mu * mu + sig * sig) - np.log(sig) + halfspace_energy(kappa, R, mu, sig * sig)


def halfspace_optimum(kappa, R):
    """argmin over (mu, sigma) of the 1-D objective of V_H = |x|^2/2 + (kappa-1)(v^T x - R)_+^2/2.

    Returns (mu, sigma, f*, f(0, 1)); the full-dimensional optimum is N(mu v, I + (sigma^2 - 1) v v^T),
    and f(0,1) - f* is the gap of N(0, I) on V_H (the other d - 1 directions contribute 0).
    """
    fun = lambda p: _halfspace_1d(kappa, R, p[0], math.exp(p[1]))
    res = scipy.optimize.minimize(fun, np.zeros(2), method="Nelder-Mead",
                                  options={"xatol": 1e-12, "fatol": 1e-15, "maxiter": 20000})
    res = scipy.optimize.minimize(fun, res.x, method="BFGS", options={"gtol": 1e-11})
    mu, sig = float(res.x[0]), float(math.exp(res.x[1]))
    return mu, sig, float(res.fun), float(_halfspace_1d(kappa, R, 0.0, 1.0))


def _corr_2d(kappa, R, a, t, r):
    """(kappa-1) [e_K(x) - (t - R)_+^2 / 2] at points with v^T x = t, |x - t v| = r (numpy)."""
    n = np.sqrt(t * t + r * r)
    rho = math.sqrt(a * a - R * R)
    scale = np.where(n > a, a / np.maximum(n, 1e-300), 1.0)
    pb_ok = t * scale <= R
    ph_ok = r <= rho
    e_ball = 0.5 * np.maximum(n - a, 0.0) ** 2
    e_half = 0.5 * np.maximum(t - R, 0.0) ** 2
    e_circ = 0.5 * ((t - R) ** 2 + (r - rho) ** 2)
    e = np.where(pb_ok, e_ball, np.where(ph_ok, e_half, e_circ))
    return (kappa - 1.0) * (e - e_half)


def symmetric_correction(kappa, R, a, d, mu, sig_v, sig_perp=1.0, *, num_samples=2_000_000, seed=0):
    """Monte Carlo (mean, standard error) of (kappa-1) E[e_{K_v} - e_{H_v}] under
    q = N(mu v, sig_v^2 v v^T + sig_perp^2 (I - v v^T)), sampled exactly through (v^T x, |x_perp|^2).
    It is >= 0 and nonzero only far in the tails (outside the ball or past the rim of the cap)."""
    rng = np.random.default_rng(seed)
    t = mu + sig_v * rng.standard_normal(num_samples)
    r = sig_perp * np.sqrt(rng.chisquare(d - 1, num_samples))
    c = _corr_2d(kappa, R, a, t, r)
    return float(c.mean()), float(c.std(ddof=1) / math.sqrt(num_samples))


def ball_gap_of_standard(kappa, a, d):
    """Gap of N(0, I) on V_B, by 1-D optimisation over N(0, s^2 I) (optimal by symmetry).

    E e_B under N(0, s^2 I) = E (s |Z| - a)_+^2 / 2, |Z|^2 ~ chi2_d, by quadrature."""
    import scipy.integrate
    import scipy.stats  # lazy: ~1 s at import

    def energy(s):
        f = lambda n: 0.5 * (s * n - a) ** 2 * scipy.stats.chi.pdf(n, d)
        val, _ = scipy.integrate.quad(f, a / s, np.inf, epsabs=1e-300, epsrel=1e-12, limit=200)
        return (kappa - 1.0) * val

    F = lambda s: 0.5 * d * s * s - d * math.log(s) + energy(s)
    res = scipy.optimize.minimize_scalar(F, bounds=(0.5, 1.0), method="bounded",
                                         options={"xatol": 1e-12})
    return float(F(1.0) - min(res.fun, F(1.0))), float(res.x)


def _laguerre(order, d):
    """Nodes/weights for E g(|x_perp|) with x_perp ~ N(0, I_{d-1}): |x_perp| = sqrt(2 u), u ~ Gamma((d-1)/2)."""

    alpha = 0.5 * (d - 1) - 1.0
    u, w = scipy.special.roots_genlaguerre(int(order), alpha)
    return np.sqrt(2.0 * u), w / math.exp(scipy.special.gammaln(alpha + 1.0))


def symmetric_objective(kappa, R, a, d, mu, sig_v, sig_perp, *, order=256):
    """F_v(q) for q = N(mu v, sig_v^2 v v^T + sig_perp^2 (I - v v^T)) (constant -(d/2)log(2 pi e)
    dropped): the half-space cap energy in closed form, the rest of (kappa-1) E e_{K_v} by
    Gauss-Hermite (along v) x generalised Gauss-Laguerre (|x_perp|) quadrature of `order` nodes."""
    from inertia.targets.glm import hermite_nodes

    z, wz = hermite_nodes(order)
    r, wr = _laguerre(order, d)
    t = mu + sig_v * z
    c = _corr_2d(kappa, R, a, t[:, None], sig_perp * r[None, :])
    corr = float(wz @ c @ wr)
    return (0.5 * (mu * mu + sig_v**2 + (d - 1) * sig_perp**2) - math.log(sig_v)
            - (d - 1) * math.log(sig_perp) + float(halfspace_energy(kappa, R, mu, sig_v**2)) + corr)


def symmetric_optimum(kappa, R, a, d, *, order=256):
    """min F_v over Gaussians: by the symmetry of V_v (rotations fixing v) and uniqueness the optimum
    is N(mu v, sig_v^2 v v^T + sig_perp^2 (I - v v^T)); a 3-parameter problem started at the
    half-space optimum. Returns (mu, sig_v, sig_perp, F*)."""
    mu0, s0, _, _ = halfspace_optimum(kappa, R)
    fun = lambda p: symmetric_objective(kappa, R, a, d, p[0], math.exp(p[1]), math.exp(p[2]),
                                        order=order)
    res = scipy.optimize.minimize(fun, np.array([mu0, math.log(s0), 0.0]), method="Nelder-Mead",
                                  options={"xatol": 1e-10, "fatol": 1e-14, "maxiter": 20000})
    return float(res.x[0]), math.exp(res.x[1]), math.exp(res.x[2]), float(res.fun)
