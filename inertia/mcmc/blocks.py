"""The sampling run's compiled programs: vmapped chains of one registry kernel, run in blocks."""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from .. import _compile
from . import chains


def runner(method: Method, grad_fn, num_draws: int, thinning: int):
    """jit(vmap over chains) of a scan over draws of a scan over `thinning` steps."""
    if method.adjusted:
        run = _cached_fn_runner(method, int(num_draws), int(thinning))
        return lambda carry, params: run(carry, params, grad_fn)
    return _cached_runner(method, grad_fn, int(num_draws), int(thinning))


@functools.lru_cache(maxsize=32)
def _cached_fn_runner(method, num_draws, thinning):
    def one_chain(carry, params, fn):
        return _chain_scan(method, fn, num_draws, thinning)(carry, params)

    return _compile.jit(jax.vmap(one_chain, in_axes=(0, None, None)), hot=True)


@functools.lru_cache(maxsize=32)
def _cached_runner(method, grad_fn, num_draws, thinning):
    return _compile.jit(jax.vmap(_chain_scan(method, grad_fn, num_draws, thinning), in_axes=(0, None)),
                        hot=True)


def _chain_scan(method, grad_fn, num_draws, thinning):
    """One chain: a scan over draws of a scan over `thinning` steps, recording positions and info."""
    def one_chain(carry, params):
        coeffs = method.prepare(params)

        def inner(c, _):
            state, key, div, k = c
            key, sub = jax.random.split(key)
            new, info = method.step(sub, state, coeffs, grad_fn)
            ok = info.is_finite & (div == 0)
            state = jax.tree_util.tree_map(lambda a, b: jnp.where(ok, a, b), new, state)
            div = jnp.where((div == 0) & ~info.is_finite, k + 1, div)
            return (state, key, div, k + 1), info

        def record(c):
            return jnp.where(c[2] == 0, c[0].position, jnp.nan)

        if thinning == 1:
            def every(c, _):
                c, info = inner(c, None)
                return c, (record(c), info)

            return jax.lax.scan(every, carry, None, length=num_draws)

        def outer(c, _):
            c, infos = jax.lax.scan(inner, c, None, length=thinning)
            return c, (record(c), infos)

        return jax.lax.scan(outer, carry, None, length=num_draws)

    return one_chain


def advance(m, grad_fn, carry, jparams, num_draws, thinning, block, progress=None):
    """Run num_draws draws in compiled blocks of `block` draws; returns carry, draws, info dict."""
    draws, infos, done = [], [], 0
    shared = m.adjusted and thinning == 1  # the warm-up's compiled program, in sampling mode
    while done < num_draws:
        n = min(block, num_draws - done)
        if shared:
            n = min(n, chains.BLOCK)
            ch, _, (pos, info) = chains.run_block(m, grad_fn, chains.Chains(*carry), None,
                                                  chains.sampling(jparams, n))
            carry = tuple(ch)
            pos, info = np.swapaxes(pos, 0, 1), jax.tree_util.tree_map(lambda a: a.T, info)
        else:
            carry, (pos, info) = runner(m, grad_fn, n, thinning)(carry, jparams)
        draws.append(np.ascontiguousarray(pos))  # (chain, draw, d) in C order: later passes stream
        nc = draws[-1].shape[0]
        infos.append(jax.tree_util.tree_map(lambda a: np.asarray(a).reshape(nc, -1), info))
        done += n
        if progress is not None:
            progress(n)
    info = {k: np.concatenate([getattr(i, k) for i in infos], axis=1) for k in infos[0]._fields}
    return carry, draws[0] if len(draws) == 1 else np.concatenate(draws, axis=1), info
