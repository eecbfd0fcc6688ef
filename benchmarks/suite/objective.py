"""F(q) = E_q V - 1/2 log det Sigma for q = N(m, L L^T), with common random numbers and its MC error.

The constant d/2 log(2 pi e) of the entropy is dropped (F differences are what the suite reports).
All methods and checkpoints of a target share one fixed set of standard-normal draws xi, so
differences between checkpoints carry far less noise than the standard error of each value.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import inertia.config

inertia.config.enable_x64()  # this script's own JAX arrays (and peers') in float64

import inertia  # noqa: F401  (float64)

DEFAULT_DRAWS = 2 ** 14
CHUNK = 1024


def common_draws(dim: int, num: int = DEFAULT_DRAWS, seed: int = 20260) -> jax.Array:
    """The fixed standard-normal draws (num, dim) shared by every F estimate of a target."""
    return jax.random.normal(jax.random.PRNGKey(seed), (num, dim), dtype=jnp.float64)


def make_objective(potential, xi, chunk: int = CHUNK):
    """Jitted (m, L) -> (F, standard error, non-finite count) using the fixed draws xi (n, d).

    L may be any square factor with Sigma = L L^T (Cholesky or symmetric root); the entropy term
    uses log|det L|. Non-finite V values make F = +inf (reported as such, never dropped).
    """
    n, d = xi.shape
    chunk = min(chunk, n)
    if n % chunk:
        raise ValueError(f"number of draws {n} must be a multiple of the chunk size {chunk}")
    blocks = xi.reshape(n // chunk, chunk, d)
    vpot = jax.vmap(potential)

    @jax.jit
    def f(m, L):
        vals = jax.lax.map(lambda b: vpot(m + b @ L.T), blocks).reshape(n)
        bad = jnp.sum(~jnp.isfinite(vals))
        mean = jnp.mean(vals)
        se = jnp.std(vals, ddof=1) / jnp.sqrt(n)
        half_logdet = jnp.linalg.slogdet(L)[1]
        F = jnp.where(bad > 0, jnp.inf, mean - half_logdet)
        return F, se, bad

    return f


def evaluate(objective, means, factors):
    """F, standard errors and non-finite counts at a list of (mean, factor) checkpoints."""
    out = []
    for m, L in zip(means, factors):
        m, L = np.asarray(m, np.float64), np.asarray(L, np.float64)
        if not (np.all(np.isfinite(m)) and np.all(np.isfinite(L))):
            out.append((float("inf"), float("nan"), -1))
            continue
        F, se, bad = objective(jnp.asarray(m), jnp.asarray(L))
        out.append((float(F), float(se), int(bad)))
    F, se, bad = (np.array(c) for c in zip(*out)) if out else (np.array([]),) * 3
    return F, se, bad
