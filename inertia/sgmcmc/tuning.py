"""Tuning rules of Algorithm 1 step 6: the preconditioner Lambda whose stationary covariance is Sigma*.

dq-exact solves eq. 15 as a continuous Lyapunov equation in P = Lambda^-1 (symmetric Lambda); baselines
ct (eq. 7), dq-const (eq. 9) and lr-ws (eq. 9-10); `-code` variants follow the authors' code (docs/sgmcmc.md).
"""
from __future__ import annotations

import math
import time
from typing import NamedTuple, Optional

import numpy as np
import scipy.linalg
import scipy.optimize

from ._linalg import unvech, vech
from .offline import Curvature
from .predict import _inv_temperature, _lrws_parts, check_stability, stationary

PRINTED = ("dq-exact", "ct", "dq-const", "lr-ws")
CODE = ("ct-code", "dq-const-code", "lr-ws-code", "dq-exact-code")
METHODS = PRINTED + CODE


class Tuning(NamedTuple):
    """A tuned preconditioner with its checks: forward_error = max|Sigma(Lambda) - S*| / max|S*|."""

    Lambda: np.ndarray
    method: str
    target_cov: np.ndarray
    forward_cov: Optional[np.ndarray]
    forward_error: float
    seconds: float


def _lyapunov_inverse(A: np.ndarray, M: np.ndarray, beta: float, what: str) -> np.ndarray:
    """Lambda = P^-1 with A P + P A^T = M; checks that P (hence Lambda) is positive definite."""
    mu = np.linalg.eigvals(A).real
    if mu.min() <= 0:
        if math.isfinite(beta):
            raise ValueError(
                f"inverse temperature beta={beta:g} is too small for a positive-definite Lambda: "
                f"the injected noise 2 Lambda / beta alone exceeds the target (need beta > "
                f"1 / mu_min(H Sigma*) = {1.0 / (mu.min() + 1.0 / beta):.4g})")
        raise ValueError(f"{what}: H Sigma* has non-positive eigenvalues; no positive-definite Lambda")
    P = scipy.linalg.solve_continuous_lyapunov(A, M)
    P = 0.5 * (P + P.T)
    ev = np.linalg.eigvalsh(P)
    if ev[0] <= 0:
        raise ValueError(f"{what}: the Lyapunov solution Lambda^-1 is not positive definite "
                         f"(min eigenvalue {ev[0]:.3g}); the target is not attainable")
    Lam = np.linalg.inv(P)
    return 0.5 * (Lam + Lam.T)


def lambda_dq_exact(curv: Curvature, target: np.ndarray, *, batch_size: int,
                    temperature=math.inf, replacement: bool = True) -> np.ndarray:
    """Closed-form symmetric Lambda solving eq. 15-16 with Sigma = target (one Lyapunov solve)."""
    beta = _inv_temperature(temperature)
    H, S = curv.H, target
    d = H.shape[0]
    A = H @ S - (np.eye(d) / beta if math.isfinite(beta) else 0.0)
    M = curv.noise_cov(S, batch_size, replacement) + H @ S @ H
    return _lyapunov_inverse(A, 0.5 * (M + M.T), beta, "dq-exact")


def lambda_ct(curv: Curvature, target: np.ndarray, *, batch_size: int, temperature=math.inf,
              replacement: bool = True) -> np.ndarray:
    """Continuous-time rule, eq. 7: Lambda = (S H + H S) C_hat^-1 (SGD only; not symmetric in general)."""
    if math.isfinite(_inv_temperature(temperature)):
        raise ValueError("the ct rule (eq. 7) is defined for SGD (beta = inf); use dq-exact "
                         "for SGLD at finite temperature")
    C = curv.noise_cov_at_mode(batch_size, replacement)
    H = curv.H
    return np.linalg.solve(C.T, (target @ H + H @ target).T).T


def lambda_dq_const(curv: Curvature, target: np.ndarray, *, batch_size: int,
                    temperature=math.inf, replacement: bool = True) -> np.ndarray:
    """Discrete quadratic + constant noise, eq. 9 with C = J / B (Lyapunov solve)."""
    beta = _inv_temperature(temperature)
    H, S = curv.H, target
    d = H.shape[0]
    c = curv.fpc(batch_size, replacement) / batch_size
    A = H @ S - (np.eye(d) / beta if math.isfinite(beta) else 0.0)
    M = c * curv.J + H @ S @ H
    return _lyapunov_inverse(A, 0.5 * (M + M.T), beta, "dq-const")


def lambda_lr_ws(curv: Curvature, target: np.ndarray, *, batch_size: int, temperature=math.inf,
                 replacement: bool = True) -> np.ndarray:
    """Linear regression + well specified, eq. 9-10: C = B^-1 sigma^-4 (A S A + tr(A S) A + s2 A)."""
    beta = _inv_temperature(temperature)
    Agram, s2, sig = _lrws_parts(curv)
    H, S = curv.H, target
    d = H.shape[0]
    c = curv.fpc(batch_size, replacement) / batch_size
    C = (c / sig ** 4) * (Agram @ S @ Agram + np.trace(Agram @ S) * Agram + s2 * Agram)
    A = H @ S - (np.eye(d) / beta if math.isfinite(beta) else 0.0)
    M = C + H @ S @ H
    return _lyapunov_inverse(A, 0.5 * (M + M.T), beta, "lr-ws")


def _sgd_only(temperature, rule):
    if math.isfinite(_inv_temperature(temperature)):
        raise ValueError(f"the {rule} rule (authors' code) is defined for SGD (beta = inf); use "
                         "dq-exact for SGLD at finite temperature")


def _commuting_form(curv: Curvature, target: np.ndarray, C: np.ndarray) -> np.ndarray:
    """Lambda = (S H + H S)(C + H S H)^-1: eq. 15 solved as if S, H, C commuted (authors' code)."""
    H, S = curv.H, target
    return np.linalg.solve((C + H @ S @ H).T, (S @ H + H @ S).T).T


def lambda_ct_code(curv: Curvature, target: np.ndarray, *, batch_size: int,
                   temperature=math.inf, replacement: bool = True) -> np.ndarray:
    """Authors' code CT rule: Lambda = (2B/N) J^-1 (eq. 7 with commuting matrices)."""
    _sgd_only(temperature, "ct-code")
    L = (2.0 * batch_size / curv.num_obs) * curv.J_inv
    return 0.5 * (L + L.T)


def lambda_dq_const_code(curv: Curvature, target: np.ndarray, *, batch_size: int,
                         temperature=math.inf, replacement: bool = True) -> np.ndarray:
    """Authors' code DQ+const: Lambda = (S H + H S)(J + H S H)^-1, C = J without 1/B."""
    _sgd_only(temperature, "dq-const-code")
    return _commuting_form(curv, target, curv.J)


def lambda_lr_ws_code(curv: Curvature, target: np.ndarray, *, batch_size: int,
                      temperature=math.inf, replacement: bool = True) -> np.ndarray:
    """Authors' code LR+WS: commuting form with C = B^-1 s^-4 (A S A + tr(A S) A + s2 A), eq. 10."""
    _sgd_only(temperature, "lr-ws-code")
    Agram, s2, sig = _lrws_parts(curv)
    S = target
    c = curv.fpc(batch_size, replacement) / batch_size
    C = (c / sig ** 4) * (Agram @ S @ Agram + np.trace(Agram @ S) * Agram + s2 * Agram)
    return _commuting_form(curv, S, C)


def lambda_dq_exact_code(curv: Curvature, target: np.ndarray, *, batch_size: int,
                         temperature=math.inf, replacement: bool = True) -> np.ndarray:
    """Authors' code DQ+exact: commuting form with the exact noise C(S) of eq. 16."""
    _sgd_only(temperature, "dq-exact-code")
    return _commuting_form(curv, target, curv.noise_cov(target, batch_size, replacement))


_RULES = {"dq-exact": lambda_dq_exact, "ct": lambda_ct, "dq-const": lambda_dq_const,
          "lr-ws": lambda_lr_ws, "ct-code": lambda_ct_code, "dq-const-code": lambda_dq_const_code,
          "lr-ws-code": lambda_lr_ws_code, "dq-exact-code": lambda_dq_exact_code}


def momentum_residual(curv: Curvature, Lambda: np.ndarray, S: np.ndarray, *, batch_size: int,
                      temperature=math.inf, replacement: bool = True,
                      momentum: float = 0.0) -> np.ndarray:
    """Residual of the exact Sigma-only stationarity equation with momentum (corrected eq. B.7)."""
    beta = _inv_temperature(temperature)
    k = float(momentum)
    d = S.shape[0]
    Nz = (2.0 / beta) * Lambda if math.isfinite(beta) else np.zeros((d, d))
    F = np.eye(d) - Lambda @ curv.H
    X = F @ S + k * S - k * Nz
    R1 = (X - k * X.T) / (1 - k * k)
    W = R1 - S + Nz
    C = curv.noise_cov(S, batch_size, replacement)
    rhs = (F @ S @ F.T + k * k * (2 * S - R1 - R1.T - Nz) + Lambda @ C @ Lambda
           - k * (F @ W + W.T @ F.T) + Nz)
    return rhs - S


def lambda_momentum(curv: Curvature, target: np.ndarray, *, batch_size: int, momentum: float,
                    temperature=math.inf, replacement: bool = True, start=None,
                    tol: float = 1e-13) -> np.ndarray:
    """Symmetric Lambda with momentum kappa: root solve of `momentum_residual` over vech(Lambda)."""
    d = target.shape[0]
    if start is None:
        start = (1.0 - momentum) * lambda_dq_exact(curv, target, batch_size=batch_size,
                                                   temperature=temperature,
                                                   replacement=replacement)
    scale = np.max(np.abs(target))
    x0 = vech(start)
    xs = np.maximum(np.abs(x0), np.max(np.abs(x0)) * 1e-3)

    def fun(x):
        L = unvech(x * xs, d)
        return vech(momentum_residual(curv, L, target, batch_size=batch_size,
                                      temperature=temperature, replacement=replacement,
                                      momentum=momentum)) / scale

    sol = scipy.optimize.root(fun, x0 / xs, method="hybr", tol=tol)
    Lam = unvech(sol.x * xs, d)
    if not sol.success and np.max(np.abs(fun(sol.x))) > 1e-8:
        raise ValueError(f"momentum tuning did not converge ({sol.message}); try a smaller "
                         "momentum or a larger batch")
    if np.linalg.eigvalsh(Lam)[0] <= 0:
        raise ValueError("momentum tuning produced a Lambda that is not positive definite")
    return Lam


def tune(curv: Curvature, *, method: str = "dq-exact", batch_size: int, temperature=math.inf,
         replacement: bool = True, momentum: float = 0.0, target: Optional[np.ndarray] = None,
         check: bool = True) -> Tuning:
    """Lambda for the target Sigma* (default S / N) by one rule, checked by the exact forward solve."""
    if method not in _RULES:
        raise ValueError(f"unknown tuning method {method!r}; choose from {METHODS}")
    target = curv.target_cov if target is None else np.asarray(target, dtype=np.float64)
    t0 = time.perf_counter()
    if momentum:
        if method != "dq-exact":
            raise ValueError(f"tuning {method!r} has no momentum version; use dq-exact")
        Lam = lambda_momentum(curv, target, batch_size=batch_size, momentum=momentum,
                              temperature=temperature, replacement=replacement)
    else:
        Lam = _RULES[method](curv, target, batch_size=batch_size, temperature=temperature,
                             replacement=replacement)
    seconds = time.perf_counter() - t0
    check_stability(Lam, curv.H)
    fwd, err = None, float("nan")
    if check:
        fwd = stationary(curv, Lam, batch_size=batch_size, temperature=temperature,
                         replacement=replacement, momentum=momentum).cov
        err = float(np.max(np.abs(fwd - target)) / np.max(np.abs(target)))
    return Tuning(Lam, method, target, fwd, err, seconds)


__all__ = ["METHODS", "PRINTED", "CODE", "Tuning", "tune", "lambda_dq_exact", "lambda_ct",
           "lambda_dq_const", "lambda_lr_ws", "lambda_ct_code", "lambda_dq_const_code",
           "lambda_lr_ws_code", "lambda_dq_exact_code", "lambda_momentum", "momentum_residual"]
