"""Objective monitoring for any target: F(q) by common random numbers, its error, a stopping rule.

F_hat = mean_j V(m + A xi_j) - (d/2) log(2 pi e) - log|det A| over one fixed set xi_j reused at every
checkpoint, so two checkpoints differ with the paired s.e. sd_j(V_k(xi_j) - V_l(xi_j)) / sqrt(n).
"""
from __future__ import annotations

import collections
import functools
import math
from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from .. import _compile
from ..targets.base import BATCH, batched_potential


class Estimate(NamedTuple):
    """F_hat per checkpoint and seed, its s.e., the non-finite fraction, and per-draw values."""

    value: np.ndarray
    stderr: np.ndarray
    nonfinite: np.ndarray
    draws: np.ndarray


CHUNK = BATCH  # draws per compiled call: monitors of 128, 256 or 1024 draws share one executable
POOL = 1024  # common normals drawn at once: the first n rows serve every monitor of a run
POOL_BYTES = 64 * 2**20  # a larger set (large d) is drawn per monitor and not kept
_POOL: dict = {}  # (seed, d) -> the last pool drawn (one kept)


def common_normals(seed: int, n: int, d: int) -> np.ndarray:
    """xi_1..xi_n ~ N(0, I_d): the first n rows of one seeded draw of max(n, POOL) rows."""
    pool = _POOL.get((seed, d))
    if pool is None or pool.shape[0] < n:
        _POOL.clear()
        rows = max(n, POOL) if max(n, POOL) * d * 8 <= POOL_BYTES else n
        pool = np.asarray(_normals(seed + 7919, rows, d))
        if pool.nbytes <= POOL_BYTES:
            _POOL[(seed, d)] = pool
    return pool[:n]


@functools.partial(_compile.jit, static_argnums=(1, 2))
def _normals(seed, rows, d):
    """(rows, d) standard normals of one seed, in one program (the key's derivation included)."""
    return jax.random.normal(jax.random.PRNGKey(seed), (rows, d), dtype=jnp.float64)


def _on_draws(target):
    """(chunk function (m, S, xi) -> V(m + S xi_j), frame or None); whitened targets use their parent's."""
    shift, F = None, None
    while target.affine is not None:  # compose nested whitenings into one frame
        parent, s, W = target.affine
        s, W = np.asarray(s, np.float64), np.asarray(W, np.float64)
        shift, F = (s, W) if F is None else (s + W @ shift, W @ F)
        target = parent
    fn = batched_potential(target.potential)
    # two programs: fused into V's, XLA CPU evaluated the draws' affine map 2.4x slower (a NumPyro
    # hierarchical logistic, d = 103: 14.5 ms a chunk against 0.13 + 6 ms)
    return (lambda m, S, xi: fn(_points(m, S, xi))), (None if F is None else (shift, F))


@_compile.jit
def _points(m, S, xi):
    """m + S xi_j for a chunk of draws xi (c, d)."""
    return m + xi @ S.T


def _factor_and_half_logdet(A, coords):
    """(S with S S^T = Sigma, log |det A|) of a factor in the kernel's coordinates, on the host."""
    A = np.asarray(A)
    if not np.all(np.isfinite(A)):
        return A, math.nan
    A64 = A.astype(np.float64)
    if coords == "chol":
        return A, float(np.sum(np.log(np.abs(np.diagonal(A64)))))
    if coords == "sym":
        w = np.linalg.eigvalsh(0.5 * (A64 + A64.T))
        return A, float(np.sum(np.log(w))) if np.all(w > 0) else math.nan
    sign, logdet = np.linalg.slogdet(A64)
    if not sign > 0:
        return np.full_like(A, np.nan), math.nan
    try:
        return np.linalg.cholesky(A), 0.5 * float(logdet)
    except np.linalg.LinAlgError:  # indefinite with a positive determinant
        return np.full_like(A, np.nan), math.nan


class ObjectiveMonitor:
    """F_hat(m, A) with `num_draws` common random numbers (seeded by `seed`), in compiled chunks."""

    def __init__(self, target, coords: str, *, num_draws: int = 256, seed: int = 0):
        if num_draws < 2:
            raise ValueError(f"the objective monitor needs at least 2 draws, got {num_draws}")
        d = target.dim
        self.num_draws, self.coords = int(num_draws), coords
        xi = common_normals(seed, self.num_draws, d)
        c = min(CHUNK, self.num_draws)
        self._chunks = [xi[i:i + c] for i in range(0, self.num_draws, c)]
        self._const = 0.5 * d * math.log(2 * math.pi * math.e)
        self._on_draws, self._frame = _on_draws(target)

    def _values(self, m, A):
        S, hl = _factor_and_half_logdet(A, self.coords)
        if self._frame is not None:  # the parent's coordinates, once for all chunks
            shift, F = self._frame
            m, S = shift + F @ np.asarray(m), F @ np.asarray(S)
        v = np.concatenate([np.asarray(self._on_draws(m, S, xi)) for xi in self._chunks])
        return v - self._const - hl

    def __call__(self, ms, As) -> Estimate:
        """Estimates for stacked (m, A): ms (k, d), As (k, d, d)."""
        ms, As = np.asarray(ms), np.asarray(As)
        vals = np.stack([self._values(m, A) for m, A in zip(ms, As)])
        ok = np.isfinite(vals)
        nonfinite = 1.0 - ok.mean(axis=-1)
        with np.errstate(invalid="ignore"):
            value = np.where(nonfinite > 0, np.nan, vals.mean(axis=-1))
            stderr = np.where(nonfinite > 0, np.nan,
                              vals.std(axis=-1, ddof=1) / math.sqrt(vals.shape[-1]))
        return Estimate(value, stderr, nonfinite, vals)


def paired_difference(a: np.ndarray, b: np.ndarray):
    """(mean(a - b), its standard error) for per-draw values of two checkpoints on the same draws."""
    diff = np.asarray(a) - np.asarray(b)
    return float(diff.mean()), float(diff.std(ddof=1) / math.sqrt(diff.size))


class StoppingRule:
    """Stop when F_hat fell by less than max(tol, z * paired s.e.) over the last `window` checkpoints.

    `tol` in nats; `min_checkpoints` skips the first transient; `confident`: |decrease| + z s.e. < tol.
    """

    def __init__(self, tol: float = 1e-4, window: int = 10, z: float = 2.0,
                 min_checkpoints: Optional[int] = None, confident: bool = False):
        if not tol >= 0:
            raise ValueError(f"tol must be >= 0 nats, got {tol}")
        if window < 1:
            raise ValueError(f"window must be a positive number of checkpoints, got {window}")
        self.tol, self.window, self.z = float(tol), int(window), float(z)
        self.confident = bool(confident)
        self.seen = 0
        self.min_checkpoints = int(min_checkpoints if min_checkpoints is not None else 2 * window)
        self.draws = collections.deque(maxlen=self.window + 1)  # the window's ends suffice
        self.decrease: Optional[float] = None
        self.stderr: Optional[float] = None

    def update(self, draws: np.ndarray) -> bool:
        """Feed one checkpoint's per-draw values (seeds averaged); True when the run should stop."""
        self.draws.append(np.asarray(draws, dtype=float))
        self.seen += 1
        if self.seen <= max(self.window, self.min_checkpoints - 1):
            return False
        old, new = self.draws[-1 - self.window], self.draws[-1]
        if not (np.all(np.isfinite(old)) and np.all(np.isfinite(new))):
            return False
        self.decrease, self.stderr = paired_difference(old, new)
        if self.confident:  # only a change that is surely below tol
            return abs(self.decrease) + self.z * self.stderr < self.tol
        return self.decrease < max(self.tol, self.z * self.stderr)

    def falling(self, z: Optional[float] = None) -> bool:
        """The last window showed a decrease of F_hat > max(tol, z s.e.) (z: the rule's)."""
        return (self.decrease is not None
                and self.decrease > max(self.tol, (self.z if z is None else z) * self.stderr))


__all__ = ["ObjectiveMonitor", "Estimate", "StoppingRule", "paired_difference"]
