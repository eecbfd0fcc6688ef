"""The target seen in coordinates z with x = m + L z: the frame of whitened sampling and VI runs."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .. import _compile
from .base import Target


def whiten(target: Target, mean, factor, dtype=jnp.float64) -> Target:
    """V_w(z) = V(m + L z) with gradient L^T grad V(m + L z) and HVP L^T hess V(m + L z) L v."""
    m = jnp.asarray(mean, dtype=dtype)
    F = jnp.asarray(factor, dtype=dtype)

    def x(z):
        return m + F @ z

    def hvp(z, v):
        return F.T @ target.hvp(x(z), F @ v)

    @_compile.jit
    def hess_matmul(z, M):  # one compiled Hessian for the curvature estimates
        return jax.vmap(lambda v: hvp(z, v), in_axes=1, out_axes=1)(M)

    return Target(dim=target.dim, potential=lambda z: target.potential(x(z)),
                  grad=lambda z: F.T @ target.grad(x(z)), hvp=hvp, hess_matmul_fn=hess_matmul,
                  name=f"{target.name}-whitened",
                  recast=lambda dt: whiten(target.astype(dt), mean, factor, dt),
                  affine=(target, np.asarray(mean, np.float64), np.asarray(factor, np.float64)))


__all__ = ["whiten"]
