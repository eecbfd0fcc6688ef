"""Optima of the VI experiments' objectives by a second method: direct L-BFGS minimisation of
F(q) = E_q V - H(q) with probabilists' Gauss-Hermite quadrature (numpy's rule, 80 nodes), not the
package's quadrature, fixed point or optimisers. Closed forms where they exist; the same
entropy constant (d/2) log(2 pi e) as `inertia.variational.objective`."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import scipy.integrate
import scipy.optimize

import inertia  # noqa: F401  (float64)

_Z, _W = np.polynomial.hermite_e.hermegauss(80)
_W = _W / math.sqrt(2 * math.pi)


def _minimise(f, x0):
    fg = jax.jit(jax.value_and_grad(f))
    r = scipy.optimize.minimize(lambda x: tuple(np.asarray(v, float) for v in fg(x)), x0,
                                jac=True, method="L-BFGS-B",
                                options=dict(maxiter=20000, maxfun=40000, ftol=1e-15, gtol=1e-10))
    return float(r.fun), r


def logistic_objective(X, y):
    """F(m, L) for logistic regression with prior N(0, I): sum_n E softplus(x_n^T theta)
    - y^T X m + (|m|^2 + |L|_F^2) / 2 - (d/2) log(2 pi e) - log |det L|."""
    X, y = jnp.asarray(X), jnp.asarray(y, dtype=jnp.float64)
    d = X.shape[1]
    il = np.tril_indices(d)

    def F(m, L):
        mu, s = X @ m, jnp.sqrt(jnp.sum((X @ L) ** 2, axis=1))
        e = jnp.logaddexp(0.0, mu[:, None] + s[:, None] * _Z[None, :]) @ _W
        return (jnp.sum(e) - y @ mu + 0.5 * (m @ m + jnp.sum(L * L))
                - 0.5 * d * math.log(2 * math.pi * math.e) - jnp.sum(jnp.log(jnp.abs(jnp.diag(L)))))

    def unpack(x):
        L = jnp.zeros((d, d)).at[il].set(x[d:])
        return x[:d], L

    return F, unpack, np.concatenate([np.zeros(d), np.eye(d)[il]])


def logistic_optimum(X, y):
    """(F*, F(N(0, I))) of the logistic objective. At N(0, I) the marginals x_n^T theta are wide
    (sd |x_n| ~ 3), where 80 nodes are not enough for softplus: adaptive quadrature there."""
    F, unpack, x0 = logistic_objective(X, y)
    fstar, _ = _minimise(lambda x: F(*unpack(x)), x0)
    d = X.shape[1]

    def esoftplus(s):
        f = lambda z: np.logaddexp(0.0, s * z) * math.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)  # noqa: E731
        return scipy.integrate.quad(f, -np.inf, np.inf, epsabs=1e-13, epsrel=1e-13, limit=200)[0]

    f0 = (sum(esoftplus(s) for s in np.linalg.norm(X, axis=1)) + 0.5 * d
          - 0.5 * d * math.log(2 * math.pi * math.e))
    return fstar, f0


def knn_precision(X, k=10, tau=49.0):
    """Q = I + tau L_G, L_G = I - D^-1/2 W D^-1/2 of the symmetrised kNN graph (Euclidean)."""
    X = np.asarray(X, float)
    n = X.shape[0]
    D = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)) + np.diag(np.full(n, np.inf))
    A = np.zeros((n, n))
    A[np.repeat(np.arange(n), k), np.argsort(D, axis=1, kind="stable")[:, :k].ravel()] = 1.0
    W = np.maximum(A, A.T)
    r = 1.0 / np.sqrt(W.sum(1))
    return np.eye(n) + tau * (np.eye(n) - r[:, None] * W * r[None, :])


def graph_probit_optimum(Q, yt):
    """(F*, F(N(0, I))) of V(z) = z^T Q z / 2 - sum_i log Phi(yt_i z_i). The optimum's covariance
    is (Q + diag(h))^-1 for some h > 0 (stationarity in S), so F is minimised over (m, log h)."""
    Q, yt = jnp.asarray(Q), jnp.asarray(yt, dtype=jnp.float64)
    n = Q.shape[0]

    def F(m, S):
        s = jnp.sqrt(jnp.diag(S))
        elog = jax.scipy.special.log_ndtr(yt[:, None] * (m[:, None] + s[:, None] * _Z)) @ _W
        return (0.5 * m @ Q @ m + 0.5 * jnp.sum(Q * S) - jnp.sum(elog)
                - 0.5 * n * math.log(2 * math.pi * math.e) - 0.5 * jnp.linalg.slogdet(S)[1])

    def G(x):
        return F(x[:n], jnp.linalg.inv(Q + jnp.diag(jnp.exp(x[n:]))))

    fstar, _ = _minimise(G, np.concatenate([np.zeros(n), np.full(n, math.log(0.5))]))
    return fstar, float(F(jnp.zeros(n), jnp.eye(n)))
