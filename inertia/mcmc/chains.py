"""One compiled program for the adjusted kernel's chains: warm-up (dual averaging) and sampling.

Blocks of BLOCK iterations, `n` of them run; the shared trajectory-length key: docs/hfhr.md,
"Construction".
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import _compile
from .kernels.base import Params
from .kernels.adjusted_hfhr import LENGTH_SPREAD
from .frames import is_scaled

BLOCK = 1000  # iterations per compiled block (sampling blocks; warm-up stages use a prefix)
MAX_LEAPFROG = 256  # cap on the mean trajectory length (NUTS's default depth 10 allows 1023)
# dual averaging constants of Hoffman & Gelman (2014)
DA_GAMMA, DA_T0, DA_KAPPA = 0.05, 10.0, 0.75
LENGTH_STREAM = 0x4B  # fold_in tag of the iteration's trajectory-length key (shared by the chains)


class Chains(NamedTuple):
    """Chain states with each chain's key, first non-finite step (0: none) and step count."""

    state: object
    keys: jax.Array
    diverged_at: jax.Array
    count: jax.Array


class Tuning(NamedTuple):
    """Block arguments of the chains program (the fields; warm-up or sampling, iterations to run)."""

    log_h: jax.Array
    mu: jax.Array
    gamma: jax.Array
    alpha: jax.Array
    time: jax.Array
    delta: jax.Array
    step_size: jax.Array
    num_leapfrog: jax.Array
    length_spread: jax.Array
    adapt: jax.Array
    num_iters: jax.Array


def _keep(ok, new, old):
    return jax.tree_util.tree_map(
        lambda a, b: jnp.where(ok.reshape(ok.shape + (1,) * (a.ndim - 1)), a, b), new, old)


@functools.lru_cache(maxsize=16)
def program(method, flow: bool, lean: bool = False):
    """jit of one block: (value_and_grad, Chains, key, Tuning) -> (Chains, averaged h, (positions, info))."""
    extra = {"lean": True} if lean else {}

    def run(vg, chains: Chains, key, t: Tuning):
        nc = chains.keys.shape[0]

        def iterate(carry, i):
            ch, log_h, log_hbar, hbar = carry
            h = jnp.where(t.adapt, jnp.exp(log_h), t.step_size)
            n = jnp.where(t.adapt, jnp.clip(t.time / h, 1.0, MAX_LEAPFROG), t.num_leapfrog)
            coeffs = method.prepare(Params(h, t.gamma, t.alpha, n, t.length_spread))
            split = jax.vmap(jax.random.split)(ch.keys)
            keys = jnp.where(t.adapt, jax.random.split(jax.random.fold_in(key, i), nc),
                             split[:, 1])
            ckeys = jnp.where(t.adapt, ch.keys, split[:, 0])
            shared = jax.random.fold_in(keys[0], LENGTH_STREAM)  # one K for all chains
            new, info = jax.vmap(lambda k, s: method.step(k, s, coeffs, vg, flow=flow,
                                                           length_key=shared, **extra))(
                keys, ch.state)
            ok = info.is_finite & (ch.diverged_at == 0)
            div = jnp.where((ch.diverged_at == 0) & ~info.is_finite, ch.count + 1,
                            ch.diverged_at)
            ch = Chains(_keep(ok, new, ch.state), ckeys, div, ch.count + 1)
            acc = jnp.mean(jnp.nan_to_num(info.acceptance_rate))
            s = i + 1.0
            hbar_new = (1.0 - 1.0 / (s + DA_T0)) * hbar + (t.delta - acc) / (s + DA_T0)
            log_h_new = t.mu - jnp.sqrt(s) / DA_GAMMA * hbar_new
            w = s ** (-DA_KAPPA)
            log_hbar_new = w * log_h_new + (1.0 - w) * log_hbar
            log_h, log_hbar, hbar = (jnp.where(t.adapt, a, b) for a, b in (
                (log_h_new, log_h), (log_hbar_new, log_hbar), (hbar_new, hbar)))
            pos = jnp.where((div == 0)[:, None], ch.state.position, jnp.nan)
            return (ch, log_h, log_hbar, hbar), (pos, info)

        init = (chains, t.log_h, t.log_h, jnp.float64(0.0))
        blank = jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype),
                                       jax.eval_shape(lambda c: iterate(c, 0)[1], init))

        def body(carry, i):
            return jax.lax.cond(i < t.num_iters, iterate, lambda c, _: (c, blank), carry, i)

        (chains, _, log_hbar, _), rec = jax.lax.scan(body, init, jnp.arange(BLOCK))
        return chains, jnp.exp(log_hbar), rec

    return _compile.jit(run, hot=True)


def tuning(log_h=0.0, *, mu=0.0, gamma=0.0, alpha=0.0, time=1.0, delta=0.8, step_size=1.0,
           num_leapfrog=1.0, length_spread=None, adapt=True, num_iters=BLOCK) -> Tuning:
    """Tuning arguments as float64 / int arrays (one compilation for all their values)."""
    f = lambda x: _compile.device(x, np.float64)  # noqa: E731
    return Tuning(f(log_h), f(mu), f(gamma), f(alpha), f(time), f(delta), f(step_size),
                  f(num_leapfrog), f(LENGTH_SPREAD if length_spread is None else length_spread),
                  _compile.device(bool(adapt)), _compile.device(int(num_iters), np.int64))


def sampling(params: Params, num_iters: int) -> Tuning:
    """Sampling-mode arguments: fixed h, gamma, alpha and mean trajectory length."""
    return tuning(gamma=params.gamma, alpha=params.alpha, step_size=params.step_size,
                  num_leapfrog=params.num_leapfrog, length_spread=params.length_spread,
                  adapt=False, num_iters=num_iters)


def run_block(method, vg, chains: Chains, key, t: Tuning):
    """One block, its records trimmed to the iterations run (flow only where alpha > 0)."""
    flow = bool(float(t.alpha) > 0.0)
    n = int(t.num_iters)
    if not 0 <= n <= BLOCK:
        raise ValueError(f"a block runs at most {BLOCK} iterations, got {n}")
    if key is None:
        key = np.zeros(2, dtype=np.uint32)

    chains, h, (pos, info) = program(method, flow, is_scaled(vg))(vg, chains, key, t)
    return chains, h, jax.tree_util.tree_map(lambda a: np.asarray(a)[:n], (pos, info))
