"""SG(L)D chains that can be continued, over in-memory models, row sources and sharded rows.

A runner's `advance(key, states, num_draws, thin)` runs num_draws x thin steps of every chain (eq. 4 /
B.3) and returns the states and kept positions. `SourceRunner` gathers each block's minibatch rows
on the host while the previous block runs; `DeviceRunner` keeps the rows on the device (sharded).
"""
from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from . import kernels
from .. import convergence
from ..data.sources import ArraySource
from .models import _LINKS, Model

BLOCK_BYTES = 1 << 25  # gathered rows per block of steps


def _noise_root(Lam: np.ndarray, beta: float):
    if not math.isfinite(beta):
        return None
    if Lam.ndim == 1:
        return jnp.sqrt(2.0 * jnp.asarray(Lam) / beta)
    return jnp.asarray(np.linalg.cholesky(2.0 * np.asarray(Lam) / beta))


@partial(jax.jit, static_argnames=("steps", "num_chains", "num_obs", "batch_size",
                                   "replacement"))
def _block_indices(key, *, steps, num_chains, num_obs, batch_size, replacement):
    """Minibatch indices (steps, chain, B) and the per-step noise keys of one block."""
    def one(_, k):
        k_idx, k_noise = jax.random.split(k)
        return None, (kernels._chain_indices(k_idx, num_chains, num_obs, batch_size,
                                             replacement), k_noise)

    _, (idx, noise) = jax.lax.scan(one, None, jax.random.split(key, steps))
    return idx, noise


def _glm_grad(kind, intercept):
    d1 = _LINKS[kind][1]

    def grad(theta, batch):
        Xb, yb, params, gamma_n = batch
        if intercept:  # x = [1, row] without forming it
            r = d1(Xb @ theta[1:] + theta[0], yb, params)
            g = jnp.concatenate([jnp.sum(r, keepdims=True), Xb.T @ r]) / Xb.shape[0]
        else:
            g = Xb.T @ d1(Xb @ theta, yb, params) / Xb.shape[0]
        return g + gamma_n @ theta

    return grad


@partial(jax.jit, static_argnames=("kind", "intercept", "kappa", "noisy"))
def _block_run(states, Lam, root, noise, active, Xb, yb, params, gamma_n, *, kind, intercept,
               kappa, noisy):
    """The steps of one block on pre-gathered rows Xb (steps, chain, B, p); (states, positions)."""
    step = kernels._kernel(_glm_grad(kind, intercept), Lam, root if noisy else None, kappa)
    vstep = jax.vmap(step, in_axes=(0, 0, (0, 0, None, None)))
    num_chains = Xb.shape[1]

    def one(st, inp):
        k, on, xb, y = inp
        new, _ = vstep(jax.random.split(k, num_chains), st, (xb, y, params, gamma_n))
        st = jax.tree_util.tree_map(lambda a, b: jnp.where(on, a, b), new, st)
        return st, st.position

    states, pos = jax.lax.scan(one, states, (noise, active, Xb, yb))
    return states, pos


class SourceRunner:
    """Continuable chains for a `large.LargeGLM`: indices in JAX, rows gathered on the host."""

    def __init__(self, model, *, Lambda, batch_size: int, replacement: bool = True,
                 temperature=math.inf, momentum: float = 0.0):
        self.model = model
        self.B, self.replacement = int(batch_size), bool(replacement)
        beta = math.inf if temperature is None else float(temperature)
        self.Lam = jnp.asarray(Lambda, dtype=jnp.float64)
        root = _noise_root(np.asarray(Lambda, dtype=np.float64), beta)
        self.noisy = root is not None
        self.root = root if root is not None else jnp.zeros(())
        self.kappa = float(momentum)
        self.params = model.link._p()
        self.gamma_n = jnp.asarray(model.gamma / model.num_obs)
        self.blocks = 0
        self._pool, self._turn, self._filling = {}, 0, None

    def _gather(self, idx: np.ndarray):
        """The rows of idx as device arrays, via two reused 64-byte aligned host buffers."""
        src, self._filling = self.model.source, None
        if not isinstance(src, ArraySource):
            X, y = src.take(idx)
            return jax.device_put(X), jax.device_put(y)
        slots = self._pool.get(idx.shape)
        if slots is None:
            slots = self._pool[idx.shape] = [
                [aligned(idx.shape + (src.num_cols,)), aligned(idx.shape), None] for _ in "ab"]
        slot = self._filling = slots[self._turn % 2]
        self._turn += 1
        if slot[2] is not None:
            jax.block_until_ready(slot[2])
        X, y = src.take(idx, out=(slot[0], slot[1]))
        return jax.device_put(X), jax.device_put(y)

    def _run(self, states, noise, active, idx):
        X, y = self._gather(np.asarray(idx))
        states, pos = _block_run(states, self.Lam, self.root, noise, active, X, y, self.params,
                                 self.gamma_n, kind=self.model.link.kind,
                                 intercept=self.model.intercept, kappa=self.kappa,
                                 noisy=self.noisy)
        if self._filling is not None:
            self._filling[2] = pos  # ready once the block has read its rows
        return states, pos

    def block_steps(self, num_chains: int) -> int:
        """Steps per compiled block: about BLOCK_BYTES of gathered rows."""
        row = 8 * (self.model.source.num_cols + 1) * num_chains * self.B
        return int(max(1, BLOCK_BYTES // row))

    def advance(self, key, states, num_draws: int, thin: int = 1):
        """num_draws x thin more steps per chain; (states, kept positions (chain, draw, dim))."""
        C = states.position.shape[0]
        K = self.block_steps(C)
        total = int(num_draws) * int(thin)
        starts = list(range(0, total, K))

        def indices(done):
            return _block_indices(jax.random.fold_in(key, done), steps=K, num_chains=C,
                                  num_obs=self.model.num_obs, batch_size=self.B,
                                  replacement=self.replacement)

        def kept(pos, keep):
            return np.swapaxes(np.asarray(pos)[keep], 0, 1)

        nxt, out, pending = indices(0), [], None
        for b, done in enumerate(starts):
            idx, noise = nxt
            if b + 1 < len(starts):
                nxt = indices(starts[b + 1])
            n = min(K, total - done)
            states, pos = self._run(states, noise, np.arange(K) < n, idx)
            if pending is not None:  # the previous block, done or nearly: host memory stays O(kept)
                out.append(kept(*pending))
            keep = np.nonzero((done + np.arange(n) + 1) % thin == 0)[0]
            pending = (pos, keep) if keep.size else None
            self.blocks += 1
        if pending is not None:
            out.append(kept(*pending))
        return states, np.concatenate(out, axis=1)


def aligned(shape, dtype=np.float64) -> np.ndarray:
    """An uninitialised C-contiguous array whose data start on a 64-byte boundary."""
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.empty(nbytes + 64, np.uint8)
    off = -raw.ctypes.data % 64
    return raw[off:off + nbytes].view(dtype).reshape(shape)


@partial(jax.jit, static_argnames=("kind", "intercept", "kappa", "noisy"))
def _device_block_run(states, Lam, root, noise, active, X, y, idx, params, gamma_n, *, kind,
                      intercept, kappa, noisy):
    """`_block_run` with the rows on the device: each step gathers its minibatch X[idx_t]."""
    step = kernels._kernel(_glm_grad(kind, intercept), Lam, root if noisy else None, kappa)
    vstep = jax.vmap(step, in_axes=(0, 0, (0, 0, None, None)))
    num_chains = idx.shape[1]

    def one(st, inp):
        k, on, i = inp
        new, _ = vstep(jax.random.split(k, num_chains), st, (X[i], y[i], params, gamma_n))
        st = jax.tree_util.tree_map(lambda a, b: jnp.where(on, a, b), new, st)
        return st, st.position

    states, pos = jax.lax.scan(one, states, (noise, active, idx))
    return states, pos


class DeviceRunner(SourceRunner):
    """`SourceRunner` with the rows on the device, or sharded by rows over devices."""

    def __init__(self, model, sharded=None, **kw):
        super().__init__(model, **kw)
        if sharded is not None:
            self.X, self.y = sharded.X, sharded.y
        else:
            self.X = jax.device_put(np.asarray(model.source.X, np.float64))
            self.y = jax.device_put(np.asarray(model.source.y, np.float64))

    def _run(self, states, noise, active, idx):
        return _device_block_run(states, self.Lam, self.root, noise, active, self.X, self.y,
                                 idx, self.params, self.gamma_n, kind=self.model.link.kind,
                                 intercept=self.model.intercept, kappa=self.kappa,
                                 noisy=self.noisy)



@partial(jax.jit, static_argnames=("grad_fn", "num_obs", "batch_size", "replacement",
                                   "num_draws", "thin", "beta", "kappa"))
def _model_advance(key, Lam, states, data, *, grad_fn, num_obs, batch_size, replacement,
                   num_draws, thin, beta, kappa):
    if not math.isfinite(beta):
        root = None
    elif Lam.ndim == 1:
        root = jnp.sqrt(2.0 * Lam / beta)
    else:
        root = jnp.linalg.cholesky(2.0 * Lam / beta)
    step = kernels._kernel(lambda th, idx: grad_fn(th, idx, data), Lam, root, kappa)
    return kernels._scan_chains(key, states, step=step, num_obs=num_obs, batch_size=batch_size,
                                replacement=replacement, num_draws=num_draws, thin=thin,
                                burn_in=0)


class ModelRunner:
    """Continuable chains for an in-memory `Model` (data on the device, as `make_sampler`)."""

    def __init__(self, model: Model, *, Lambda, batch_size: int, replacement: bool = True,
                 temperature=math.inf, momentum: float = 0.0):
        self.fn, self.data = model.sampler_parts()
        self.num_obs = model.num_obs
        self.Lam = jnp.asarray(Lambda, dtype=jnp.float64)
        self.static = dict(num_obs=int(model.num_obs), batch_size=int(batch_size),
                           replacement=bool(replacement),
                           beta=math.inf if temperature is None else float(temperature),
                           kappa=float(momentum))

    def advance(self, key, states, num_draws: int, thin: int = 1):
        states, draws = _model_advance(key, self.Lam, states, self.data, grad_fn=self.fn,
                                       num_draws=int(num_draws), thin=int(thin), **self.static)
        return states, np.asarray(draws)


def init_states(positions):
    """Chain states at positions (chain, dim) with zero momentum."""
    return jax.vmap(kernels.init)(jnp.atleast_2d(jnp.asarray(positions, dtype=jnp.float64)))


def run_to_ess(runner, key, starts, *, burn_in: int, num_draws: int, thin: int,
               target_ess=None, max_draws=None):
    """Burn in, run `num_draws`, then continue until the `StopRule` or max_draws; (draws, kept draws run)."""
    k_burn, k_run = jax.random.split(key)
    states = init_states(starts)
    if burn_in:
        states, _ = runner.advance(k_burn, states, 1, thin=int(burn_in))
    chunks, run = [], {"states": states, "done": 0}

    def advance(n):
        run["states"], dr = runner.advance(jax.random.fold_in(k_run, run["done"]), run["states"],
                                           n, thin)
        chunks.append(dr)
        run["done"] += n

    def view():
        draws = np.concatenate(chunks, axis=1)
        return draws if np.all(np.isfinite(draws)) and draws.shape[1] >= 4 else None

    rule = convergence.StopRule(target_ess, cap=None if max_draws is None else int(max_draws))
    done, _ = convergence.run_until_converged(advance, int(num_draws), rule, view=view)
    return np.concatenate(chunks, axis=1), done


__all__ = ["SourceRunner", "DeviceRunner", "ModelRunner", "init_states", "run_to_ess",
           "BLOCK_BYTES"]
