"""Kernel interface shared by the VI algorithms (BlackJAX style: State/Info, init, step)."""
from __future__ import annotations

from typing import Callable, NamedTuple, Optional

import jax.numpy as jnp


class VIState(NamedTuple):
    """Iterate x = (m, A) and the auxiliary point (y of APG, v of Algorithm 3; unused when plain)."""

    m: jnp.ndarray
    A: jnp.ndarray
    aux_m: jnp.ndarray
    aux_A: jnp.ndarray


class VIInfo(NamedTuple):
    """Per-step diagnostics: whether the new iterate is finite; whether momentum was restarted."""

    finite: jnp.ndarray
    restarted: jnp.ndarray | bool = False


class Kernel(NamedTuple):
    """`init(m0, A0) -> state`, `step(state, key) -> (state, info)`, `gaussian(state) -> (m, cov)`;
    `lookahead(state) -> (m, A)`: the point where the next gradient is taken (accelerated kernels)."""

    init: Callable
    step: Callable
    gaussian: Callable
    coords: str
    lookahead: Optional[Callable] = None


def finite(*arrays):
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(a)) for a in arrays]))
