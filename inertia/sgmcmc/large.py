"""Algorithm 1's offline step for GLMs on data that need not fit in memory: chunked passes only.

`LargeGLM` reads rows from a row source (`inertia.data.sources`); `offline_large` returns the same
`Curvature` as `offline`, with peak memory O(chunk D^2 + D^4) beyond the data (docs/sgmcmc.md).
"""
from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Optional

import numpy as np

from ..data.sources import ArraySource
from . import passes as P
from .estimate import CHECK_ROWS, NoEstimateError, _recession_direction
from .models import Link, linear_link, logistic_link, poisson_link
from .offline import MAP, Curvature, shifted_newton_step

# largest N for which a failed subsample separation check falls back to the exact LP on all rows
FULL_CHECK_ROWS = 200_000
# the quadratic term's default rows: rows x (D(D+1)/2)^2 <= QUAD_BUDGET, at least QUAD_MIN
QUAD_BUDGET = 300_000_000
QUAD_MIN = 20_000


@dataclasses.dataclass(frozen=True, eq=False)
class LargeGLM:
    """A GLM l_n = link(x_n^T theta, y_n), x_n = [1, row], whose rows come from `source`; prior Gamma."""

    source: object
    link: Link
    intercept: bool = False
    prior_precision: Optional[np.ndarray] = None
    name: str = "glm"
    info: dict = dataclasses.field(default_factory=dict)

    @property
    def dim(self) -> int:
        return self.source.num_cols + int(self.intercept)

    @property
    def num_obs(self) -> int:
        return int(self.source.num_rows)

    @property
    def gamma(self) -> np.ndarray:
        if self.prior_precision is None:
            return np.zeros((self.dim, self.dim))
        return self.prior_precision

    @property
    def is_glm(self) -> bool:
        return True

    def passes(self, chunk: int = 1 << 15) -> P.HostPasses:
        """Chunked passes over the rows."""
        return P.HostPasses(self.source, kind=self.link.kind, params=self.link.params,
                            intercept=self.intercept, chunk=chunk)


def _prior(prior_precision, d):
    if prior_precision is None:
        return None
    G = np.asarray(prior_precision, dtype=np.float64)
    if G.ndim == 0:
        G = float(G) * np.eye(d)
    if G.shape != (d, d):
        raise ValueError(f"prior precision must be a scalar or ({d}, {d}); got shape {G.shape}")
    if not np.allclose(G, G.T) or np.linalg.eigvalsh(G)[0] < 0:
        raise ValueError("prior precision Gamma must be symmetric positive semi-definite")
    return G


def _validate(source, kind: str, chunk: int = 1 << 16) -> None:
    """One numpy pass: finite values, 0/1 labels (logistic), non-negative counts (Poisson)."""
    for s, Xb, yb in source.blocks(chunk):
        if not (np.all(np.isfinite(Xb)) and np.all(np.isfinite(yb))):
            raise ValueError(f"X and y must be finite (found NaN or inf near row {s})")
        if kind == "logistic" and not np.all((yb == 0) | (yb == 1)):
            raise ValueError("logistic regression needs labels in {0, 1}")
        if kind == "poisson" and np.any(yb < 0):
            raise ValueError("Poisson responses must be non-negative counts")


def large_model(name: str, source, *, intercept: bool = False, prior_precision=None,
                loss: str = "log", beta_div: float = 1.5, sigma=None, chunk: int = 1 << 15,
                validate: bool = True) -> LargeGLM:
    """`make_model` for a row source: 'linear' (loss, beta_div, sigma), 'poisson' or 'logistic'."""
    if name not in ("linear", "poisson", "logistic"):
        raise ValueError(f"unknown model {name!r}; choose from ['linear', 'logistic', 'poisson']")
    kind = {"linear": "gaussian", "poisson": "poisson", "logistic": "logistic"}[name]
    if validate:
        _validate(source, kind)
    d = source.num_cols + int(intercept)
    G = _prior(prior_precision, d)
    if name == "poisson":
        return LargeGLM(source, poisson_link(), intercept, G, "poisson", {"kind": "poisson"})
    if name == "logistic":
        return LargeGLM(source, logistic_link(), intercept, G, "logistic", {"kind": "logistic"})
    if sigma is None:
        sigma = _ols_residual_sd(source, intercept, chunk)
    link, info = linear_link(loss, sigma, beta_div)
    return LargeGLM(source, link, intercept, G, f"linear-{loss}", info)


def _least_squares(passes, d):
    st = passes(np.zeros(d), P.LEAST_SQUARES)
    coef, *_ = np.linalg.lstsq(st["gram"], st["xty"], rcond=None)
    return coef


def _ols_residual_sd(source, intercept, chunk) -> float:
    ps = P.HostPasses(source, kind="gaussian", params=(1.0,), intercept=intercept, chunk=chunk)
    d = source.num_cols + int(intercept)
    coef = _least_squares(ps, d)
    rss = float(ps(coef, ("rss",))["rss"])
    return math.sqrt(rss / max(source.num_rows - d, 1))


def _rows(model: LargeGLM, idx) -> np.ndarray:
    X, _ = model.source.take(idx)
    if model.intercept:
        X = np.hstack([np.ones((X.shape[0], 1)), X])
    return X


def check_estimate_exists_large(model: LargeGLM, passes=None, *, seed: int = 0) -> None:
    """`calibrate.check_estimate_exists` from a random subsample, then the full Gram matrix if needed."""
    if model.prior_precision is not None and np.linalg.matrix_rank(model.gamma) == model.dim:
        return
    N, d = model.num_obs, model.dim
    kind = model.info.get("kind")
    if N <= d and kind == "linear":
        raise NoEstimateError(f"{N} observation(s) for {d} parameters: a linear model needs more "
                              "rows than parameters (the residual scale would be 0)")
    m = min(N, CHECK_ROWS)
    idx = np.sort(np.random.default_rng(seed).choice(N, size=m, replace=False))
    Xs = _rows(model, idx)
    if np.linalg.matrix_rank(Xs) < d:
        passes = passes if passes is not None else model.passes()
        gram = passes(np.zeros(d), ("gram",))["gram"]
        ev = np.linalg.eigvalsh(0.5 * (gram + gram.T))
        if ev[0] <= ev[-1] * d * 1e3 * np.finfo(float).eps:
            rank = int(np.sum(ev > ev[-1] * d * 1e3 * np.finfo(float).eps))
            raise NoEstimateError(f"the design matrix has rank {rank} < {d} parameters (collinear "
                                  "or constant predictors): theta_hat is not unique; drop "
                                  "redundant columns or add rows")
    if kind not in ("logistic", "poisson"):
        return
    ys = model.source.take(idx)[1]

    def direction(X, y):
        if kind == "logistic":
            return _recession_direction(X, np.zeros(X.shape[0], bool), -(2 * y - 1))
        return _recession_direction(X, y > 0, np.ones(X.shape[0]))

    if direction(Xs, ys) is None:
        return
    if N > FULL_CHECK_ROWS:
        warnings.warn(f"a random subsample of {m} rows is separable ({kind}); whether all "
                      f"{N} rows are was not checked (the MAP search will not converge if so)",
                      RuntimeWarning, stacklevel=3)
        return
    allidx = np.arange(N)
    v = direction(_rows(model, allidx), model.source.take(allidx)[1])
    if v is not None:
        top = int(np.argmax(np.abs(v)))
        what = ("the classes are perfectly (or quasi-completely) separable by the predictors, so "
                "the logistic MLE does not exist" if kind == "logistic" else
                "the zero counts can be fitted exactly by letting some mean go to 0, so the "
                "Poisson MLE does not exist")
        raise NoEstimateError(f"{what}; the loss keeps decreasing along a direction weighted "
                              f"most on parameter {top}. Remove the separating predictor(s) or "
                              "add a prior (prior_precision=)", parameter=top)


def _objective(st, theta, N, G):
    """(L, grad L, Hessian of L) from pass sums (eq. 2, with the prior's N^-1 R)."""
    f = float(st["value"]) / N
    g = st["grad"] / N
    H = st["hess"] / N
    if G is not None:
        f += 0.5 * float(theta @ G @ theta) / N
        g = g + G @ theta / N
        H = H + G / N
    return f, g, 0.5 * (H + H.T)


def fit_map_large(model: LargeGLM, passes, theta0=None, *, tol: float = 1e-10,
                  max_iter: int = 100) -> MAP:
    """theta_hat by damped Newton with backtracking, one chunked pass per trial point."""
    d, N, G = model.dim, passes.num_obs, model.prior_precision
    if theta0 is None:
        theta0 = (_least_squares(passes, d) if model.info.get("kind") == "linear"
                  else np.zeros(d))
    theta = np.asarray(theta0, dtype=np.float64)
    st = passes(theta, P.NEWTON)
    f, g, H = _objective(st, theta, N, G)
    if not np.isfinite(f):
        raise FloatingPointError("the loss is not finite at the starting point of the MAP search")

    def threshold(s):
        return tol * max(1.0, math.sqrt(float(s["g2"]) / N))

    it, stalls, best = 0, 0, np.inf
    for it in range(1, max_iter + 1):
        gnorm = float(np.linalg.norm(g))
        if gnorm <= threshold(st) or stalls >= 3:
            it -= 1
            break
        step = shifted_newton_step(H, g)
        t, slope = 1.0, float(g @ step)
        if -slope <= 64 * np.finfo(float).eps * max(1.0, abs(f)):
            t = 0.0  # the predicted decrease is below L's rounding: judge by the gradient
        while t > 1e-12:
            cand = theta + t * step
            sc = passes(cand, P.NEWTON)
            fc, gc, Hc = _objective(sc, cand, N, G)
            if np.isfinite(fc) and fc <= f + 1e-4 * t * slope:
                break
            t *= 0.5
        else:
            cand = theta + step
            sc = passes(cand, P.NEWTON)
            fc, gc, Hc = _objective(sc, cand, N, G)
            if not float(np.linalg.norm(gc)) < gnorm:
                break
        no_gain = f - fc <= 4 * np.finfo(float).eps * abs(f) and gnorm >= 0.5 * best
        stalls = stalls + 1 if no_gain else 0
        best = min(best, gnorm)
        theta, f, g, H, st = cand, fc, gc, Hc, sc
    gnorm = float(np.linalg.norm(g))
    if gnorm > threshold(st) and stalls < 3:
        warnings.warn(f"MAP search stopped at gradient norm {gnorm:.2e} (> {threshold(st):.1e}) "
                      f"after {it} Newton steps (ill-conditioned loss or separable data)",
                      RuntimeWarning, stacklevel=2)
    return MAP(theta, gnorm, it, f)


def default_quad_rows(dim: int) -> int:
    """Rows for the quadratic term: rows x p^2 <= QUAD_BUDGET (p = D(D+1)/2), at least QUAD_MIN."""
    p = dim * (dim + 1) // 2
    return int(max(QUAD_MIN, QUAD_BUDGET // (p * p)))


def curvature_large(model: LargeGLM, passes, theta_hat, *, num_obs: Optional[int] = None,
                    quad_rows="auto", seed: int = 0, quad_passes=None) -> Curvature:
    """J, I, the quadratic-term matrix (on `quad_rows` rows) and Gram/residual variance, chunked."""
    theta = np.asarray(theta_hat, dtype=np.float64)
    n = passes.num_obs
    N = n if num_obs is None else int(num_obs)
    if quad_rows == "auto":
        quad_rows = default_quad_rows(model.dim)
    full_quad = quad_rows is None or n <= quad_rows
    sharded_quad = full_quad and not isinstance(passes, P.HostPasses)
    st = passes(theta, P.CURVATURE + (("quad",) if sharded_quad else ()))
    if sharded_quad:
        K = st["quad"] / n
    else:
        # blocks of about 4 MiB of pair products (chunk x D(D+1)/2 numbers)
        p = model.dim * (model.dim + 1) // 2
        qp = P.HostPasses(quad_passes.source if quad_passes is not None else passes.source,
                          kind=model.link.kind, params=model.link.params,
                          intercept=model.intercept,
                          chunk=int(max(64, min(passes.chunk if isinstance(passes, P.HostPasses)
                                                else 1 << 15, (1 << 19) // p))))
        rows = (None if full_quad else np.sort(np.random.default_rng(seed + 1).choice(
            n, size=int(quad_rows), replace=False)))
        K = qp(theta, ("quad",), rows=rows)["quad"] / (n if rows is None else rows.size)
    J = st["hess"] / n
    I = st["fisher"] / n
    kw = {}
    if model.info.get("kind") == "linear":
        kw.update(residual_var=float(st["rss"]) / n, sigma=model.info["sigma"],
                  gram=st["gram"] / n)
    gnorm = float(np.linalg.norm(st["grad"] / n + model.gamma @ theta / N))
    return Curvature(theta_hat=theta, num_obs=N, num_used=n, J=0.5 * (J + J.T),
                     I=0.5 * (I + I.T), gamma=model.gamma, grad_norm=gnorm,
                     _cache={"quad": K}, **kw)


def offline_large(model: LargeGLM, *, subsample: Optional[int] = None, seed: int = 0,
                  theta0=None, tol: float = 1e-10, quad_rows="auto",
                  passes=None, chunk: int = 1 << 15) -> Curvature:
    """`offline.offline` by chunked passes, on all rows or a random subsample of M rows."""
    N = model.num_obs
    ps = passes if passes is not None else model.passes(chunk)
    quad_ps = None
    if subsample is not None and int(subsample) < N:
        M = int(subsample)
        if M < model.dim + 1:
            raise ValueError(f"subsample size M={M} is too small for D={model.dim} parameters")
        idx = np.sort(np.random.default_rng(seed).choice(N, size=M, replace=False))
        sub = dataclasses.replace(model, source=ArraySource(*model.source.take(idx)))
        if model.prior_precision is not None:
            sub = dataclasses.replace(sub, prior_precision=model.prior_precision * M / N)
        ps = sub.passes(chunk)
    else:
        sub = model
        if not isinstance(ps, P.HostPasses):
            quad_ps = model.passes(chunk)
    fit = fit_map_large(sub, ps, theta0, tol=tol)
    curv = curvature_large(sub, ps, fit.theta, num_obs=N, quad_rows=quad_rows, seed=seed,
                           quad_passes=quad_ps)
    return dataclasses.replace(curv, grad_norm=fit.grad_norm, gamma=model.gamma,
                               _cache=dict(curv._cache))


__all__ = ["LargeGLM", "large_model", "offline_large", "fit_map_large", "curvature_large",
           "check_estimate_exists_large", "default_quad_rows", "CHECK_ROWS", "FULL_CHECK_ROWS",
           "QUAD_BUDGET", "QUAD_MIN"]
