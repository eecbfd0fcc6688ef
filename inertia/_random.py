"""Standard normal draws made outside compiled updates (fixed common random numbers, summaries)."""
from __future__ import annotations

import jax


def host_normal(key, shape, dtype=None):
    """N(0, I) of `shape` from `key` by JAX's non-partitionable threefry stream.

    Each eager `jax.random.normal` of a new shape is its own XLA compilation; with the default
    partitionable threefry that is 1.2-2 s on CPU, without it 0.3 s, the same distribution from the
    same explicit key (a different stream). The compiled updates keep the default stream.
    """
    with jax.threefry_partitionable(False):
        return jax.random.normal(key, shape, dtype=dtype or jax.numpy.float64)
