"""Per-observation losses for calibrated SG(L)D (Wang, Huggins et al. 2026, Section 5).

A `Model` holds N observations, a loss l(theta, datum) and a Gaussian prior theta^T Gamma theta / 2. GLMs
carry closed-form derivatives in eta = x^T theta (curvature sums X^T diag(.) X, O(N D^2)); any other
JAX loss works through autodiff.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
from ..data.sources import as_rows

Array = jax.Array


class Link(NamedTuple):
    """Loss of one GLM observation in eta = x^T theta: `value`, `d1`, `d2` by `kind` and its parameters."""

    kind: str
    params: tuple = ()

    def _p(self):
        return jnp.asarray(self.params, dtype=jnp.float64)

    def value(self, eta, y):
        return _LINKS[self.kind][0](eta, y, self._p())

    def d1(self, eta, y):
        return _LINKS[self.kind][1](eta, y, self._p())

    def d2(self, eta, y):
        return _LINKS[self.kind][2](eta, y, self._p())


@dataclasses.dataclass(frozen=True, eq=False)
class Model:
    """N observations with loss `loss(theta, datum)` and prior precision Gamma; GLMs also set X, y, link."""

    dim: int
    num_obs: int
    data: Any
    loss: Callable[[Array, Any], Array]
    prior_precision: Optional[np.ndarray] = None
    X: Optional[Array] = None
    y: Optional[Array] = None
    link: Optional[Link] = None
    name: str = "model"
    info: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        if self.prior_precision is not None:
            G = np.asarray(self.prior_precision, dtype=np.float64)
            if G.ndim == 0:
                G = float(G) * np.eye(self.dim)
            if G.shape != (self.dim, self.dim):
                raise ValueError(f"prior precision must be a scalar or ({self.dim}, {self.dim}); "
                                 f"got shape {G.shape}")
            if not np.allclose(G, G.T) or np.linalg.eigvalsh(G)[0] < 0:
                raise ValueError("prior precision Gamma must be symmetric positive semi-definite")
            object.__setattr__(self, "prior_precision", G)

    @property
    def is_glm(self) -> bool:
        return self.link is not None

    @property
    def gamma(self) -> np.ndarray:
        """Prior precision Gamma as a dense (D, D) array (zeros when there is no prior)."""
        if self.prior_precision is None:
            return np.zeros((self.dim, self.dim))
        return self.prior_precision

    def take(self, idx) -> Any:
        """Data of the observations `idx` (a pytree with leading axis len(idx))."""
        return jax.tree_util.tree_map(lambda a: a[idx], self.data)

    def subset(self, idx) -> "Model":
        """The same model on the observations `idx` (num_obs becomes len(idx))."""
        idx = np.asarray(idx)
        kw = dict(data=self.take(idx), num_obs=int(idx.shape[0]))
        if self.is_glm:
            kw.update(X=self.X[idx], y=self.y[idx])
        return dataclasses.replace(self, **kw)

    # -- per-observation derivatives ---------------------------------------------------------
    def example_grads(self, theta: Array, data=None) -> Array:
        """Per-example gradients grad l_n(theta), shape (n, D) (n = all or the given data)."""
        data = self.data if data is None else data
        if self.is_glm:
            X, y = data
            return X * self.link.d1(X @ theta, y)[:, None]
        return jax.vmap(jax.grad(self.loss), in_axes=(None, 0))(theta, data)

    def example_hessians(self, theta: Array, data=None) -> Array:
        """Per-example Hessians J_n(theta), shape (n, D, D); for small n or generic models only."""
        data = self.data if data is None else data
        if self.is_glm:
            X, y = data
            w = self.link.d2(X @ theta, y)
            return w[:, None, None] * X[:, :, None] * X[:, None, :]
        return jax.vmap(jax.hessian(self.loss), in_axes=(None, 0))(theta, data)

    def curvature_weights(self, theta: Array) -> Array:
        """GLM weights w_n = f''(eta_n, y_n) with J_n = w_n x_n x_n^T."""
        return self.link.d2(self.X @ theta, self.y)

    def minibatch_grad(self, theta: Array, idx: Array) -> Array:
        """G(theta) = B^-1 sum_{n in idx} grad l_n(theta) + N^-1 Gamma theta (eq. 3)."""
        g = jnp.mean(self.example_grads(theta, self.take(idx)), axis=0)
        if self.prior_precision is not None:
            g = g + jnp.asarray(self.prior_precision) @ theta / self.num_obs
        return g

    def sampler_parts(self):
        """(static grad(theta, idx, data), data): the minibatch gradient with data as an argument."""
        gamma_n = (None if self.prior_precision is None
                   else jnp.asarray(self.prior_precision) / self.num_obs)
        if self.is_glm:
            return glm_batch_grad(self.link.kind), (self.X, self.y, self.link._p(), gamma_n)
        return generic_batch_grad(self.loss), (self.data, gamma_n)

    def objective(self, theta: Array) -> Array:
        """L(theta) = N^-1 sum_n l_n(theta) + N^-1 R(theta) (eq. 2)."""
        if self.is_glm:
            v = jnp.mean(self.link.value(self.X @ theta, self.y))
        else:
            v = jnp.mean(jax.vmap(self.loss, in_axes=(None, 0))(theta, self.data))
        if self.prior_precision is not None:
            v = v + 0.5 * theta @ (jnp.asarray(self.prior_precision) @ theta) / self.num_obs
        return v

    def full_grad(self, theta: Array) -> Array:
        """grad L(theta) over all observations."""
        if self.is_glm:
            g = self.X.T @ self.link.d1(self.X @ theta, self.y) / self.num_obs
        else:
            g = jnp.mean(self.example_grads(theta), axis=0)
        if self.prior_precision is not None:
            g = g + jnp.asarray(self.prior_precision) @ theta / self.num_obs
        return g

    def mean_hessian(self, theta: Array) -> Array:
        """J(theta) = N^-1 sum_n J_n(theta) (without the prior); O(N D^2) for GLMs."""
        if self.is_glm:
            w = self.curvature_weights(theta)
            return (self.X.T * w) @ self.X / self.num_obs
        return jnp.mean(self.example_hessians(theta), axis=0)


# -- links: (value, d1, d2)(eta, y, params) ----------------------------------------------------
def _gauss(eta, y, p):  # p = (1 / sigma^2,)
    return 0.5 * (y - eta) ** 2 * p[0]


def _gauss_d1(eta, y, p):
    return -(y - eta) * p[0]


def _gauss_d2(eta, y, p):
    return jnp.full_like(eta, 1.0) * p[0]


def _beta(eta, y, p):  # p = (beta_div - 1, c, sigma^2)
    a, c, s2 = p[0], p[1], p[2]
    return -c * jnp.expm1(-a * (y - eta) ** 2 / (2 * s2)) / a


def _beta_d1(eta, y, p):
    a, c, s2 = p[0], p[1], p[2]
    r = y - eta
    return -c * jnp.exp(-a * r * r / (2 * s2)) * r / s2


def _beta_d2(eta, y, p):
    a, c, s2 = p[0], p[1], p[2]
    r = y - eta
    return c * jnp.exp(-a * r * r / (2 * s2)) / s2 * (1.0 - a * r * r / s2)


def _pois(eta, y, p):
    return jnp.exp(eta) - y * eta


def _pois_d1(eta, y, p):
    return jnp.exp(eta) - y


def _pois_d2(eta, y, p):
    return jnp.exp(eta)


def _logit(eta, y, p):
    return jnp.logaddexp(0.0, eta) - y * eta


def _logit_d1(eta, y, p):
    return jax.nn.sigmoid(eta) - y


def _logit_d2(eta, y, p):
    q = jax.nn.sigmoid(eta)
    return q * (1.0 - q)


_LINKS = {"gaussian": (_gauss, _gauss_d1, _gauss_d2), "beta": (_beta, _beta_d1, _beta_d2),
          "poisson": (_pois, _pois_d1, _pois_d2), "logistic": (_logit, _logit_d1, _logit_d2)}


def gaussian_link(sigma: float) -> Link:
    """Gaussian log loss l = r^2 / (2 sigma^2), r = y - eta."""
    return Link("gaussian", (1.0 / float(sigma) ** 2,))


def beta_divergence_link(sigma: float, beta_div: float) -> Link:
    """Gaussian beta-divergence loss l = c (1 - w) / (beta_div - 1) (docs/sgmcmc.md, decisions)."""
    a = float(beta_div) - 1.0
    if not a > 0:
        raise ValueError(f"beta_div must be > 1 (beta_div -> 1 is the log loss); got {beta_div}")
    s2 = float(sigma) ** 2
    return Link("beta", (a, (2 * math.pi * s2) ** (-a / 2), s2))


def poisson_link() -> Link:
    """Poisson log loss l = exp(eta) - y eta (log y! dropped)."""
    return Link("poisson")


def logistic_link() -> Link:
    """Logistic loss l = log(1 + exp(eta)) - y eta, y in {0, 1}."""
    return Link("logistic")


@functools.lru_cache(maxsize=None)
def glm_batch_grad(kind: str):
    """Static minibatch gradient grad(theta, idx, (X, y, params, Gamma / N)) for a GLM kind."""
    d1 = _LINKS[kind][1]

    def grad(theta, idx, data):
        X, y, params, gamma_n = data
        Xb = X[idx]
        g = Xb.T @ d1(Xb @ theta, y[idx], params) / idx.shape[0]
        return g if gamma_n is None else g + gamma_n @ theta

    return grad


@functools.lru_cache(maxsize=None)
def generic_batch_grad(loss):
    """Static minibatch gradient grad(theta, idx, (data, Gamma / N)) for a per-example loss."""
    g1 = jax.grad(loss)

    def grad(theta, idx, data):
        d, gamma_n = data
        batch = jax.tree_util.tree_map(lambda a: a[idx], d)
        g = jnp.mean(jax.vmap(g1, (None, 0))(theta, batch), axis=0)
        return g if gamma_n is None else g + gamma_n @ theta

    return grad


# -- constructors -------------------------------------------------------------------------------
def _design(X, y, intercept):
    X, y = as_rows(X, y)
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise ValueError("X and y must be finite (found NaN or inf)")
    if intercept:
        X = np.hstack([np.ones((X.shape[0], 1)), X])
    return X, y


def glm(X, y, link: Link, *, prior_precision=None, intercept=False, name="glm",
        info=None) -> Model:
    """A GLM-type model: loss l_n(theta) = link.value(x_n^T theta, y_n), closed-form derivatives."""
    X, y = _design(X, y, intercept)
    Xj, yj = jnp.asarray(X), jnp.asarray(y)

    def loss(theta, datum):
        x, yy = datum
        return link.value(x @ theta, yy)

    return Model(dim=X.shape[1], num_obs=X.shape[0], data=(Xj, yj), loss=loss,
                 prior_precision=prior_precision, X=Xj, y=yj, link=link, name=name,
                 info=dict(info or {}, intercept=bool(intercept)))


def ols_residual_sd(X, y) -> float:
    """Residual standard deviation of least squares, sqrt(RSS / (N - D))."""
    X = np.asarray(X, float)
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    dof = max(X.shape[0] - X.shape[1], 1)
    return float(np.sqrt(np.sum((y - X @ coef) ** 2) / dof))


def linear_link(loss: str, sigma: float, beta_div: float = 1.5):
    """(link, info) of a linear regression's loss: Gaussian log loss or beta divergence."""
    if not sigma > 0:
        raise ValueError(f"sigma must be positive; got {sigma}")
    if loss == "log":
        link = gaussian_link(sigma)
    elif loss == "beta":
        link = beta_divergence_link(sigma, beta_div)
    else:
        raise ValueError(f"unknown loss {loss!r}; choose 'log' or 'beta'")
    return link, {"kind": "linear", "loss": loss, "sigma": float(sigma),
                  "beta_div": float(beta_div) if loss == "beta" else None}


def linear_regression(X, y, *, loss="log", beta_div=1.5, sigma=None, prior_precision=None,
                      intercept=False) -> Model:
    """Linear regression, Gaussian log or beta-divergence loss (`sigma`: least squares' residual sd)."""
    Xd, yd = _design(X, y, intercept)
    if sigma is None:
        sigma = ols_residual_sd(Xd, yd)
    link, info = linear_link(loss, sigma, beta_div)
    return glm(Xd, yd, link, prior_precision=prior_precision, intercept=False,
               name=f"linear-{loss}", info=info)


def poisson_regression(X, y, *, prior_precision=None, intercept=False) -> Model:
    """Poisson regression with log link."""
    Xd, yd = _design(X, y, intercept)
    if np.any(yd < 0):
        raise ValueError("Poisson responses must be non-negative counts")
    return glm(Xd, yd, poisson_link(), prior_precision=prior_precision, name="poisson",
               info={"kind": "poisson"})


def logistic_regression(X, y, *, prior_precision=None, intercept=False) -> Model:
    """Logistic regression, labels y in {0, 1}."""
    Xd, yd = _design(X, y, intercept)
    if not set(np.unique(yd).tolist()) <= {0.0, 1.0}:
        raise ValueError("logistic regression needs labels in {0, 1}")
    return glm(Xd, yd, logistic_link(), prior_precision=prior_precision, name="logistic",
               info={"kind": "logistic"})


def from_loss(loss: Callable[[Array, Any], Array], data, dim: int, *, prior_precision=None,
              name="custom") -> Model:
    """Any per-example JAX loss `loss(theta, datum)` on a flat theta of length `dim` (autodiff)."""
    leaves = jax.tree_util.tree_leaves(data)
    if not leaves:
        raise ValueError("data must be a non-empty pytree of arrays")
    n = int(np.shape(leaves[0])[0])
    if any(np.shape(a)[0] != n for a in leaves):
        raise ValueError("all data leaves need the same leading (observation) axis")
    data = jax.tree_util.tree_map(jnp.asarray, data)
    return Model(dim=int(dim), num_obs=n, data=data, loss=loss, prior_precision=prior_precision,
                 name=name, info={"kind": "custom"})


MODELS = {"linear": linear_regression, "poisson": poisson_regression,
          "logistic": logistic_regression}


def make_model(name: str, X, y, **kw) -> Model:
    """Model by name: 'linear' (kw loss, beta_div, sigma), 'poisson' or 'logistic'."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; choose from {sorted(MODELS)}")
    return MODELS[name](X, y, **kw)
