"""NAG-SC and its map to HFHR parameters ("NAG-SC ... is exactly a first-order
discretisation of the Hessian-free high-resolution ODE").

NAG-SC: x_{k+1} = y_k - s grad f(y_k), y_{k+1} = x_{k+1} + c (x_{k+1} - x_k), c = (1 - sqrt(ms))/(1 +
sqrt(ms)).
With q = y and p = (y - x)/h the iteration is p' = c p - (c s / h) g, q' = q + c h p - (1 + c) s g.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from .kernels.base import ou_coefficients


def nag_sc(grad_fn, x0, *, s, m, num_steps):
    """NAG-SC iterates y_0..y_num_steps (x_0 = y_0), returned as (num_steps + 1, dim)."""
    c = nag_momentum(s, m)
    y0 = jnp.asarray(x0, dtype=jnp.float64)

    def body(carry, _):
        x, y = carry
        x_new = y - s * grad_fn(y)
        y_new = x_new + c * (x_new - x)
        return (x_new, y_new), y_new

    _, ys = jax.lax.scan(body, (y0, y0), None, length=num_steps)
    return jnp.concatenate([y0[None], ys])


def nag_momentum(s, m) -> float:
    """c = (1 - sqrt(m s)) / (1 + sqrt(m s))."""
    if not (s > 0 and m > 0 and m * s < 1):
        raise ValueError(f"NAG-SC needs s > 0, m > 0 and m s < 1; got s={s}, m={m}")
    r = math.sqrt(m * s)
    return (1.0 - r) / (1.0 + r)


def nag_to_hfhr(s, m, scheme: str = "euler") -> dict:
    """(h, gamma, alpha, momentum_scale) under which a noise-free HFHR step is exactly NAG-SC.

    "euler" is the map h = sqrt(c s), gamma = (1 - c)/h, alpha = s/h, for the first-order step
    p' = (1 - gamma h) p - h g, q' = q - alpha h g + h p'. Our kernels' schemes need their own maps
    (derived here; they agree with "euler" to first order as s -> 0), with p = (y - x) / momentum_scale:
    "split": h = sqrt(c s (-ln c)/(1 - c)), gamma = -ln(c)/h, alpha = s/h, momentum_scale = alpha;
    "exponential": gamma h = -ln c, psi1(h, gamma) = c sqrt(s), alpha = ((1 + c) s - psi2)/h,
    momentum_scale = sqrt(s).
    """
    c = nag_momentum(s, m)
    if scheme == "euler":
        h = math.sqrt(c * s)
        return {"step_size": h, "gamma": (1.0 - c) / h, "alpha": s / h, "momentum_scale": h}
    if scheme == "split":
        h = math.sqrt(c * s * (-math.log(c)) / (1.0 - c))
        return {"step_size": h, "gamma": -math.log(c) / h, "alpha": s / h, "momentum_scale": s / h}
    if scheme == "exponential":
        h = c * math.sqrt(s) * (-math.log(c)) / (1.0 - c)
        gamma = -math.log(c) / h
        psi2 = float(ou_coefficients(h, gamma).psi2)
        return {"step_size": h, "gamma": gamma, "alpha": ((1.0 + c) * s - psi2) / h,
                "momentum_scale": math.sqrt(s)}
    raise ValueError(f"unknown scheme {scheme!r}; choose 'euler', 'split' or 'exponential'")


def hfhr_euler_step(q, p, g, *, step_size, gamma, alpha):
    """Noise-free first-order HFHR step of the NAG-SC link: p' = (1 - gamma h) p - h g,
    q' = q - alpha h g + h p'."""
    h = step_size
    p_new = (1.0 - gamma * h) * p - h * g
    return q - alpha * h * g + h * p_new, p_new
