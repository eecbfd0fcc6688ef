"""Standard normal draws made outside compiled updates (fixed common random numbers, summaries)."""
from __future__ import annotations

import functools
import operator

import jax
import numpy as np

from . import _compile

SEED_MAX = 2 ** 63


def check_seed(seed, name: str = "seed") -> int:
    """`seed` as an int: a whole number in [0, 2^63); floats and bools raise ValueError."""
    try:
        if isinstance(seed, bool):
            raise TypeError
        value = operator.index(seed)
    except TypeError:
        raise ValueError(f"{name} must be a whole number >= 0, got {seed!r}") from None
    if not 0 <= value < SEED_MAX:
        raise ValueError(f"{name} must be a whole number in [0, 2^63), got {value}")
    return value


def key_of(seed: int):
    """`jax.random.PRNGKey(seed)` built on the host, compiling nothing."""
    seed = check_seed(seed)
    if jax.config.jax_default_prng_impl != "threefry2x32" or jax.config.jax_enable_custom_prng:
        return jax.random.PRNGKey(seed)
    return jax.device_put(np.array([seed >> 32, seed & 0xFFFFFFFF], dtype=np.uint32))


def host_normal(key, shape, dtype=None):
    """N(0, I) of `shape` from `key` by JAX's non-partitionable threefry stream (one fast compilation)."""
    with jax.threefry_partitionable(False):
        return _normal(key, tuple(shape), jax.numpy.dtype(dtype or jax.numpy.float64))


@functools.partial(_compile.jit, static_argnums=(1, 2))
def _normal(key, shape, dtype):
    return jax.random.normal(key, shape, dtype=dtype)
