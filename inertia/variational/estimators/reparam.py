"""Plain reparameterisation estimator of grad E (energy only), either coordinates (DGG-Prox)."""
import jax

from ..family import project_coords
from .base import Estimator


def _make(coords):
    def estimate(target, key, m, A, batch_size):
        """(mean grad V(X), low/sym(mean grad V(X) xi^T)), X = m + A xi."""
        xi = jax.random.normal(key, (batch_size, m.shape[0]), dtype=m.dtype)
        gx = jax.vmap(target.grad)(m + xi @ A.T)
        return gx.mean(0), project_coords(gx.T @ xi / batch_size, coords)

    return estimate


REPARAM = Estimator(name="reparam", coords="chol", full=False, needs_hvp=False,
                    cost=lambda d, b: (b, 0), estimate=_make("chol"))
REPARAM_SYM = REPARAM._replace(name="reparam-sym", coords="sym", estimate=_make("sym"))
