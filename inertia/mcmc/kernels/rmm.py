"""Randomised-midpoint HFHR / ULD ("Higher order"; Shen & Lee 2019): two gradients per step.

Variation of constants for z = (q, p), A = [[0, I], [0, -gamma I]], b(q) = (-alpha g(q), -g(q)):
z(h) = e^{Ah} z + int_0^h e^{A(h-s)} b(q(s)) ds + noise. The integral is estimated by
h e^{A(h - tau h)} b(q~) at tau ~ U(0, 1), with the first-order (exponential-scheme) predictor q~ of
q(tau h) sharing the Brownian path: noise = e^{A(h - tau h)} N1 + N2, N1 on [0, tau h], N2 on
[tau h, h], each a 2x2 Gaussian per coordinate with covariance OU(t) + diag(2 alpha t, 0).
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from .base import (KineticState, Method, Params, check_common, cholesky2, finite_info,
                   kinetic_init, make_algorithm, ou_coefficients, pair_noise)


class Coefficients(NamedTuple):
    step_size: jax.Array
    gamma: jax.Array
    alpha: jax.Array


def prepare(params: Params) -> Coefficients:
    return Coefficients(*(jnp.asarray(v, dtype=jnp.float64)
                          for v in (params.step_size, params.gamma, params.alpha)))


def draw_noise(key, dim):
    """tau ~ U(0, 1) and four standard normal rows (N1 and N2 pairs)."""
    k_tau, k_xi = jax.random.split(key)
    return jax.random.uniform(k_tau, dtype=jnp.float64), jax.random.normal(k_xi, (4, dim),
                                                                           dtype=jnp.float64)


def step_given(k: Coefficients, tau, phase, grad, xi, grad_fn):
    """One step for a given midpoint time tau and normals xi; returns (q', p') and q~."""
    q, p = phase
    h, g, a = k.step_size, k.gamma, k.alpha
    t1 = tau * h
    t2 = h - t1
    c1, c2, c = ou_coefficients(t1, g), ou_coefficients(t2, g), ou_coefficients(h, g)
    n1q, n1p = pair_noise(*cholesky2(c1.var_q + 2.0 * a * t1, c1.cov_qp, c1.var_p), xi[:2])
    n2q, n2p = pair_noise(*cholesky2(c2.var_q + 2.0 * a * t2, c2.cov_qp, c2.var_p), xi[2:])
    q_mid = q + c1.psi1 * p - (a * t1 + c1.psi2) * grad + n1q
    g_mid = grad_fn(q_mid)
    q_new = q + c.psi1 * p - h * (a + c2.psi1) * g_mid + n1q + c2.psi1 * n1p + n2q
    p_new = c.psi0 * p - h * c2.psi0 * g_mid + c2.psi0 * n1p + n2p
    return (q_new, p_new), q_mid


def step(rng_key, state: KineticState, k: Coefficients, grad_fn):
    """One randomised-midpoint step (two gradients: at the midpoint and at the new position)."""
    tau, xi = draw_noise(rng_key, state.position.shape[0])
    (q, p), q_mid = step_given(k, tau, (state.position, state.momentum), state.grad, xi, grad_fn)
    g = grad_fn(q)
    info = finite_info(q, g)
    return KineticState(q, p, g), info._replace(is_finite=info.is_finite & jnp.all(jnp.isfinite(q_mid)))


def check(params: Params, L=None):
    """h, gamma > 0, alpha >= 0, and alpha h L < 2 when L is known."""
    msg = check_common(params, ("gamma", "alpha"))
    if msg is None and L is not None and float(params.alpha) * float(params.step_size) * L >= 2.0:
        msg = (f"alpha * step_size * L = {float(params.alpha) * float(params.step_size) * L:.3g} >= 2: "
               f"unstable on the stiffest direction (L = {L:.4g})")
    return msg


METHOD_HFHR = Method(name="hfhr-rm", kinetic=True, grads_per_step=2, prepare=prepare,
                     init=kinetic_init, step=step, check=check,
                     uses=("step_size", "gamma", "alpha"),
                     warmup="gaussian-tuning",
                     description="HFHR, randomised midpoint (two gradients per step)")

METHOD_ULD = Method(name="uld-rm", kinetic=True, grads_per_step=2,
                    prepare=lambda params: prepare(params._replace(alpha=0.0)), init=kinetic_init,
                    step=step, check=lambda params, L=None: check_common(params, ("gamma",)),
                    uses=("step_size", "gamma"),
                    warmup="gaussian-tuning",
                    description="underdamped Langevin, randomised midpoint (two gradients per step)")


def hfhr_rm(grad_fn, step_size, gamma, alpha):
    """BlackJAX-style randomised-midpoint HFHR kernel."""
    return make_algorithm(METHOD_HFHR, grad_fn, step_size, gamma, alpha)


def uld_rm(grad_fn, step_size, gamma):
    """BlackJAX-style randomised-midpoint ULD kernel."""
    return make_algorithm(METHOD_ULD, grad_fn, step_size, gamma)
