"""Price-STL estimator (symmetric root, full gradient): Price's theorem for the factor"""
import jax
import jax.numpy as jnp

from ..family import sym
from .base import Estimator


def estimate(target, key, m, C, batch_size):
    """G^Price-STL = (mean grad V(X) - C^{-1} xi, sym(mean hess V(X) C) - C^{-1}), X = m + C xi."""
    d = m.shape[0]
    xi = jax.random.normal(key, (batch_size, d), dtype=m.dtype)
    X = m + xi @ C.T
    gx = jax.vmap(target.grad)(X)
    # C^{-1} = U U^T with U = L^{-T}: one triangular solve and a product with a plain left operand
    U = jax.scipy.linalg.solve_triangular(jnp.linalg.cholesky(C), jnp.eye(d, dtype=C.dtype),
                                          lower=True, trans="T")
    Cinv = U @ U.T
    g_m = (gx - xi @ Cinv.T).mean(0)
    return g_m, sym(target.mean_hess_matmul(X, C)) - sym(Cinv)


PRICE_STL = Estimator(name="price-stl", coords="sym", full=True, needs_hvp=True,
                      cost=lambda d, b: (b, d * b), estimate=estimate)
