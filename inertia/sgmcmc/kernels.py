"""Preconditioned SGD / SGLD kernels (eq. 4, with momentum eq. B.3), BlackJAX style.

`build_kernel(grad_fn, Lambda, temperature=, momentum=)` returns `step(key, state, idx)`; `sample`
runs vmapped chains with `lax.scan` and returns draws shaped (chain, draw, dim).
"""
from __future__ import annotations

import math
from functools import partial
from typing import Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from .models import Model

Array = jax.Array


class SGLDState(NamedTuple):
    """Position theta_t and momentum m_t (zeros without momentum)."""

    position: Array
    momentum: Array


class SGLDInfo(NamedTuple):
    """The minibatch gradient G_t(theta_{t-1}) used by the step."""

    gradient: Array


def init(position) -> SGLDState:
    """Initial state at `position` with zero momentum."""
    position = jnp.asarray(position, dtype=jnp.float64)
    return SGLDState(position, jnp.zeros_like(position))


def minibatch_indices(key, num_obs: int, batch_size: int, replacement: bool = True) -> Array:
    """B indices uniform on {0..N-1}, with replacement (the theory's default) or without."""
    if replacement:
        return jax.random.randint(key, (batch_size,), 0, num_obs)
    return jax.random.choice(key, num_obs, (batch_size,), replace=False)


def build_kernel(grad_fn: Callable[[Array, Array], Array], Lambda, *, temperature=math.inf,
                 momentum: float = 0.0):
    """One SG(L)D step (eq. 4 / B.3); beta = inf is SGD, a 1-D Lambda a diagonal preconditioner."""
    Lam = jnp.asarray(Lambda, dtype=jnp.float64)
    beta = math.inf if temperature is None else float(temperature)
    if not beta > 0:
        raise ValueError(f"inverse temperature must be in (0, inf]; got {temperature}")
    kappa = float(momentum)
    if not 0.0 <= kappa < 1.0:
        raise ValueError(f"momentum must be in [0, 1); got {momentum}")
    if math.isfinite(beta) and Lam.ndim == 1:
        if not np.all(np.asarray(Lambda) > 0):
            raise ValueError("SGLD needs a positive diagonal preconditioner")
        root = jnp.sqrt(2.0 * Lam / beta)
    elif math.isfinite(beta):
        Ln = np.asarray(Lambda, dtype=np.float64)
        if not np.allclose(Ln, Ln.T, rtol=1e-10, atol=0):
            raise ValueError("SGLD at finite temperature needs a symmetric Lambda")
        try:
            root = jnp.asarray(np.linalg.cholesky(2.0 * Ln / beta))
        except np.linalg.LinAlgError as err:
            raise ValueError("SGLD needs a positive-definite Lambda") from err
    else:
        root = None
    return _kernel(grad_fn, Lam, root, kappa)


def _kernel(grad_fn, Lam, root, kappa):
    diagonal = Lam.ndim == 1  # a diagonal preconditioner given by its diagonal

    def step(key, state: SGLDState, idx: Array):
        g = grad_fn(state.position, idx)
        m = kappa * state.momentum + g if kappa else g
        x = state.position - (Lam * m if diagonal else Lam @ m)
        if root is not None:
            xi = jax.random.normal(key, x.shape, dtype=x.dtype)
            x = x + (root * xi if diagonal else root @ xi)
        return SGLDState(x, m if kappa else state.momentum), SGLDInfo(g)

    return step


def make_sampler(grad_fn, *, num_obs: Optional[int] = None, batch_size: int, num_draws: int,
                 replacement: bool = True, thin: int = 1, burn_in: int = 0,
                 temperature=math.inf, momentum: float = 0.0):
    """A jitted `run(key, Lambda, init_positions) -> draws (chain, draw, dim)` for any preconditioner."""
    beta = math.inf if temperature is None else float(temperature)
    if isinstance(grad_fn, Model):
        fn, data = grad_fn.sampler_parts()
        num_obs = grad_fn.num_obs if num_obs is None else num_obs
    else:
        fn, data = _WrapGrad(grad_fn), None
    if num_obs is None:
        raise ValueError("num_obs is required with a gradient function")
    if not 1 <= batch_size <= num_obs:
        raise ValueError(f"batch size must be in [1, N={num_obs}]; got {batch_size}")
    static = dict(grad_fn=fn, num_obs=int(num_obs), batch_size=int(batch_size),
                  replacement=bool(replacement), num_draws=int(num_draws), thin=int(thin),
                  burn_in=int(burn_in), beta=beta, kappa=float(momentum))

    def run(key, Lambda, init_positions):
        return _run_data(key, jnp.asarray(Lambda, dtype=jnp.float64),
                         jnp.atleast_2d(jnp.asarray(init_positions, dtype=jnp.float64)), data,
                         **static)

    return run


class _WrapGrad:
    """grad(theta, idx) as grad(theta, idx, data) (hashable by identity, for jit's static args)."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, theta, idx, data):
        return self.fn(theta, idx)


@partial(jax.jit, static_argnames=("grad_fn", "num_obs", "batch_size", "replacement",
                                   "num_draws", "thin", "burn_in", "beta", "kappa"))
def _run_data(key, Lam, init_positions, data, *, grad_fn, num_obs, batch_size, replacement,
              num_draws, thin, burn_in, beta, kappa):
    if not math.isfinite(beta):
        root = None
    elif Lam.ndim == 1:
        root = jnp.sqrt(2.0 * Lam / beta)
    else:
        root = jnp.linalg.cholesky(2.0 * Lam / beta)
    step = _kernel(lambda th, idx: grad_fn(th, idx, data), Lam, root, kappa)
    states = jax.vmap(init)(init_positions)
    _, draws = _scan_chains(key, states, step=step, num_obs=num_obs, batch_size=batch_size,
                            replacement=replacement, num_draws=num_draws, thin=thin,
                            burn_in=burn_in)
    return draws


def proxy_gradient(model: Model, theta_hat) -> Callable[[Array, Array], Array]:
    """Minibatch gradient of the second-order proxy (eq. 11)."""
    th = jnp.asarray(theta_hat, dtype=jnp.float64)
    G0 = model.example_grads(th)
    gamma = None if model.prior_precision is None else jnp.asarray(model.prior_precision)
    N = model.num_obs
    if model.is_glm:
        X = model.X
        w = model.curvature_weights(th)

        def curv_term(idx, e):
            Xb = X[idx]
            return (w[idx] * (Xb @ e))[:, None] * Xb
    else:
        Jn = model.example_hessians(th)

        def curv_term(idx, e):
            return Jn[idx] @ e

    def grad_fn(theta, idx):
        g = jnp.mean(G0[idx] + curv_term(idx, theta - th), axis=0)
        return g if gamma is None else g + gamma @ theta / N

    return grad_fn


def _chain_indices(key, num_chains, num_obs, batch_size, replacement):
    """Minibatch indices for all chains at once, shape (chain, B)."""
    if replacement:
        return jax.random.randint(key, (num_chains, batch_size), 0, num_obs)
    u = jax.random.uniform(key, (num_chains, num_obs))
    return jax.lax.top_k(u, batch_size)[1]  # a uniformly random B-subset per chain


def _scan_chains(key, states, *, step, num_obs, batch_size, replacement, num_draws, thin,
                 burn_in):
    num_chains = states.position.shape[0]
    vstep = jax.vmap(step)

    def one(states, key):
        keys = jax.random.split(key, num_chains + 1)
        idx = _chain_indices(keys[0], num_chains, num_obs, batch_size, replacement)
        states, _ = vstep(keys[1:], states, idx)
        return states, None

    k_burn, k_run = jax.random.split(key)
    if burn_in:
        states, _ = jax.lax.scan(one, states, jax.random.split(k_burn, burn_in))

    def block(states, key):
        if thin == 1:
            states, _ = one(states, key)
        else:
            states, _ = jax.lax.scan(one, states, jax.random.split(key, thin))
        return states, states.position

    states, draws = jax.lax.scan(block, states, jax.random.split(k_run, num_draws))
    return states, jnp.swapaxes(draws, 0, 1)


_run_chains = jax.jit(_scan_chains, static_argnames=("step", "num_obs", "batch_size",
                                                     "replacement", "num_draws", "thin",
                                                     "burn_in"))


def sample(key, step, init_positions, *, num_obs: int, batch_size: int, num_draws: int,
           replacement: bool = True, thin: int = 1, burn_in: int = 0):
    """Run chains from `init_positions` (chain, dim); (draws (chain, draw, dim), final states)."""
    init_positions = jnp.atleast_2d(jnp.asarray(init_positions, dtype=jnp.float64))
    if not 1 <= batch_size <= num_obs:
        raise ValueError(f"batch size must be in [1, N={num_obs}]; got {batch_size}")
    states = jax.vmap(init)(init_positions)
    final, draws = _run_chains(key, states, step=step, num_obs=int(num_obs),
                               batch_size=int(batch_size), replacement=bool(replacement),
                               num_draws=int(num_draws), thin=int(thin), burn_in=int(burn_in))
    return draws, final


__all__ = ["SGLDState", "SGLDInfo", "init", "minibatch_indices", "build_kernel", "proxy_gradient",
           "sample", "make_sampler"]
