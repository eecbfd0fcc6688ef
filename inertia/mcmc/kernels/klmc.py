"""KLMC (Dalalyan & Riou-Durand 2020): underdamped Langevin solved exactly with a frozen gradient.

p' = psi0 p - psi1 g + zeta_p,  q' = q + psi1 p - psi2 g + zeta_q  (scheme 1).
"""
from __future__ import annotations

from .base import (KineticState, Method, OUCoefficients, Params, check_common, finite_info,
                   kinetic_init, kinetic_noise, make_algorithm, ou_coefficients, pair_noise)


def prepare(params: Params) -> OUCoefficients:
    """The OU coefficients psi0, psi1, psi2 and the noise's Cholesky factor."""
    return ou_coefficients(params.step_size, params.gamma)


def draw_noise(key, dim):
    """Same key use as HFHR so that HFHR(alpha = 0) reproduces KLMC draw for draw."""
    return kinetic_noise(key, dim)


def transition(c: OUCoefficients, phase, grad, noise):
    """KLMC as an affine map of (q, p), g = grad V(q) and standard normal noise."""
    q, p = phase
    zq, zp = pair_noise(c.l11, c.l21, c.l22, noise)
    return q + c.psi1 * p - c.psi2 * grad + zq, c.psi0 * p - c.psi1 * grad + zp


def step(rng_key, state: KineticState, c: OUCoefficients, grad_fn):
    """One KLMC step (one gradient)."""
    q, p = transition(c, (state.position, state.momentum), state.grad,
                      draw_noise(rng_key, state.position.shape[0]))
    g = grad_fn(q)
    return KineticState(q, p, g), finite_info(q, g)


def check(params: Params, L=None):
    """h > 0, gamma > 0 (stability on Gaussians is checked exactly by `sample`)."""
    return check_common(params, ("gamma",))


METHOD = Method(name="klmc", kinetic=True, grads_per_step=1, prepare=prepare, init=kinetic_init,
                step=step, check=check, uses=("step_size", "gamma"), transition=transition,
                draw_noise=draw_noise,
                warmup="gaussian-tuning",
                description="kinetic Langevin Monte Carlo (exact ULD flow, frozen gradient)")


def klmc(grad_fn, step_size, gamma):
    """BlackJAX-style KLMC kernel: `init(position, key)`, `step(key, state)`."""
    return make_algorithm(METHOD, grad_fn, step_size, gamma)
