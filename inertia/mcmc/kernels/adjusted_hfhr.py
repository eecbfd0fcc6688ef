"""Metropolis-adjusted HFHR: invariant law exactly pi(q) x N(p; 0, I) (docs/hfhr.md, "Exact sampling").

One iteration: refresh p ~ N(0, I); MALA step of size alpha h (Roberts & Tweedie 1996); a Langevin
trajectory of K leapfrog steps with partial refreshes and one test (MALT, Riou-Durand & Vogrinc 2022).
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from .base import Method, Params, SamplingAlgorithm

DIVERGENCE = 1000.0  # |energy error| marking a divergent trajectory (as NumPyro and Stan)
LENGTH_SPREAD = 0.5  # default relative spread of the trajectory length K around n


class ExactState(NamedTuple):
    """Position q, momentum p, grad V(q) and V(q)."""

    position: jax.Array
    momentum: jax.Array
    grad: jax.Array
    potential: jax.Array


class ExactInfo(NamedTuple):
    """Per-iteration statistics, named as NumPyro/ArviZ sample_stats where they exist."""

    is_finite: jax.Array
    acceptance_rate: jax.Array
    flow_acceptance_rate: jax.Array
    step_size: jax.Array
    diverging: jax.Array
    energy: jax.Array
    num_grads: jax.Array


class Coefficients(NamedTuple):
    step_size: jax.Array
    eta: jax.Array  # e^{-gamma h}
    noise: jax.Array  # sqrt(1 - e^{-2 gamma h})
    flow_step: jax.Array  # alpha h
    num_leapfrog: jax.Array  # mean trajectory length n
    length_spread: jax.Array  # K in [n (1 - s), n (1 + s)]


def prepare(params: Params) -> Coefficients:
    """h, the partial-refresh coefficients over one leapfrog step, alpha h, n and its spread."""
    h = jnp.asarray(params.step_size, dtype=jnp.float64)
    gh = jnp.asarray(params.gamma, dtype=jnp.float64) * h
    s = LENGTH_SPREAD if params.length_spread is None else params.length_spread
    return Coefficients(h, jnp.exp(-gh), jnp.sqrt(-jnp.expm1(-2.0 * gh)),
                        jnp.asarray(params.alpha, dtype=jnp.float64) * h,
                        jnp.asarray(params.num_leapfrog, dtype=jnp.float64),
                        jnp.asarray(s, dtype=jnp.float64))


def trajectory_length(u, num_leapfrog, spread=LENGTH_SPREAD):
    """K = max(1, round(n (1 + s (2u - 1)))) for u in [0, 1): mean about n, n s either side."""
    return jnp.maximum(1, jnp.round(num_leapfrog * (1.0 + spread * (2.0 * u - 1.0)))
                       ).astype(jnp.int32)


def init(position, rng_key, value_and_grad):
    """q as given, p ~ N(0, I), V(q) and grad V(q)."""
    q = jnp.asarray(position, dtype=jnp.float64)
    v, g = value_and_grad(q)
    return ExactState(q, jax.random.normal(rng_key, q.shape, dtype=jnp.float64), g, v)


def _finite(x):
    return jnp.all(jnp.isfinite(x))


def flow_step(key, q, v, g, eps, value_and_grad):
    """One MALA step of size eps for dq = -grad V dt + sqrt(2) dW: (q, V, grad, acceptance prob)."""
    k1, k2 = jax.random.split(key)
    y = q - eps * g + jnp.sqrt(2.0 * eps) * jax.random.normal(k1, q.shape, dtype=jnp.float64)
    vy, gy = value_and_grad(y)
    fwd = jnp.sum((y - q + eps * g) ** 2)
    bwd = jnp.sum((q - y + eps * gy) ** 2)
    log_r = v - vy + (fwd - bwd) / (4.0 * eps)
    log_r = jnp.where(jnp.isfinite(log_r) & _finite(gy), log_r, -jnp.inf)
    acc = jnp.log(jax.random.uniform(k2, dtype=jnp.float64)) < log_r
    return (jnp.where(acc, y, q), jnp.where(acc, vy, v), jnp.where(acc, gy, g),
            jnp.minimum(1.0, jnp.exp(log_r)))


def langevin_trajectory(key, q, p, v, g, c: Coefficients, num_steps, value_and_grad,
                        lean: bool = False):
    """K leapfrog steps with partial refreshes: end point, summed energy error, diverged, gradients spent."""
    h = c.step_size

    def refresh(k, p):
        xi = jax.random.normal(jax.random.fold_in(key, k), p.shape, dtype=jnp.float64)
        return jnp.where(k > 0, c.eta * p + c.noise * xi, p)  # O between leapfrog steps

    def body(carry):
        k, q, p, v, g, dh, _ = carry
        if lean:
            p = jax.lax.cond(c.noise > 0, refresh, lambda k, p: p, k, p)
        else:
            p = refresh(k, p)
        e0 = v + 0.5 * jnp.sum(p**2)
        p = p - 0.5 * h * g
        q = q + h * p
        v, g = value_and_grad(q)
        p = p - 0.5 * h * g
        dh = dh + v + 0.5 * jnp.sum(p**2) - e0
        bad = ~(jnp.isfinite(dh) & _finite(g)) | (jnp.abs(dh) > DIVERGENCE)
        return k + 1, q, p, v, g, dh, bad

    def cond(carry):
        return (carry[0] < num_steps) & ~carry[6]

    k, q, p, v, g, dh, bad = jax.lax.while_loop(
        cond, body, (jnp.int32(0), q, p, v, g, jnp.float64(0.0), jnp.bool_(False)))
    return q, p, v, g, dh, bad, k


def step(rng_key, state: ExactState, c: Coefficients, value_and_grad, flow: bool = True,
         lean: bool = False, length_key=None):
    """One iteration: refresh, gradient-flow MALA step (alpha > 0), Langevin trajectory + test."""
    k_p, k_flow, k_len, k_traj, k_u = jax.random.split(rng_key, 5)
    q, v, g = state.position, state.potential, state.grad
    p0 = jax.random.normal(k_p, q.shape, dtype=jnp.float64)
    use_flow = (c.flow_step > 0) if flow else jnp.bool_(False)
    if flow:
        q, v, g, flow_acc = jax.lax.cond(
            use_flow, lambda: flow_step(k_flow, q, v, g, jnp.where(use_flow, c.flow_step, 1.0),
                                        value_and_grad),
            lambda: (q, v, g, jnp.float64(1.0)))
    else:
        flow_acc = jnp.float64(1.0)
    k_len = k_len if length_key is None else length_key
    n = trajectory_length(jax.random.uniform(k_len, dtype=jnp.float64), c.num_leapfrog,
                          c.length_spread)
    q1, p1, v1, g1, dh, bad, used = langevin_trajectory(k_traj, q, p0, v, g, c, n, value_and_grad,
                                                  lean)
    log_r = jnp.where(bad, -jnp.inf, -dh)
    acc = jnp.log(jax.random.uniform(k_u, dtype=jnp.float64)) < log_r
    new = ExactState(jnp.where(acc, q1, q), jnp.where(acc, p1, -p0), jnp.where(acc, g1, g),
                     jnp.where(acc, v1, v))
    energy = new.potential + 0.5 * jnp.sum(new.momentum**2)
    info = ExactInfo(_finite(new.position) & _finite(new.grad), jnp.minimum(1.0, jnp.exp(log_r)),
                     flow_acc, c.step_size, bad, energy,
                     used + jnp.where(use_flow, 1, 0).astype(used.dtype))
    return new, info


def check(params: Params, L=None):
    """h > 0, gamma >= 0, alpha >= 0, trajectory length >= 1, spread in [0, 1] (no stability needed)."""
    import math

    s = params.length_spread
    if s is not None and not (math.isfinite(float(s)) and 0.0 <= float(s) <= 1.0):
        return f"length_spread must be in [0, 1], got {float(s)}"

    h, g, a, n = (float(x) for x in (params.step_size, params.gamma, params.alpha,
                                      params.num_leapfrog))
    if not (math.isfinite(h) and h > 0):
        return f"step_size must be a positive finite number, got {h}"
    if not (math.isfinite(g) and g >= 0):
        return f"gamma (friction) must be a finite number >= 0, got {g}"
    if not (math.isfinite(a) and a >= 0):
        return f"alpha must be a finite number >= 0, got {a}"
    if not (math.isfinite(n) and n >= 1):
        return f"num_leapfrog must be a finite number >= 1, got {n}"
    return None


METHOD = Method(
    name="hfhr-exact", kinetic=True, grads_per_step=1, prepare=prepare, init=init, step=step,
    check=check, uses=("step_size", "gamma", "alpha", "num_leapfrog"), adjusted=True,
    warmup="dual-averaging",
    description="Metropolis-adjusted HFHR (MALA gradient-flow step + Langevin trajectory with one "
                "test; exact; adjusted KLMC at alpha=0)")


def hfhr_exact(potential_fn, step_size, gamma=0.0, alpha=0.0, num_leapfrog=1.0,
               length_spread=LENGTH_SPREAD) -> SamplingAlgorithm:
    """BlackJAX-style exact HFHR kernel on V = potential_fn: `init(position, key)`, `step(key, state)`."""
    params = Params(step_size, gamma, alpha, num_leapfrog, length_spread)
    msg = check(params)
    if msg:
        raise ValueError(f"hfhr-exact: {msg}")
    vg = jax.value_and_grad(potential_fn)
    coeffs = prepare(params)

    def init_fn(position, rng_key=None):
        return init(position, jax.random.PRNGKey(0) if rng_key is None else rng_key, vg)

    def step_fn(rng_key, state):
        return step(rng_key, state, coeffs, vg)

    return SamplingAlgorithm(init_fn, step_fn)
