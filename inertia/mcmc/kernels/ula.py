"""ULA / LMC: Euler-Maruyama for overdamped Langevin, q' = q - h grad V(q) + sqrt(2h) xi."""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from .base import (LangevinState, Method, Params, check_common, finite_info, langevin_init,
                   make_algorithm)


class Coefficients(NamedTuple):
    step_size: jax.Array
    noise_scale: jax.Array


def prepare(params: Params) -> Coefficients:
    """h and sqrt(2h)."""
    h = jnp.asarray(params.step_size, dtype=jnp.float64)
    return Coefficients(h, jnp.sqrt(2.0 * h))


def draw_noise(key, dim):
    """One standard normal vector per step."""
    return jax.random.normal(key, (dim,), dtype=jnp.float64)


def transition(c: Coefficients, phase, grad, noise):
    """ULA as an affine map of (q,), grad V(q) and the noise."""
    (q,) = phase
    return (q - c.step_size * grad + c.noise_scale * noise,)


def step(rng_key, state: LangevinState, c: Coefficients, grad_fn):
    """One ULA step (one gradient)."""
    (q,) = transition(c, (state.position,), state.grad, draw_noise(rng_key, state.position.shape[0]))
    g = grad_fn(q)
    return LangevinState(q, g), finite_info(q, g)


def check(params: Params, L=None):
    """h > 0, and h L < 2 (stability on the stiffest direction) when L is known."""
    msg = check_common(params, ())
    if msg is None and L is not None and float(params.step_size) * L >= 2.0:
        msg = (f"step_size * L = {float(params.step_size) * L:.3g} >= 2: ULA diverges on the stiffest "
               f"direction (L = {L:.4g}); use step_size < {2.0 / L:.3g}")
    return msg


METHOD = Method(name="ula", kinetic=False, grads_per_step=1, prepare=prepare, init=langevin_init,
                step=step, check=check, uses=("step_size",), transition=transition,
                draw_noise=draw_noise,
                warmup="gaussian-tuning",
                description="unadjusted Langevin algorithm (Euler-Maruyama on overdamped Langevin)")


def ula(grad_fn, step_size):
    """BlackJAX-style ULA kernel: `init(position, key)`, `step(key, state)`."""
    return make_algorithm(METHOD, grad_fn, step_size)
