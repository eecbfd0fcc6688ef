"""Bayesian GLM targets (logistic, probit) with Gauss-Hermite expectations on 1-D marginals."""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import log_ndtr
from scipy.special import roots_hermite

from ..linalg import tril_product
from .base import GaussianExpectations, ObservationModel, Target, TargetError
from .._scope import in_float64

DEFAULT_ORDER = 192  # quadrature order of `expectations`; gap evaluation checks it against 384


@functools.lru_cache(maxsize=None)
def hermite_nodes(order: int):
    """Gauss-Hermite nodes/weights for E g(z), z ~ N(0,1): E g = sum w_k g(sqrt2 t_k) / sqrt(pi)."""
    t, w = roots_hermite(int(order))  # numpy's hermgauss breaks above order ~300
    return np.sqrt(2.0) * t, w / np.sqrt(np.pi)


@functools.lru_cache(maxsize=None)
def trapezoid_nodes(order: int, half_width: float = 12.0):
    """Trapezoid nodes/weights on [-12, 12] for E g(z), z ~ N(0, 1) (spectral for analytic g)."""
    z = np.linspace(-half_width, half_width, int(order))
    w = (z[1] - z[0]) * np.exp(-0.5 * z * z) / np.sqrt(2 * np.pi)
    return z, w


QUADRATURE = {"hermite": hermite_nodes, "trapezoid": trapezoid_nodes}


# Links: f(t) is the negative log-likelihood of one observation as a function of t = ytilde * x^T theta.
def _logistic(t):
    return jnp.logaddexp(0.0, -t)


def _logistic_d1(t):
    return -jax.nn.sigmoid(-t)


def _logistic_d2(t):
    s = jax.nn.sigmoid(t)
    return s * (1.0 - s)


def mills_ratio(t):
    """r(t) = phi(t) / Phi(t), computed stably in log space."""
    return jnp.exp(-0.5 * t * t - 0.5 * jnp.log(2 * jnp.pi) - log_ndtr(t))


def _probit(t):
    return -log_ndtr(t)


def _probit_d1(t):
    return -mills_ratio(t)


def _probit_d2(t):
    r = mills_ratio(t)
    return r * (t + r)


LINKS = {
    "logistic": (_logistic, _logistic_d1, _logistic_d2, 0.25),
    "probit": (_probit, _probit_d1, _probit_d2, 1.0),
}
# Gauss-Hermite converges slowly for the logistic link: its branch points at t = +-i pi sit at
# distance pi / sigma from the real axis in standardised coordinates, and wide marginals (sigma ~ 15
# at N(0, I) on WDBC) need orders > 1536. The trapezoid rule is geometric in (pi/sigma)/h there.
DEFAULT_RULE = {"logistic": "trapezoid", "probit": "hermite"}


@in_float64
def glm_target(X, y, *, link="logistic", prior_precision=1.0, alpha=None, beta=None,
               name=None, quadrature=None, dtype="float64") -> Target:
    """V(theta) = theta^T Q0 theta / 2 + sum_i f(ytilde_i x_i^T theta); X=None means identity design.

    `prior_precision`: c or (d, d); labels in {0,1} or {-1,+1}; `quadrature` ("hermite", "trapezoid").
    Bounds default to alpha = lambda_min(Q0), beta = lambda_max(Q0) + c lambda_max(X^T X), c = 1/4 or 1.
    """
    if link not in LINKS:
        raise TargetError(f"unknown link {link!r}; choose from {sorted(LINKS)}")
    f, f1, f2, c = LINKS[link]
    rule = quadrature or DEFAULT_RULE[link]
    if rule not in QUADRATURE:
        raise TargetError(f"unknown quadrature {rule!r}; choose from {sorted(QUADRATURE)}")
    y = np.asarray(y, dtype=np.float64).ravel()
    labels = set(np.unique(y).tolist())
    if labels <= {0.0, 1.0}:
        yt = 2.0 * y - 1.0
    elif labels <= {-1.0, 1.0}:
        yt = y
    else:
        raise TargetError(f"labels must be in {{0,1}} or {{-1,+1}}, got values {sorted(labels)[:5]}")
    n = yt.shape[0]
    identity = X is None
    if identity:
        d = n
        gram_max = 1.0
    else:
        Xn = np.asarray(X, dtype=np.float64)
        if Xn.ndim != 2 or Xn.shape[0] != n:
            raise TargetError(f"X must be (n, d) with n = len(y) = {n}; got {Xn.shape}")
        if not np.all(np.isfinite(Xn)):
            raise TargetError("X contains non-finite values")
        d = Xn.shape[1]
        gram_max = float(np.linalg.eigvalsh(Xn.T @ Xn)[-1])
    Q0n = np.asarray(prior_precision, dtype=np.float64)
    scalar_prior = Q0n.ndim == 0
    if scalar_prior:
        if not Q0n > 0:
            raise TargetError("prior precision must be positive")
        qmin = qmax = float(Q0n)
    else:
        if Q0n.shape != (d, d):
            raise TargetError(f"prior precision must be a scalar or ({d}, {d}); got {Q0n.shape}")
        ev = np.linalg.eigvalsh(Q0n)
        qmin, qmax = float(ev[0]), float(ev[-1])
    alpha = qmin if alpha is None else alpha
    beta = qmax + c * gram_max if beta is None else beta

    Xj = None if identity else jnp.asarray(Xn, dtype=dtype)
    ytj = jnp.asarray(yt, dtype=dtype)
    Q0 = jnp.asarray(Q0n, dtype=dtype)

    def design(theta):
        return theta if identity else Xj @ theta

    def design_T(u):
        return u if identity else Xj.T @ u

    def prior(theta):
        return 0.5 * Q0 * (theta @ theta) if scalar_prior else 0.5 * theta @ (Q0 @ theta)

    def prior_mv(M):
        return Q0 * M if scalar_prior else Q0 @ M

    def potential(theta):
        return prior(theta) + jnp.sum(f(ytj * design(theta)))

    def grad(theta):
        return prior_mv(theta) + design_T(ytj * f1(ytj * design(theta)))

    def weights(theta):
        return f2(ytj * design(theta))

    def weighted_hess_matmul(w, M, s=0):
        """Rows s: of (Q0 + X^T diag(w) X) M, from M's rows s: only."""
        Ms = M[s:]
        prior_part = Q0 * Ms if scalar_prior else Q0[s:, s:] @ Ms
        if identity:
            return prior_part + w[s:, None] * Ms
        return prior_part + Xj[:, s:].T @ (w[:, None] * (Xj[:, s:] @ Ms))

    def mean_weights(thetas):
        return jnp.mean(jax.vmap(weights)(thetas), axis=0)

    def hess_matmul(theta, M):
        return weighted_hess_matmul(weights(theta), M)

    def hvp(theta, v):
        return hess_matmul(theta, v[:, None])[:, 0]

    def mean_hess_matmul(thetas, M):
        return weighted_hess_matmul(mean_weights(thetas), M)

    def mean_hess_tril(thetas, L):
        w = mean_weights(thetas)
        return tril_product(lambda s, e: weighted_hess_matmul(w, L[:, s:e], s), d, L.dtype)

    def make_expectations(order):
        z, w = (jnp.asarray(a, dtype=dtype) for a in QUADRATURE[rule](order))

        def expectations(m, S):
            mu = design(m)
            var = jnp.diag(S) if identity else jnp.einsum("ij,jk,ik->i", Xj, S, Xj)
            sd = jnp.sqrt(jnp.maximum(var, 0.0))
            t = ytj[:, None] * (mu[:, None] + sd[:, None] * z[None, :])
            e0 = f(t) @ w
            e1 = f1(t) @ w
            e2 = f2(t) @ w
            if scalar_prior:
                pv, pg = 0.5 * Q0 * (m @ m + jnp.trace(S)), Q0 * m
                ph = Q0 * jnp.eye(d, dtype=dtype)
            else:
                pv, pg, ph = 0.5 * (m @ (Q0 @ m) + jnp.sum(Q0 * S)), Q0 @ m, Q0
            if identity:
                H = ph + jnp.diag(e2)
            else:
                H = ph + Xj.T @ (e2[:, None] * Xj)
            return GaussianExpectations(pv + jnp.sum(e0), pg + design_T(ytj * e1), H)

        return expectations

    def make_error_bound(order):
        """Bound on the trapezoid error of sum_i E f(t_i) by Poisson summation (docs/vi.md)."""
        z, _ = QUADRATURE[rule](order)
        h = float(z[1] - z[0])

        def bound(m, S):
            mu = design(m)
            var = jnp.diag(S) if identity else jnp.einsum("ij,jk,ik->i", Xj, S, Xj)
            sd = jnp.sqrt(jnp.maximum(var, 0.0))
            a = jnp.minimum(0.9 * jnp.pi / jnp.maximum(sd, 1e-300), 2 * jnp.pi / h)
            q = jnp.exp(-2 * jnp.pi * a / h)
            return jnp.sum(2 * jnp.exp(-2 * jnp.pi * a / h + 0.5 * a * a) / (1 - q)
                           * (jnp.abs(mu) + sd + 5.0))

        return bound

    if identity:
        data = (jnp.arange(n), ytj)

        def loss(theta, datum):
            i, yi = datum
            return f(yi * theta[i])
    else:
        data = (Xj, ytj)

        def loss(theta, datum):
            xi, yi = datum
            return f(yi * (xi @ theta))

    obs = ObservationModel(loss=loss, data=data, num_obs=n, prior=prior)
    return Target(dim=d, potential=potential, grad=grad, hvp=hvp, alpha=float(alpha),
                  beta=float(beta), expectations=make_expectations(DEFAULT_ORDER),
                  expectations_at=make_expectations, hess_matmul_fn=hess_matmul,
                  quadrature_error_at=(make_error_bound if (link, rule) == ("logistic", "trapezoid")
                                       else None),
                  mean_hess_matmul_fn=mean_hess_matmul, mean_hess_tril_fn=mean_hess_tril,
                  observations=obs, name=name or f"{link}-glm(n={n},d={d})",
                  info={"link": link, "num_obs": n, "identity_design": identity,
                        "quadrature": rule},
                  recast=lambda dt: glm_target(X, y, link=link, prior_precision=prior_precision,
                                               alpha=alpha, beta=beta, name=name,
                                               quadrature=quadrature, dtype=dt),
                  dtype=jnp.dtype(dtype).name)


def _with_intercept(X, intercept):
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise TargetError(f"X must be a 2-D array (n, p); got shape {X.shape}")
    return np.hstack([np.ones((X.shape[0], 1)), X]) if intercept else X


@in_float64
def logistic_regression(X, y, *, prior_scale=1.0, intercept=True, name=None,
                        feature_names=None) -> Target:
    """Bayesian logistic regression, prior N(0, prior_scale^2 I); beta = 1/s0^2 + lambda_max(X^T X)/4."""
    Xd = _with_intercept(X, intercept)
    t = glm_target(Xd, y, link="logistic", prior_precision=1.0 / prior_scale**2,
                   name=name or f"logistic(n={Xd.shape[0]},d={Xd.shape[1]})")
    return _named(t, feature_names, intercept)


@in_float64
def probit_regression(X, y, *, prior_scale=1.0, intercept=True, name=None,
                        feature_names=None) -> Target:
    """Bayesian probit regression, prior N(0, prior_scale^2 I); beta = 1/s0^2 + lambda_max(X^T X)."""
    Xd = _with_intercept(X, intercept)
    t = glm_target(Xd, y, link="probit", prior_precision=1.0 / prior_scale**2,
                   name=name or f"probit(n={Xd.shape[0]},d={Xd.shape[1]})")
    return _named(t, feature_names, intercept)


def _named(target, feature_names, intercept):
    """Attach parameter names (`intercept` first) when the predictors are named."""
    if feature_names is None:
        return target
    names = (["intercept"] if intercept else []) + [str(n) for n in feature_names]
    if len(names) != target.dim:
        raise TargetError(f"{len(feature_names)} feature names for {target.dim} coefficients")
    return target.replace(info={**target.info, "names": names})
