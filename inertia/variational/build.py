"""Kernels of registered methods on a target: step rule with overrides, start in the kernel's
coordinates."""
from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from ..targets.base import Target, TargetError, check_point
from .registry import Method, StepRule, get_estimator, get_method


def resolve_step(method: Method, target: Target, batch_size: int, accelerated: bool,
                 step_size=None, s=None) -> StepRule:
    """Default step size / acceleration parameter of the method's step rule, with overrides."""
    target.require_bounds()
    rule = method.step_rule(target.alpha, target.beta, target.dim, batch_size)
    eta = rule.eta if step_size is None else float(step_size)
    s = rule.s if s is None else float(s)
    if accelerated and s is None:
        raise ValueError(f"method {method.name!r} has no acceleration parameter")
    if not (eta > 0 and math.isfinite(eta)):
        raise ValueError(f"step size must be positive and finite, got {eta}")
    return StepRule(eta, s)


def make_kernel(target: Target, method: str | Method, *, accelerated=None, batch_size=1,
                step_size=None, s=None, **options):
    """(kernel, method, estimator, accelerated, StepRule) for a registered method on a target."""
    m = get_method(method) if isinstance(method, str) else method
    est = get_estimator(m)
    if accelerated is None:
        accelerated = m.accelerable
    if accelerated and not m.accelerable:
        raise ValueError(f"method {m.name!r} is a baseline without an accelerated variant; "
                         "pass accelerated=False")
    if not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    if est.exact:
        target.require_expectations(f"method {m.name!r}")
    if est.needs_hvp and target.hvp is None:
        raise TargetError(f"method {m.name!r} needs Hessian-vector products, which target "
                          f"{target.name!r} does not provide")
    rule = resolve_step(m, target, batch_size, accelerated, step_size, s)
    kernel = m.build(target, est, accelerated, int(batch_size), rule.eta, rule.s, options)
    return kernel, m, est, bool(accelerated), rule


def check_init(target, init):
    """`init` as given when it is a pair (mean (d,), factor (d, d)) in the target's flat
    coordinates; else a ValueError naming what was given and what the target's sites are."""
    if init is None:
        return None
    d = target.dim
    sites = (getattr(target, "info", None) or {}).get("names")
    where = f" (the target's coordinates: {list(sites)[:8]}{' ...' if d > 8 else ''})" if sites \
        else ""
    what = (f"a dict with keys {sorted(init)}" if isinstance(init, dict)
            else f"a {type(init).__name__}")
    if isinstance(init, dict) or not isinstance(init, (tuple, list)) or len(init) != 2:
        raise ValueError(f"init must be a pair (mean of shape ({d},), factor of shape ({d}, {d}))"
                         f" in the target's flat unconstrained coordinates; got {what}{where}")
    shapes = [np.shape(a) for a in init]
    if shapes != [(d,), (d, d)]:
        raise ValueError(f"init must be (mean ({d},), factor ({d}, {d})); got shapes {shapes}"
                         f"{where}")
    return init


def initial(target, init, coords):
    """The start (mean, factor in the kernel's coordinates): N(0, I), or `init` checked."""
    d = target.dim
    if init is None:
        m0, A0 = jnp.zeros(d), jnp.eye(d)
    else:
        m0, A0 = (jnp.asarray(a, dtype=jnp.float64) for a in init)
        if m0.shape != (d,) or A0.shape != (d, d):
            raise ValueError(f"init must be (mean ({d},), factor ({d}, {d})); got "
                             f"{m0.shape}, {A0.shape}")
    check_point(target, m0)
    return m0, to_coords(A0, coords)


def to_coords(F, coords):
    """A factor F (F F^T = Sigma) in the kernel's coordinates: Cholesky, symmetric root, or as is
    for "cov" kernels (whose init squares it); kept bitwise when F is already of that form."""
    F = jnp.asarray(F)
    host = np.asarray(F)  # the form checks in numpy: no compilation for them
    if coords == "chol":
        return F if np.array_equal(host, np.tril(host)) else jnp.linalg.cholesky(F @ F.T)
    if coords == "sym" and not np.array_equal(host, host.T):
        w, Q = jnp.linalg.eigh(F @ F.T)
        return (Q * jnp.sqrt(jnp.maximum(w, 0.0))) @ Q.T
    return F


__all__ = ["resolve_step", "make_kernel", "initial", "to_coords"]
