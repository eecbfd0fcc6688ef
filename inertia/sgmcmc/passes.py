"""Chunked passes over a GLM's rows: objective, gradient, J, I, the quadratic term and Gram sums.

Each sum of eq. 15-16 is over rows, accumulated in O(chunk D^2 + D^4) memory: `HostPasses` streams a
row source through one compiled block function; `ShardedPasses` runs it on device shards and `psum`s.
"""
from __future__ import annotations

import functools
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from ._linalg import vech_pairs
from .models import _LINKS
from ..data.sources import ArraySource, is_source

NEWTON = ("value", "grad", "hess", "g2")
CURVATURE = ("grad", "hess", "fisher", "g2", "gram", "rss")
LEAST_SQUARES = ("gram", "xty")


def _design(Xb, intercept):
    if intercept:
        return jnp.concatenate([jnp.ones((Xb.shape[0], 1), Xb.dtype), Xb], axis=1)
    return Xb


def block_stats(theta, Xb, yb, mask, params, *, kind: str, intercept: bool, what: tuple):
    """Sums over one block of rows (mask 0 for padding) of the statistics named in `what`."""
    value, d1f, d2f = _LINKS[kind]
    x = _design(Xb, intercept)
    eta = x @ theta
    out = {}
    if "value" in what:
        out["value"] = jnp.sum(mask * value(eta, yb, params))
    d1 = mask * d1f(eta, yb, params) if {"grad", "fisher", "g2"} & set(what) else None
    d2 = mask * d2f(eta, yb, params) if {"hess", "quad"} & set(what) else None
    if "grad" in what:
        out["grad"] = x.T @ d1
    if "hess" in what:
        out["hess"] = (x * d2[:, None]).T @ x
    if "fisher" in what:
        out["fisher"] = (x * (d1 * d1)[:, None]).T @ x
    if "g2" in what:
        out["g2"] = jnp.sum(d1 * d1 * jnp.sum(x * x, axis=1))
    if "gram" in what:
        out["gram"] = (x * mask[:, None]).T @ x
    if "xty" in what:
        out["xty"] = x.T @ (mask * yb)
    if "rss" in what:
        out["rss"] = jnp.sum(mask * (yb - eta) ** 2)
    if "quad" in what:
        i, j = vech_pairs(x.shape[1])
        Ze = x[:, i] * x[:, j]
        Zd = Ze * jnp.asarray(np.where(i == j, 1.0, 2.0))
        out["quad"] = (Ze * (d2 * d2)[:, None]).T @ Zd
    return out


@functools.lru_cache(maxsize=None)
def _compiled_block(kind, intercept, what):
    return jax.jit(functools.partial(block_stats, kind=kind, intercept=intercept, what=what))


def _pad(a, rows):
    if a.shape[0] == rows:
        return a
    pad = [(0, rows - a.shape[0])] + [(0, 0)] * (a.ndim - 1)
    return np.pad(a, pad)


class HostPasses:
    """Passes over a row source in blocks of `chunk` rows, one compiled block function per kind."""

    def __init__(self, source, *, kind: str, params, intercept: bool, chunk: int = 1 << 15):
        self.source, self.kind, self.intercept = source, kind, bool(intercept)
        self.params = jnp.asarray(params, dtype=jnp.float64)
        self.chunk = int(min(chunk, max(source.num_rows, 1)))
        self.num_obs = int(source.num_rows)
        self.passes = 0

    def __call__(self, theta, what, rows: Optional[np.ndarray] = None) -> dict:
        """Sums of `what` at theta over all rows (or the given row indices), as numpy arrays."""
        fn = _compiled_block(self.kind, self.intercept, tuple(what))
        th = jnp.asarray(theta, dtype=jnp.float64)
        acc = None
        self.passes += 1
        for Xb, yb in self._blocks(rows):
            n = Xb.shape[0]
            mask = np.zeros(self.chunk)
            mask[:n] = 1.0
            part = fn(th, jnp.asarray(_pad(Xb, self.chunk)), jnp.asarray(_pad(yb, self.chunk)),
                      jnp.asarray(mask), self.params)
            acc = part if acc is None else jax.tree_util.tree_map(jnp.add, acc, part)
        return {k: np.asarray(v) for k, v in acc.items()}

    def _blocks(self, rows):
        if rows is None:
            for _, Xb, yb in self.source.blocks(self.chunk):
                yield Xb, yb
        else:
            for s in range(0, rows.size, self.chunk):
                yield self.source.take(rows[s:s + self.chunk])


class ShardedPasses:
    """The same passes on device-resident row shards (mesh axis "data"): one block scan per shard, `psum`."""

    def __init__(self, source, mesh, *, kind: str, params, intercept: bool,
                 chunk: int = 1 << 14):
        from jax.sharding import NamedSharding, PartitionSpec as P

        if not is_source(source):
            source = ArraySource(*source)
        self.source, self.mesh, self.kind = source, mesh, kind
        self.intercept = bool(intercept)
        self.params = jnp.asarray(params, dtype=jnp.float64)
        ndev = mesh.devices.size
        n, p = int(source.num_rows), int(source.num_cols)
        per = -(-n // ndev)
        d = p + int(intercept)
        # blocks of about 4 MiB of pair products (the quadratic term's chunk x D(D+1)/2)
        self.chunk = int(max(1, min(chunk, per, max(64, (1 << 19) // (d * (d + 1) // 2)))))
        per = -(-per // self.chunk) * self.chunk
        total = per * ndev
        rows = NamedSharding(mesh, P("data"))

        def read(index):
            s, e, _ = index[0].indices(total)
            X, y = source.take(np.arange(s, min(e, n)))
            return _pad(X, e - s), _pad(y, e - s), _pad(np.ones(X.shape[0]), e - s)

        self.X = jax.make_array_from_callback((total, p), rows, lambda i: read(i)[0])
        self.y = jax.make_array_from_callback((total,), rows, lambda i: read(i)[1])
        self.mask = jax.make_array_from_callback((total,), rows, lambda i: read(i)[2])
        self.num_obs = n
        self.passes = 0
        self._fns = {}

    def _fn(self, what):
        if what not in self._fns:
            from jax.sharding import PartitionSpec as P

            block = functools.partial(block_stats, kind=self.kind, intercept=self.intercept,
                                      what=what)
            chunk = self.chunk

            def local(theta, X, y, m, params):
                nb = X.shape[0] // chunk
                Xs = X.reshape(nb, chunk, X.shape[1])
                ys, ms = y.reshape(nb, chunk), m.reshape(nb, chunk)
                init = jax.tree_util.tree_map(
                    jnp.zeros_like, jax.eval_shape(block, theta, Xs[0], ys[0], ms[0], params))

                def body(acc, blk):
                    part = block(theta, *blk, params)
                    return jax.tree_util.tree_map(jnp.add, acc, part), None

                acc, _ = jax.lax.scan(body, init, (Xs, ys, ms))
                return jax.lax.psum(acc, "data")

            self._fns[what] = jax.jit(jax.shard_map(
                local, mesh=self.mesh, in_specs=(P(), P("data"), P("data"), P("data"), P()),
                out_specs=P()))
        return self._fns[what]

    def __call__(self, theta, what, rows: Optional[np.ndarray] = None) -> dict:
        if rows is not None:
            raise ValueError("row subsets are taken on the host; use HostPasses for them")
        self.passes += 1
        out = self._fn(tuple(what))(jnp.asarray(theta, dtype=jnp.float64), self.X, self.y,
                                    self.mask, self.params)
        return {k: np.asarray(v) for k, v in out.items()}


__all__ = ["block_stats", "HostPasses", "ShardedPasses", "NEWTON", "CURVATURE", "LEAST_SQUARES"]
