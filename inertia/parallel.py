"""Sharding of vmapped seed / chain axes over the available devices (jax.sharding)."""
from __future__ import annotations

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec


def shard_leading(tree, axis_name: str = "batch"):
    """Place every leaf's leading axis across all devices (no-op on one device or uneven sizes)."""
    devices = jax.devices()
    n = len(devices)
    leaves = jax.tree_util.tree_leaves(tree)
    if n == 1 or not leaves or any(np.ndim(x) == 0 or np.shape(x)[0] % n for x in leaves):
        return tree
    mesh = Mesh(np.asarray(devices), (axis_name,))
    return jax.device_put(tree, NamedSharding(mesh, PartitionSpec(axis_name)))
