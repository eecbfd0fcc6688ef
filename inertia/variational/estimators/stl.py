"""STL estimator (symmetric root, full gradient of F): sticking-the-landing score term"""
import jax

from ..family import inv_factor_T_times, sym
from .base import Estimator


def estimate(target, key, m, C, batch_size):
    """G^STL = (g, sym(g xi^T)) averaged, g = grad V(m + C xi) - C^{-1} xi."""
    d = m.shape[0]
    xi = jax.random.normal(key, (batch_size, d), dtype=m.dtype)
    gx = jax.vmap(target.grad)(m + xi @ C.T)
    g = gx - inv_factor_T_times(C, xi.T, "sym").T
    return g.mean(0), sym(g.T @ xi / batch_size)


STL = Estimator(name="stl", coords="sym", full=True, needs_hvp=False,
                cost=lambda d, b: (b, 0), estimate=estimate)
