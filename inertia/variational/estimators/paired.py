"""Paired estimator (Cholesky, energy only): Hessian at an independent point"""
import jax
import jax.numpy as jnp

from ..family import low
from .base import Estimator


def estimate(target, key, m, L, batch_size):
    """G^paired = (grad V(X) - hess V(Y) L xi, low(hess V(Y) L)), X = m + L xi, Y = m + L zeta."""
    d = m.shape[0]
    kx, ky = jax.random.split(key)
    xi = jax.random.normal(kx, (batch_size, d), dtype=m.dtype)
    zeta = jax.random.normal(ky, (batch_size, d), dtype=m.dtype)
    gx = jax.vmap(target.grad)(m + xi @ L.T)
    Y = m + zeta @ L.T
    if target.mean_hess_matmul_fn is None:  # oracle path: exactly d HVPs per sample
        HL = jax.vmap(lambda y: target.hess_matmul(y, L))(Y)
        return (gx - jnp.einsum("bij,bj->bi", HL, xi)).mean(0), low(HL.mean(0))
    # closed-form batch Hessian (GLMs, graph-probit): avoids (b, d, d) memory; H(Y_j) L xi_j is
    # then one more product per sample, a linear combination of the d HVPs the oracle model counts
    corr = jax.vmap(target.hvp)(Y, xi @ L.T)
    return (gx - corr).mean(0), target.mean_hess_matmul_low(Y, L)


PAIRED = Estimator(name="paired", coords="chol", full=False, needs_hvp=True,
                   cost=lambda d, b: (b, d * b), estimate=estimate)
