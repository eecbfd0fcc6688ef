"""Symmetric-matrix (vech) coordinates for the exact linear solves of eq. 15-16."""
from __future__ import annotations

import functools

import numpy as np


@functools.lru_cache(maxsize=None)
def vech_pairs(d: int):
    """Row/column indices (i <= j) of the upper triangle, the vech coordinates of a (d, d) matrix."""
    return np.triu_indices(d)


def vech(S: np.ndarray) -> np.ndarray:
    """Upper-triangle entries of symmetric S (last two axes)."""
    i, j = vech_pairs(S.shape[-1])
    return S[..., i, j]


def unvech(v: np.ndarray, d: int) -> np.ndarray:
    """Symmetric (d, d) matrix (batched over leading axes) from its vech coordinates."""
    i, j = vech_pairs(d)
    S = np.zeros(v.shape[:-1] + (d, d))
    S[..., i, j] = v
    S[..., j, i] = v
    return S


def sym_kron(A: np.ndarray) -> np.ndarray:
    """Matrix of X -> A X A^T on vech coordinates (A is (m, d); X symmetric (d, d))."""
    m, d = A.shape
    ra, rb = vech_pairs(m)
    ci, cj = vech_pairs(d)
    Aai, Abj = A[ra][:, ci], A[rb][:, cj]
    Aaj, Abi = A[ra][:, cj], A[rb][:, ci]
    K = Aai * Abj + Aaj * Abi
    K[:, ci == cj] *= 0.5
    return K


def pair_products(X: np.ndarray):
    """For rows x_n of X: (x_a x_b)_{a<=b} and the same with off-diagonal products doubled.

    So vech-row n of x x^T is the first, and x^T S x = second @ vech(S).
    """
    i, j = vech_pairs(X.shape[1])
    Z = X[:, i] * X[:, j]
    return Z, np.where(i == j, 1.0, 2.0) * Z


def glm_fourth_moment_matrix(X: np.ndarray, w2: np.ndarray, chunk: int = 2048) -> np.ndarray:
    """vech matrix of S -> mean_n w2_n (x_n^T S x_n) x_n x_n^T, computed in O(N p^2), p = D(D+1)/2."""
    n, d = X.shape
    p = d * (d + 1) // 2
    K = np.zeros((p, p))
    for s in range(0, n, chunk):
        Ze, Zd = pair_products(X[s:s + chunk])
        K += (Ze * w2[s:s + chunk, None]).T @ Zd
    return K / n


def hessian_fourth_moment_matrix(Jn: np.ndarray) -> np.ndarray:
    """vech matrix of S -> mean_n J_n S J_n from per-example Hessians J_n, shape (n, d, d)."""
    n, d, _ = Jn.shape
    flat = Jn.reshape(n, d * d)
    return vech_fourth_moment(flat.T @ flat / n, d)


def vech_fourth_moment(M: np.ndarray, d: int) -> np.ndarray:
    """vech matrix of S -> mean_n J_n S J_n from M = mean_n vec(J_n) vec(J_n)^T, (d^2, d^2)."""
    K4 = M.reshape(d, d, d, d)  # K4[a, i, b, j] = mean J[a, i] J[b, j]
    ra, rb = vech_pairs(d)
    ci, cj = vech_pairs(d)
    K = K4[ra[:, None], ci[None, :], rb[:, None], cj[None, :]] \
        + K4[ra[:, None], cj[None, :], rb[:, None], ci[None, :]]
    K[:, ci == cj] *= 0.5
    return K
