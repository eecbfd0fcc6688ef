"""Exact energy gradient from closed-form Gaussian expectations (Algorithm 1; no query model)."""
from ..family import covariance, project_coords
from .base import Estimator


def _make(coords):
    def estimate(target, key, m, A, batch_size):
        """(E grad V, low/sym(E hess V A)) under q = N(m, A A^T)."""
        e = target.expectations(m, covariance(A, coords))
        return e.grad, project_coords(e.hess @ A, coords)

    return estimate


EXACT = Estimator(name="exact", coords="chol", full=False, needs_hvp=False,
                  cost=lambda d, b: (0, 0), estimate=_make("chol"), exact=True)
EXACT_SYM = EXACT._replace(name="exact-sym", coords="sym", estimate=_make("sym"))
