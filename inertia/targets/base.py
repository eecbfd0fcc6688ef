"""The `Target` abstraction: a potential V = -log pi (up to a constant) with its derivatives."""
from __future__ import annotations

import dataclasses
import weakref
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

Array = jax.Array


class GaussianExpectations(NamedTuple):
    """E_q V, E_q grad V and E_q hess V for q = N(m, S)."""

    value: Array
    grad: Array
    hess: Array


class ObservationModel(NamedTuple):
    """Per-observation structure V(x) = prior(x) + sum_i loss(x; data_i), for minibatch samplers.

    `loss(x, datum)` is the loss of one observation; `data` is a pytree whose leaves have a leading
    observation axis of length `num_obs`; `prior(x)` is the negative log prior (or 0).
    """

    loss: Callable[[Array, Any], Array]
    data: Any
    num_obs: int
    prior: Callable[[Array], Array]


class TargetError(ValueError):
    """Raised for invalid targets or for a target lacking a capability a method needs."""


@dataclasses.dataclass(frozen=True, eq=False)
class Target:
    """A differentiable target pi(x) proportional to exp(-V(x)) on R^dim.

    Functions act on a single flat vector; methods vmap them. `expectations(m, S)` gives exact
    Gaussian expectations where the target allows them (None otherwise). `hess_matmul(x, M)`
    returns hess V(x) @ M (d HVPs by default; closed forms may override).
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
    observations: Optional[ObservationModel] = None
    optimum: Optional[tuple] = None  # exact (mean, cov) of argmin F when known in closed form
    name: str = "target"
    unravel: Optional[Callable[[Array], Any]] = None  # flat vector -> pytree, for pytree targets
    info: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.dim, int) or self.dim < 1:
            raise TargetError(f"dim must be a positive integer, got {self.dim!r}")
        a, b = self.alpha, self.beta
        if a is not None and not a > 0:
            raise TargetError(f"curvature lower bound alpha must be > 0, got {a}")
        if a is not None and b is not None and a > b:
            raise TargetError(f"curvature bounds need alpha <= beta, got alpha={a} > beta={b}")

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

    def logdensity(self, x: Array) -> Array:
        return -self.potential(x)

    def replace(self, **kw) -> "Target":
        return dataclasses.replace(self, **kw)


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


def from_logdensity(logdensity_fn, example, *, alpha=None, beta=None, name="logdensity",
                    **kw) -> Target:
    """Target from a JAX log density on a flat vector or a pytree (ravelled); autodiff derivatives."""
    flat, unravel = ravel_pytree(example)
    if flat.ndim != 1 or flat.size == 0:
        raise TargetError("example must be a non-empty array or pytree of arrays")

    def potential(x):
        return -logdensity_fn(unravel(x))

    if isinstance(example, dict) and "info" not in kw:
        from ..posterior import site_names

        kw["info"] = {"names": site_names({k: jnp.shape(v) for k, v in example.items()})}
    return from_potential(potential, flat.size, alpha=alpha, beta=beta, name=name, unravel=unravel,
                          **kw)


_JIT_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def jitted(target: Target, what: str):
    """jit-compiled "value_and_grad" (V, grad V) or "hessian" of a target, cached per potential
    function (targets that differ only in bounds or names share the compiled code)."""
    cache = _JIT_CACHE.setdefault(target.potential, {})
    if what not in cache:
        if what == "value_and_grad":
            cache[what] = jax.jit(lambda x: (target.potential(x), target.grad(x)))
        elif what == "hessian":
            cache[what] = jax.jit(target.hessian)
        else:
            raise ValueError(f"unknown jitted function {what!r}")
    return cache[what]


def check_point(target: Target, x) -> Array:
    """Validate shape and finiteness of V and grad V at x; raise a clear error otherwise."""
    x = jnp.asarray(x)
    if x.shape != (target.dim,):
        raise TargetError(f"expected a point of shape ({target.dim},), got {x.shape}")
    v, g = jitted(target, "value_and_grad")(x)
    if not bool(jnp.isfinite(v)):
        raise FloatingPointError(f"potential V is not finite at the query point ({v})")
    if not bool(jnp.all(jnp.isfinite(g))):
        raise FloatingPointError("grad V is not finite at the query point")
    return x
