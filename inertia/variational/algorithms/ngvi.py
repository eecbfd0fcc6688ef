"""Natural-gradient VI / variational online Newton in (m, S = Sigma^{-1}) (Khan & Rue 2023), with
the positive-definite precision update of Lin, Schmidt & Khan (2020).

With G = H - S_k (H estimating E_q hess V, g estimating E_q grad V) and step rho_k:
S_{k+1} = S_k + rho G + (rho^2/2) G S_k^{-1} G  (posdef; S_k + rho G when posdef=False),
m_{k+1} = m_k - rho S_{k+1}^{-1} g.
Computed in the whitened frame of T = chol(S_k): M = T^{-1} H T^{-T} - I, S_{k+1} = T N T^T with
N = I + rho M + rho^2 M^2 / 2. H by HVPs (Price: mean hess V(X_i)) or from gradients only (Stein /
reparameterisation: E hess V = E S (X - m) grad V(X)^T, symmetrised). `control=True` subtracts the
score of q, S (X_i - m), from every grad V(X_i): unbiased, and exact at q = pi for Gaussian pi.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from ..family import sym
from .base import Kernel, VIInfo, finite

_solve = jax.scipy.linalg.solve_triangular


class FieldState(NamedTuple):
    """m, A = Sigma (coords "cov"), method-specific auxiliaries, and the update counter."""

    m: jnp.ndarray
    A: jnp.ndarray
    aux_m: jnp.ndarray
    aux_A: jnp.ndarray
    count: jnp.ndarray = 0


def schedule(step, kind, decay_steps):
    """Step at update k: constant, or step / (1 + k / decay_steps) ("decay")."""
    if kind == "constant":
        return lambda k: step
    if kind == "decay":
        return lambda k: step / (1.0 + k / decay_steps)
    raise ValueError(f"unknown schedule {kind!r}; use 'constant' or 'decay'")


def whitened_estimates(target, key, m, T, batch_size, hessian, control):
    """(g, K): g ~ E_q grad V, K ~ T^{-1} (E_q hess V) T^{-T}, for q = N(m, (T T^T)^{-1})."""
    d = m.shape[0]
    eye = jnp.eye(d, dtype=m.dtype)
    Tinv = _solve(T, eye, lower=True)
    xi = jax.random.normal(key, (batch_size, d), dtype=m.dtype)
    X = m + xi @ Tinv  # rows m + T^{-T} xi_i
    gx = jax.vmap(target.grad)(X)
    if control:  # score of q at X_i is -S (X_i - m) = -T xi_i
        gx = gx - xi @ T.T
    g = gx.mean(0)
    if hessian == "price":
        K = sym(Tinv @ target.mean_hess_matmul(X, Tinv.T))
    elif hessian == "reparam":  # T^{-1} sym(S (X - m) grad^T) T^{-T} = sym(xi (T^{-1} grad)^T)
        K = sym(xi.T @ (gx @ Tinv.T) / batch_size)
        if control:
            K = K + eye
    else:
        raise ValueError(f"unknown hessian estimator {hessian!r}; use 'price' or 'reparam'")
    return g, K


def covariance_from_chol_precision(T):
    """Sigma = T^{-T} T^{-1} for S = T T^T."""
    Tinv = _solve(T, jnp.eye(T.shape[0], dtype=T.dtype), lower=True)
    return Tinv.T @ Tinv


def precision_init(A0):
    """(Sigma0, S0, chol S0) from an initial factor A0 (Sigma0 = A0 A0^T)."""
    Sigma = A0 @ A0.T
    S = sym(jnp.linalg.inv(Sigma))
    return Sigma, S, jnp.linalg.cholesky(S)


def build(target, *, step, batch_size, hessian="price", control=True, posdef=True,
          schedule_kind="constant", decay_steps=100.0) -> Kernel:
    """NGVI kernel (Lin, Schmidt & Khan 2020 eq. for the Gaussian BLR); state carries S in aux_A."""
    rho_at = schedule(step, schedule_kind, decay_steps)

    def init(m0, A0):
        Sigma, S, _ = precision_init(A0)
        return FieldState(m0, Sigma, m0, S, jnp.zeros((), jnp.int32))

    def step_fn(state, key):
        m, S = state.m, state.aux_A
        rho = rho_at(state.count)
        T = jnp.linalg.cholesky(S)
        g, K = whitened_estimates(target, key, m, T, batch_size, hessian, control)
        M = K - jnp.eye(m.shape[0], dtype=m.dtype)
        N = jnp.eye(m.shape[0], dtype=m.dtype) + rho * M
        if posdef:
            N = N + 0.5 * rho**2 * (M @ M)
        S_new = sym(T @ N @ T.T)
        T_new = jnp.linalg.cholesky(S_new)
        m_new = m - rho * jax.scipy.linalg.cho_solve((T_new, True), g)
        Sigma = covariance_from_chol_precision(T_new)
        new = FieldState(m_new, Sigma, m_new, S_new, state.count + 1)
        return new, VIInfo(finite(m_new, S_new, Sigma))

    def gaussian(state):
        return state.m, state.A

    return Kernel(init, step_fn, gaussian, "cov")
