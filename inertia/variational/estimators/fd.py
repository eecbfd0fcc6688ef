"""FD estimator (Cholesky, energy only): finite-difference control variate"""
import jax
import jax.numpy as jnp
from jax import lax

from ...linalg import tril_product
from ..family import low
from .base import Estimator


def estimate(target, key, m, L, batch_size, fd_step=None):
    """G^FD = (grad V(m) + mean r, low(D L + mean r xi^T)), r = grad V(m+L xi) - grad V(m) - D L xi."""
    d = m.shape[0]
    nu = 1e-2 / jnp.sqrt(target.alpha) if fd_step is None else fd_step
    g0 = target.grad(m)
    shifted = jax.vmap(target.grad)(m + nu * jnp.eye(d, dtype=m.dtype))  # row j: grad V(m + nu e_j)
    D_T = (shifted - g0) / nu  # D's column j as row j; D not symmetrised
    xi = jax.random.normal(key, (batch_size, d), dtype=m.dtype)
    Lxi = xi @ L.T
    gx = jax.vmap(target.grad)(m + Lxi)
    r = gx - g0 - Lxi @ D_T
    # D materialised first: XLA CPU's d x d x d dot with a transposed left operand is ~2x slower
    D = lax.optimization_barrier(D_T.T)
    DL = tril_product(lambda s, e: D[s:, s:] @ L[s:, s:e], d, D.dtype)  # low(D L), L's zeros skipped
    return g0 + r.mean(0), DL + low(r.T @ xi / batch_size)


FD = Estimator(name="fd", coords="chol", full=False, needs_hvp=False,
               cost=lambda d, b: (d + 1 + b, 0), estimate=estimate)
