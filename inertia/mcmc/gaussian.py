"""Exact laws of the linear schemes on Gaussian targets ("For any linear scheme ...").

m <- A m + c, S <- A S A^T + Q, with (A, c, Q) read off each kernel's `transition` by automatic
differentiation; per eigen-direction of P with isotropic noise (docs/hfhr.md, "API").
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg
from jax.flatten_util import ravel_pytree

from .. import _compile
from .kernels import Method, Params, get_method


def _method(method) -> Method:
    m = get_method(method) if isinstance(method, str) else method
    if m.transition is None:
        raise ValueError(f"method {m.name!r} is not a linear scheme: no exact Gaussian law")
    return m


def _phase_dim(m: Method) -> int:
    return 2 if m.kinetic else 1


def _noise_unravel(m: Method, dim: int):
    shapes = jax.eval_shape(functools.partial(m.draw_noise, dim=dim), jax.random.PRNGKey(0))
    zeros = jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)
    flat, unravel = ravel_pytree(zeros)
    return flat, unravel


def affine_map(method, params: Params, precision, mean=None):
    """Dense (A, c, Q) of one step on N(mean, precision^{-1}), state z = (q, p) (or q for ULA)."""
    m = _method(method)
    P = jnp.asarray(precision, dtype=jnp.float64)
    mu = jnp.zeros(P.shape[0]) if mean is None else jnp.asarray(mean, dtype=jnp.float64)
    A, c, Q = _affine_map(m, Params(*(None if v is None else jnp.float64(v) for v in params)), P, mu)
    return np.asarray(A), np.asarray(c), np.asarray(Q)


@functools.partial(_compile.jit, static_argnums=(0,))
def _affine_map(m: Method, params: Params, P, mu):
    d = P.shape[0]
    k = _phase_dim(m)
    xi0, unravel = _noise_unravel(m, d)
    coeffs = m.prepare(params)

    def f(z, xi):
        phase = tuple(z[i * d:(i + 1) * d] for i in range(k))
        return jnp.concatenate(m.transition(coeffs, phase, P @ (phase[0] - mu), unravel(xi)))

    z0 = jnp.zeros(k * d)
    J = jax.jacfwd(f, 1)(z0, xi0)
    return jax.jacfwd(f, 0)(z0, xi0), f(z0, xi0), J @ J.T


def propagate(A, c, Q, m0, S0, num_steps):
    """Means and covariances of z_k for k = 0..num_steps under z' = A z + c + N(0, Q)."""
    ms, Ss = _propagate(int(num_steps), *(jnp.asarray(a, dtype=jnp.float64) for a in (A, c, Q, m0, S0)))
    return (np.concatenate([np.asarray(m0, dtype=np.float64)[None], np.asarray(ms)]),
            np.concatenate([np.asarray(S0, dtype=np.float64)[None], np.asarray(Ss)]))


@functools.partial(_compile.jit, static_argnums=(0,))
def _propagate(num_steps, A, c, Q, m0, S0):
    def body(carry, _):
        mk, Sk = carry
        nxt = (A @ mk + c, A @ Sk @ A.T + Q)
        return nxt, nxt

    return jax.lax.scan(body, (m0, S0), None, length=num_steps)[1]


def stationary_affine(A, c, Q):
    """Stationary law (m, S) of z' = A z + c + N(0, Q): (I - A) m = c and S = A S A^T + Q."""
    A = np.asarray(A)
    rho = float(np.max(np.abs(np.linalg.eigvals(A))))
    if rho >= 1.0:
        raise ValueError(f"the chain is unstable (spectral radius {rho:.6g} >= 1): no stationary law")
    m = np.linalg.solve(np.eye(A.shape[0]) - A, np.asarray(c))
    S = scipy.linalg.solve_discrete_lyapunov(A, np.asarray(Q))
    return m, 0.5 * (S + S.T)


def w2_gaussian(m1, S1, m2, S2) -> float:
    """W2 between N(m1, S1) and N(m2, S2): |m1-m2|^2 + tr(S1 + S2 - 2 (S2^{1/2} S1 S2^{1/2})^{1/2})."""
    m1, m2 = np.atleast_1d(m1), np.atleast_1d(m2)
    S1, S2 = np.atleast_2d(S1), np.atleast_2d(S2)
    r2 = np.real(scipy.linalg.sqrtm(S2))
    cross = np.real(scipy.linalg.sqrtm(r2 @ S1 @ r2))
    val = float(np.sum((m1 - m2) ** 2) + np.trace(S1 + S2 - 2.0 * cross))
    return float(np.sqrt(max(val, 0.0)))


@functools.partial(_compile.jit, static_argnums=(0,))
def _maps_1d(method: Method, params: Params, lam):
    """(A_i, Q_i) of the decoupled chain on lam_i x^2 / 2 for each eigenvalue (vectorised)."""
    k = _phase_dim(method)
    xi0, unravel = _noise_unravel(method, 1)
    coeffs = method.prepare(params)

    def one(lam_i):
        def f(z, xi):
            phase = tuple(z[i:i + 1] for i in range(k))
            return jnp.concatenate(method.transition(coeffs, phase, lam_i * phase[0], unravel(xi)))

        z0 = jnp.zeros(k)
        J = jax.jacfwd(f, 1)(z0, xi0)
        return jax.jacfwd(f, 0)(z0, xi0), J @ J.T

    return jax.vmap(one)(lam)


@functools.partial(_compile.jit, static_argnums=(0,))
def _maps_1d_grid(method: Method, params: Params, lam):
    return jax.vmap(lambda p: _maps_1d(method, p, lam))(params)


def _w2_from_coords(mq, vq, sd_target):
    return jnp.sqrt(jnp.sum(mq**2 + (jnp.sqrt(jnp.maximum(vq, 0.0)) - sd_target) ** 2, axis=-1))


@functools.partial(_compile.jit, static_argnums=(0, 1))
def _scan_w2(method: Method, num_steps: int, params, lam, m0, S0, tol):
    """W2 curves of the decoupled law for a batch of parameters, and the first step with W2 <= tol."""
    sd = 1.0 / jnp.sqrt(lam)

    def one(p):
        A, Q = _maps_1d(method, p, lam)

        def body(carry, k):
            m, S, hit = carry
            m = jnp.einsum("dij,dj->di", A, m)
            S = jnp.einsum("dij,djk,dlk->dil", A, S, A) + Q
            w2 = _w2_from_coords(m[:, 0], S[:, 0, 0], sd)
            hit = jnp.where((hit < 0) & (w2 <= tol), k + 1, hit)
            return (m, S, hit), w2

        (_, _, hit), curve = jax.lax.scan(body, (m0, S0, jnp.asarray(-1)), jnp.arange(num_steps))
        return curve, hit

    return jax.vmap(one)(params)


class StationaryLaw(NamedTuple):
    """Exact stationary law of q (mean, cov), its W2 bias, and the contraction rate per step and gradient."""

    mean: np.ndarray
    cov: np.ndarray
    bias_w2: float
    rate: float
    rate_per_grad: float


class GaussianDiagnostics:
    """Exact W2 curves, stationary laws and contraction rates of linear schemes on a Gaussian target."""

    def __init__(self, target):
        info = getattr(target, "info", {}) or {}
        if "precision" not in info or "mean" not in info:
            raise ValueError(f"target {getattr(target, 'name', target)!r} is not Gaussian "
                             "(needs info['precision'] and info['mean'])")
        self.precision = np.asarray(info["precision"], dtype=np.float64)
        self.mean = np.asarray(info["mean"], dtype=np.float64)
        self.lam, self.U = np.linalg.eigh(self.precision)
        self.dim = self.mean.shape[0]
        self.target_cov = (self.U / self.lam) @ self.U.T

    def _params(self, method, step_size, gamma, alpha):
        return Params(jnp.float64(step_size), jnp.float64(1.0 if gamma is None else gamma),
                      jnp.float64(0.0 if alpha is None else alpha))

    def initial_coords(self, method, init_mean=None, init_var=1.0):
        """Per-eigen-direction initial mean (d, k) and covariance (d, k, k) in centred coordinates."""
        m = _method(method)
        k = _phase_dim(m)
        x0 = np.zeros(self.dim) if init_mean is None else np.asarray(init_mean, dtype=np.float64)
        m0 = np.zeros((self.dim, k))
        m0[:, 0] = self.U.T @ (x0 - self.mean)
        S0 = np.zeros((self.dim, k, k))
        S0[:, 0, 0] = init_var
        if k == 2:
            S0[:, 1, 1] = 1.0
        return m0, S0

    def initial_w2(self, init_mean=None, init_var=1.0) -> float:
        """W2 from the initial position law to the target."""
        x0 = np.zeros(self.dim) if init_mean is None else np.asarray(init_mean, dtype=np.float64)
        mq = self.U.T @ (x0 - self.mean)
        return float(np.sqrt(np.sum(mq**2 + (np.sqrt(init_var) - 1.0 / np.sqrt(self.lam)) ** 2)))

    def grid_curves(self, method, *, step_size, gamma=None, alpha=None, num_steps, tol=0.0,
                    init_mean=None, init_var=1.0):
        """Exact W2 curves (n, num_steps + 1) of n parameter triples and their first step with W2 <= tol."""
        m = _method(method)
        m0, S0 = self.initial_coords(m, init_mean, init_var)
        h = np.atleast_1d(np.asarray(step_size, dtype=np.float64))
        n = h.shape[0]
        g = np.broadcast_to(np.asarray(1.0 if gamma is None else gamma, dtype=np.float64), (n,))
        a = np.broadcast_to(np.asarray(0.0 if alpha is None else alpha, dtype=np.float64), (n,))
        curves, hit = _scan_w2(m, int(num_steps), Params(jnp.asarray(h), jnp.asarray(g), jnp.asarray(a)),
                               jnp.asarray(self.lam), jnp.asarray(m0), jnp.asarray(S0), tol)
        w0 = np.full((n, 1), self.initial_w2(init_mean, init_var))
        hit = np.asarray(hit)
        hit = np.where((w0[:, 0] <= tol), 0, hit)
        return np.concatenate([w0, np.asarray(curves)], axis=1), hit

    def rates(self, method, *, step_size, gamma=None, alpha=None) -> np.ndarray:
        """Contraction rate (largest |eigenvalue| of the step's linear part) for each grid point."""
        m = _method(method)
        h = np.atleast_1d(np.asarray(step_size, dtype=np.float64))
        n = h.shape[0]
        g = np.broadcast_to(np.asarray(1.0 if gamma is None else gamma, dtype=np.float64), (n,))
        a = np.broadcast_to(np.asarray(0.0 if alpha is None else alpha, dtype=np.float64), (n,))
        A, _ = _maps_1d_grid(m, Params(jnp.asarray(h), jnp.asarray(g), jnp.asarray(a)),
                             jnp.asarray(self.lam))
        return np.max(np.abs(np.linalg.eigvals(np.asarray(A))), axis=-1).max(axis=-1)

    def w2_curve(self, method, *, step_size, gamma=None, alpha=None, num_steps, init_mean=None,
                 init_var=1.0) -> np.ndarray:
        """Exact W2(law of q_k, target) for k = 0..num_steps."""
        curves, _ = self.grid_curves(method, step_size=step_size, gamma=gamma, alpha=alpha,
                                     num_steps=num_steps, init_mean=init_mean, init_var=init_var)
        return curves[0]

    def steps_to(self, method, *, step_size, gamma=None, alpha=None, tol, max_steps, init_mean=None,
                 init_var=1.0):
        """First step k with W2 <= tol (-1 if not within max_steps) and W2 after max_steps."""
        curves, hit = self.grid_curves(method, step_size=step_size, gamma=gamma, alpha=alpha,
                                       num_steps=max_steps, tol=tol, init_mean=init_mean,
                                       init_var=init_var)
        if np.ndim(step_size) == 0:
            return int(hit[0]), float(curves[0, -1])
        return hit, curves[:, -1]

    def coordinate_maps(self, method, *, step_size, gamma=None, alpha=None):
        """Per-eigen-direction (A_i, Q_i) of one step."""
        m = _method(method)
        A, Q = _maps_1d(m, self._params(m, step_size, gamma, alpha), jnp.asarray(self.lam))
        return np.asarray(A), np.asarray(Q)

    def contraction_rate(self, method, *, step_size, gamma=None, alpha=None) -> float:
        """Largest |eigenvalue| of the step's linear part over all eigen-directions."""
        A, _ = self.coordinate_maps(method, step_size=step_size, gamma=gamma, alpha=alpha)
        return float(np.max(np.abs(np.linalg.eigvals(A))))

    def stationary(self, method, *, step_size, gamma=None, alpha=None) -> StationaryLaw:
        """Exact stationary law of q (raises ValueError if the chain is unstable)."""
        m = _method(method)
        A, Q = self.coordinate_maps(m, step_size=step_size, gamma=gamma, alpha=alpha)
        rho = float(np.max(np.abs(np.linalg.eigvals(A))))
        if not rho < 1.0:
            raise ValueError(f"{m.name} with step_size={step_size}, gamma={gamma}, alpha={alpha} is "
                             f"unstable on this target (contraction rate {rho:.6g} >= 1)")
        k = A.shape[-1]
        eye = np.eye(k * k)
        vecS = np.linalg.solve(eye[None] - np.einsum("dij,dkl->dikjl", A, A).reshape(-1, k * k, k * k),
                               Q.reshape(-1, k * k, 1))
        var_q = vecS.reshape(-1, k, k)[:, 0, 0]
        cov = (self.U * var_q) @ self.U.T
        bias = float(np.sqrt(np.sum((np.sqrt(var_q) - 1.0 / np.sqrt(self.lam)) ** 2)))
        return StationaryLaw(self.mean.copy(), 0.5 * (cov + cov.T), bias, rho,
                             rho ** (1.0 / m.grads_per_step))


def chain_statistics(method, eigenvalues, *, step_size, gamma=None, alpha=None) -> dict:
    """Exact stationary Var(q) and integrated autocorrelation times of q and q^2 per eigen-direction."""
    m = _method(method)
    lam = np.atleast_1d(np.asarray(eigenvalues, dtype=np.float64))
    h = np.atleast_1d(np.asarray(step_size, dtype=np.float64))
    n = h.shape[0]
    g = np.broadcast_to(np.asarray(1.0 if gamma is None else gamma, dtype=np.float64), (n,))
    a = np.broadcast_to(np.asarray(0.0 if alpha is None else alpha, dtype=np.float64), (n,))
    A, Q = _maps_1d_grid(m, Params(jnp.asarray(h), jnp.asarray(g), jnp.asarray(a)), jnp.asarray(lam))
    A, Q = np.asarray(A), np.asarray(Q)  # (n, d, k, k)
    k = A.shape[-1]
    rho = np.max(np.abs(np.linalg.eigvals(A)), axis=-1)
    stable = rho < 1.0
    A = np.where(stable[..., None, None], A, 0.0)  # placeholders keep the solves regular
    I2 = np.eye(k * k)
    AA = np.einsum("ndij,ndkl->ndikjl", A, A).reshape(n, lam.size, k * k, k * k)
    S = np.linalg.solve(I2 - AA, Q.reshape(n, lam.size, k * k, 1)).reshape(n, lam.size, k, k)
    s11 = S[..., 0, 0]
    R = np.linalg.solve(np.eye(k) - A, S)
    tau1 = (2.0 * R[..., 0, 0] - s11) / s11
    s = S[..., :, 0]
    ss = np.einsum("ndi,ndj->ndij", s, s).reshape(n, lam.size, k * k, 1)
    sum2 = np.linalg.solve(I2 - AA, ss)[..., 0, 0]
    tau2 = (2.0 * sum2 - s11**2) / s11**2
    inf = np.full_like(s11, np.inf)
    geyer = _geyer_tau(A, S, s11, tau1)
    return {"var_q": np.where(stable, s11, np.nan), "tau_mean": np.where(stable, tau1, inf),
            "tau_mean_geyer": np.where(stable, geyer, inf),
            "tau_sq": np.where(stable, tau2, inf), "rate": rho,
            "sd_error": np.where(stable, np.sqrt(np.abs(s11) * lam) - 1.0, np.nan)}


def _geyer_tau(A, S, s11, exact, max_lags: int = 2000):
    """Geyer's truncated sum of the exact autocorrelations rho_j = (A^j S)_11 / S_11 of q."""
    shape = s11.shape
    A = A.reshape(-1, *A.shape[-2:])
    v = (S[..., :, 0] / s11[..., None]).reshape(A.shape[0], -1)  # A^j v: (A^j S)_{., 1} / S_11
    out = exact.reshape(-1).copy()  # kept where the sequence is still positive after max_lags
    total = np.zeros(A.shape[0])
    prev = np.full(A.shape[0], np.inf)
    live = np.arange(A.shape[0])  # only directions whose sequence is still positive are advanced
    for _ in range(max_lags // 2):
        r0 = v[:, 0]
        v = np.einsum("nij,nj->ni", A, v)
        pair = r0 + v[:, 0]
        v = np.einsum("nij,nj->ni", A, v)
        pair = np.minimum(pair, prev)  # initial monotone sequence
        ok = pair > 0
        total[ok] += pair[ok]
        out[live[~ok]] = -1.0 + 2.0 * total[~ok]
        live, A, v, prev, total = live[ok], A[ok], v[ok], pair[ok], total[ok]
        if live.size == 0:
            break
    return out.reshape(shape)
