"""Gaussian family in Cholesky (L) or symmetric-root (C) coordinates: prox maps, projections, psi.

`coords` is "chol" (A = L lower triangular, Sigma = L L^T) or "sym"
(A = C symmetric positive definite, Sigma = C^2).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

BISECTION_STEPS = 64  # halves a bracket [0, gamma_hi] to 5e-20 of its width, below float64


def low(M):
    """Lower-triangular part including the diagonal."""
    return jnp.tril(M)


def sym(M):
    """Symmetric part (M + M^T)/2."""
    return 0.5 * (M + M.T)


def project_coords(M, coords):
    """Map a matrix gradient to the tangent space of the coordinates (low() or sym())."""
    return low(M) if coords == "chol" else sym(M)


def covariance(A, coords):
    """Sigma = L L^T (chol) or C C (sym)."""
    return A @ A.T if coords == "chol" else A @ A


def entropy_grad(A, coords):
    """grad h: -diag(1/L_ii) (chol) or -C^{-1} (sym)."""
    if coords == "chol":
        return -jnp.diag(1.0 / jnp.diag(A))
    return -jnp.linalg.inv(sym(A))


def inv_factor_T_times(A, xi, coords):
    """A^{-T} xi (= Sigma^{-1}(X - m) for X = m + A xi): a triangular solve, or C^{-1} xi by Cholesky."""
    if coords == "chol":
        return jax.scipy.linalg.solve_triangular(A, xi, lower=True, trans="T")
    return jax.scipy.linalg.cho_solve((jnp.linalg.cholesky(sym(A)), True), xi)


def phi(y, eta):
    """phi_eta(y) = (y + sqrt(y^2 + 4 eta)) / 2, the scalar prox of -eta log."""
    return 0.5 * (y + jnp.sqrt(y * y + 4.0 * eta))


def prox_entropy(Y, eta, coords):
    """prox of eta*h: phi_eta on the Cholesky diagonal, or on the eigenvalues of sym(Y)."""
    if coords == "chol":
        Y = low(Y)
        d = jnp.diag(Y)
        return Y - jnp.diag(d) + jnp.diag(phi(d, eta))
    w, Q = jnp.linalg.eigh(sym(Y))
    return (Q * phi(w, eta)) @ Q.T


def _norm_root(norm_sq_at, radius, dtype):
    """Smallest gamma >= 0 with norm_sq_at(gamma) <= radius^2 (the norm decreasing in gamma)."""
    r2 = radius * radius

    def too_big(g):
        return norm_sq_at(g) > r2

    hi = lax.while_loop(lambda g: too_big(g), lambda g: 2.0 * g + 1.0, jnp.asarray(1.0, dtype))

    def bisect(_, lohi):
        lo, hi = lohi
        mid = 0.5 * (lo + hi)
        big = too_big(mid)
        return jnp.where(big, mid, lo), jnp.where(big, hi, mid)

    _, hi = lax.fori_loop(0, BISECTION_STEPS, bisect, (jnp.asarray(0.0, dtype), hi))
    return jnp.where(too_big(jnp.asarray(0.0, dtype)), hi, 0.0)


def _shrink_to_ball(Y, diag_at, radius):
    """L(gamma) = off(Y)/(1+gamma) + diag(diag_at(diag Y, gamma)), smallest gamma with ||L||_F <= radius."""
    Y = low(Y)
    dY = jnp.diag(Y)
    off = Y - jnp.diag(dY)
    off_sq = jnp.sum(off**2)
    gamma = _norm_root(lambda g: off_sq / (1.0 + g) ** 2 + jnp.sum(diag_at(dY, g) ** 2), radius,
                       Y.dtype)
    return off / (1.0 + gamma) + jnp.diag(diag_at(dY, gamma))


def prox_norm_constrained(Y, eta, radius):
    """prox of eta*(-sum log L_ii + indicator ||L||_F <= radius) for lower-triangular Y."""
    return _shrink_to_ball(
        Y, lambda d, g: (d + jnp.sqrt(d * d + 4.0 * eta * (1.0 + g))) / (2.0 * (1.0 + g)), radius)


def project_KL(Y, radius, tau0):
    """Euclidean projection onto {L lower-tri, ||L||_F <= radius, L_ii >= tau0}."""
    return _shrink_to_ball(Y, lambda d, g: jnp.maximum(d / (1.0 + g), tau0), radius)


def project_spectrum(C, lower, upper=jnp.inf):
    """Projection of sym(C) onto {spec(C) in [lower, upper]} by clipping eigenvalues."""
    w, Q = jnp.linalg.eigh(sym(C))
    return (Q * jnp.clip(w, lower, upper)) @ Q.T


def psi(t, tau0):
    """Smooth extension of -log t below tau0 (eq. (3))."""
    ts = jnp.maximum(t, tau0)
    quad = -jnp.log(tau0) - (t - tau0) / tau0 + (t - tau0) ** 2 / (2 * tau0**2)
    return jnp.where(t >= tau0, -jnp.log(ts), quad)


def psi_prime(t, tau0):
    """psi'(t): -1/t above tau0, linear below."""
    ts = jnp.maximum(t, tau0)
    return jnp.where(t >= tau0, -1.0 / ts, -1.0 / tau0 + (t - tau0) / tau0**2)


def sample(key, m, A, num):
    """num draws from N(m, A A^T) as m + A xi (same for both coordinates)."""
    xi = jax.random.normal(key, (num, m.shape[0]), dtype=m.dtype)
    return m + xi @ A.T
