"""Adaptive momentum restart (O'Donoghue & Candes 2015, gradient scheme): reset the momentum whenever
<y_k - x_{k+1}, x_{k+1} - x_k> > 0. Off by default: with exact bounds every algorithm stays the paper's.
"""
from __future__ import annotations

import jax.numpy as jnp

from .algorithms.base import Kernel, VIState


def with_restart(kernel: Kernel) -> Kernel:
    """The kernel with the gradient-scheme restart test after every step."""
    if kernel.lookahead is None:
        raise ValueError("momentum restart needs an accelerated kernel (one with a lookahead point)")

    def step(state, key):
        ym, yA = kernel.lookahead(state)
        new, info = kernel.step(state, key)
        inner = jnp.vdot(ym - new.m, new.m - state.m) + jnp.vdot(yA - new.A, new.A - state.A)
        restart = inner > 0
        reset = VIState(new.m, new.A, new.m, new.A)
        out = VIState(*(jnp.where(restart, r, n) for r, n in zip(reset, new)))
        return out, info._replace(restarted=restart)

    return kernel._replace(step=step)


__all__ = ["with_restart"]
