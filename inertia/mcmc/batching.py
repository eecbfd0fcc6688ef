"""How the chains' batched (V, grad V) runs on the CPU: vectorised, or one call per chain.

The chains step side by side under `jax.vmap`, so the target's value and gradient see a batch of
positions. XLA's CPU code for a batched gather or scatter (a random effect indexed by data,
`a[g]`, and its gradient's scatter-add) costs more than the same work done chain by chain, and
independent per-chain calls in one program also run concurrently on the CPU's threads; a model
without them (arithmetic, slices and pads, as a latent field's differences on a grid) vectorises
well and loses three to five times its speed when looped. The rule (`batched`): on the CPU, from
PER_CHAIN_MIN_DIM parameters and where the gradient's program gathers or scatters, the batch runs as
one call per chain in one program (up to MAX_UNROLL chains; a larger batch, e.g. many draws at
once, loops with `lax.map`); otherwise, and on accelerators, plain `vmap`. Either way each row's
value and gradient are that row's own.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

# from this d the chains' gradients of a model that gathers or scatters run one call per chain;
# measured per chain-gradient (4 chains, 2 cores): hierarchical logistic 78 against 96 us
# (d = 3,000) and 238 against 328 us (d = 10,000), the GLMM 49 against 71 and 153 against 217 us;
# at d = 1,000 within 10 % either way. The latent field (no gathers) vectorised: 26 us at
# d = 10,000, against 65 us one call per chain and 138 us looped with lax.map
PER_CHAIN_MIN_DIM = 1000
MAX_UNROLL = 8  # the most per-chain calls written out in one program (beyond: lax.map)
INDEXING = ("gather", "scatter", "scatter-add", "scatter_add", "scatter-mul", "scatter-min",
            "scatter-max", "dynamic_slice", "dynamic_update_slice")


def _subjaxprs(params):
    for v in params.values():
        for item in (v if isinstance(v, (list, tuple)) else (v,)):
            inner = getattr(item, "jaxpr", None)
            if inner is not None:
                yield inner if hasattr(inner, "eqns") else inner.jaxpr
            elif hasattr(item, "eqns"):
                yield item


def primitives(jaxpr) -> set:
    """The names of the primitives in a jaxpr and in every jaxpr nested in its equations."""
    names, todo = set(), [jaxpr]
    while todo:
        j = todo.pop()
        for e in j.eqns:
            names.add(e.primitive.name)
            todo.extend(_subjaxprs(e.params))
    return names


def indexes_by_data(fn, dim: int, dtype=jnp.float64) -> bool:
    """Whether fn(x), x of shape (dim,), gathers or scatters (its traced program, nested ones
    included)."""
    jaxpr = jax.make_jaxpr(fn)(jax.ShapeDtypeStruct((dim,), dtype)).jaxpr
    return bool(primitives(jaxpr) & set(INDEXING))


def per_chain(fn):
    """fn under vmap as one call per batch row, written out up to MAX_UNROLL rows (independent
    calls the CPU may run concurrently), `lax.map` beyond; unbatched arguments are shared."""

    @jax.custom_batching.custom_vmap
    def f(*args):
        return fn(*args)

    @f.def_vmap
    def rule(axis_size, in_batched, *args):
        def row(i):
            return f(*(jax.tree_util.tree_map(lambda a, b, i=i: a[i] if b else a, x, bx)
                       for x, bx in zip(args, in_batched)))

        if axis_size <= MAX_UNROLL:
            rows = [row(i) for i in range(axis_size)]
            out = jax.tree_util.tree_map(lambda *r: jnp.stack(r), *rows)
        else:
            out = jax.lax.map(row, jnp.arange(axis_size))
        return out, jax.tree_util.tree_map(lambda _: True, out)

    return f


def batched(fn, dim: int, dtype=jnp.float64):
    """fn as the chains' batch should run it on this backend (the module's rule)."""
    if (jax.default_backend() == "cpu" and dim >= PER_CHAIN_MIN_DIM
            and indexes_by_data(fn, dim, dtype)):
        return per_chain(fn)
    return fn


__all__ = ["PER_CHAIN_MIN_DIM", "MAX_UNROLL", "primitives", "indexes_by_data", "per_chain",
           "batched"]
