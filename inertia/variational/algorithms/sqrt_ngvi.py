"""Square-root natural-gradient VI on the Cholesky factor T of the precision S = T T^T
(Tan 2025; Lin et al. 2023; Kumar et al. 2025).

M = T^{-1} H T^{-T} - I,  T_{k+1} = T_k (I + rho Phi(M)),  m_{k+1} = m_k - rho S_{k+1}^{-1} g,
Phi(M) = strict lower part of M + diag(M)/2, so T_{k+1} stays lower triangular and
S_{k+1} = S_k + rho G + rho^2 T Phi(M) Phi(M)^T T^T: the first-order terms of the NGVI rule plus a
PSD term, positive definite whenever rho < 2 and H is PSD (diag(I + rho Phi(M)) >= 1 - rho/2).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from .base import Kernel, VIInfo, finite
from .ngvi import FieldState, covariance_from_chol_precision, precision_init, schedule, \
    whitened_estimates


def phi(M):
    """Strictly lower triangle of M plus half its diagonal."""
    return jnp.tril(M, -1) + 0.5 * jnp.diag(jnp.diag(M))


def build(target, *, step, batch_size, hessian="price", control=True, schedule_kind="constant",
          decay_steps=100.0) -> Kernel:
    """Square-root NGVI kernel; state carries T = chol(S) in aux_A."""
    rho_at = schedule(step, schedule_kind, decay_steps)

    def init(m0, A0):
        Sigma, _, T = precision_init(A0)
        return FieldState(m0, Sigma, m0, T, jnp.zeros((), jnp.int32))

    def step_fn(state, key):
        m, T = state.m, state.aux_A
        rho = rho_at(state.count)
        g, K = whitened_estimates(target, key, m, T, batch_size, hessian, control)
        M = K - jnp.eye(m.shape[0], dtype=m.dtype)
        T_new = T + rho * (T @ phi(M))
        m_new = m - rho * jax.scipy.linalg.cho_solve((T_new, True), g)
        Sigma = covariance_from_chol_precision(T_new)
        new = FieldState(m_new, Sigma, m_new, T_new, state.count + 1)
        return new, VIInfo(finite(m_new, T_new, Sigma))

    def gaussian(state):
        return state.m, state.A

    return Kernel(init, step_fn, gaussian, "cov")
