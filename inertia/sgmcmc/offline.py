"""Offline step of Algorithm 1: MAP, curvature J, Fisher I, sandwich S and target Sigma* = S / N."""
from __future__ import annotations

import dataclasses
import functools
import warnings
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from .._hoist import Hoisting
from ._linalg import (glm_fourth_moment_matrix, hessian_fourth_moment_matrix, unvech, vech,
                      vech_fourth_moment)
from .models import Model


@dataclasses.dataclass(frozen=True)
class MAP:
    """theta_hat = argmin L with the final gradient norm and Newton iterations used."""

    theta: np.ndarray
    grad_norm: float
    iterations: int
    objective: float


def shifted_newton_step(H, g):
    """-(H + s I)^{-1} g, with s = 0 or the smallest doubling of 1e-8 max|diag H| giving a Cholesky."""
    d = H.shape[0]
    shift, scale = 0.0, max(np.abs(np.diag(H)).max(), 1e-300)
    while True:
        try:
            c = np.linalg.cholesky(H + shift * np.eye(d))
            break
        except np.linalg.LinAlgError:
            shift = max(2 * shift, 1e-8 * scale)
    return -np.linalg.solve(c.T, np.linalg.solve(c, g))


@functools.lru_cache(maxsize=64)
def _compiled(model: Model):
    # the model's data are arguments of these programs, not constants (Hoisting)
    obj = Hoisting(model.objective)
    grad = Hoisting(model.full_grad)
    if model.is_glm:
        def hess(theta):
            w = model.curvature_weights(theta)
            H = (model.X.T * w) @ model.X / model.num_obs
            return H + jnp.asarray(model.gamma) / model.num_obs
    else:
        hess = jax.hessian(model.objective)
    return obj, grad, Hoisting(hess)


def fit_map(model: Model, theta0=None, *, tol: float = 1e-10, max_iter: int = 100) -> MAP:
    """MAP theta_hat = argmin L (eq. 2) by damped Newton, to ||grad L|| <= tol * max(1, g_scale)."""
    obj, grad, hess = _compiled(model)
    d = model.dim
    if theta0 is None:
        if model.is_glm and model.info.get("kind") == "linear":
            theta0, *_ = np.linalg.lstsq(np.asarray(model.X), np.asarray(model.y), rcond=None)
        else:
            theta0 = np.zeros(d)
    theta = jnp.asarray(theta0, dtype=jnp.float64)
    f = float(obj(theta))
    if not np.isfinite(f):
        raise FloatingPointError("the loss is not finite at the starting point of the MAP search")

    def threshold(th):
        G = np.asarray(model.example_grads(th))
        return tol * max(1.0, float(np.sqrt(np.mean(np.sum(G * G, axis=1)))))

    it, stalls, best = 0, 0, np.inf  # stalls: steps that improve neither f nor ||grad||
    for it in range(1, max_iter + 1):
        g = np.asarray(grad(theta))
        gnorm = float(np.linalg.norm(g))
        if gnorm <= threshold(theta) or stalls >= 3:
            it -= 1
            break
        H = np.asarray(hess(theta))
        H = 0.5 * (H + H.T)
        step = shifted_newton_step(H, g)
        t, slope = 1.0, float(g @ step)
        while t > 1e-12:
            cand = theta + t * step
            fc = float(obj(cand))
            if np.isfinite(fc) and fc <= f + 1e-4 * t * slope:
                break
            t *= 0.5
        else:
            # no decrease visible at machine precision: take the Newton step if it lowers the
            # gradient (last digits), else stop
            cand = theta + step
            if not float(jnp.linalg.norm(grad(cand))) < gnorm:
                break
            fc = float(obj(cand))
        no_gain = f - fc <= 4 * np.finfo(float).eps * abs(f) and gnorm >= 0.5 * best
        stalls = stalls + 1 if no_gain else 0
        best = min(best, gnorm)
        theta, f = cand, fc
    gnorm = float(jnp.linalg.norm(grad(theta)))
    if gnorm > threshold(theta) and stalls < 3:
        warnings.warn(f"MAP search stopped at gradient norm {gnorm:.2e} (> {threshold(theta):.1e}) "
                      f"after {it} Newton steps (ill-conditioned or non-convex loss)",
                      RuntimeWarning, stacklevel=2)
    return MAP(np.asarray(theta), gnorm, it, f)


@dataclasses.dataclass(frozen=True, eq=False)
class Curvature:
    """Everything eq. 15-16 need at theta_hat: J, I, H = J + Gamma/N, g = Gamma theta_hat / N, Q(S)."""

    theta_hat: np.ndarray
    num_obs: int
    num_used: int
    J: np.ndarray
    I: np.ndarray
    gamma: np.ndarray
    X: Optional[np.ndarray] = None
    w: Optional[np.ndarray] = None
    Jn: Optional[np.ndarray] = None
    residual_var: Optional[float] = None  # linear models: mean squared residual at theta_hat
    sigma: Optional[float] = None  # linear models: the Gaussian scale of the loss
    gram: Optional[np.ndarray] = None  # linear models: A = X^T X / N
    grad_norm: float = float("nan")
    _cache: dict = dataclasses.field(default_factory=dict, repr=False)

    @property
    def dim(self) -> int:
        return self.J.shape[0]

    @property
    def H(self) -> np.ndarray:
        """H = J + Gamma / N (F.6)."""
        return self.J + self.gamma / self.num_obs

    @property
    def g(self) -> np.ndarray:
        """Gamma theta_hat / N, the mean of the per-observation gradients with sign flipped."""
        return self.gamma @ self.theta_hat / self.num_obs

    @property
    def sandwich(self) -> np.ndarray:
        """S = J^-1 I J^-1."""
        Jinv = self.J_inv
        S = Jinv @ self.I @ Jinv
        return 0.5 * (S + S.T)

    @property
    def J_inv(self) -> np.ndarray:
        if "J_inv" not in self._cache:
            self._cache["J_inv"] = _checked_inverse(self.J)
        return self._cache["J_inv"]

    @property
    def target_cov(self) -> np.ndarray:
        """Sigma* = S / N, the UQ target of Algorithm 1."""
        return self.sandwich / self.num_obs

    @property
    def posterior_cov(self) -> np.ndarray:
        """Bernstein-von Mises covariance H^-1 / N."""
        return _checked_inverse(self.H) / self.num_obs

    def fpc(self, batch_size: int, replacement: bool = True) -> float:
        """1 with replacement, (N - B) / (N - 1) without (Thm 4.3)."""
        if batch_size < 1 or batch_size > self.num_obs:
            raise ValueError(f"batch size must be in [1, N={self.num_obs}]; got {batch_size}")
        if replacement or self.num_obs == 1:
            return 1.0
        return (self.num_obs - batch_size) / (self.num_obs - 1)

    def quad(self, S: np.ndarray) -> np.ndarray:
        """Q(S) = mean_n J_n S J_n, O(N D^2) for GLMs."""
        if self.Jn is None and self.X is None:
            return unvech(self.quad_matrix() @ vech(np.asarray(S)), self.dim)
        if self.Jn is not None:
            return np.einsum("nab,bc,ncd->ad", self.Jn, S, self.Jn) / self.Jn.shape[0]
        q = np.einsum("na,ab,nb->n", self.X, S, self.X)
        return (self.X.T * (self.w ** 2 * q)) @ self.X / self.X.shape[0]

    def quad_matrix(self) -> np.ndarray:
        """Matrix of S -> Q(S) on vech coordinates (cached)."""
        if "quad" not in self._cache:
            if self.Jn is not None:
                self._cache["quad"] = hessian_fourth_moment_matrix(self.Jn)
            else:
                self._cache["quad"] = glm_fourth_moment_matrix(self.X, self.w ** 2)
        return self._cache["quad"]

    def noise_cov(self, S: np.ndarray, batch_size: int, replacement: bool = True) -> np.ndarray:
        """Expected minibatch-noise covariance C(S) of eq. 16 (outer product g g^T, corrected)."""
        c = self.fpc(batch_size, replacement) / batch_size
        g = self.g
        C = c * (self.I - np.outer(g, g) + self.quad(S) - self.J @ S @ self.J)
        return 0.5 * (C + C.T)

    def noise_cov_at_mode(self, batch_size: int, replacement: bool = True) -> np.ndarray:
        """C_hat = Cov(G_1(theta_hat)) = C(0)."""
        return self.noise_cov(np.zeros_like(self.J), batch_size, replacement)


def _checked_inverse(J: np.ndarray) -> np.ndarray:
    J = 0.5 * (J + J.T)
    ev = np.linalg.eigvalsh(J)
    if ev[0] <= 1e-12 * max(abs(ev[-1]), 1e-300):
        raise ValueError(
            f"singular curvature J (eigenvalues {ev[0]:.3g} .. {ev[-1]:.3g}): the loss is flat or "
            "non-convex at theta_hat (collinear or constant columns, too few observations, or a "
            "beta-divergence scale that downweights most data); the sandwich J^-1 I J^-1 is "
            "undefined")
    return np.linalg.inv(J)


# generic models keep per-example Hessians (N x D x D) only up to this many numbers
DENSE_HESSIAN_ELEMENTS = 1 << 24


def _generic_sums(model: Model, theta, chunk: int):
    """(sum grad, sum grad grad^T, sum J_n, sum vec(J_n) vec(J_n)^T) over blocks of `chunk` examples."""
    n, d = model.num_obs, model.dim
    nb = -(-n // chunk)
    pad = nb * chunk - n

    def blocked(a):
        a = jnp.asarray(a)
        a = jnp.concatenate([a, jnp.repeat(a[:1], pad, axis=0)]) if pad else a
        return a.reshape((nb, chunk) + a.shape[1:])

    data = jax.tree_util.tree_map(blocked, model.data)
    mask = (jnp.arange(nb * chunk) < n).astype(jnp.float64).reshape(nb, chunk)
    g1 = jax.vmap(jax.grad(model.loss), (None, 0))
    h1 = jax.vmap(jax.hessian(model.loss), (None, 0))

    def one(blk):
        dat, m = blk
        G = g1(theta, dat) * m[:, None]
        Jb = h1(theta, dat) * m[:, None, None]
        flat = Jb.reshape(chunk, d * d)
        return G.sum(0), G.T @ G, Jb.sum(0), flat.T @ flat

    def body(acc, blk):
        return jax.tree_util.tree_map(jnp.add, acc, one(blk)), None

    init = (jnp.zeros(d), jnp.zeros((d, d)), jnp.zeros((d, d)), jnp.zeros((d * d, d * d)))
    acc, _ = jax.jit(lambda th, dat, m: jax.lax.scan(body, init, (dat, m)))(theta, data, mask)
    return tuple(np.asarray(a) for a in acc)


def curvature(model: Model, theta_hat, *, num_obs: Optional[int] = None,
              chunk: Optional[int] = None) -> Curvature:
    """J, I and the fourth-moment structure at theta_hat from all observations of `model`."""
    theta = jnp.asarray(theta_hat, dtype=jnp.float64)
    N = model.num_obs if num_obs is None else int(num_obs)
    if not model.is_glm and (chunk is not None
                             or model.num_obs * model.dim ** 2 > DENSE_HESSIAN_ELEMENTS):
        chunk = int(chunk or max(1, DENSE_HESSIAN_ELEMENTS // (64 * model.dim ** 2)))
        gs, I, J, K4 = _generic_sums(model, theta, min(chunk, model.num_obs))
        n = model.num_obs
        I, J = I / n, J / n
        gnorm = float(np.linalg.norm(gs / n + model.gamma @ np.asarray(theta) / N))
        return Curvature(theta_hat=np.asarray(theta), num_obs=N, num_used=n,
                         J=0.5 * (J + J.T), I=0.5 * (I + I.T), gamma=model.gamma,
                         grad_norm=gnorm, _cache={"quad": vech_fourth_moment(K4 / n, model.dim)})
    grads = np.asarray(model.example_grads(theta))
    I = grads.T @ grads / model.num_obs
    kw = {}
    if model.is_glm:
        X = np.asarray(model.X)
        w = np.asarray(model.curvature_weights(theta))
        J = (X.T * w) @ X / model.num_obs
        kw.update(X=X, w=w)
        if model.info.get("kind") == "linear":
            r = np.asarray(model.y) - X @ np.asarray(theta)
            kw.update(residual_var=float(np.mean(r ** 2)), sigma=model.info["sigma"],
                      gram=X.T @ X / model.num_obs)
    else:
        Jn = np.asarray(model.example_hessians(theta))
        J = Jn.mean(axis=0)
        kw.update(Jn=Jn)
    gnorm = float(np.linalg.norm(grads.mean(0) + model.gamma @ np.asarray(theta) / N))
    return Curvature(theta_hat=np.asarray(theta), num_obs=N, num_used=model.num_obs,
                     J=0.5 * (J + J.T), I=0.5 * (I + I.T), gamma=model.gamma, grad_norm=gnorm,
                     **kw)


def offline(model: Model, *, subsample: Optional[int] = None, seed: int = 0, theta0=None,
            tol: float = 1e-10) -> Curvature:
    """Algorithm 1 step 1: MAP, J, I and sandwich on a subsample of M observations (default all)."""
    N = model.num_obs
    sub = model
    if subsample is not None and int(subsample) < N:
        M = int(subsample)
        if M < model.dim + 1:
            raise ValueError(f"subsample size M={M} is too small for D={model.dim} parameters")
        idx = np.sort(np.random.default_rng(seed).choice(N, size=M, replace=False))
        sub = model.subset(idx)
        if model.prior_precision is not None:
            sub = dataclasses.replace(sub, prior_precision=model.prior_precision * M / N)
    fit = fit_map(sub, theta0, tol=tol)
    curv = curvature(sub, fit.theta, num_obs=N)
    return dataclasses.replace(curv, grad_norm=fit.grad_norm, gamma=model.gamma, _cache={})


__all__ = ["MAP", "Curvature", "fit_map", "curvature", "offline"]
