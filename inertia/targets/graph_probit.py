"""Graph-probit posteriors: kNN graph, normalised Laplacian, Q_tau = I + tau L_G, and F_ref."""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg as sla
from scipy.sparse.csgraph import laplacian
from scipy.spatial.distance import cdist
from scipy.special import log_ndtr

from .base import Target, TargetError
from .glm import glm_target, hermite_nodes
from .._scope import in_float64
from ..data import DATASETS, load_dataset

DEFAULT_K = 10
DEFAULT_TAU = 49.0


def knn_graph(X, k: int = DEFAULT_K, *, mutual: bool = False) -> np.ndarray:
    """Binary symmetric kNN adjacency W = max(A, A^T) (mutual: min), dense (n, n) float64."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or not np.all(np.isfinite(X)):
        raise TargetError(f"X must be a finite (n, p) array; got shape {X.shape}")
    n = X.shape[0]
    if not 1 <= int(k) < n:
        raise TargetError(f"k must be in [1, n-1] = [1, {n - 1}]; got {k}")
    # Exact distances and a stable sort: ties (duplicated rows) go to the lower index,
    # where sklearn's kneighbors leaves their order unspecified.
    D = cdist(X, X)
    np.fill_diagonal(D, np.inf)
    idx = np.argsort(D, axis=1, kind="stable")[:, :int(k)]
    A = np.zeros((n, n))
    A[np.repeat(np.arange(n), int(k)), idx.ravel()] = 1.0
    return np.minimum(A, A.T) if mutual else np.maximum(A, A.T)


def normalized_laplacian(W) -> np.ndarray:
    """L_G = I - D^{-1/2} W D^{-1/2} (scipy.sparse.csgraph; isolated nodes get L_ii = 0)."""
    W = np.asarray(W, dtype=np.float64)
    if W.ndim != 2 or W.shape[0] != W.shape[1] or not np.allclose(W, W.T):
        raise TargetError("W must be a square symmetric matrix")
    L = laplacian(W, normed=True)
    return 0.5 * (L + L.T)


@in_float64
def graph_probit(X, y, *, k: int = DEFAULT_K, tau: float = DEFAULT_TAU, mutual: bool = False,
                 name: str | None = None) -> Target:
    """V(z) = z^T Q_tau z / 2 - sum_i log Phi(ytilde_i z_i); alpha = 1, beta = 2 + tau lambda_max(L_G)."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y).ravel()
    if X.ndim != 2 or X.shape[0] != y.shape[0]:
        raise TargetError(f"X must be (n, p) with n = len(y) = {y.shape[0]}; got {X.shape}")
    if not tau >= 0:
        raise TargetError(f"tau must be >= 0; got {tau}")
    LG = normalized_laplacian(knn_graph(X, k, mutual=mutual))
    lam_max = float(np.linalg.eigvalsh(LG)[-1])
    Q = np.eye(X.shape[0]) + tau * LG
    kappa = 2.0 + tau * lam_max
    n, p = X.shape
    target = glm_target(None, y, link="probit", prior_precision=Q, alpha=1.0, beta=kappa,
                        name=name or f"graph-probit(n={n},p={p},k={k},tau={tau:g})")
    info = dict(target.info, model="graph-probit", n=n, p=p, k=int(k), tau=float(tau),
                mutual=bool(mutual), lambda_max=lam_max, kappa=kappa)
    return target.replace(info=info)


@in_float64
def graph_probit_dataset(name: str, *, k: int = DEFAULT_K, tau: float = DEFAULT_TAU,
                         mutual: bool = False, cache_dir=None) -> Target:
    """`graph_probit` on a standardised `inertia.data` classification set (e.g. "sonar")."""
    ds = load_dataset(name, cache_dir=cache_dir)
    if DATASETS[ds.name].task != "classification":
        raise TargetError(f"graph-probit needs a classification dataset; {name!r} is a regression")
    t = graph_probit(ds.X, ds.y, k=k, tau=tau, mutual=mutual,
                     name=f"graph-probit-{ds.name}")
    return t.replace(info=dict(t.info, dataset=ds.name))


# ---------------------------------------------------------------------------------------------
# Reference optimum, in numpy/scipy: it runs once per target.

def _problem(target: Target):
    """(Q, ytilde) of a graph-probit (identity-design probit) target."""
    if target.observations is None or not target.info.get("identity_design"):
        raise TargetError(f"{target.name!r} is not a graph-probit (identity-design probit) target")
    yt = np.asarray(target.observations.data[1], dtype=np.float64)
    prior = target.observations.prior
    Q = np.asarray(jax.jit(jax.hessian(prior))(jnp.zeros(target.dim)))  # prior is quadratic
    return 0.5 * (Q + Q.T), yt


def _mills(t):
    return np.exp(-0.5 * t * t - 0.5 * math.log(2 * math.pi) - log_ndtr(t))


def _moments(yt, m, s, order):
    """E log Phi(t), -ytilde E r(t) (= E grad) and E w(t), t = ytilde z, z ~ N(m, s^2)."""
    z, w = hermite_nodes(order)
    t = yt[:, None] * (m[:, None] + s[:, None] * z[None, :])
    r = _mills(t)
    return log_ndtr(t) @ w, -yt * (r @ w), (r * (t + r)) @ w


def graph_probit_objective(Q, yt, m, S, order) -> float:
    """F(m, S) = m^T Q m / 2 + tr(Q S) / 2 - sum_i E log Phi(ytilde_i z_i) - H(N(m, S))."""
    n = m.shape[0]
    elog, _, _ = _moments(yt, m, np.sqrt(np.diag(S)), order)
    logdet = 2.0 * np.sum(np.log(np.diag(np.linalg.cholesky(S))))
    return float(0.5 * m @ Q @ m + 0.5 * np.sum(Q * S) - np.sum(elog)
                 - 0.5 * n * math.log(2 * math.pi * math.e) - 0.5 * logdet)


def _stationarity(Q, yt, m, S, order):
    """Cholesky-coordinate gradient norm and relative covariance residual at (m, S)."""
    _, g, h = _moments(yt, m, np.sqrt(np.diag(S)), order)
    H = Q + np.diag(h)
    L = np.linalg.cholesky(S)
    gL = np.tril(H @ L) - np.diag(1.0 / np.diag(L))
    grad = math.sqrt(float(np.sum((Q @ m + g) ** 2) + np.sum(gL**2)))
    Hinv = sla.cho_solve(sla.cho_factor(H, lower=True), np.eye(len(m)))
    resid = float(np.linalg.norm(S - Hinv) / np.linalg.norm(S))
    return grad, resid


def _solve(Q, yt, order, max_iter, step_tol=1e-12):
    """Fixed point of the stationary equations until the updates of m and sqrt(diag Sigma) stall."""
    n = Q.shape[0]
    eye = np.eye(n)
    m, s = np.zeros(n), np.ones(n)
    for it in range(1, max_iter + 1):
        _, g, h = _moments(yt, m, s, order)
        m_new = m - sla.cho_solve(sla.cho_factor(Q + np.diag(h), lower=True), Q @ m + g)
        _, _, h = _moments(yt, m_new, s, order)
        S = sla.cho_solve(sla.cho_factor(Q + np.diag(h), lower=True), eye)
        S = 0.5 * (S + S.T)
        s_new = np.sqrt(np.diag(S))
        step = max(np.max(np.abs(m_new - m)), np.max(np.abs(s_new - s)))
        m, s = m_new, s_new
        if step <= step_tol:
            break
    return m, S, it


@in_float64
def graph_probit_reference(target: Target, order: int = 192, *, check_order: int | None = None,
                           max_iter: int = 50, grad_tol: float = 1e-5, cov_tol: float = 1e-8,
                           objective_agreement: float = 1e-8, strict: bool = True):
    """(m, Sigma, F_ref, diagnostics): the checked fixed point of the stationary equations (docs/data.md)."""
    Q, yt = _problem(target)
    check_order = 2 * order if check_order is None else check_order
    m, S, iters = _solve(Q, yt, order, max_iter)
    grad, resid = _stationarity(Q, yt, m, S, order)
    F = graph_probit_objective(Q, yt, m, S, order)
    m2, S2, _ = _solve(Q, yt, check_order, max_iter)
    F2 = graph_probit_objective(Q, yt, m2, S2, check_order)
    grad2, _ = _stationarity(Q, yt, m, S, check_order)
    diag = dict(order=order, check_order=check_order, iterations=iters, grad_norm=grad,
                cov_residual=resid, objective_check=F2, objective_diff=abs(F - F2),
                grad_norm_check_order=grad2)
    failures = [f"{k} = {diag[k]:.3g} > {tol:g}" for k, tol in
                [("grad_norm", grad_tol), ("cov_residual", cov_tol),
                 ("objective_diff", objective_agreement), ("grad_norm_check_order", grad_tol)]
                if not diag[k] <= tol]
    diag["accepted"] = not failures
    if failures and strict:
        raise FloatingPointError(f"graph-probit reference for {target.name!r} fails its "
                                 f"acceptance test: {'; '.join(failures)}")
    return m, S, F, diag


GRAPH_PROBIT_DATASETS = ("sonar", "ionosphere", "wdbc", "pima", "banknote")


def graph_probit_table(names=GRAPH_PROBIT_DATASETS, *, k: int = DEFAULT_K,
                       tau: float = DEFAULT_TAU, cache_dir=None) -> list[dict]:
    """Table 2 of the paper, computed: n, p, lambda_max(L_G) and kappa per data set."""
    rows = []
    for name in names:
        info = graph_probit_dataset(name, k=k, tau=tau, cache_dir=cache_dir).info
        rows.append({key: info[key] for key in ("dataset", "n", "p", "lambda_max", "kappa")})
    return rows


if __name__ == "__main__":  # python -m inertia.targets.graph_probit  -> Table 2 as Markdown
    print("| dataset | n | p | lambda_max(L_G) | kappa = 2 + 49 lambda_max |")
    print("|---|---|---|---|---|")
    for r in graph_probit_table():
        print(f"| {r['dataset']} | {r['n']} | {r['p']} | {r['lambda_max']:.6f} "
              f"| {r['kappa']:.4f} |")
