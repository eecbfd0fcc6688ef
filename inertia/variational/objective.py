"""The VI objective F(q) = E_q V - H(q) and its optimum F*."""
from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import _compile, _recent
from ..targets.base import Target

QUADRATURE_ORDERS = (192, 384, 768, 1536)  # Gauss-Hermite orders, raised until two agree to 1e-8
# the trapezoid rule (logistic link) stays accurate at higher orders; wide marginals (a Cholesky
# factor on the norm ball ||L||_F <= sqrt(d/alpha)) can need them
TRAPEZOID_ORDERS = QUADRATURE_ORDERS + (3072, 6144)
AGREEMENT = 1e-8


def entropy(S):
    """Differential entropy of N(m, S): (d/2) log(2 pi e) + (1/2) log det S."""
    d = S.shape[-1]
    sign, logdet = jnp.linalg.slogdet(S)
    return 0.5 * d * math.log(2 * math.pi * math.e) + 0.5 * jnp.where(sign > 0, logdet, jnp.nan)


def _objective_fn(expectations):
    def F(m, S, half_logdet):
        d = m.shape[-1]
        return (expectations(m, S).value - 0.5 * d * math.log(2 * math.pi * math.e)
                - half_logdet)

    return _compile.jit(jax.vmap(F))


def half_logdet(A, coords):
    """log |det A| = (1/2) log det Sigma from a factor (Cholesky L, symmetric root C, or Sigma itself)."""
    if coords == "chol":
        return jnp.sum(jnp.log(jnp.abs(jnp.diagonal(A, axis1=-2, axis2=-1))), axis=-1)
    if coords == "sym":
        w = jnp.linalg.eigvalsh(0.5 * (A + jnp.swapaxes(A, -1, -2)))
        return jnp.sum(jnp.log(jnp.where(w > 0, w, jnp.nan)), axis=-1)
    sign, logdet = jnp.linalg.slogdet(A)
    return 0.5 * jnp.where(sign > 0, logdet, jnp.nan)


_cache = _recent.Recent()  # target -> its compiled objective functions


def _target_cache(target):
    return _cache.setdefault(target, {})


def _ladder(target):
    rule = target.info.get("quadrature")
    return TRAPEZOID_ORDERS if rule == "trapezoid" else QUADRATURE_ORDERS


def _bucket(n):
    """Pad sizes to powers of two so that the ladder compiles a handful of shapes."""
    return 1 << max(0, int(n - 1).bit_length())


def objective(target: Target, means, covs, *, half_logdets=None, return_order=False):
    """F(q) for a batch of Gaussians (means (n, d), covs (n, d, d)), exact or by the quadrature ladder.

    `return_order=True` also returns the highest order used; `half_logdets` gives log |det A| per Gaussian.
    """
    target.require_expectations("evaluating the objective")
    means = np.atleast_2d(np.asarray(means, dtype=np.float64))
    covs = np.asarray(covs, dtype=np.float64)
    if covs.ndim == 2:
        covs = covs[None]
    if half_logdets is None:
        hld = np.asarray(half_logdet(jnp.asarray(covs), "cov"))
    else:
        hld = np.atleast_1d(np.asarray(half_logdets, dtype=np.float64))
    cache = _target_cache(target)
    if target.expectations_at is None:
        fn = cache.setdefault("F", _objective_fn(target.expectations))
        vals = np.asarray(fn(jnp.asarray(means), jnp.asarray(covs), jnp.asarray(hld)))
        return (vals, None) if return_order else vals

    def evaluate(order, idx):
        fn = cache.setdefault(("F", order), _objective_fn(target.expectations_at(order)))
        pad = np.concatenate([idx, np.full(_bucket(idx.size) - idx.size, idx[0])])
        out = fn(jnp.asarray(means[pad]), jnp.asarray(covs[pad]), jnp.asarray(hld[pad]))
        return np.asarray(out)[: idx.size]

    def settled(order, idx, prev):
        """Points whose error bound at `order` already guarantees agreement with the next rung."""
        if target.quadrature_error_at is None:
            return np.zeros(idx.size, dtype=bool)
        fn = cache.setdefault(("bound", order),
                              _compile.jit(jax.vmap(target.quadrature_error_at(order))))
        pad = np.concatenate([idx, np.full(_bucket(idx.size) - idx.size, idx[0])])
        bound = np.asarray(fn(jnp.asarray(means[pad]), jnp.asarray(covs[pad])))[: idx.size]
        # |F_lo - F_hi| <= 2 bound; the margin leaves AGREEMENT - 2 bound for rounding
        return np.isfinite(prev) & (2.0 * bound <= 0.1 * AGREEMENT)

    orders = _ladder(target)
    vals = np.full(means.shape[0], np.nan)
    idx = np.arange(means.shape[0])
    used = 0
    prev = evaluate(orders[0], idx)
    for lo, hi in zip(orders[:-1], orders[1:]):
        done = settled(lo, idx, prev)
        if done.any():
            vals[idx[done]] = prev[done]
            used = max(used, lo)
            idx, prev = idx[~done], prev[~done]
            if idx.size == 0:
                return (vals, used) if return_order else vals
        cur = evaluate(hi, idx)
        ok = (np.abs(prev - cur) <= AGREEMENT) | ~np.isfinite(prev)
        vals[idx[ok]] = prev[ok]
        if ok.any():
            used = max(used, lo)
        idx, prev = idx[~ok], cur[~ok]
        if idx.size == 0:
            return (vals, used) if return_order else vals
    raise FloatingPointError(f"quadrature orders up to {orders[-1]} do not agree within "
                             f"{AGREEMENT:g} for {idx.size} of {len(vals)} Gaussians")


class Reference(NamedTuple):
    """The optimum q* = N(mean, cov), its objective value, order and stationarity residuals."""

    mean: np.ndarray
    cov: np.ndarray
    value: float
    order: int | None
    grad_norm: float
    iterations: int


def cholesky_grad_norm(target, m, S, expectations=None):
    """Norm of grad F in Cholesky coordinates: (E grad V, low(E hess V L) - diag(1/L_ii))."""
    return float(_grad_norm_fn(expectations or target.expectations)(m, S))


def _grad_norm_fn(expect):
    @_compile.jit
    def norm(m, S):
        e = expect(m, S)
        L = jnp.linalg.cholesky(S)
        gL = jnp.tril(e.hess @ L) - jnp.diag(1.0 / jnp.diag(L))
        return jnp.sqrt(jnp.sum(e.grad**2) + jnp.sum(gL**2))

    return norm


def reference(target: Target, *, order=None, tol=1e-10, max_iter=200) -> Reference:
    """q* and F*: closed form when known, else the stationary equations solved by Newton steps in m."""
    cache = _target_cache(target)
    key = ("reference", order, tol)
    if key in cache:
        return cache[key]
    if target.optimum is not None:
        m, S = (np.asarray(a) for a in target.optimum)
        val = float(objective(target, m, S)[0])
        ref = Reference(m, S, val, None, 0.0, 0)
        cache[key] = ref
        return ref
    target.require_expectations("computing the reference optimum F*")
    if target.expectations_at is not None:
        # near q* every point is evaluated at the ladder's first order: solve at that order so
        # that gaps of nearly optimal Gaussians are differences of the same quadrature
        order = _ladder(target)[0] if order is None else order
        expect = target.expectations_at(order)
    else:
        expect = target.expectations

    @_compile.jit
    def sweep(m, S):
        e = expect(m, S)
        H = 0.5 * (e.hess + e.hess.T)
        m = m - jnp.linalg.solve(H, e.grad)
        e = expect(m, S)
        Snew = jnp.linalg.inv(0.5 * (e.hess + e.hess.T))
        return m, 0.5 * (Snew + Snew.T)

    grad_norm = _grad_norm_fn(expect)
    m = jnp.zeros(target.dim)
    S = jnp.eye(target.dim)
    gnorm = math.inf
    it = 0
    for it in range(1, max_iter + 1):
        m, S = sweep(m, S)
        gnorm = float(grad_norm(m, S))
        if gnorm <= tol:
            break
    if not gnorm <= tol:
        raise FloatingPointError(f"reference solve did not reach gradient norm {tol:g} "
                                 f"(got {gnorm:.3g} after {max_iter} iterations)")
    m, S = np.asarray(m), np.asarray(S)
    if target.expectations_at is not None:
        fn = _target_cache(target).setdefault(("F", order),
                                              _objective_fn(target.expectations_at(order)))
        val = float(fn(jnp.asarray(m[None]), jnp.asarray(S[None]),
                       half_logdet(jnp.asarray(S[None]), "cov"))[0])
    else:
        val = float(objective(target, m, S)[0])
    ref = Reference(m, S, val, order, gnorm, it)
    cache[key] = ref
    return ref


def gaps(target: Target, means, covs, *, ref: Reference | None = None, half_logdets=None):
    """(F(q) - F*, F(q)) for a batch of Gaussians (NaN where F is undefined)."""
    ref = ref or reference(target)
    vals = objective(target, means, covs, half_logdets=half_logdets)
    return vals - ref.value, vals
