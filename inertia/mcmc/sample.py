"""`sample(target, method, ...)`: vmapped chains of one registry kernel, compiled once per shape."""
from __future__ import annotations

import dataclasses
import functools
import math
import sys
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from .kernels import Method, Params, get_method


@dataclasses.dataclass
class SampleResult:
    """Draws shaped (chain, draw, dim), per-step info shaped (chain, step), and the run's settings.

    `grad_evals` counts gradient evaluations per chain (the initial gradient included).
    `diverged_at[c]` is the 1-based step at which chain c produced a non-finite position or
    gradient (0 if it never did); its later draws are NaN.
    """

    draws: np.ndarray
    info: dict
    method: str
    params: dict
    num_steps: int
    thinning: int
    grad_evals: int
    seed: int
    diverged_at: np.ndarray
    final_state: object = None

    @property
    def num_chains(self) -> int:
        return self.draws.shape[0]

    def _kept(self, burn_in):
        n = self.draws.shape[1]
        start = int(round(burn_in * n)) if isinstance(burn_in, float) else int(burn_in)
        if not 0 <= start < n:
            raise ValueError(f"burn_in leaves no draws ({start} of {n})")
        return self.draws[:, start:]

    def mean(self, burn_in=0.5) -> np.ndarray:
        """Mean over chains and the draws after burn_in (a fraction, or a number of draws)."""
        return self._kept(burn_in).mean(axis=(0, 1))

    def cov(self, burn_in=0.5) -> np.ndarray:
        """Covariance over chains and the draws after burn_in."""
        x = self._kept(burn_in).reshape(-1, self.draws.shape[2])
        return np.atleast_2d(np.cov(x, rowvar=False))

    def ess(self, burn_in=0.5) -> np.ndarray:
        """Effective sample size per coordinate (numpyro's multi-chain estimator)."""
        try:
            from numpyro.diagnostics import effective_sample_size
        except ImportError as err:  # pragma: no cover - optional dependency
            raise ImportError("ess() needs numpyro: pip install 'inertia[numpyro]'") from err
        return np.asarray(effective_sample_size(self._kept(burn_in)))

    def to_arviz(self):
        """An arviz InferenceData with posterior variable `x` (chain, draw, x_dim_0)."""
        from ..arviz_io import to_arviz_draws

        stats = {k: v[:, self.thinning - 1::self.thinning] for k, v in self.info.items()}
        return to_arviz_draws(self.draws, sample_stats=stats)


def _runner(method: Method, grad_fn, num_draws: int, thinning: int):
    """jit(vmap over chains) of a scan over draws of a scan over `thinning` steps."""
    return _cached_runner(method, grad_fn, int(num_draws), int(thinning))


@functools.lru_cache(maxsize=32)
def _cached_runner(method, grad_fn, num_draws, thinning):
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

    return jax.jit(jax.vmap(one_chain, in_axes=(0, None)))


@functools.lru_cache(maxsize=32)
def _init_fn(method, grad_fn):
    return jax.jit(jax.vmap(lambda q, k: method.init(q, k, grad_fn)))


def resolve_params(target, method: Method, step_size=None, gamma=None, alpha=None) -> Params:
    """Fill parameters left as None with `tuning.default_parameters` (from the curvature bounds)."""
    if step_size is None or (gamma is None and "gamma" in method.uses) or (
            alpha is None and "alpha" in method.uses):
        from .tuning import default_parameters

        d = default_parameters(target, method.name)
        step_size = d["step_size"] if step_size is None else step_size
        gamma = d.get("gamma") if gamma is None else gamma
        alpha = d.get("alpha") if alpha is None else alpha
    return Params(float(step_size), float(1.0 if gamma is None else gamma),
                  float(0.0 if alpha is None else alpha))


def check_stability(target, method: Method, params: Params):
    """Clear errors for invalid or unstable parameters (alpha h L >= 2; exact check on Gaussians)."""
    msg = method.check(params, target.beta)
    if msg:
        raise ValueError(f"{method.name}: {msg}")
    info = getattr(target, "info", None) or {}
    if "precision" in info and method.transition is not None and target.dim <= 2000:
        from .gaussian import GaussianDiagnostics

        rho = GaussianDiagnostics(target).contraction_rate(
            method, step_size=params.step_size, gamma=params.gamma, alpha=params.alpha)
        if not rho < 1.0:
            raise ValueError(
                f"{method.name}: step_size={params.step_size:g}, gamma={params.gamma:g}, "
                f"alpha={params.alpha:g} give an unstable chain on this Gaussian target (exact "
                f"contraction rate {rho:.6g} >= 1); reduce step_size or raise gamma")


def _initial_positions(target, init, keys):
    d = target.dim
    n = keys.shape[0]
    if init is None:
        return jax.vmap(lambda k: jax.random.normal(k, (d,), dtype=jnp.float64))(keys)
    x = jnp.asarray(init, dtype=jnp.float64)
    if x.shape == (d,):
        return jnp.broadcast_to(x, (n, d))
    if x.shape == (n, d):
        return x
    raise ValueError(f"init must have shape ({d},) or (num_chains, {d}) = ({n}, {d}); got {x.shape}")


def sample(target, method: str = "hfhr", *, step_size=None, gamma=None, alpha=None,
           num_chains: int = 4, num_steps: int = 1000, seed: int = 0, thinning: int = 1,
           init=None, on_divergence: str = "raise", progress: bool = False) -> SampleResult:
    """Run `num_chains` chains of `method` for `num_steps` steps; keep every `thinning`-th state.

    init: None (q0 ~ N(0, I) per chain), a point (dim,) or points (num_chains, dim); kinetic
    schemes draw p0 ~ N(0, I). Parameters left as None come from `tuning.default_parameters`.
    A non-finite position or gradient raises FloatingPointError naming the chain and step
    (on_divergence="raise"), or freezes that chain, NaNs its later draws and warns ("stop").
    """
    m = get_method(method) if isinstance(method, str) else method
    if on_divergence not in ("raise", "stop"):
        raise ValueError("on_divergence must be 'raise' or 'stop'")
    for name, v in (("num_chains", num_chains), ("num_steps", num_steps), ("thinning", thinning)):
        if int(v) != v or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if num_steps % thinning:
        raise ValueError(f"num_steps ({num_steps}) must be a multiple of thinning ({thinning})")
    if init is not None and np.shape(init) not in ((target.dim,), (num_chains, target.dim)):
        raise ValueError(f"init must have shape ({target.dim},) or (num_chains, {target.dim}) = "
                         f"({num_chains}, {target.dim}); got {np.shape(init)}")
    params = resolve_params(target, m, step_size, gamma, alpha)
    check_stability(target, m, params)

    chain_keys = jax.random.split(jax.random.PRNGKey(seed), num_chains)
    split3 = jax.vmap(lambda k: jax.random.split(k, 3))(chain_keys)
    q0 = _initial_positions(target, init, split3[:, 0])
    state = _init_fn(m, target.grad)(q0, split3[:, 1])
    g0 = np.asarray(state.grad)
    bad = ~np.all(np.isfinite(g0), axis=1) | ~np.all(np.isfinite(np.asarray(q0)), axis=1)
    if bad.any():
        c = int(np.argmax(bad))
        raise FloatingPointError(f"{m.name}: the gradient of the potential is not finite at the "
                                 f"initial position of chain {c}")
    zeros = jnp.zeros(num_chains, dtype=jnp.int64)
    carry = (state, split3[:, 2], zeros, zeros)
    jparams = Params(*(jnp.float64(v) for v in params))

    num_draws = num_steps // thinning
    chunk = num_draws if not progress else max(1, math.ceil(num_draws / 10))
    draws, infos, done, t0 = [], [], 0, time.perf_counter()
    while done < num_draws:
        n = min(chunk, num_draws - done)
        carry, (pos, info) = _runner(m, target.grad, n, thinning)(carry, jparams)
        draws.append(np.asarray(pos))
        infos.append(jax.tree_util.tree_map(lambda a: np.asarray(a).reshape(num_chains, -1), info))
        done += n
        if progress:
            el = time.perf_counter() - t0
            print(f"[sample {m.name}] step {done * thinning}/{num_steps} "
                  f"{100 * done / num_draws:.0f}% elapsed {el:.1f}s "
                  f"ETA {el / done * (num_draws - done):.1f}s", file=sys.stderr, flush=True)
    draws = np.concatenate(draws, axis=1)
    info = {k: np.concatenate([getattr(i, k) for i in infos], axis=1) for k in infos[0]._fields}
    diverged = np.asarray(carry[2])
    if diverged.any():
        c = int(np.argmax(diverged > 0))
        msg = (f"{m.name}: chain {c} diverged at step {int(diverged[c])} of {num_steps} (non-finite "
               f"position or gradient; {int((diverged > 0).sum())} of {num_chains} chains); reduce "
               f"step_size (now {params.step_size:g})"
               + (f" or alpha (now {params.alpha:g})" if "alpha" in m.uses else ""))
        if on_divergence == "raise":
            raise FloatingPointError(msg)
        warnings.warn(msg + "; later draws of diverged chains are NaN", RuntimeWarning, stacklevel=2)
    return SampleResult(
        draws=draws, info=info, method=m.name,
        params={k: v for k, v in params._asdict().items() if k in m.uses},
        num_steps=int(num_steps), thinning=int(thinning),
        grad_evals=1 + m.grads_per_step * int(num_steps), seed=int(seed), diverged_at=diverged,
        final_state=jax.tree_util.tree_map(np.asarray, carry[0]))
