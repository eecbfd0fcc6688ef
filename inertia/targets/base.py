"""The `Target` abstraction: a potential V = -log pi (up to a constant) with its derivatives."""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from inertia import _compile, _recent
from .._scope import float64_leaves
from ..posterior import site_names
Array = jax.Array


class GaussianExpectations(NamedTuple):
    """E_q V, E_q grad V and E_q hess V for q = N(m, S)."""

    value: Array
    grad: Array
    hess: Array


class ObservationModel(NamedTuple):
    """Per-observation structure V(x) = prior(x) + sum_i loss(x; data_i), for minibatch samplers."""

    loss: Callable[[Array, Any], Array]
    data: Any
    num_obs: int
    prior: Callable[[Array], Array]


class TargetError(ValueError):
    """Raised for invalid targets or for a target lacking a capability a method needs."""


@dataclasses.dataclass(frozen=True, eq=False)
class Target:
    """A differentiable target pi(x) proportional to exp(-V(x)) on R^dim.

    Functions act on one flat vector; methods vmap them. `expectations(m, S)`: exact Gaussian expectations
    or None. `affine = (parent, shift, F)` marks V(z) = parent.V(shift + F z) (whitened targets).
    """

    dim: int
    potential: Callable[[Array], Array]
    grad: Callable[[Array], Array]
    hvp: Callable[[Array, Array], Array]
    alpha: Optional[float] = None
    beta: Optional[float] = None
    expectations: Optional[Callable[[Array, Array], GaussianExpectations]] = None
    # order -> expectations function, for targets whose expectations use quadrature of that order
    expectations_at: Optional[Callable[[int], Callable[[Array, Array], GaussianExpectations]]] = None
    # order -> (m, S) -> a rigorous bound on |E_q V at that order - E_q V| (lets the ladder skip
    # the check rung where the bound already guarantees agreement)
    quadrature_error_at: Optional[Callable[[int], Callable[[Array, Array], Array]]] = None
    hess_matmul_fn: Optional[Callable[[Array, Array], Array]] = None
    # (points (b, d), M) -> mean_j hess V(x_j) @ M; closed forms (GLMs) avoid b separate products
    mean_hess_matmul_fn: Optional[Callable[[Array, Array], Array]] = None
    # (points (b, d), L lower triangular) -> low(mean_j hess V(x_j) @ L), skipping L's zeros and
    # the discarded upper triangle (inertia.linalg.tril_product); the Cholesky estimators use it
    mean_hess_tril_fn: Optional[Callable[[Array, Array], Array]] = None
    observations: Optional[ObservationModel] = None
    optimum: Optional[tuple] = None  # exact (mean, cov) of argmin F when known in closed form
    name: str = "target"
    unravel: Optional[Callable[[Array], Any]] = None  # flat vector -> pytree, for pytree targets
    info: dict = dataclasses.field(default_factory=dict)
    # dtype -> this target rebuilt from its data cast to dtype (only its functions are used)
    recast: Optional[Callable[[Any], "Target"]] = dataclasses.field(default=None, repr=False)
    dtype: str = "float64"  # the float type its functions compute in
    # (parent, shift, factor) when V(z) = parent.V(shift + factor z): `jitted` then reuses the
    # parent's compiled functions instead of compiling this target's (whitened targets)
    affine: Optional[tuple] = dataclasses.field(default=None, repr=False)

    def __post_init__(self):
        if not isinstance(self.dim, int) or self.dim < 1:
            raise TargetError(f"dim must be a positive integer, got {self.dim!r}")
        a, b = self.alpha, self.beta
        if a is not None and not a > 0:
            raise TargetError(f"curvature lower bound alpha must be > 0, got {a}")
        if a is not None and b is not None and a > b:
            raise TargetError(f"curvature bounds need alpha <= beta, got alpha={a} > beta={b}")

    def __repr__(self) -> str:
        t = self
        bounds = (f", alpha = {t.alpha:.4g}, beta = {t.beta:.4g}" if t.alpha is not None
                  and t.beta is not None else "")
        parts = [p for p in ("expectations" if t.expectations is not None else "",
                             "observations" if t.observations is not None else "",
                             "numpyro" if "numpyro" in (t.info or {}) else "") if p]
        return (f"<Target {t.name}: dim {t.dim}{bounds}"
                f"{', ' + ', '.join(parts) if parts else ''}"
                f"{'' if t.dtype == 'float64' else ', ' + t.dtype}>")

    def gradient_flops(self) -> float:
        """Flops of one value-and-gradient evaluation of the potential (HLO cost analysis)."""
        x = jax.ShapeDtypeStruct((self.dim,), jax.dtypes.canonicalize_dtype(jnp.float64))
        cost = jitted(self, "value_and_grad").lower(x).cost_analysis()
        cost = cost[0] if isinstance(cost, (list, tuple)) else cost
        return float((cost or {}).get("flops", 0.0))

    @property
    def kappa(self) -> float:
        """Condition number beta / alpha (requires both bounds)."""
        self.require_bounds()
        return self.beta / self.alpha

    def require_bounds(self):
        if self.alpha is None or self.beta is None:
            raise TargetError(
                f"target {self.name!r} has no curvature bounds alpha <= beta; pass alpha= and beta="
            )

    def require_expectations(self, why: str = "this method"):
        if self.expectations is None:
            raise TargetError(
                f"{why} needs exact Gaussian expectations, which target {self.name!r} does not provide"
            )

    def hessian(self, x: Array) -> Array:
        """Dense Hessian (d HVPs); meant for small d."""
        return self.hess_matmul(x, jnp.eye(self.dim, dtype=jnp.result_type(x)))

    def hess_matmul(self, x: Array, M: Array) -> Array:
        """hess V(x) @ M, column by column with HVPs unless a closed form was given."""
        if self.hess_matmul_fn is not None:
            return self.hess_matmul_fn(x, M)
        return jax.vmap(lambda v: self.hvp(x, v), in_axes=1, out_axes=1)(M)

    def mean_hess_matmul(self, xs: Array, M: Array) -> Array:
        """mean_j hess V(xs[j]) @ M over a batch of points xs (b, d)."""
        if self.mean_hess_matmul_fn is not None:
            return self.mean_hess_matmul_fn(xs, M)
        return jnp.mean(jax.vmap(lambda x: self.hess_matmul(x, M))(xs), axis=0)

    def mean_hess_matmul_low(self, xs: Array, L: Array) -> Array:
        """low(mean_j hess V(xs[j]) @ L) for lower-triangular L."""
        if self.mean_hess_tril_fn is not None:
            return self.mean_hess_tril_fn(xs, L)
        return jnp.tril(self.mean_hess_matmul(xs, L))

    def logdensity(self, x: Array) -> Array:
        return -self.potential(x)

    def replace(self, **kw) -> "Target":
        return dataclasses.replace(self, **kw)

    def astype(self, dtype) -> "Target":
        """This target computed in `dtype`, its arrays cast by its `recast` rule."""
        dtype = jnp.dtype(dtype)
        if dtype.name == self.dtype:
            return self
        if dtype not in (jnp.float32, jnp.float64):
            raise TargetError(f"dtype must be float32 or float64, got {dtype.name}")
        cache = _CAST_CACHE.setdefault(self.potential, {})
        if dtype.name not in cache:
            with jax.enable_x64(True):  # as inside the entry points, whatever the caller's flag
                src = self.recast(dtype) if self.recast is not None else self
                if dtype == jnp.float32 and _float64_values(src):
                    src = _without_x64(src)
                _check_dtype(src, dtype)
            cache[dtype.name] = {k: getattr(src, k) for k in _FUNCTIONS}
        return dataclasses.replace(self, dtype=dtype.name, **cache[dtype.name])


_FUNCTIONS = ("potential", "grad", "hvp", "expectations", "expectations_at", "hess_matmul_fn",
              "mean_hess_matmul_fn", "mean_hess_tril_fn", "observations", "unravel")
_CAST_CACHE = _recent.Recent()  # potential -> {dtype: functions} (its values call the key)


def _float64_values(target: Target) -> bool:
    """Whether V, grad V or the HVP at float32 points hold a float64 value (constants included)."""
    x = jax.ShapeDtypeStruct((target.dim,), jnp.float32)
    fns = [(target.potential, (x,)), (target.grad, (x,))]
    if target.hvp is not None:
        fns.append((target.hvp, (x, x)))

    def found(jaxpr):
        avals = [v.aval for v in jaxpr.constvars + jaxpr.invars]
        avals += [v.aval for e in jaxpr.eqns for v in e.outvars]
        return (any(getattr(a, "dtype", None) == jnp.float64 for a in avals)
                or any(found(s) for s in jax.extend.core.subjaxprs(jaxpr)))

    return any(found(jax.make_jaxpr(fn)(*args).jaxpr) for fn, args in fns)


def _without_x64(target: Target) -> Target:
    """The target's potential traced with float64 off (float32 arrays); derivatives by autodiff."""
    def potential(x):
        with jax.enable_x64(False):
            return target.potential(x)

    grad, hvp = _autodiff(potential)
    return target.replace(potential=potential, grad=grad, hvp=hvp, expectations=None,
                          expectations_at=None, hess_matmul_fn=None, mean_hess_matmul_fn=None,
                          mean_hess_tril_fn=None)


def _check_dtype(target: Target, dtype):
    """Raise unless V, grad V and HVP compute in `dtype` (float32: no float64 value anywhere)."""
    x = jax.ShapeDtypeStruct((target.dim,), dtype)
    outs = [jax.eval_shape(target.potential, x), jax.eval_shape(target.grad, x)]
    if target.hvp is not None:
        outs.append(jax.eval_shape(target.hvp, x, x))
    if ({o.dtype.name for o in outs} != {dtype.name}
            or (dtype == jnp.float32 and _float64_values(target))):
        raise TargetError(
            f"target {target.name!r} does not compute in {dtype.name} (its functions close over "
            f"float64 arrays): build it from {dtype.name} arrays, or give it a cast rule, "
            f"target.replace(recast=lambda dtype: <the target rebuilt with arrays of that dtype>)")


def cast_floats(tree, dtype):
    """`tree` with floating leaves cast to `dtype`; for float32 also 64-bit integers to int32."""
    narrow = jnp.dtype(dtype) == jnp.float32

    def cast(a):
        if not isinstance(a, (np.ndarray, jax.Array)):
            return a
        if jnp.issubdtype(a.dtype, jnp.floating):
            return jnp.asarray(a, dtype=dtype)
        if narrow and jnp.issubdtype(a.dtype, jnp.integer) and a.dtype.itemsize == 8:
            return _int32(a)
        return a

    return jax.tree_util.tree_map(cast, tree)


def _int32(a):
    """The 64-bit integer array `a` as int32 (uint32 when unsigned), of a's kind (numpy or JAX)."""
    to = np.uint32 if jnp.issubdtype(a.dtype, jnp.unsignedinteger) else np.int32
    host = np.asarray(a)
    info = np.iinfo(to)
    if host.size and (host.min() < info.min or host.max() > info.max):
        raise TargetError(f"an integer data array holds values in [{host.min()}, {host.max()}], "
                          f"past {np.dtype(to).name}, the integer type of float32 targets: "
                          "fit it in float64")
    return host.astype(to) if isinstance(a, np.ndarray) else jnp.asarray(host, dtype=to)


def _autodiff(potential):
    grad = jax.grad(potential)

    def hvp(x, v):
        return jax.jvp(grad, (x,), (v,))[1]

    return grad, hvp


def from_potential(potential, dim, *, alpha=None, beta=None, name="potential", **kw) -> Target:
    """Target from a potential V on a flat vector; derivatives by autodiff."""
    grad, hvp = _autodiff(potential)
    return Target(dim=int(dim), potential=potential, grad=grad, hvp=hvp, alpha=alpha, beta=beta,
                  name=name, **kw)


def ravel(example):
    """(flat float64 vector, unravel) of a pytree of arrays, with no device work."""
    leaves = jax.tree_util.tree_leaves(example)
    if not leaves or not all(isinstance(a, (np.ndarray, np.generic, float, int)) for a in leaves):
        flat, unravel = ravel_pytree(example)
        return jnp.asarray(flat, dtype=jnp.float64), unravel
    box = []

    def flatten(tree):
        flat, unravel = ravel_pytree(tree)
        box.append(unravel)  # closes over static sizes and shapes only
        return flat

    jax.eval_shape(flatten, example)
    return np.concatenate([np.ravel(a) for a in leaves]).astype(np.float64), box[0]


def from_logdensity(logdensity_fn, example, *, alpha=None, beta=None, name="logdensity",
                    **kw) -> Target:
    """Target from a JAX log density on a flat vector or a pytree (ravelled), in float64, by autodiff."""
    x64_off = not jax.config.jax_enable_x64
    with jax.enable_x64(True):
        if x64_off:
            example = float64_leaves(example)
        return _from_logdensity(logdensity_fn, example, alpha=alpha, beta=beta, name=name, **kw)


def _from_logdensity(logdensity_fn, example, *, alpha=None, beta=None, name="logdensity",
                     **kw) -> Target:
    flat, unravel = ravel(example)
    if flat.ndim != 1 or flat.size == 0:
        raise TargetError("example must be a non-empty array or pytree of arrays")

    def potential(x):
        return -logdensity_fn(unravel(x))

    if isinstance(example, dict) and "info" not in kw:
        try:
            kw["info"] = {"names": site_names({k: jnp.shape(v) for k, v in example.items()})}
        except ValueError as err:
            raise TargetError(str(err)) from None
    kw.setdefault("recast", lambda dtype: from_logdensity(logdensity_fn,
                                                          cast_floats(example, dtype)))
    return from_potential(potential, flat.size, alpha=alpha, beta=beta, name=name, unravel=unravel,
                          **kw)


_JIT_CACHE = _recent.Recent()  # potential -> {what: compiled function}
_BATCHED = _recent.Recent()  # potential -> {optimized: compiled batched potential}
BATCH = 128  # rows per call of `batched_potential`: one executable for every batched evaluation


def batched_potential(potential, optimized: bool = True):
    """jit(vmap(V)) of a potential at BATCH rows, cached; `optimized=False`: at the run's tier."""
    cache = _BATCHED.setdefault(potential, {})
    fn = cache.get(optimized)
    if fn is None:
        # the monitor's is compiled for run time at every tier (its draws are most of a small
        # fit's arithmetic); a single pass over a run's draws takes the run's tier
        fn = cache[optimized] = _compile.jit(jax.vmap(potential), optimized=optimized)
    return fn


def potential_on_rows(potential, X, batch: int = BATCH, optimized: bool = True) -> np.ndarray:
    """V at each row of X (n, d), in calls of `batch` rows (the last padded by its first row)."""
    return on_rows(batched_potential(potential, optimized), X, batch)


def on_rows(fn, X, batch: int = BATCH) -> np.ndarray:
    """fn (compiled for `batch` rows) at each row of X (n, d), the last call padded: one shape for any n."""
    X = np.asarray(X)
    out = []
    for i in range(0, X.shape[0], batch):
        chunk = X[i:i + batch]
        n = chunk.shape[0]
        if n < batch:
            chunk = np.concatenate([chunk, np.repeat(chunk[:1], batch - n, axis=0)])
        out.append(np.asarray(fn(chunk))[:n])
    return np.concatenate(out) if out else np.zeros(0)


def jitted(target: Target, what: str):
    """Compiled "value_and_grad", "hessian" or "hvp" of a target, cached per potential function."""
    if target.affine is not None:
        return _affine_jitted(target.affine, what)
    cache = _JIT_CACHE.setdefault(target.potential, {})
    if what not in cache:
        if what == "value_and_grad":
            cache[what] = _compile.jit(lambda x: (target.potential(x), target.grad(x)))
        elif what == "hessian":
            cache[what] = _compile.jit(target.hessian)
        elif what == "hvp":
            cache[what] = _compile.jit(target.hvp)
        else:
            raise ValueError(f"unknown jitted function {what!r}")
    return cache[what]


def _affine_jitted(affine, what: str):
    """`jitted` of z -> parent(shift + F z) by the chain rule (F^T grad, F^T H F, F^T H F v) on the host."""
    parent, shift, F = affine
    shift, F = np.asarray(shift, dtype=np.float64), np.asarray(F, dtype=np.float64)
    fn = jitted(parent, what)

    def host(a):
        return np.asarray(a, dtype=np.float64)

    def dev(a):
        return jnp.asarray(a, dtype=parent.dtype)

    def x(z):
        return dev(shift + F @ host(z))

    if what == "value_and_grad":
        def value_and_grad(z):
            v, g = fn(x(z))
            return v, dev(F.T @ host(g))
        return value_and_grad
    if what == "hessian":
        return lambda z: dev(F.T @ host(fn(x(z))) @ F)
    if what == "hvp":
        return lambda z, v: dev(F.T @ host(fn(x(z), dev(F @ host(v)))))
    raise ValueError(f"unknown jitted function {what!r}")


def check_point(target: Target, x) -> Array:
    """Validate shape and finiteness of V and grad V at x; raise a clear error otherwise."""
    x = jnp.asarray(x)
    if x.shape != (target.dim,):
        raise TargetError(f"expected a point of shape ({target.dim},), got {x.shape}")
    v, g = jitted(target, "value_and_grad")(x)
    if not np.isfinite(float(v)):
        raise FloatingPointError(f"potential V is not finite at the query point ({v})")
    if not np.all(np.isfinite(np.asarray(g))):
        raise FloatingPointError("grad V is not finite at the query point")
    return x
