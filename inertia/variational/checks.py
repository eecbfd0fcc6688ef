"""Run-time checks: `hessian_consistency` (HVPs against the Stein form, docs/vi.md), `check_memory`,
`check_fixed_run` (refuse runs too large for free memory before compiling).
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from .. import _warnings, _compile
from .._random import host_normal
from .registry import get_estimator
from .runstate import fixed_blocks
from .. import resources
from ..resources import estimate_fit_bytes, largest_dim

Z_WARN = 6.0  # |z| above this: the Hessian-based estimators see a different curvature
# what one update of a block holds per seed: its key (two uint32 words) and two one-byte flags
BYTES_PER_UPDATE = 10


def hessian_consistency(target, m, A, *, num_draws: int = 2048, num_dirs: int = 4,
                        seed: int = 0) -> float:
    """max over directions of |z| of the paired difference of the two Hessian estimates at q."""
    d = target.dim
    key = jax.random.PRNGKey(seed + 104729)
    kx, ku, kw = jax.random.split(key, 3)
    xi = host_normal(kx, (num_draws, d), jnp.float64)
    U = host_normal(ku, (num_dirs, d), jnp.float64)
    W = host_normal(kw, (num_dirs, d), jnp.float64)
    m, A = jnp.asarray(m), jnp.asarray(A)

    @_compile.jit
    def diffs(xi, U, W):
        x = m + xi @ A.T
        g = jax.vmap(target.grad)(x)  # (n, d)

        def one(u, w):
            hv = jax.vmap(lambda xx: target.hvp(xx, A @ w))(x)  # (n, d)
            return hv @ u - (g @ u) * (xi @ w)

        return jax.vmap(one)(U, W)  # (dirs, n)

    D = np.asarray(diffs(xi, U, W))
    if not np.all(np.isfinite(D)):
        return math.inf
    se = D.std(axis=1, ddof=1) / math.sqrt(num_draws)
    z = np.abs(D.mean(axis=1)) / np.maximum(se, 1e-300)
    return float(np.max(np.where(se > 0, z, 0.0)))


def check_memory(m_spec, d, batch_size, num_seeds):
    """Refuse, before compiling, a run whose d x d (and b x d x d) arrays exceed free memory."""
    est = get_estimator(m_spec)
    coords = {"cov": "bw"}.get(est.coords, est.coords)
    need = estimate_fit_bytes(coords, d, batch_size, num_seeds, needs_hvp=est.needs_hvp)
    have = resources.available_bytes()
    if need > have:
        top = largest_dim(coords, batch_size, num_seeds, needs_hvp=est.needs_hvp, budget=have)
        raise MemoryError(f"{m_spec.name} at d = {d}, batch {batch_size}, {num_seeds} seed(s) "
                          f"needs about {need / 2**30:.1f} GiB and {have / 2**30:.1f} GiB is free; "
                          f"the largest d that fits is about {top}")


def check_fixed_run(num_steps, every, num_seeds):
    """Refuse a run without stopping rule whose largest block exceeds free memory; name the largest fit."""
    rows = max((n * length for _, n, length in fixed_blocks(num_steps, every)), default=0)
    need, have = rows * num_seeds * BYTES_PER_UPDATE, resources.available_bytes()
    if need > have:
        fits = num_steps * have // need
        raise MemoryError(f"num_steps = {num_steps:,} without a stopping rule runs in blocks of "
                          f"{rows:,} updates whose keys and flags need {need / 2**30:,.1f} GiB, and "
                          f"{have / 2**30:,.1f} GiB is free: keep the stopping rule (drop tol=None), "
                          f"or ask for at most about {fits:,} updates")


def check_hessian(target, m0, A0, coords, method):
    """Warn when HVP-based and gradient-only curvature disagree at the start (a kink in V)."""
    F = A0 if coords != "cov" else jnp.linalg.cholesky(A0)
    z = hessian_consistency(target, m0, F)
    if z > Z_WARN:
        _warnings.warn(f"{method}: Hessian-vector products and the gradient-only (Stein) estimate "
                      f"of E_q hess V disagree at the start (|z| = {z:.3g}): the potential is "
                      "probably not twice differentiable (|x|, hinges), and Hessian-based methods "
                      "then converge to the wrong Gaussian; use a gradient-only method such as "
                      "stl-proj", RuntimeWarning)


__all__ = ["hessian_consistency", "Z_WARN", "check_memory", "check_fixed_run", "check_hessian"]
