"""The factor-form covariance Sigma = B B^T + diag(D^2) of the factor family (`variational.factor`): its
log-determinant, quadratic form, density and draws in O(d r) memory, without the d x d matrix."""
from __future__ import annotations

import math

import numpy as np


class FactorCovariance:
    """Sigma = B B^T + diag(D^2) held as B (d, r) and D (d,); `dense()` (or `np.asarray`) forms the
    d x d matrix, nothing else does."""

    def __init__(self, B, D):
        self.B = np.asarray(B, dtype=np.float64)
        self.D = np.asarray(D, dtype=np.float64)

    @property
    def shape(self):
        d = self.D.shape[0]
        return (d, d)

    @property
    def rank(self) -> int:
        return int(self.B.shape[1])

    def diagonal(self) -> np.ndarray:
        """diag Sigma = row sums of B^2 + D^2."""
        return np.sum(self.B * self.B, axis=1) + self.D * self.D

    def __matmul__(self, v):
        """Sigma v for v (d,) or (d, k), in O(d r k)."""
        v = np.asarray(v, dtype=np.float64)
        Dv = (self.D * self.D)[:, None] * v if v.ndim == 2 else self.D * self.D * v
        return self.B @ (self.B.T @ v) + Dv

    def dense(self) -> np.ndarray:
        """The d x d matrix (8 d^2 bytes: 800 MB at d = 10,000)."""
        return self.B @ self.B.T + np.diag(self.D * self.D)

    def __array__(self, dtype=None, copy=None):
        out = self.dense()
        return out if dtype is None else out.astype(dtype)

    def _small(self):
        """(D^-2 B, Cholesky factor of I_r + B^T D^-2 B)."""
        W = self.B / (self.D * self.D)[:, None]
        return W, np.linalg.cholesky(np.eye(self.rank) + self.B.T @ W)

    def logdet(self) -> float:
        """log det Sigma = 2 sum log D + log det(I_r + B^T D^-2 B) (matrix determinant lemma)."""
        _, L = self._small()
        return float(2.0 * np.sum(np.log(np.abs(self.D))) + 2.0 * np.sum(np.log(np.diag(L))))

    def quadratic(self, R) -> np.ndarray:
        """r^T Sigma^-1 r per row r of R (n, d), by the Woodbury identity
        Sigma^-1 = D^-2 - D^-2 B (I_r + B^T D^-2 B)^-1 B^T D^-2."""
        from scipy.linalg import solve_triangular

        W, L = self._small()
        R = np.asarray(R, dtype=np.float64)
        y = solve_triangular(L, (R @ W).T, lower=True)  # (r, n)
        return np.sum(R * R / (self.D * self.D), axis=1) - np.sum(y * y, axis=0)

    def draws(self, mean, xi):
        """m + B z + D eps for normals xi (..., r + d) = (z, eps)."""
        r = self.rank
        return np.asarray(mean) + xi[..., :r] @ self.B.T + xi[..., r:] * self.D

    def log_density(self, mean, X) -> np.ndarray:
        """log N(x; m, Sigma) per row of X (n, d)."""
        d = self.D.shape[0]
        q = self.quadratic(np.asarray(X) - np.asarray(mean))
        return -0.5 * q - 0.5 * d * math.log(2 * math.pi) - 0.5 * self.logdet()

    def to_dict(self) -> dict:
        """The factor form for JSON: {"form", "rank", "B", "D"}."""
        return {"form": "B B^T + diag(D^2)", "rank": self.rank, "B": self.B.tolist(),
                "D": self.D.tolist()}

    @classmethod
    def from_dict(cls, d: dict) -> "FactorCovariance":
        return cls(np.asarray(d["B"], dtype=np.float64), np.asarray(d["D"], dtype=np.float64))

    def __repr__(self) -> str:
        d = self.D.shape[0]
        return f"FactorCovariance(d={d}, rank={self.rank}: B B^T + diag(D^2))"


__all__ = ["FactorCovariance"]
