"""How the chains' batched (V, grad V) runs on the CPU: vectorised, or one call per chain.

The chains step side by side under `jax.vmap`, so the target's value and gradient see a batch of
positions. XLA's CPU code for a batched gather or scatter (a random effect indexed by data,
`a[g]`, and its gradient's scatter-add) costs more than the same work done chain by chain, and
independent per-chain calls in one program also run concurrently on the CPU's threads; a model
without them (arithmetic, slices and pads, as a latent field's differences on a grid) vectorises
well and runs at half its speed when looped. The rule (`batched`): on the CPU, from
PER_CHAIN_MIN_DIM parameters and where the gradient's program gathers or scatters, the batch
runs as one call per chain in one program (written out up to MAX_UNROLL chains below
LOOP_MIN_DIM, looped with `lax.map` otherwise); otherwise, and on accelerators, plain `vmap`.
Either way each row's value and gradient are that row's own.
"""
from __future__ import annotations

import jax
import jax.extend
import jax.numpy as jnp

# from this d the chains' gradients of a model that gathers or scatters run one call per chain;
# measured in the chains' program (4 chains, 2 cores, us per chain-gradient, per chain against
# vmap): hierarchical logistic 97 against 123 (d = 1,000) and 252 against 333 (3,000), the GLMM
# 56 against 75 and 131 against 337; at d = 300 mixed (38.5 against 35.9 and 21.9 against 27.3). At d =
# 10,000 against a
# lax.map loop: 867 against 984 and 511 against 460. The latent field (no gathers) vectorises:
# 77 us per chain-gradient at d = 10,000, 149 looped
PER_CHAIN_MIN_DIM = 1000
# from this d the per-chain calls loop (lax.map) instead of being written out: at d = 10,000 the
# loop ran as fast (first runs, hierarchical logistic 58-62 s looped against 61-67 s written out)
# and its program holds one copy of the gradient, not one a chain (GLMM: 7.1 against 9.6-11.0 s
# of compilation, 111 against 120-125 s)
LOOP_MIN_DIM = 5000
MAX_UNROLL = 8  # the most per-chain calls written out in one program (beyond: lax.map)
INDEXING = ("gather", "scatter", "scatter-add", "scatter-sub", "scatter-mul", "scatter-min",
            "scatter-max")  # the primitives' names (jax.lax.gather_p.name, ...)


def primitives(jaxpr) -> set:
    """The names of the primitives in a jaxpr and in every jaxpr nested in its equations."""
    names, todo = set(), [jaxpr]
    while todo:
        j = todo.pop()
        names.update(e.primitive.name for e in j.eqns)
        todo.extend(jax.extend.core.subjaxprs(j))
    return names


def indexes_by_data(fn, dim: int, dtype=jnp.float64) -> bool:
    """Whether fn(x), x of shape (dim,), gathers or scatters (its traced program, nested ones
    included)."""
    jaxpr = jax.make_jaxpr(fn)(jax.ShapeDtypeStruct((dim,), dtype)).jaxpr
    return bool(primitives(jaxpr) & set(INDEXING))


def per_chain(fn):
    """fn under vmap as one call per batch row, written out up to MAX_UNROLL rows (independent
    calls the CPU may run concurrently), looped (`jax.custom_batching.sequential_vmap`) beyond;
    unbatched arguments are shared."""
    looped = jax.custom_batching.sequential_vmap(fn)

    @jax.custom_batching.custom_vmap
    def f(*args):
        return fn(*args)

    @f.def_vmap
    def rule(axis_size, in_batched, *args):
        if axis_size > MAX_UNROLL:
            axes = jax.tree_util.tree_map(lambda b: 0 if b else None, tuple(in_batched))
            out = jax.vmap(looped, in_axes=axes)(*args)
        else:
            rows = [f(*(jax.tree_util.tree_map(lambda a, b, i=i: a[i] if b else a, x, bx)
                        for x, bx in zip(args, in_batched))) for i in range(axis_size)]
            out = jax.tree_util.tree_map(lambda *r: jnp.stack(r), *rows)
        return out, jax.tree_util.tree_map(lambda _: True, out)

    return f


def batched(fn, dim: int, dtype=jnp.float64):
    """fn as the chains' batch should run it on this backend (the module's rule)."""
    if (jax.default_backend() == "cpu" and dim >= PER_CHAIN_MIN_DIM
            and indexes_by_data(fn, dim, dtype)):
        return per_chain(fn) if dim < LOOP_MIN_DIM else jax.custom_batching.sequential_vmap(fn)
    return fn


__all__ = ["PER_CHAIN_MIN_DIM", "LOOP_MIN_DIM", "MAX_UNROLL", "primitives", "indexes_by_data",
           "per_chain", "batched"]
