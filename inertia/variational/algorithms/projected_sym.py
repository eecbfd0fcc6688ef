"""Projected accelerated scheme in symmetric-root coordinates (Algorithm 3, Lemma C.14) and its twin.

y_k = (s x_k + v_k)/(s + 1);  x_{k+1} = P(y_k - eta g_k);
v_{k+1} = P((1 - 1/s) v_k + y_k/s - g_k/(alpha s)), g_k a FULL grad F estimate (STL, Price-STL).
Plain: x_{k+1} = P(x_k - eta G(x_k)). P clips the spectrum of C to [lower, upper], by closed forms
where Cholesky tests allow (docs/vi.md).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.custom_batching import custom_vmap

from ..family import covariance, project_spectrum, sym
from .base import Kernel, VIInfo, VIState, finite


def spectrum_projection(lower, upper):
    """P_K(C), K = {spec(C) in [lower, upper]}; decomposes only if spec(sym(C)) straddles a bound."""
    try:
        bounded_above = upper is not None and not np.isinf(float(upper))
    except TypeError:  # traced bound: test it
        bounded_above = True

    def pd(M):
        return jnp.all(jnp.isfinite(jnp.linalg.cholesky(M)))

    def case(S):
        """INSIDE, BELOW (spec < lower), ABOVE (spec > upper) or MIXED; at most three Choleskys."""
        eye = jnp.eye(S.shape[-1], dtype=S.dtype)

        def none_below(S):
            if not bounded_above:
                return jnp.int32(INSIDE)
            # max(spec) <= min(infinity norm, Frobenius norm): a sufficient O(d^2) test first
            norm = jnp.minimum(jnp.max(jnp.sum(jnp.abs(S), axis=1)), jnp.sqrt(jnp.sum(S * S)))

            def factorise(S):
                return lax.cond(pd(upper * eye - S), lambda S: jnp.int32(INSIDE), all_above, S)

            def all_above(S):  # min(spec) <= min(diag S): a diagonal entry <= upper rules it out
                return lax.cond(jnp.min(jnp.diag(S)) <= upper, lambda S: jnp.int32(MIXED),
                                lambda S: jnp.where(pd(S - upper * eye), ABOVE, MIXED)
                                .astype(jnp.int32), S)

            return lax.cond(norm <= upper, lambda S: jnp.int32(INSIDE), factorise, S)

        def some_below(S):  # max(spec) >= max(diag S): a diagonal entry >= lower rules it out
            return lax.cond(jnp.max(jnp.diag(S)) >= lower, lambda S: jnp.int32(MIXED),
                            lambda S: jnp.where(pd(lower * eye - S), BELOW, MIXED)
                            .astype(jnp.int32), S)

        return lax.cond(jnp.min(jnp.diag(S)) < lower, some_below,
                        lambda S: lax.cond(pd(S - lower * eye), none_below, some_below, S), S)

    def branches(S):
        eye = jnp.eye(S.shape[-1], dtype=S.dtype)
        above = (lambda S: upper * eye) if bounded_above else (lambda S: S)  # unreachable if inf
        return [lambda S: S, lambda S: lower * eye, above,
                lambda S: project_spectrum(S, lower, upper)]

    @custom_vmap
    def project(S):
        return lax.switch(case(S), branches(S), S)

    @project.def_vmap
    def project_batched(axis_size, in_batched, S):
        if not in_batched[0]:
            return project(S), False
        # lax.map, not vmap: a batched LAPACK call fans out over XLA's intra-op pool and waits on
        # it, so the x- and v-projections, which XLA runs concurrently, deadlock a 2-thread pool
        # (2-core machines; seen on Sonar, d = 208); one matrix per call never uses the pool.
        k = lax.map(case, S)[:, None, None]
        eye = jnp.eye(S.shape[-1], dtype=S.dtype)
        out = lax.cond(jnp.any(k == MIXED),
                       lambda S: jnp.where(k == MIXED, lax.map(branches(S)[MIXED], S), S),
                       lambda S: S, S)
        out = jnp.where(k == BELOW, lower * eye, out)
        if bounded_above:
            out = jnp.where(k == ABOVE, upper * eye, out)
        return out, True

    return lambda C: project(sym(C))


INSIDE, BELOW, ABOVE, MIXED = range(4)


def build(target, estimator, *, eta, s, alpha, lower, upper, accelerated, batch_size,
          options=None) -> Kernel:
    """Algorithm 3 (accelerated) or projected SGD (plain) with spectrum bounds [lower, upper]."""
    options = options or {}
    project = spectrum_projection(lower, upper)

    def proj(m, C):
        return m, project(C)

    def init(m0, C0):
        m, C = proj(m0, C0)
        return VIState(m, C, m, C)

    def step_acc(state, key):
        ym = (s * state.m + state.aux_m) / (s + 1.0)
        yC = (s * state.A + state.aux_A) / (s + 1.0)
        gm, gC = estimator.estimate(target, key, ym, yC, batch_size, **options)
        m, C = proj(ym - eta * gm, yC - eta * gC)
        a = 1.0 / s
        vm, vC = proj((1 - a) * state.aux_m + a * ym - gm / (alpha * s),
                      (1 - a) * state.aux_A + a * yC - gC / (alpha * s))
        return VIState(m, C, vm, vC), VIInfo(finite(m, C, vm, vC))

    def step_plain(state, key):
        gm, gC = estimator.estimate(target, key, state.m, state.A, batch_size, **options)
        m, C = proj(state.m - eta * gm, state.A - eta * gC)
        return VIState(m, C, m, C), VIInfo(finite(m, C))

    def gaussian(state):
        return state.m, covariance(state.A, "sym")

    return Kernel(init, step_acc if accelerated else step_plain, gaussian, "sym")
