"""HFHR(alpha, gamma) one-gradient schemes (schemes 2 and 3).

exponential (default): freeze g = grad V(q) and solve the HFHR SDE exactly,
    p' = psi0 p - psi1 g + zeta_p,  q' = q + psi1 p - (alpha h + psi2) g + sqrt(2 alpha h) xi + zeta_q;
split: Euler-Maruyama on the gradient part, then the exact OU / transport flow,
    q~ = q - alpha h g + sqrt(2 alpha h) xi,  p~ = p - h g,  q' = q~ + psi1 p~ + zeta_q,  p' = psi0 p~ +
    zeta_p.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from .base import (KineticState, Method, OUCoefficients, Params, check_common, cholesky2,
                   finite_info, kinetic_init, kinetic_noise, make_algorithm, ou_coefficients,
                   pair_noise)


class Coefficients(NamedTuple):
    ou: OUCoefficients
    step_size: jax.Array
    alpha_h: jax.Array
    chol: tuple  # Cholesky factor of the step's 2x2 noise covariance per coordinate


def prepare(params: Params) -> Coefficients:
    """OU coefficients, h, alpha h, and the Cholesky factor of Cov(sqrt(2 alpha h) xi + zeta_q, zeta_p)."""
    h = jnp.asarray(params.step_size, dtype=jnp.float64)
    ah = jnp.asarray(params.alpha, dtype=jnp.float64) * h
    c = ou_coefficients(h, params.gamma)
    return Coefficients(c, h, ah, cholesky2(c.var_q + 2.0 * ah, c.cov_qp, c.var_p))


def draw_noise(key, dim):
    """Two standard normal rows (2, dim), drawn from the key exactly as KLMC does."""
    return kinetic_noise(key, dim)


def transition_exponential(k: Coefficients, phase, grad, noise):
    """Exponential scheme as an affine map of (q, p), g and the noise; alpha = 0 is KLMC."""
    q, p = phase
    c = k.ou
    zq, zp = pair_noise(*k.chol, noise)
    return q + c.psi1 * p - (k.alpha_h + c.psi2) * grad + zq, c.psi0 * p - c.psi1 * grad + zp


def transition_split(k: Coefficients, phase, grad, noise):
    """Split scheme as an affine map of (q, p), g and the noise."""
    q, p = phase
    c = k.ou
    zq, zp = pair_noise(*k.chol, noise)  # zq includes the Euler part's sqrt(2 alpha h) xi
    p_t = p - k.step_size * grad
    return q - k.alpha_h * grad + c.psi1 * p_t + zq, c.psi0 * p_t + zp


def _stepper(transition):
    def step(rng_key, state: KineticState, coeffs: Coefficients, grad_fn):
        """One HFHR step (one gradient)."""
        q, p = transition(coeffs, (state.position, state.momentum), state.grad,
                          draw_noise(rng_key, state.position.shape[0]))
        g = grad_fn(q)
        return KineticState(q, p, g), finite_info(q, g)

    return step


def check(params: Params, L=None):
    """h, gamma > 0, alpha >= 0, and alpha h L < 2 when L is known (stability)."""
    msg = check_common(params, ("gamma", "alpha"))
    if msg is None and L is not None:
        ahl = float(params.alpha) * float(params.step_size) * L
        if ahl >= 2.0:
            msg = (f"alpha * step_size * L = {ahl:.3g} >= 2: the HFHR gradient step is unstable on "
                   f"the stiffest direction (L = {L:.4g}); need alpha * step_size < {2.0 / L:.3g}")
    return msg


METHOD_EXPONENTIAL = Method(
    name="hfhr", kinetic=True, grads_per_step=1, prepare=prepare, init=kinetic_init,
    step=_stepper(transition_exponential), check=check, uses=("step_size", "gamma", "alpha"),
    transition=transition_exponential, draw_noise=draw_noise,
    warmup="gaussian-tuning",
    description="HFHR, exponential scheme (exact HFHR flow with a frozen gradient; KLMC at alpha=0)")

METHOD_SPLIT = Method(
    name="hfhr-split", kinetic=True, grads_per_step=1, prepare=prepare, init=kinetic_init,
    step=_stepper(transition_split), check=check, uses=("step_size", "gamma", "alpha"),
    transition=transition_split, draw_noise=draw_noise,
    warmup="gaussian-tuning",
    description="HFHR, split scheme (Euler gradient part, then exact OU/transport flow)")


def hfhr(grad_fn, step_size, gamma, alpha, scheme="exponential"):
    """BlackJAX-style HFHR kernel: `init(position, key)`, `step(key, state)`."""
    methods = {"exponential": METHOD_EXPONENTIAL, "split": METHOD_SPLIT}
    if scheme not in methods:
        raise ValueError(f"unknown HFHR scheme {scheme!r}; choose 'exponential' or 'split'")
    return make_algorithm(methods[scheme], grad_fn, step_size, gamma, alpha)
