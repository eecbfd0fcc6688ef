"""Adaptive momentum restart for the accelerated kernels (O'Donoghue & Candes 2015, gradient scheme).

Restart (momentum reset: the auxiliary point set to the new iterate) whenever
<y_k - x_{k+1}, x_{k+1} - x_k> > 0, i.e. the step direction disagrees with the gradient mapping
G(y_k) = (y_k - x_{k+1}) / eta. With wrong curvature constants the momentum is too large or too small
for the target; restarting recovers the sqrt(kappa)-type rate without knowing kappa. With stochastic
estimates the test fires at random near the noise floor, which turns the method into its plain twin
there (whose floor is lower). Off by default: with exact bounds every algorithm stays the paper's.
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
