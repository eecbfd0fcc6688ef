"""Forward-backward Gaussian VI in the Bures-Wasserstein geometry: FB-GVI and SVRGVI.

m' = m - eta g;  M = I - eta H;  S_half = M Sigma M;
Sigma' = (S_half + 2 eta I + (S_half (S_half + 4 eta I))^{1/2}) / 2, computed on S_half's eigenvalues.
g = mean grad V(X_j) - c Sigma^{-1}(X_j - m) (c = 0 FB-GVI, c = 1 SVRGVI), H = mean hess V(X_j).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from ..family import sym
from .base import Kernel, VIInfo, VIState, finite


def build(target, *, eta, control, batch_size) -> Kernel:
    """FB-GVI (control = 0) or SVRGVI (control = 1) kernel; state holds (m, Sigma)."""

    def init(m0, A0):
        S = A0 @ A0.T
        return VIState(m0, S, m0, S)

    def step(state, key):
        m, S = state.m, state.A
        d = m.shape[0]
        L = jnp.linalg.cholesky(S)
        xi = jax.random.normal(key, (batch_size, d), dtype=m.dtype)
        X = m + xi @ L.T
        gx = jax.vmap(target.grad)(X)
        score = jax.scipy.linalg.solve_triangular(L, xi.T, lower=True, trans="T").T
        g = (gx - control * score).mean(0)
        H = sym(target.mean_hess_matmul(X, jnp.eye(d, dtype=m.dtype)))
        M = jnp.eye(d, dtype=m.dtype) - eta * H
        w, Q = jnp.linalg.eigh(sym(M @ S @ M))
        w = jnp.maximum(w, 0.0)
        S_new = (Q * (0.5 * (w + 2 * eta + jnp.sqrt(w * (w + 4 * eta))))) @ Q.T
        m_new = m - eta * g
        return VIState(m_new, S_new, m_new, S_new), VIInfo(finite(m_new, S_new))

    def gaussian(state):
        return state.m, state.A

    return Kernel(init, step, gaussian, "cov")
