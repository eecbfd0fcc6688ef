"""Exact stationary law of a minibatch SG(L)D chain whose per-observation gradients are affine.

An oracle for the tuning tests that shares no code with `inertia.sgmcmc` (no Curvature, no
noise_cov, no vech algebra): it is built from the per-observation gradients alone. With
g_n(theta) = a_n + J_n theta, the chain of eq. 4 / B.3,

    m' = kappa m + mean_{n in batch} g_n(theta) + Gamma theta / N,
    theta' = theta - Lambda m' + sqrt(2 Lambda / beta) xi,

is x' = W(u) x + noise on x = (theta, m, 1), where W is affine in the batch mean u of the
per-observation vectors (vec J_n, a_n). The batch is independent of x, so the second moment
Y = E[x x^T] solves Y = E[W Y W^T] + Q with E[W (x) W] = Wbar (x) Wbar + sum_kl Cov(u)_kl W_k (x) W_l
and Cov(u) = fpc / B x the population covariance of (vec J_n, a_n) (fpc = 1 with replacement,
(N - B) / (N - 1) without: the sampling theory of a mean of B draws from N). One dense solve.
"""
import math

import numpy as np


def linear_regression_parts(X, y, sigma):
    """(a_n, J_n, theta_hat) of the Gaussian log loss r^2 / (2 sigma^2), r = y - x theta."""
    X = np.asarray(X, float)
    Jn = np.einsum("ni,nj->nij", X, X) / sigma ** 2
    a = -X * np.asarray(y, float)[:, None] / sigma ** 2
    theta_hat = np.linalg.lstsq(X, y, rcond=None)[0]
    return a, Jn, theta_hat


def poisson_parts(X, y, prior_precision):
    """(a_n, J_n, theta_hat) of the second-order proxy (eq. 11) of Poisson regression at its MAP
    (found here by Newton's method on exp(eta) - y eta + theta' Gamma theta / (2 N))."""
    X, y = np.asarray(X, float), np.asarray(y, float)
    N, d = X.shape
    G = np.asarray(prior_precision, float)
    th = np.zeros(d)
    for _ in range(100):
        mu = np.exp(X @ th)
        grad = X.T @ (mu - y) / N + G @ th / N
        hess = (X.T * mu) @ X / N + G / N
        step = np.linalg.solve(hess, grad)
        th = th - step
        if np.max(np.abs(step)) < 1e-15:
            break
    mu = np.exp(X @ th)
    Jn = np.einsum("n,ni,nj->nij", mu, X, X)
    g0 = X * (mu - y)[:, None]  # per-observation gradients at theta_hat
    a = g0 - np.einsum("nij,j->ni", Jn, th)
    return a, Jn, th


def sandwich_target(a, Jn, theta_hat):
    """Sigma* = J^-1 I J^-1 / N with J = mean J_n, I = mean g_n g_n^T at theta_hat."""
    N = len(a)
    g0 = a + np.einsum("nij,j->ni", Jn, theta_hat)
    J = Jn.mean(0)
    I = g0.T @ g0 / N
    Ji = np.linalg.inv(J)
    return Ji @ I @ Ji / N


def stationary(a, Jn, Lambda, *, batch_size, replacement=True, beta=math.inf, momentum=0.0,
               prior_precision=None):
    """(mean, covariance) of theta under the chain's stationary law (exact)."""
    N, d = a.shape
    L = np.asarray(Lambda, float)
    k = float(momentum)
    Gp = np.zeros((d, d)) if prior_precision is None else np.asarray(prior_precision) / N
    u = np.concatenate([Jn.reshape(N, d * d), a], axis=1)  # per-observation vectors (vec J_n, a_n)
    ubar = u.mean(0)
    fpc = 1.0 if replacement else (N - batch_size) / (N - 1)
    Cu = fpc / batch_size * ((u - ubar).T @ (u - ubar) / N)
    n = 2 * d + 1
    I = np.eye(d)

    def W(Jb, ab):
        A = Jb + Gp
        out = np.zeros((n, n))
        out[:d, :d], out[:d, d:2 * d], out[:d, -1] = I - L @ A, -k * L, -L @ ab
        out[d:2 * d, :d], out[d:2 * d, d:2 * d], out[d:2 * d, -1] = A, k * I, ab
        out[-1, -1] = 1.0
        return out

    Wbar = W(ubar[:d * d].reshape(d, d), ubar[d * d:])
    W0 = W(np.zeros((d, d)), np.zeros(d))
    Wk = [W(e[:d * d].reshape(d, d), e[d * d:]) - W0 for e in np.eye(len(ubar))]
    K = np.kron(Wbar, Wbar)
    for i in range(len(Wk)):
        for j in range(len(Wk)):
            if Cu[i, j] != 0.0:
                K += Cu[i, j] * np.kron(Wk[i], Wk[j])
    Q = np.zeros((n, n))
    if math.isfinite(beta):
        Q[:d, :d] = 2.0 * L / beta
    # (I - K) vec Y = vec Q has the constant direction in its kernel; Y[-1, -1] = 1 fixes it
    A = np.vstack([np.eye(n * n) - K, np.eye(n * n)[-1]])
    rhs = np.concatenate([Q.ravel(), [1.0]])
    Y = np.linalg.lstsq(A, rhs, rcond=None)[0].reshape(n, n)
    mean = Y[:d, -1]
    cov = Y[:d, :d] - np.outer(mean, mean)
    return mean, 0.5 * (cov + cov.T)
