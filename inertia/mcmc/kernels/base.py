"""Shared pieces of the kernels: states, info, the Ornstein-Uhlenbeck coefficients."""
from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp

Array = jax.Array

_SERIES_CUT = 0.25  # below gamma*h the cancelling expm1 forms switch to their Taylor series
_SERIES_TERMS = 22  # x^22/22! < 1e-21 x^3 for x < 0.25


class LangevinState(NamedTuple):
    """Position q, gradient of the potential at q (one gradient per step is reused)."""

    position: Array
    grad: Array


class KineticState(NamedTuple):
    """Position q, momentum p and the gradient of the potential at q."""

    position: Array
    momentum: Array
    grad: Array


class Info(NamedTuple):
    """Per-step diagnostics: whether the new position and gradient are finite, and |grad|."""

    is_finite: Array
    grad_norm: Array


class Params(NamedTuple):
    """Step size h, friction gamma, alpha, mean trajectory length and its spread (None: the default)."""

    step_size: Any
    gamma: Any
    alpha: Any
    num_leapfrog: Any = None
    length_spread: Any = None


class SamplingAlgorithm(NamedTuple):
    """BlackJAX-style pair: `init(position, rng_key)` and `step(rng_key, state) -> (state, info)`."""

    init: Callable
    step: Callable


class Method(NamedTuple):
    """Registry entry: how `sample` and the exact Gaussian diagnostics drive a scheme (howto/extend.md)."""

    name: str
    kinetic: bool
    grads_per_step: int
    prepare: Callable[[Params], Any]
    init: Callable
    step: Callable
    check: Callable[[Params, Optional[float]], Optional[str]]
    uses: tuple
    transition: Optional[Callable] = None
    draw_noise: Optional[Callable] = None
    description: str = ""
    adjusted: bool = False
    warmup: str = "gaussian-tuning"


def _series(x, coef):
    """sum_n coef(n) x^n / n! for n = 0 .. _SERIES_TERMS (Horner-free; coefficients are exact)."""
    total = jnp.zeros_like(x)
    term = jnp.ones_like(x)
    for n in range(_SERIES_TERMS + 1):
        c = coef(n)
        if c:
            total = total + c * term
        term = term * x / (n + 1)
    return total


class OUCoefficients(NamedTuple):
    """psi0 = e^{-gh}, psi1 = (1 - e^{-gh})/g, psi2 = (h - psi1)/g, and (zeta_q, zeta_p)'s Cholesky factor."""

    psi0: Array
    psi1: Array
    psi2: Array
    var_q: Array
    var_p: Array
    cov_qp: Array
    l11: Array
    l21: Array
    l22: Array


def ou_coefficients(step_size, gamma) -> OUCoefficients:
    """Exact flow of dq = p dt, dp = -gamma p dt + sqrt(2 gamma) dB with a frozen force, expm1-stable."""
    h = jnp.asarray(step_size, dtype=jnp.float64)
    g = jnp.asarray(gamma, dtype=jnp.float64)
    x = g * h
    e1 = -jnp.expm1(-x)  # 1 - e^{-x}
    small = x < _SERIES_CUT
    xs = jnp.where(small, x, 0.0)
    # x - (1 - e^{-x}) = sum_{n>=2} (-1)^n x^n / n!
    d2 = jnp.where(small, _series(xs, lambda n: (-1.0) ** n if n >= 2 else 0.0), x - e1)
    # x - 2(1 - e^{-x}) + (1 - e^{-2x})/2 = sum_{n>=3} (-1)^{n+1} (2^{n-1} - 2) x^n / n!
    d3 = jnp.where(small,
                   _series(xs, lambda n: (-1.0) ** (n + 1) * (2.0 ** (n - 1) - 2.0) if n >= 3 else 0.0),
                   x - 2.0 * e1 - 0.5 * jnp.expm1(-2.0 * x))
    psi0 = jnp.exp(-x)
    psi1 = e1 / g
    psi2 = d2 / g**2
    var_q = 2.0 * d3 / g**2
    var_p = -jnp.expm1(-2.0 * x)
    cov_qp = e1**2 / g
    l11, l21, l22 = cholesky2(var_q, cov_qp, var_p)
    return OUCoefficients(psi0, psi1, psi2, var_q, var_p, cov_qp, l11, l21, l22)


def cholesky2(a, c, b):
    """Lower Cholesky factor (l11, l21, l22) of [[a, c], [c, b]], clipping tiny negative pivots."""
    l11 = jnp.sqrt(jnp.maximum(a, 0.0))
    l21 = jnp.where(l11 > 0, c / jnp.where(l11 > 0, l11, 1.0), 0.0)
    l22 = jnp.sqrt(jnp.maximum(b - l21**2, 0.0))
    return l11, l21, l22


def kinetic_noise(key, dim):
    """Two standard normal rows (2, dim): each kinetic step's noise is a 2x2 Gaussian per coordinate."""
    return jax.random.normal(key, (2, dim), dtype=jnp.float64)


def pair_noise(l11, l21, l22, xi):
    """(noise_q, noise_p) = 2x2 Cholesky factor times two standard normal rows."""
    return l11 * xi[0], l21 * xi[0] + l22 * xi[1]


def kinetic_init(position, rng_key, grad_fn):
    """q as given, p ~ N(0, I) (the momentum marginal of pi), and grad V(q)."""
    q = jnp.asarray(position, dtype=jnp.float64)
    p = jax.random.normal(rng_key, q.shape, dtype=jnp.float64)
    return KineticState(q, p, grad_fn(q))


def langevin_init(position, rng_key, grad_fn):
    """q as given and grad V(q); the key is unused (kept for a uniform signature)."""
    del rng_key
    q = jnp.asarray(position, dtype=jnp.float64)
    return LangevinState(q, grad_fn(q))


def finite_info(position, grad):
    return Info(jnp.all(jnp.isfinite(position)) & jnp.all(jnp.isfinite(grad)),
                jnp.sqrt(jnp.sum(grad**2)))


def check_common(params: Params, uses) -> Optional[str]:
    """Validate h > 0, gamma > 0 (kinetic), alpha >= 0 (HFHR), all finite."""
    h = float(params.step_size)
    if not (math.isfinite(h) and h > 0):
        return f"step_size must be a positive finite number, got {h}"
    if "gamma" in uses:
        g = float(params.gamma)
        if not (math.isfinite(g) and g > 0):
            return f"gamma (friction) must be a positive finite number, got {g}"
    if "alpha" in uses:
        a = float(params.alpha)
        if not (math.isfinite(a) and a >= 0):
            return f"alpha must be a finite number >= 0, got {a}"
    return None


def make_algorithm(method: Method, grad_fn, step_size, gamma=None, alpha=None) -> SamplingAlgorithm:
    """Bind a registry method to a gradient and parameters: BlackJAX-style init/step closures."""
    params = Params(step_size, 1.0 if gamma is None else gamma, 0.0 if alpha is None else alpha)
    msg = method.check(params, None)
    if msg:
        raise ValueError(f"{method.name}: {msg}")

    def init(position, rng_key=None):
        key = jax.random.PRNGKey(0) if rng_key is None else rng_key
        return method.init(position, key, grad_fn)

    coeffs = method.prepare(params)

    def step(rng_key, state):
        return method.step(rng_key, state, coeffs, grad_fn)

    return SamplingAlgorithm(init, step)
