"""Whether theta_hat = argmin L exists and is unique for a GLM (rank, separation, a linear program)."""
from __future__ import annotations

from typing import Optional

import numpy as np

from .models import Model


class NoEstimateError(ValueError):
    """theta_hat does not exist or is not unique; `parameter`: the escape direction's largest index."""

    def __init__(self, message: str, parameter: Optional[int] = None):
        super().__init__(message)
        self.parameter = parameter


def _recession_direction(X: np.ndarray, zero_on: np.ndarray, sign: np.ndarray):
    """A direction v != 0 with sign_i x_i^T v <= 0, strict for some i, by a linear program; or None."""
    import scipy.optimize

    A = sign[:, None] * X                      # want A v <= 0, A v >= -1 (bounded), sum A v min
    free = ~zero_on
    A_ub = np.vstack([A[free], -A[free]])
    b_ub = np.concatenate([np.zeros(free.sum()), np.ones(free.sum())])
    A_eq = A[zero_on] if zero_on.any() else None
    b_eq = np.zeros(zero_on.sum()) if zero_on.any() else None
    res = scipy.optimize.linprog(A[free].sum(0), A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq,
                                 bounds=[(None, None)] * X.shape[1], method="highs")
    if res.status != 0 or res.fun > -1e-7:
        return None
    return res.x


def check_estimate_exists(model: Model) -> None:
    """Raise NoEstimateError when theta_hat does not exist or is not unique (rank, separation, counts)."""
    if not model.is_glm or np.linalg.matrix_rank(model.gamma) == model.dim:
        return
    X, y = np.asarray(model.X, np.float64), np.asarray(model.y, np.float64)
    n, d = X.shape
    if n > CHECK_ROWS and _subsample_proves_estimate(model, X, y):
        return
    kind = model.info.get("kind")
    if n <= d and kind == "linear":
        raise NoEstimateError(f"{n} observation(s) for {d} parameters: a linear model needs more "
                              "rows than parameters (the residual scale would be 0)")
    rank = np.linalg.matrix_rank(X)
    if rank < d:
        raise NoEstimateError(f"the design matrix has rank {rank} < {d} parameters (collinear or "
                              "constant predictors, or too few rows): theta_hat is not unique; "
                              "drop redundant columns or add rows")
    v = None
    if kind == "logistic":
        v = _recession_direction(X, np.zeros(n, bool), -(2 * y - 1))
        what = ("the classes are perfectly (or quasi-completely) separable by the predictors, so "
                "the logistic MLE does not exist (the fit runs off to infinity)")
    elif kind == "poisson":
        v = _recession_direction(X, y > 0, np.ones(n))
        what = ("the zero counts can be fitted exactly by letting some mean go to 0 (e.g. all "
                "counts are 0), so the Poisson MLE does not exist")
    if v is not None:
        top = int(np.argmax(np.abs(v)))
        raise NoEstimateError(f"{what}; the loss keeps decreasing along a direction weighted "
                              f"most on parameter {top}. Remove the separating predictor(s) or "
                              "add a prior (prior_precision=)", parameter=top)


# rows of the random subsample tried first by check_estimate_exists
CHECK_ROWS = 20_000


def _subsample_proves_estimate(model: Model, X: np.ndarray, y: np.ndarray) -> bool:
    """True when CHECK_ROWS random rows have full rank and no escape direction (then all rows have none)."""
    idx = np.sort(np.random.default_rng(0).choice(X.shape[0], size=CHECK_ROWS, replace=False))
    Xs, ys = X[idx], y[idx]
    if np.linalg.matrix_rank(Xs) < X.shape[1]:
        return False
    kind = model.info.get("kind")
    if kind == "logistic":
        return _recession_direction(Xs, np.zeros(CHECK_ROWS, bool), -(2 * ys - 1)) is None
    if kind == "poisson":
        return _recession_direction(Xs, ys > 0, np.ones(CHECK_ROWS)) is None
    return True


__all__ = ["NoEstimateError", "check_estimate_exists", "CHECK_ROWS"]
