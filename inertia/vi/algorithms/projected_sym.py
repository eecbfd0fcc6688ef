"""Projected accelerated scheme in symmetric-root coordinates (Algorithm 3, Lemma C.14) and its twin.

y_k = (s x_k + v_k)/(s + 1);  x_{k+1} = P(y_k - eta g_k);
v_{k+1} = P((1 - 1/s) v_k + y_k/s - g_k/(alpha s)), g_k a FULL grad F estimate (STL, Price-STL).
Plain: x_{k+1} = P(x_k - eta G(x_k)). P clips the spectrum of C to [lower, upper] (spec §2.4).

P costs a d x d eigendecomposition, but near the optimum the iterates lie inside K_C (the bounds
leave a factor 2 around spec(Sigma*^{1/2})), where P(C) = sym(C). So P first tests membership with
Cholesky factorisations of sym(C) - lower I and upper I - sym(C) (d^3/3 flops each, against ~9 d^3
for eigh) and decomposes only when one fails. Under vmap (several seeds) the batch decomposes when
any member is outside, and members inside keep sym(C), so a seed's numbers do not depend on the
batch. Inside K_C the result is sym(C) itself instead of Q clip(w) Q^T, which differed from it
by rounding only (~1e-16 relative).
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
    """P_K(C) for K = {spec(C) in [lower, upper]}, decomposing only when sym(C) is outside K."""
    try:
        bounded_above = upper is not None and not np.isinf(float(upper))
    except TypeError:  # traced bound: test it
        bounded_above = True

    def inside(S):
        eye = jnp.eye(S.shape[-1], dtype=S.dtype)
        ok = jnp.all(jnp.isfinite(jnp.linalg.cholesky(S - lower * eye)))
        if bounded_above:
            ok &= jnp.all(jnp.isfinite(jnp.linalg.cholesky(upper * eye - S)))
        return ok

    def clip(S):
        return project_spectrum(S, lower, upper)

    @custom_vmap
    def project(S):
        return lax.cond(inside(S), lambda S: S, clip, S)

    @project.def_vmap
    def project_batched(axis_size, in_batched, S):
        if not in_batched[0]:
            return project(S), False
        ok = jax.vmap(inside)(S)
        out = lax.cond(jnp.all(ok), lambda S: S,
                       lambda S: jnp.where(ok[:, None, None], S, jax.vmap(clip)(S)), S)
        return out, True

    return lambda C: project(sym(C))


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
