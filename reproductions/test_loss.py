"""Test loss of SGD iterates for ridge regression, predicted from the stationary covariance (App. E.3).

For linear regression the stationary mean of SGD is theta_hat, so the expected test loss of an
iterate theta_t over a test set {(x_m, y_m)} splits exactly (eq. E.8-E.11) into
    L_test = M^-1 sum_m (y_m - theta_hat^T x_m)^2 + M^-1 sum_m x_m^T Sigma x_m,
the residual at theta_hat plus the spread term; Sigma is the stationary covariance, predicted by
each theory of `predict.theory_cov` (ours: dq-exact; ct; dq-const) and compared with the
empirical test loss averaged over SGD iterates.
"""
from __future__ import annotations

import math
from typing import NamedTuple, Optional, Sequence

import numpy as np

from inertia.sgmcmc.models import Model, linear_regression
from inertia.sgmcmc.offline import Curvature
from inertia.sgmcmc.predict import theory_cov

THEORIES = ("dq-exact", "ct", "dq-const")


class TestLoss(NamedTuple):
    """L_test = residual + spread (eq. E.11)."""

    __test__ = False  # not a pytest class

    residual: float
    spread: float
    total: float


def _test_set(X_test, y_test, dim: Optional[int] = None):
    X = np.atleast_2d(np.asarray(X_test, dtype=np.float64))
    y = np.asarray(y_test, dtype=np.float64).ravel()
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"test X has {X.shape[0]} rows but y has {y.shape[0]} entries")
    if dim is not None and X.shape[1] != dim:
        raise ValueError(f"test X has {X.shape[1]} columns; the model has {dim} parameters "
                         "(add the intercept column yourself if the model has one)")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise ValueError("test data must be finite")
    return X, y


def decompose(theta_hat, Sigma, X_test, y_test) -> TestLoss:
    """Eq. E.11: mean squared residual at theta_hat plus mean x^T Sigma x over the test set."""
    th = np.asarray(theta_hat, dtype=np.float64)
    X, y = _test_set(X_test, y_test, th.shape[0])
    S = np.asarray(Sigma, dtype=np.float64)
    res = float(np.mean((y - X @ th) ** 2))
    spread = float(np.mean(np.einsum("ma,ab,mb->m", X, S, X)))
    return TestLoss(res, spread, res + spread)


def predicted(curv: Curvature, X_test, y_test, step_size, *, batch_size: int,
              theories: Sequence[str] = THEORIES, replacement: bool = True) -> dict:
    """{theory: TestLoss} for SGD with Lambda = step_size (scalar or matrix); a theory whose
    prediction does not exist (unstable step, diverging second moments) maps to None."""
    out = {}
    for name in theories:
        try:
            S = theory_cov(curv, step_size, name, batch_size=batch_size, replacement=replacement)
        except ValueError:
            out[name] = None
            continue
        out[name] = decompose(curv.theta_hat, S, X_test, y_test)
    return out


class EmpiricalTestLoss(NamedTuple):
    """Mean test loss over iterates, its Monte Carlo standard error and the ESS behind it."""

    mean: float
    se: float
    ess: float


def per_draw(draws, X_test, y_test, *, chunk: int = 4096) -> np.ndarray:
    """Test loss M^-1 sum_m (y_m - theta^T x_m)^2 of every draw; draws (..., D) -> (...)."""
    d = np.asarray(draws, dtype=np.float64)
    X, y = _test_set(X_test, y_test, d.shape[-1])
    flat = d.reshape(-1, d.shape[-1])
    # ||y - X th||^2 = y^T y - 2 (X^T y)^T th + th^T (X^T X) th : O(D^2) per draw
    A, b, c = X.T @ X, X.T @ y, float(y @ y)
    out = np.empty(flat.shape[0])
    for s in range(0, flat.shape[0], chunk):
        t = flat[s:s + chunk]
        out[s:s + chunk] = c - 2 * t @ b + np.einsum("na,ab,nb->n", t, A, t)
    return (out / X.shape[0]).reshape(d.shape[:-1])


def empirical(draws, X_test, y_test) -> EmpiricalTestLoss:
    """Test loss averaged over SGD iterates (chain, draw, D), with an ESS-based standard error
    (the diagnostics' bulk ESS of the per-draw loss series); iid samples (n, D) count as one chain."""
    from inertia.convergence import ess_bulk

    losses = per_draw(draws, X_test, y_test)
    series = losses if losses.ndim == 2 else losses[None, :]
    n = series.size
    if series.shape[1] >= 4 and np.ptp(series) > 0:
        ess = float(ess_bulk(series[..., None]).ravel()[0])
        ess = min(max(ess, 1.0), float(n))
    else:
        ess = float(n)
    return EmpiricalTestLoss(float(series.mean()), float(series.std()) / math.sqrt(ess), ess)


def ridge(X, y, weight_decay: float, *, sigma: float = 1.0, intercept: bool = False) -> Model:
    """Ridge regression: squared loss (y - x^T theta)^2 / (2 sigma^2) with prior Gamma = gamma I
    (regulariser gamma ||theta||^2 / 2, entering the objective as Gamma / N)."""
    g = float(weight_decay)
    if not (math.isfinite(g) and g >= 0):
        raise ValueError(f"weight decay must be finite and >= 0; got {weight_decay}")
    X = np.asarray(X, dtype=np.float64)
    d = X.shape[1] + (1 if intercept else 0)
    return linear_regression(X, y, sigma=sigma, intercept=intercept,
                             prior_precision=g * np.eye(d) if g > 0 else None)


__all__ = ["THEORIES", "TestLoss", "decompose", "predicted", "EmpiricalTestLoss", "per_draw",
           "empirical", "ridge"]
