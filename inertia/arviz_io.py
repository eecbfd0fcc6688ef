"""Draws (chain, draw, ...) to ArviZ: one call, works with ArviZ 0.x (InferenceData) and 1.x (DataTree)."""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

import numpy as np
from .convergence import _arviz as arviz


def _arviz():
    """ArviZ, imported once under inertia's lock with its refactor notice silenced (convergence)."""
    return arviz()


def _major(module) -> int:
    try:
        return int(str(module.__version__).split(".")[0])
    except ValueError:  # pragma: no cover - unusual version strings
        return 0


def _as_groups(draws, names, var_name):
    """posterior dict {var: (chain, draw, ...)} plus dims / coords for labelled coordinates."""
    if isinstance(draws, Mapping):
        post = {str(k): np.asarray(v) for k, v in draws.items()}
        if not post:
            raise ValueError("draws is an empty dict")
        shapes = {k: v.shape[:2] for k, v in post.items()}
        for k, v in post.items():
            if v.ndim < 2:
                raise ValueError(f"site {k!r} must be shaped (chain, draw, ...); got {v.shape}")
        if len(set(shapes.values())) != 1:
            raise ValueError(f"all sites need the same (chain, draw) shape; got {shapes}")
        if names is not None:
            raise ValueError("names= labels the columns of an array; a dict is already named")
        return post, None, None
    arr = np.asarray(draws)
    if arr.ndim == 2:  # (draw, dim): one chain
        arr = arr[None]
    if arr.ndim != 3:
        raise ValueError(f"draws must be shaped (chain, draw, dim) or (draw, dim); got {arr.shape}")
    if names is None:
        return {var_name: arr}, None, None
    names = [str(n) for n in names]
    if len(names) != arr.shape[2]:
        raise ValueError(f"names has {len(names)} entries but draws have dim {arr.shape[2]}")
    if len(set(names)) != len(names):
        raise ValueError("names must be distinct")
    dim = f"{var_name}_dim_0"
    return {var_name: arr}, {var_name: [dim]}, {dim: names}


def to_arviz_draws(draws, names: Optional[Sequence[str]] = None, *, var_name: str = "x",
                   sample_stats: Optional[Mapping] = None):
    """ArviZ object (posterior group; sample_stats if given) from draws (chain, draw, dim) or a dict.

    `draws`: an array stored as `var_name` with coordinate labels `names`, or a dict {site: draws}.
    """
    az = _arviz()
    post, dims, coords = _as_groups(draws, names, var_name)
    stats = None
    if sample_stats:
        stats = {str(k): np.asarray(v) for k, v in sample_stats.items()}
    if _major(az) >= 1:  # ArviZ 1.x: from_dict takes a dict of groups and returns a DataTree
        groups = {"posterior": post}
        if stats:
            groups["sample_stats"] = stats
        return az.from_dict(groups, dims=dims, coords=coords)
    return az.from_dict(posterior=post, sample_stats=stats, dims=dims, coords=coords)


__all__ = ["to_arviz_draws"]
