"""Closed-over arrays as arguments of compiled programs (docs/howto/speed.md, "Data as arguments").

A program keeps its compiled versions for at most SIGNATURES_KEPT argument signatures and forgets them
all past it: compiled code stays mapped, and Linux allows a process 65,530 memory mappings.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

HOIST_MIN_SIZE = 64  # closed-over arrays of at least this many elements become arguments
SIGNATURES_KEPT = 32  # argument signatures a program keeps compiled (see the module docstring)


class _Bound:
    """A program of `Hoisting` with its hoisted arrays bound as its first argument."""

    def __init__(self, obj, consts):
        self._obj, self._consts = obj, consts

    def compile(self, *args, **kwargs):
        return _Bound(self._obj.compile(*args, **kwargs), self._consts)

    def __call__(self, *args):
        return self._obj(self._consts, *args)

    def __getattr__(self, name):
        return getattr(self._obj, name)


def _signature(args):
    """(pytree structure, abstract values, float64's canonical dtype) of `args`; None for a non-array leaf."""
    leaves, tree = jax.tree_util.tree_flatten(args)
    try:
        return tree, tuple(jax.typeof(leaf) for leaf in leaves), jax.dtypes.canonicalize_dtype(
            jnp.float64)
    except TypeError:
        return None


class Hoisting:
    """jax.jit of `fun` whose closed-over arrays of HOIST_MIN_SIZE elements or more are arguments."""

    def __init__(self, fun, compiler_options=None, **jit_kwargs):
        self._fun, self._options = fun, compiler_options
        self._plain = jax.jit(fun, compiler_options=compiler_options, **jit_kwargs)
        self._static = bool(jit_kwargs)
        self._entries = {}

    def _entry(self, args, kwargs):
        """(jit of the traced program, hoisted arrays) for this signature; None: the plain jit."""
        key = None if self._static or kwargs else _signature(args)
        if key is None:  # the plain jit (static arguments, leaves that are not arrays): its count
            self._forget_past(SIGNATURES_KEPT)
            return None
        if key not in self._entries:  # a new signature: room for it
            self._forget_past(SIGNATURES_KEPT - 1)
            tree, avals, _ = key
            specs = [jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in avals]
            self._entries[key] = self._build(jax.tree_util.tree_unflatten(tree, specs))
        return self._entries[key]

    def _build(self, args):
        traced = self._plain.trace(*args)  # the plain jit's trace, reused where nothing is hoisted
        closed, shape = traced.jaxpr, traced.out_info
        jaxpr, consts = closed.jaxpr, list(closed.consts)
        big = [i for i, c in enumerate(consts)
               if not isinstance(c, jax.core.Tracer) and np.size(c) >= HOIST_MIN_SIZE]
        if not big:
            return None
        out_tree = jax.tree_util.tree_structure(shape)
        avals = [v.aval for v in jaxpr.constvars]
        small = [None if i in big else c for i, c in enumerate(consts)]
        with jax.ensure_compile_time_eval():  # concrete device arrays, inside a trace too
            hoisted = [jax.device_put(consts[i] if isinstance(consts[i], jax.Array)
                                      else np.asarray(consts[i], dtype=avals[i].dtype))
                       for i in big]
        del consts

        def program(arrays, *call_args):
            values = list(small)
            for i, a in zip(big, arrays):
                values[i] = a
            out = jax.core.eval_jaxpr(jaxpr, values, *jax.tree_util.tree_leaves(call_args))
            return jax.tree_util.tree_unflatten(out_tree, out)

        return jax.jit(program, compiler_options=self._options), hoisted

    def _forget_past(self, kept: int) -> None:
        """Forget every compiled version where there are more than `kept`."""
        size = getattr(self._plain, "_cache_size", None)  # JAX's count of the jit's versions
        if len(self._entries) > kept or (size is not None and size() > kept):
            self._entries.clear()
            self._plain.clear_cache()

    def __call__(self, *args, **kwargs):
        entry = self._entry(args, kwargs)
        if entry is None:
            return self._plain(*args, **kwargs)
        fn, hoisted = entry
        return fn(hoisted, *args)

    def lower(self, *args, **kwargs):
        entry = self._entry(args, kwargs)
        if entry is None:
            return self._plain.lower(*args, **kwargs)
        fn, hoisted = entry
        return _Bound(fn.lower(hoisted, *args), hoisted)
