"""Chain states at initial positions: the kernel's `init` over chains, one program per kernel and
gradient function, with a clear error where the model is not finite."""
from __future__ import annotations

import functools

import jax
import numpy as np

from .. import _compile


@functools.lru_cache(maxsize=32)
def init_fn(method, grad_fn):
    """jit of the kernel's init over chains: (positions, keys) -> states."""
    # lax.map, not vmap: the same states bit for bit, and an unbatched threefry compiles in ~0.3 s
    # less (one initialisation per run; the chains' steps stay vmapped)
    if method.adjusted:
        run = _fn_init(method)
        return lambda qs, ks: run(qs, ks, grad_fn)
    return _compile.jit(lambda qs, ks: jax.lax.map(lambda a: method.init(a[0], a[1], grad_fn), (qs, ks)))


@functools.lru_cache(maxsize=16)
def _fn_init(method):
    """`init_fn` of an adjusted kernel, its (V, grad V) function a pytree argument."""
    return _compile.jit(lambda qs, ks, fn: jax.lax.map(lambda a: method.init(a[0], a[1], fn), (qs, ks)))


def start(m, grad_fn, q0, keys):
    """Chain states at positions q0 (num_chains, d), with a clear error when the model is not finite."""
    state = init_fn(m, grad_fn)(q0, keys)  # host or device arrays: nothing compiled
    bad = ~np.all(np.isfinite(np.asarray(state.grad)), axis=1) | \
        ~np.all(np.isfinite(np.asarray(q0)), axis=1)
    if bad.any():
        c = int(np.argmax(bad))
        raise FloatingPointError(f"{m.name}: the gradient of the potential is not finite at the "
                                 f"initial position of chain {c}: the model is not finite there "
                                 "(this is not a step-size problem; pass init= inside the support)")
    return state


__all__ = ["start", "init_fn"]
