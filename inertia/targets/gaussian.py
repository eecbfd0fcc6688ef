"""Gaussian targets N(mu, P^{-1}) with exact expectations, and the paper's kappa-family."""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..linalg import tril_product
from .base import GaussianExpectations, Target, TargetError
from .._scope import in_float64


@in_float64
def gaussian(mean, precision, *, name="gaussian", dtype="float64") -> Target:
    """Gaussian target N(mean, precision^{-1}); exact E_q V, E_q grad V, E_q hess V and optimum
    (checks and bounds in float64; the functions compute in `dtype`)."""
    mu64 = jnp.asarray(mean, dtype=jnp.float64)
    P64 = jnp.asarray(precision, dtype=jnp.float64)
    mu, P = mu64.astype(dtype), P64.astype(dtype)
    d = mu.shape[0]
    if mu.ndim != 1 or P.shape != (d, d):
        raise TargetError(f"mean must be (d,) and precision (d, d); got {mu.shape} and {P.shape}")
    Pn = np.asarray(P64)
    if not np.allclose(Pn, Pn.T, atol=1e-12 * max(1.0, np.abs(Pn).max())):
        raise TargetError("precision matrix must be symmetric")
    eig = np.linalg.eigvalsh(Pn)
    if eig[0] <= 0:
        raise TargetError(f"precision matrix must be positive definite (smallest eigenvalue {eig[0]:.3g})")

    def potential(x):
        r = x - mu
        return 0.5 * r @ (P @ r)

    def grad(x):
        return P @ (x - mu)

    def hvp(x, v):
        return P @ v

    def hess_matmul(x, M):
        return P @ M

    def expectations(m, S):
        r = m - mu
        return GaussianExpectations(0.5 * (r @ (P @ r) + jnp.sum(P * S)), P @ r, P)

    cov = np.linalg.inv(Pn)
    cov = 0.5 * (cov + cov.T)
    return Target(dim=d, potential=potential, grad=grad, hvp=hvp, alpha=float(eig[0]),
                  beta=float(eig[-1]), expectations=expectations, hess_matmul_fn=hess_matmul,
                  mean_hess_matmul_fn=lambda xs, M: P @ M,
                  mean_hess_tril_fn=lambda xs, L: tril_product(
                      lambda s, e: P[s:, s:] @ L[s:, s:e], d, P.dtype),
                  optimum=(np.asarray(mu64), cov), name=name,
                  info={"precision": Pn, "mean": np.asarray(mu64)},
                  recast=lambda dt: gaussian(mu64, P64, name=name, dtype=dt),
                  dtype=jnp.dtype(dtype).name)


@in_float64
def kappa_family(dim: int = 8, kappa: float = 300.0, *, seed: int = 0) -> Target:
    """The paper's pi_kappa = N(1_d, P^{-1}), P = Q diag(lambda) Q^T, lambda_i = kappa^{(i-1)/(d-1)}/2."""
    if dim < 2:
        raise TargetError("the kappa family needs dim >= 2")
    if not kappa >= 1:
        raise TargetError(f"kappa must be >= 1, got {kappa}")
    lam = 0.5 * kappa ** (np.arange(dim) / (dim - 1))
    import scipy.stats  # noqa: PLC0415 (lazy: scipy.stats costs ~1 s at import)
    Q = scipy.stats.ortho_group.rvs(dim, random_state=seed)
    P = (Q * lam) @ Q.T
    P = 0.5 * (P + P.T)
    t = gaussian(np.ones(dim), P, name=f"gaussian-kappa(d={dim},kappa={kappa:g})")
    # exact bounds by construction (eigvalsh may be off in the last digits)
    return t.replace(alpha=0.5, beta=0.5 * kappa, info={**t.info, "kappa": kappa})
