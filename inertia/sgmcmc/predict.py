"""Exact predictions for the proxy SG(L)D of eq. 12 / B.6: stationary covariance, mixing, averages.

The proxy error follows a linear recursion z_t = T z_{t-1} + noise, so its stationary covariance solves one
linear system in the symmetric unknown (vech coordinates); lagged covariances are T^k Z.
"""
from __future__ import annotations

import math
from typing import NamedTuple, Optional

import numpy as np
import scipy.linalg

from ._linalg import sym_kron, unvech, vech, vech_pairs
from .offline import Curvature

THEORIES = ("dq-exact", "ct", "dq-const", "lr-ws")


class Stationary(NamedTuple):
    """Stationary law of the proxy: cov = Cov(e) (D, D); joint_cov and transition of z (k = D or 2D)."""

    cov: np.ndarray
    joint_cov: np.ndarray
    transition: np.ndarray
    momentum: float


def _inv_temperature(temperature) -> float:
    beta = math.inf if temperature is None else float(temperature)
    if not beta > 0:
        raise ValueError(f"inverse temperature beta must be in (0, inf]; got {temperature}")
    return beta


def _check_lambda(Lambda: np.ndarray, d: int, beta: float) -> np.ndarray:
    Lambda = np.asarray(Lambda, dtype=np.float64)
    if Lambda.ndim == 0:
        Lambda = float(Lambda) * np.eye(d)
    elif Lambda.ndim == 1:
        Lambda = np.diag(Lambda)  # a diagonal preconditioner given by its diagonal
    if Lambda.shape != (d, d):
        raise ValueError(f"Lambda must be a scalar or ({d}, {d}); got shape {Lambda.shape}")
    if not np.all(np.isfinite(Lambda)):
        raise ValueError("Lambda contains non-finite entries")
    if math.isfinite(beta) and not np.allclose(Lambda, Lambda.T, rtol=1e-10, atol=0):
        raise ValueError("SGLD at finite temperature needs a symmetric Lambda (noise sqrt(2 Lambda / beta))")
    return Lambda


def check_stability(Lambda: np.ndarray, H: np.ndarray) -> np.ndarray:
    """Eigenvalues of Lambda H; raise unless they lie in (0, 2) (Prop. 4.4's stability condition)."""
    mu = np.linalg.eigvals(Lambda @ H)
    if np.max(np.abs(mu.imag)) <= 1e-12 * np.max(np.abs(mu)):
        bad = (mu.real <= 0) | (mu.real >= 2)
    else:
        bad = np.abs(1 - mu) >= 1
    if np.any(bad):
        raise ValueError(
            f"Lambda H has eigenvalues outside (0, 2) (range {mu.real.min():.4g} .. "
            f"{mu.real.max():.4g}): SG(L)D with this preconditioner has no stationary law; "
            "use a smaller step or a positive-definite Lambda")
    return mu


def stationary(curv: Curvature, Lambda, *, batch_size: int, temperature=math.inf,
               replacement: bool = True, momentum: float = 0.0) -> Stationary:
    """Exact stationary covariance of the proxy for a given Lambda (eq. 15-16; momentum: exact B.6)."""
    beta = _inv_temperature(temperature)
    d = curv.dim
    Lambda = _check_lambda(Lambda, d, beta)
    kappa = float(momentum)
    if not 0.0 <= kappa < 1.0:
        raise ValueError(f"momentum must be in [0, 1); got {momentum}")
    H, J = curv.H, curv.J
    c = curv.fpc(batch_size, replacement) / batch_size
    g = curv.g
    C0 = c * (curv.I - np.outer(g, g))
    Klin = c * (curv.quad_matrix() - sym_kron(J))  # vech matrix of S -> C(S) - C(0)
    noise = (2.0 / beta) * Lambda if math.isfinite(beta) else np.zeros((d, d))
    if kappa == 0.0:
        check_stability(Lambda, H)
        F = np.eye(d) - Lambda @ H
        p = d * (d + 1) // 2
        A = np.eye(p) - sym_kron(F) - sym_kron(Lambda) @ Klin
        rhs = vech(Lambda @ C0 @ Lambda.T + noise)
        T, k = F, d
    else:
        I = np.eye(d)
        T = np.block([[I - Lambda @ H, -kappa * Lambda], [H, kappa * I]])
        if np.max(np.abs(np.linalg.eigvals(T))) >= 1:
            raise ValueError("momentum recursion is unstable (spectral radius of the proxy "
                             "transition >= 1): reduce Lambda or the momentum")
        U = np.vstack([-Lambda, I])
        V = np.vstack([I, np.zeros((d, d))])
        k = 2 * d
        p2 = k * (k + 1) // 2
        # vech(2D) coordinates of the top-left (e, e) block, in vech(D) order
        ri, rj = vech_pairs(k)
        pos = {(int(a), int(b)): n for n, (a, b) in enumerate(zip(ri, rj))}
        di, dj = vech_pairs(d)
        sel = np.array([pos[(int(a), int(b))] for a, b in zip(di, dj)])
        P = np.zeros((di.size, p2))
        P[np.arange(di.size), sel] = 1.0
        A = np.eye(p2) - sym_kron(T) - sym_kron(U) @ Klin @ P
        rhs = vech(U @ C0 @ U.T + V @ noise @ V.T)
    Z = unvech(_solve_equilibrated(A, rhs), k)
    cov = Z[:d, :d]
    ev = np.linalg.eigvalsh(cov)
    if not np.all(np.isfinite(ev)) or ev[0] <= -1e-4 * ev[-1] or ev[-1] <= 0:  # beyond roundoff
        raise ValueError(
            "no stationary covariance: with this Lambda and batch size the minibatch noise makes "
            "the second moments diverge (the solution of eq. 15-16 is not positive definite); "
            "use a smaller step or a larger batch")
    return Stationary(cov, Z, T, kappa)


def _solve_equilibrated(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solve A x = b after scaling rows and columns to unit max-norm."""
    r = 1.0 / np.maximum(np.abs(A).max(axis=1), 1e-300)
    As = A * r[:, None]
    c = 1.0 / np.maximum(np.abs(As).max(axis=0), 1e-300)
    try:
        y = np.linalg.solve(As * c[None, :], b * r)
    except np.linalg.LinAlgError as err:
        raise ValueError("the stationary-covariance equation is singular for this Lambda") from err
    return y * c


def stationary_cov(curv: Curvature, Lambda, **kw) -> np.ndarray:
    """Sigma for a given Lambda (see `stationary`)."""
    return stationary(curv, Lambda, **kw).cov


def theory_cov(curv: Curvature, Lambda, theory: str, *, batch_size: int, temperature=math.inf,
               replacement: bool = True) -> np.ndarray:
    """Stationary covariance of one theory of Table 1 (dq-exact, dq-const, lr-ws, ct; eq. 6, 9-10, 15-16)."""
    beta = _inv_temperature(temperature)
    d = curv.dim
    Lambda = _check_lambda(Lambda, d, beta)
    if theory == "dq-exact":
        return stationary_cov(curv, Lambda, batch_size=batch_size, temperature=beta,
                              replacement=replacement)
    H = curv.H
    c = curv.fpc(batch_size, replacement) / batch_size
    noise = (2.0 / beta) * Lambda if math.isfinite(beta) else np.zeros((d, d))
    check_stability(Lambda, H)
    F = np.eye(d) - Lambda @ H
    if theory == "ct":
        Q = Lambda @ curv.noise_cov_at_mode(batch_size, replacement) @ Lambda.T + noise
        S = scipy.linalg.solve_continuous_lyapunov(Lambda @ H, Q)
    elif theory == "dq-const":
        S = scipy.linalg.solve_discrete_lyapunov(F, Lambda @ (c * curv.J) @ Lambda.T + noise)
    elif theory == "lr-ws":
        A, s2, sig = _lrws_parts(curv)
        i, j = vech_pairs(d)
        tr_w = np.where(i == j, 1.0, 2.0) * vech(A)  # tr(A S) = tr_w @ vech(S)
        K = (c / sig ** 4) * (sym_kron(A) + np.outer(vech(A), tr_w))
        p = i.size
        M = np.eye(p) - sym_kron(F) - sym_kron(Lambda) @ K
        rhs = vech(Lambda @ ((c * s2 / sig ** 4) * A) @ Lambda.T + noise)
        S = unvech(_solve_equilibrated(M, rhs), d)
    else:
        raise ValueError(f"unknown theory {theory!r}; choose from {THEORIES}")
    return 0.5 * (S + S.T)


def _lrws_parts(curv: Curvature):
    if curv.gram is None:
        raise ValueError("the LR+WS rule (eq. 10) applies to linear regression models only")
    return curv.gram, curv.residual_var, curv.sigma


# -- mixing --------------------------------------------------------------------------------------
class IAT(NamedTuple):
    """Integrated autocorrelation times of the proxy (Prop. 4.4): worst, worst_paper, per_coord."""

    worst: float
    worst_paper: float
    per_coord: np.ndarray


def _lag_sum(st: Stationary) -> np.ndarray:
    k = st.transition.shape[0]
    W = np.linalg.solve(np.eye(k) - st.transition, st.joint_cov)  # sum_{j>=0} T^j Z
    d = st.cov.shape[0]
    return W[:d, :d]


def iat(st: Stationary) -> IAT:
    """IAT per coordinate and in the worst direction (Prop. 4.4; exact sup over directions)."""
    W = _lag_sum(st)
    S = st.cov
    per = 2.0 * np.diag(W) / np.diag(S) - 1.0
    Wsym = 0.5 * (W + W.T)
    worst = 2.0 * float(scipy.linalg.eigh(Wsym, S, eigvals_only=True)[-1]) - 1.0
    paper = float("nan")
    if st.momentum == 0.0:
        F = st.transition
        mu = np.linalg.eigvals(np.eye(F.shape[0]) - F)
        paper = 2.0 / float(np.min(mu.real)) - 1.0
    return IAT(worst, paper, per)


def autocorrelation(st: Stationary, lags) -> np.ndarray:
    """Lag-k autocorrelations rho_{k,i} = (T^k Z)_ii / Sigma_ii, shape (len(lags), D) (F.23)."""
    lags = [int(k) for k in np.atleast_1d(lags)]
    d = st.cov.shape[0]
    s = np.diag(st.cov)
    out = []
    for k in lags:
        Xi = np.linalg.matrix_power(st.transition, k) @ st.joint_cov
        out.append(np.diag(Xi[:d, :d]) / s)
    return np.array(out)


def iterate_average_cov(st: Stationary, k: int) -> np.ndarray:
    """Covariance of the average of k consecutive stationary iterates (corrected eq. B.8)."""
    k = int(k)
    if k < 1:
        raise ValueError("k must be >= 1")
    T, Z = st.transition, st.joint_cov
    n = T.shape[0]
    I = np.eye(n)
    Tk = np.linalg.matrix_power(T, k)
    R = k * (I - T) - T @ (I - Tk)
    G = np.linalg.solve((I - T).T, np.linalg.solve((I - T).T, R.T)).T  # R (I - T)^-2
    W = (G - k * I) @ Z
    d = st.cov.shape[0]
    out = (k * st.cov + W[:d, :d] + W[:d, :d].T) / k ** 2
    return 0.5 * (out + out.T)


def predicted_ess(st: Stationary, num_draws: int) -> np.ndarray:
    """Predicted effective sample size per coordinate, num_draws / tau_i."""
    return num_draws / iat(st).per_coord


def covariance_standard_errors(st: Stationary, num_draws: int, *, max_lags: int = 50_000,
                               rtol: float = 1e-10) -> np.ndarray:
    """Monte Carlo standard errors of the sample covariance of `num_draws` stationary iterates (Isserlis)."""
    d = st.cov.shape[0]
    S = st.cov
    total = np.outer(np.diag(S), np.diag(S)) + S * S
    Xi = st.joint_cov
    T = st.transition
    scale = np.max(np.abs(S))
    acc = np.zeros_like(S)
    for _ in range(max_lags):
        Xi = T @ Xi
        E = Xi[:d, :d]
        term = np.outer(np.diag(E), np.diag(E)) + E * E.T
        acc += term
        if np.max(np.abs(E)) < rtol * scale:
            break
    return np.sqrt(np.maximum(total + 2 * acc, 0.0) / num_draws)


__all__ = ["Stationary", "THEORIES", "stationary", "stationary_cov", "theory_cov", "IAT", "iat",
           "autocorrelation", "iterate_average_cov", "predicted_ess", "covariance_standard_errors",
           "check_stability"]
