"""Price's gradient (Cholesky, energy only, raw mean) of Price-SPGD (Kim et al. 2026)"""
import jax

from .base import Estimator


def estimate(target, key, m, L, batch_size):
    """(mean grad V(X), low(mean hess V(X) L)), X = m + L xi."""
    xi = jax.random.normal(key, (batch_size, m.shape[0]), dtype=m.dtype)
    X = m + xi @ L.T
    return jax.vmap(target.grad)(X).mean(0), target.mean_hess_matmul_low(X, L)


PRICE = Estimator(name="price", coords="chol", full=False, needs_hvp=True,
                  cost=lambda d, b: (b, d * b), estimate=estimate)
