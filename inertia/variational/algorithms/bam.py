"""Batch-and-match (Cai, Modi, Pillaud-Vivien, Margossian, Gower, Blei & Saul, ICML 2024, Alg. 1).

Draws z_b ~ N(m_k, Sigma_k), scores g_b = -grad V(z_b); batch means z_bar, g_bar and covariances
C, Gamma (1/B normalisation). With learning rate lambda_k:
U = lambda Gamma + lambda/(1+lambda) g_bar g_bar^T,
W = Sigma_k + lambda C + lambda/(1+lambda) d d^T, d = m_k - z_bar;  Sigma_{k+1} = 2 W (I + (I + 4 U
W)^{1/2})^{-1}  (eq. 12),
m_{k+1} = m_k/(1+lambda) + lambda/(1+lambda) (Sigma_{k+1} g_bar + z_bar)  (eq. 13).
The root of the non-symmetric I + 4UW is taken on its symmetric similar form: with W = R R^T,
I + 4UW = R^{-T} (I + 4 R^T U R) R^T, so Sigma_{k+1} = 2 R (I + (I + 4 R^T U R)^{1/2})^{-1} R^T.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from ..family import sym
from .base import Kernel, VIInfo, finite
from .ngvi import FieldState


def covariance_update(U, W):
    """Sigma = 2 W (I + (I + 4 U W)^{1/2})^{-1} via W = R R^T and eigh of I + 4 R^T U R."""
    R = jnp.linalg.cholesky(sym(W))
    w, Q = jnp.linalg.eigh(sym(jnp.eye(W.shape[0], dtype=W.dtype) + 4.0 * R.T @ U @ R))
    RQ = R @ Q
    return sym((RQ * (2.0 / (1.0 + jnp.sqrt(jnp.maximum(w, 1.0))))) @ RQ.T)


def build(target, *, lam0, batch_size, schedule_kind="decay") -> Kernel:
    """BaM kernel; lambda_k = lam0/(k+1) ("decay") or lam0 ("constant"); state holds (m, Sigma)."""
    if schedule_kind == "decay":
        lam_at = lambda k: lam0 / (k + 1.0)  # noqa: E731
    elif schedule_kind == "constant":
        lam_at = lambda k: lam0  # noqa: E731
    else:
        raise ValueError(f"unknown BaM schedule {schedule_kind!r}; use 'decay' or 'constant'")

    def init(m0, A0):
        S = A0 @ A0.T
        return FieldState(m0, S, m0, S, jnp.zeros((), jnp.int32))

    def step(state, key):
        m, S = state.m, state.A
        d = m.shape[0]
        lam = lam_at(state.count)
        xi = jax.random.normal(key, (batch_size, d), dtype=m.dtype)
        z = m + xi @ jnp.linalg.cholesky(S).T
        g = -jax.vmap(target.grad)(z)
        zbar, gbar = z.mean(0), g.mean(0)
        zc, gc = z - zbar, g - gbar
        C, Gamma = zc.T @ zc / batch_size, gc.T @ gc / batch_size
        r = lam / (1.0 + lam)
        U = lam * Gamma + r * jnp.outer(gbar, gbar)
        W = S + lam * C + r * jnp.outer(m - zbar, m - zbar)
        S_new = covariance_update(U, W)
        m_new = m / (1.0 + lam) + r * (S_new @ gbar + zbar)
        new = FieldState(m_new, S_new, m_new, S_new, state.count + 1)
        return new, VIInfo(finite(m_new, S_new))

    def gaussian(state):
        return state.m, state.A

    return Kernel(init, step, gaussian, "cov")
