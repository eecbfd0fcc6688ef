"""Parts 1 and 3 of the lower-bound experiment: the probability that a query lands in the hidden
region (Monte Carlo with Clopper-Pearson intervals, and the exact typical and worst-case laws), and
the gap of N(0, I) on V_v."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import scipy.integrate
import scipy.stats

from ..hard import (ball_gap_of_standard, halfspace_energy, halfspace_optimum, hard_family,
                             radius, symmetric_correction, symmetric_objective, symmetric_optimum)

CHUNK = 2**15


def _cp(hits, n, level=0.95):
    ci = scipy.stats.binomtest(int(hits), int(n)).proportion_ci(level, method="exact")
    return float(ci.low), float(ci.high)


def exact_standard_probability(R, a, d):
    """P(v^T P_B(X) > R) for X ~ N(0, I_d): int_R^inf phi(t) P(chi2_{d-1} <= t^2 (a^2/R^2 - 1)) dt."""
    f = lambda t: scipy.stats.norm.pdf(t) * scipy.stats.chi2.cdf(t * t * (a * a / (R * R) - 1), d - 1)
    val, _ = scipy.integrate.quad(f, R, np.inf, epsabs=0, epsrel=1e-12, limit=200)
    return float(val)


def exact_worst_probability(R, a, d):
    """Lemma B.5: sup over fixed queries x of P_v(x hidden), v uniform on the sphere.

    x is hidden iff v^T x > R max(1, |x|/a); the threshold on v^T x / |x| is smallest, R / a, for
    every |x| >= a, and (1 + v^T x/|x|) / 2 ~ Beta((d-1)/2, (d-1)/2)."""
    k = 0.5 * (d - 1)
    return float(scipy.stats.beta.sf(0.5 * (1.0 + R / a), k, k))


def _count_hidden(target, num, seed, sphere=False):
    """Hidden-region hits among num draws from N(0, I_d) (or, with sphere, uniform on the sphere
    of radius a: by rotation invariance, a fixed worst-case query against a uniform v), by the
    target's own predicate."""
    hidden = target.info["in_hidden_region"]
    d, a = target.dim, target.info["a"]

    @jax.jit
    def count(key):
        X = jax.random.normal(key, (CHUNK, d))
        if sphere:
            X = a * X / jnp.linalg.norm(X, axis=1, keepdims=True)
        return jnp.sum(jax.vmap(hidden)(X))

    keys = jax.random.split(jax.random.PRNGKey(seed), -(-num // CHUNK))
    return int(sum(int(count(k)) for k in keys)), len(keys) * CHUNK


def probability_cell(kappa, rule, num, seed):
    t = hard_family(kappa, R=rule, seed=seed)
    R, a, d = t.info["R"], t.info["a"], t.dim
    hits, n = _count_hidden(t, num, seed)
    lo, hi = _cp(hits, n)
    whits, _ = _count_hidden(t, num, seed + 1, sphere=True)
    return {"kappa": kappa, "rule": rule, "R": R, "a": a, "d": d, "n": n, "hits": hits,
            "p_hat": hits / n, "ci": [lo, hi], "p_exact": exact_standard_probability(R, a, d),
            "p_halfspace": float(scipy.stats.norm.sf(R)),
            "worst_hits": whits, "p_worst_hat": whits / n, "worst_ci": list(_cp(whits, n)),
            "p_worst_exact": exact_worst_probability(R, a, d)}


def reference_cell(kappa, rule, dim, mc_samples):
    """Gap of N(0, I) on V_v: F*_v from the 3-parameter symmetric optimum (quadrature), F_v(N(0, I))
    by quadrature and, as a check, by Monte Carlo of the tail term with its standard error."""
    R = radius(kappa, rule)
    t = hard_family(kappa, R=rule, dim=dim)
    d, a = t.dim, t.info["a"]
    mu, sv, sp, F_star = symmetric_optimum(kappa, R, a, d)
    F_gamma = symmetric_objective(kappa, R, a, d, 0.0, 1.0, 1.0)
    quad_err = max(abs(symmetric_objective(kappa, R, a, d, *p, order=128)
                       - symmetric_objective(kappa, R, a, d, *p)) for p in [(mu, sv, sp), (0, 1, 1)])
    c0, c0_se = symmetric_correction(kappa, R, a, d, 0.0, 1.0, num_samples=mc_samples, seed=1)
    F_gamma_mc = 0.5 * d + float(halfspace_energy(kappa, R, 0.0, 1.0)) + c0
    _, _, fH, f0 = halfspace_optimum(kappa, R)
    gap_ball, s_ball = ball_gap_of_standard(kappa, a, d)
    return {"kappa": kappa, "rule": rule, "R": R, "a": a, "d": d,
            "energy_excess": F_gamma - 0.5 * d, "opt_mu": mu, "opt_sigma_v": sv,
            "opt_sigma_perp": sp, "F_gamma": F_gamma, "F_star": F_star, "gap": F_gamma - F_star,
            "gap_mc": F_gamma_mc - F_star, "gap_mc_se": c0_se, "quad_err": quad_err,
            "gap_halfspace": f0 - fH, "gap_ball": gap_ball, "ball_opt_scale": s_ball}
