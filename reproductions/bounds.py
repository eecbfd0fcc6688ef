"""How far SG(L)D is from its quadratic proxy: the plug-in bound of Theorem 4.5 / Corollary 4.6 and
the Wasserstein distance itself, measured.

Constants are estimated at theta_hat, as in the paper's Appendix D.1: L and mu are the extreme
eigenvalues of H = J + Gamma / N; M_n^2 = sum_d ||grad^2 d_d l_n||_2^2 from the per-observation
third derivatives (autodiff; for GLMs M_n = |f'''(eta_n)| ||x_n||^3 exactly); tau_4^4 the mean
fourth power of the centred per-observation gradient norms. The measured side runs SG(L)D and the
proxy of eq. 11-12 on the same minibatches and the same injected noise (the synchronous coupling of
the proof in Appendix F.4); its root-mean-square distance is an upper bound on W2 between the two
stationary laws, the distance of their means a lower bound, and the exact optimal transport
between the two samples (POT, optional) lies between the two for the same draws.
"""
from __future__ import annotations

import functools
import math
from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from inertia._recent import KEPT
from inertia.sgmcmc.models import _LINKS, Model

Array = jax.Array


# ------------------------------------------------------------------------------- constants
class BoundConstants(NamedTuple):
    """Plug-in constants of Theorem 4.5 / Lemma F.2 at theta_hat.

    L, mu: largest / smallest eigenvalue of H = J + Gamma/N (the paper's plug-in for the
    smoothness and strong-convexity constants, also used for L-hat and mu-hat);
    M_bar, M2_bar: mean of M_n and of M_n^2; tau2_sq = mean ||g_n||^2, tau4_4 = mean ||g_n||^4 with
    g_n the per-observation gradient centred to mean zero (g_n + Gamma theta_hat / N);
    L_obs = max_n ||J_n||_2, the per-observation smoothness the proof's co-coercivity step uses
    (reported, not plugged in).
    """

    L: float
    mu: float
    M_bar: float
    M2_bar: float
    tau2_sq: float
    tau4_4: float
    L_obs: float
    dim: int
    num_obs: int


def third_derivative_norms(model: Model, theta_hat, *, chunk: int = 64) -> np.ndarray:
    """M_n = (sum_d ||grad^2 (d_d l_n)(theta_hat)||_2^2)^(1/2) for every observation (Assumption B).

    GLMs: the third derivative is f'''(eta_n) x_n (x) x_n (x) x_n, so M_n = |f'''(eta_n)| ||x_n||^3,
    with f''' by autodiff of the link's second derivative. Other models: the (D, D, D) tensor of
    each observation by forward-over-reverse autodiff and the spectral norm of each slice.
    """
    th = jnp.asarray(theta_hat, dtype=jnp.float64)
    if model.is_glm:
        d2 = _LINKS[model.link.kind][2]
        f3 = jax.vmap(jax.grad(d2), in_axes=(0, 0, None))(model.X @ th, model.y, model.link._p())
        xn = jnp.linalg.norm(model.X, axis=1)
        return np.asarray(jnp.abs(f3) * xn ** 3)
    fn = _generic_m(model.loss)
    n = model.num_obs
    out = []
    for s in range(0, n, chunk):
        batch = jax.tree_util.tree_map(lambda a: a[s:s + chunk], model.data)
        out.append(np.asarray(fn(th, batch)))
    return np.concatenate(out)


@functools.lru_cache(maxsize=KEPT)  # per loss function: a new model's is a new key
def _generic_m(loss):
    third = jax.jacfwd(jax.hessian(loss))  # T[a, b, c] = d_a d_b d_c l

    def one(theta, datum):
        T = third(theta, datum)
        T = 0.5 * (T + jnp.swapaxes(T, 1, 2))
        ev = jnp.linalg.eigvalsh(T)  # eigenvalues of each slice grad^2 (d_a l), shape (D, D)
        return jnp.sqrt(jnp.sum(jnp.max(jnp.abs(ev), axis=-1) ** 2))

    return jax.jit(jax.vmap(one, in_axes=(None, 0)))


def constants(model: Model, theta_hat, *, chunk: int = 64) -> BoundConstants:
    """Plug-in L, mu, M_bar, M2_bar, tau_2^2, tau_4^4 (and max_n ||J_n||) at theta_hat (App. D.1)."""
    th = jnp.asarray(theta_hat, dtype=jnp.float64)
    N = model.num_obs
    H = np.asarray(model.mean_hessian(th)) + model.gamma / N
    ev = np.linalg.eigvalsh(0.5 * (H + H.T))
    G = np.asarray(model.example_grads(th))
    G = G - G.mean(axis=0)  # = g_n + Gamma theta_hat / N at the exact optimum
    sq = np.sum(G * G, axis=1)
    M = third_derivative_norms(model, th, chunk=chunk)
    if model.is_glm:
        w = np.asarray(model.curvature_weights(th))
        L_obs = float(np.max(np.abs(w) * np.sum(np.asarray(model.X) ** 2, axis=1)))
    else:
        Jn = np.asarray(model.example_hessians(th))
        L_obs = float(np.max(np.abs(np.linalg.eigvalsh(0.5 * (Jn + np.swapaxes(Jn, 1, 2))))))
    return BoundConstants(L=float(ev[-1]), mu=float(ev[0]), M_bar=float(M.mean()),
                          M2_bar=float(np.mean(M ** 2)), tau2_sq=float(sq.mean()),
                          tau4_4=float(np.mean(sq ** 2)), L_obs=L_obs, dim=model.dim,
                          num_obs=N)


# ---------------------------------------------------------------------------------- bounds
def _beta(temperature) -> float:
    beta = math.inf if temperature is None else float(temperature)
    if not beta > 0:
        raise ValueError(f"inverse temperature beta must be in (0, inf]; got {temperature}")
    return beta


def _check_step(step_size) -> float:
    lam = float(step_size)
    if not (math.isfinite(lam) and lam > 0):
        raise ValueError(f"the bound needs a scalar step Lambda = lambda I with lambda > 0; got {step_size}")
    return lam


def regime(c: BoundConstants, step_size: float, batch_size: int) -> dict:
    """Step-size conditions: Theorem 4.5 (lambda < 1/(2L)), Lemma F.2 / Corollary 4.6
    (lambda < min{B mu / (200 L^2), 1/(4L)}), with the plug-in L and mu."""
    lam = _check_step(step_size)
    lim = min(batch_size * c.mu / (200 * c.L ** 2), 1 / (4 * c.L))
    return {"theorem": bool(lam < 1 / (2 * c.L)), "corollary": bool(lam < lim),
            "corollary_limit": float(lim), "theorem_limit": float(1 / (2 * c.L))}


def fourth_moment_bound(c: BoundConstants, step_size: float, batch_size: int,
                        temperature=math.inf) -> float:
    """Lemma F.2 (eq. F.48): E||psi_inf - theta_hat||^4 <= 96 lam^2 tau4^4 / (mu^2 B^2) + 24 lam tau4^2 D
    / (mu^2 B beta) + 12 D^2 / (mu^2 beta^2) + 48 lam D (D + 2) / (mu beta^2)."""
    lam, B, beta, D, mu = _check_step(step_size), batch_size, _beta(temperature), c.dim, c.mu
    out = 96 * lam ** 2 * c.tau4_4 / (mu ** 2 * B ** 2)
    if math.isfinite(beta):
        out += (24 * lam * math.sqrt(c.tau4_4) * D / (mu ** 2 * B * beta)
                + 12 * D ** 2 / (mu ** 2 * beta ** 2) + 48 * lam * D * (D + 2) / (mu * beta ** 2))
    return float(out)


def theorem_bound(c: BoundConstants, step_size: float, fourth_moment: float) -> float:
    """Stationary limit of Theorem 4.5 (eq. 21, t -> inf) for a given E||psi - theta_hat||^4:
    W2^2 <= {lam M2_bar / 2 + M_bar^2 / (4 mu)} m4 / (mu (1 - 2 lam L)); inf unless lam < 1/(2L)."""
    lam = _check_step(step_size)
    shrink = c.mu * (1 - 2 * lam * c.L)
    if shrink <= 0:
        return math.inf
    w2sq = (lam * c.M2_bar / 2 + c.M_bar ** 2 / (4 * c.mu)) * float(fourth_moment) / shrink
    return float(math.sqrt(max(w2sq, 0.0)))


def corollary_constant(c: BoundConstants, temperature=math.inf) -> float:
    """A of Corollary 4.6 (Section F.5): A^2 = max(A0, A1, A2) with C0 = (2/mu)(M2_bar/(8L) +
    M_bar^2/(4 mu)), A0 = 96 C0 tau4^4 / mu^2, A1 = 12 C0 tau4^2 D / mu^2, A2 = 60 C0 D^2 / mu^2 +
    96 C0 D / mu^2 (A1, A2 only for SGLD, beta < inf). Then W2 <= A (lam / B + 1 / beta)."""
    beta = _beta(temperature)
    C0 = (2 / c.mu) * (c.M2_bar / (8 * c.L) + c.M_bar ** 2 / (4 * c.mu))
    A2 = [96 * C0 * c.tau4_4 / c.mu ** 2]
    if math.isfinite(beta):
        D = c.dim
        A2 += [12 * C0 * math.sqrt(c.tau4_4) * D / c.mu ** 2,
               12 * C0 * D ** 2 / c.mu ** 2 + 48 * C0 * D * (D + 2) / c.mu ** 2]
    return float(math.sqrt(max(A2)))


def w2_bound(c: BoundConstants, step_size: float, batch_size: int, temperature=math.inf) -> float:
    """Corollary 4.6 / eq. C.1: W2(pi_theta, pi_psi) <= A (lambda / B + 1 / beta)."""
    lam, beta = _check_step(step_size), _beta(temperature)
    return corollary_constant(c, beta) * (lam / batch_size + (1 / beta if math.isfinite(beta) else 0))


def mean_shift(model: Model, theta_hat, Sigma) -> np.ndarray:
    """First-order shift of SGD's stationary mean away from theta_hat (the proxy's mean):
    E theta - theta_hat ~ -H^-1 mean_n grad^3 l_n(theta_hat)[Sigma] / 2, from E grad L(theta) = 0 at
    stationarity; its norm predicts the mean gap, a lower bound on W2(pi_theta, pi_psi).
    GLMs: mean_n f3(eta_n) (x_n^T Sigma x_n) x_n (f3 the link's third derivative, by autodiff);
    other models: autodiff of theta -> tr(J_n(theta) Sigma)."""
    th = jnp.asarray(theta_hat, dtype=jnp.float64)
    S = jnp.asarray(Sigma, dtype=jnp.float64)
    N = model.num_obs
    if model.is_glm:
        d2 = _LINKS[model.link.kind][2]
        f3 = jax.vmap(jax.grad(d2), in_axes=(0, 0, None))(model.X @ th, model.y, model.link._p())
        q = jnp.einsum("na,ab,nb->n", model.X, S, model.X)
        t3 = model.X.T @ (f3 * q) / N
    else:
        hess = jax.hessian(model.loss)
        one = jax.grad(lambda t, d: jnp.sum(hess(t, d) * S))
        t3 = jnp.mean(jax.vmap(one, in_axes=(None, 0))(th, model.data), axis=0)
    H = np.asarray(model.mean_hessian(th)) + model.gamma / N
    return -0.5 * np.linalg.solve(H, np.asarray(t3))


# ------------------------------------------------------------------------ coupled sampling
class CoupledDraws(NamedTuple):
    """Synchronously coupled SG(L)D (theta) and proxy (psi) chains, per block of `block` steps:
    positions at each block's end (chain, draw, D); block means of ||theta - psi||^2 (chain, draw),
    of theta - psi (chain, draw, D), of ||psi - theta_hat||^2 and ||psi - theta_hat||^4."""

    theta: np.ndarray
    psi: np.ndarray
    sq_dist: np.ndarray
    diff: np.ndarray
    psi_m2: np.ndarray
    psi_m4: np.ndarray


def _glm_proxy_grad(theta, idx, pdata):
    X, w, G0, th, gamma_n = pdata
    Xb = X[idx]
    g = jnp.mean(G0[idx] + (w[idx] * (Xb @ (theta - th)))[:, None] * Xb, axis=0)
    return g if gamma_n is None else g + gamma_n @ theta


def _generic_proxy_grad(theta, idx, pdata):
    Jn, G0, th, gamma_n = pdata
    g = jnp.mean(G0[idx] + Jn[idx] @ (theta - th), axis=0)
    return g if gamma_n is None else g + gamma_n @ theta


def _proxy_parts(model: Model, theta_hat):
    """(static proxy grad(theta, idx, pdata), pdata): eq. 11's minibatch gradient, data as argument."""
    th = jnp.asarray(theta_hat, dtype=jnp.float64)
    G0 = model.example_grads(th)
    gamma_n = (None if model.prior_precision is None
               else jnp.asarray(model.prior_precision) / model.num_obs)
    if model.is_glm:
        return _glm_proxy_grad, (model.X, model.curvature_weights(th), G0, th, gamma_n)
    return _generic_proxy_grad, (model.example_hessians(th), G0, th, gamma_n)


def _indices(key, num_chains, num_obs, batch_size, replacement):
    if replacement:
        return jax.random.randint(key, (num_chains, batch_size), 0, num_obs)
    u = jax.random.uniform(key, (num_chains, num_obs))
    return jax.lax.top_k(u, batch_size)[1]


@functools.partial(jax.jit, static_argnames=("grad_fn", "proxy_fn", "num_obs", "batch_size",
                                             "replacement", "num_draws", "block", "burn_in",
                                             "beta"))
def _coupled_run(key, Lam, init, theta_hat, data, pdata, *, grad_fn, proxy_fn, num_obs,
                 batch_size, replacement, num_draws, block, burn_in, beta):
    num_chains = init.shape[0]
    root = None if not math.isfinite(beta) else jnp.linalg.cholesky(2.0 * Lam / beta)
    vgrad = jax.vmap(grad_fn, in_axes=(0, 0, None))
    vprox = jax.vmap(proxy_fn, in_axes=(0, 0, None))

    def one(carry, key):
        th, ps = carry
        k_idx, k_xi = jax.random.split(key)
        idx = _indices(k_idx, num_chains, num_obs, batch_size, replacement)
        th = th - vgrad(th, idx, data) @ Lam.T
        ps = ps - vprox(ps, idx, pdata) @ Lam.T
        if root is not None:
            xi = jax.random.normal(k_xi, th.shape, dtype=th.dtype) @ root.T
            th, ps = th + xi, ps + xi
        return (th, ps), None

    def stats(carry, key):
        (th, ps), acc = carry
        (th, ps), _ = one((th, ps), key)
        d = th - ps
        e2 = jnp.sum((ps - theta_hat) ** 2, axis=1)
        acc = (acc[0] + jnp.sum(d * d, axis=1), acc[1] + d, acc[2] + e2, acc[3] + e2 * e2)
        return ((th, ps), acc), None

    def blk(carry, key):
        zeros = (jnp.zeros(num_chains), jnp.zeros_like(init), jnp.zeros(num_chains),
                 jnp.zeros(num_chains))
        (carry, acc), _ = jax.lax.scan(stats, (carry, zeros), jax.random.split(key, block))
        return carry, (carry[0], carry[1]) + tuple(a / block for a in acc)

    k_burn, k_run = jax.random.split(key)
    carry = (init, init)
    if burn_in:
        carry, _ = jax.lax.scan(one, carry, jax.random.split(k_burn, burn_in))
    _, out = jax.lax.scan(blk, carry, jax.random.split(k_run, num_draws))
    return tuple(jnp.swapaxes(o, 0, 1) for o in out)


def coupled_sample(model: Model, theta_hat, Lambda, *, batch_size: int, num_draws: int,
                   block: int = 1, burn_in: int = 0, num_chains: int = 1, seed: int = 0,
                   temperature=math.inf, replacement: bool = True, init=None) -> CoupledDraws:
    """Run SG(L)D (eq. 4) and its proxy (eq. 12) on the same minibatches and injected noise.

    Both start at `init` (default theta_hat, every chain); after `burn_in` steps, `num_draws`
    blocks of `block` steps are summarised (see `CoupledDraws`). Lambda: scalar (lambda I), a
    vector (diagonal) or a (D, D) symmetric matrix. One compilation per model kind, shape, batch
    size and run length; Lambda and the data are traced.
    """
    D = model.dim
    beta = _beta(temperature)
    Lam = np.asarray(Lambda, dtype=np.float64)
    Lam = Lam * np.eye(D) if Lam.ndim == 0 else (np.diag(Lam) if Lam.ndim == 1 else Lam)
    if Lam.shape != (D, D) or not np.all(np.isfinite(Lam)):
        raise ValueError(f"Lambda must be a finite scalar, ({D},) or ({D}, {D}); got shape "
                         f"{np.shape(Lambda)}")
    if math.isfinite(beta):
        if not np.allclose(Lam, Lam.T, rtol=1e-10, atol=0) or np.linalg.eigvalsh(Lam)[0] <= 0:
            raise ValueError("SGLD at finite temperature needs a symmetric positive-definite Lambda")
    N = model.num_obs
    if not 1 <= batch_size <= N:
        raise ValueError(f"batch size must be in [1, N={N}]; got {batch_size}")
    if num_draws < 1 or block < 1 or burn_in < 0 or num_chains < 1:
        raise ValueError("num_draws, block and num_chains must be >= 1 and burn_in >= 0")
    th = np.asarray(theta_hat, dtype=np.float64)
    x0 = np.tile(th, (num_chains, 1)) if init is None else np.atleast_2d(np.asarray(init, float))
    if x0.shape != (num_chains, D):
        raise ValueError(f"init must have shape ({num_chains}, {D}); got {x0.shape}")
    grad_fn, data = model.sampler_parts()
    proxy_fn, pdata = _proxy_parts(model, th)
    out = _coupled_run(jax.random.key(seed), jnp.asarray(Lam), jnp.asarray(x0), jnp.asarray(th),
                       data, pdata, grad_fn=grad_fn, proxy_fn=proxy_fn, num_obs=N,
                       batch_size=int(batch_size), replacement=bool(replacement),
                       num_draws=int(num_draws), block=int(block), burn_in=int(burn_in),
                       beta=beta)
    out = CoupledDraws(*(np.asarray(o) for o in out))
    if not (np.all(np.isfinite(out.sq_dist)) and np.all(np.isfinite(out.psi_m4))):
        raise FloatingPointError(
            f"SG(L)D or its proxy diverged with this Lambda (batch size {batch_size}): the step is "
            "too large for this loss; use a smaller step (Corollary 4.6 needs lambda < "
            "min(B mu / (200 L^2), 1 / (4 L)), see `regime`)")
    return out


# ------------------------------------------------------------------------------ estimates
def ot_w2(x, y, *, max_points: Optional[int] = 2000, num_iter_max: int = 10_000_000) -> float:
    """Exact W2 between the empirical measures of samples x (n, D) and y (m, D) (POT `ot.emd2`).

    With more than `max_points` points a sample is thinned evenly. Needs the optional dependency
    POT (`pip install pot`, or `inertia[ot]`).
    """
    try:
        import ot
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("the optimal-transport estimate needs POT: `pip install pot` (or "
                          "`pip install inertia[ot]`); the coupled estimate needs nothing") from err
    x, y = np.atleast_2d(np.asarray(x, float)), np.atleast_2d(np.asarray(y, float))
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"samples have different dimensions: {x.shape[1]} and {y.shape[1]}")

    def thin(z):
        if max_points is None or z.shape[0] <= max_points:
            return z
        return z[np.linspace(0, z.shape[0] - 1, max_points).round().astype(int)]

    x, y = thin(x), thin(y)
    a = np.full(x.shape[0], 1.0 / x.shape[0])
    b = np.full(y.shape[0], 1.0 / y.shape[0])
    cost = ot.dist(x, y, metric="sqeuclidean")
    return float(math.sqrt(max(float(ot.emd2(a, b, cost, numItermax=num_iter_max)), 0.0)))


class W2Estimate(NamedTuple):
    """Measured distance between the stationary laws of SG(L)D and its proxy.

    coupled: sqrt(mean ||theta_t - psi_t||^2) under the synchronous coupling (an upper bound on
    W2, up to Monte Carlo error), coupled_se its standard error (delta method, ESS of the block
    series); mean_gap: ||mean(theta_t - psi_t)|| (a lower bound on W2); ot: exact OT between the
    two samples of block-end positions (mean_gap <= ot <= the coupled value on the same draws;
    None without POT or when not asked); psi_m2, psi_m4: E||psi - theta_hat||^2 and ^4.
    """

    coupled: float
    coupled_se: float
    mean_gap: float
    ot: Optional[float]
    psi_m2: float
    psi_m4: float
    ess: float  # effective number of blocks behind `coupled_se`


def _ess(series: np.ndarray) -> float:
    """Bulk ESS of a (chain, draw) series (`convergence.ess_bulk`; draw count when constant)."""
    from inertia.convergence import ess_bulk

    if np.ptp(series) == 0:
        return float(series.size)
    s = series[..., None] if series.ndim == 2 else series
    return float(ess_bulk(s).ravel()[0])


def estimate_w2(draws: CoupledDraws, *, ot: bool = True, max_points: int = 2000) -> W2Estimate:
    """W2 estimates from coupled draws (see `W2Estimate`)."""
    sq = draws.sq_dist
    m = float(sq.mean())
    n = sq.shape[0] * sq.shape[1]
    ess = min(_ess(sq), float(n)) if n > 3 and sq.shape[1] > 3 else float(n)
    se_sq = float(sq.std()) / math.sqrt(max(ess, 1.0))
    coupled = math.sqrt(max(m, 0.0))
    se = se_sq / (2 * coupled) if coupled > 0 else 0.0
    gap = float(np.linalg.norm(draws.diff.reshape(-1, draws.diff.shape[-1]).mean(axis=0)))
    w_ot = None
    if ot:
        D = draws.theta.shape[-1]
        w_ot = ot_w2(draws.theta.reshape(-1, D), draws.psi.reshape(-1, D), max_points=max_points)
    return W2Estimate(coupled, se, gap, w_ot, float(draws.psi_m2.mean()),
                      float(draws.psi_m4.mean()), ess)


def measure(model: Model, theta_hat, step_size: float, *, batch_size: int, num_steps: int,
            burn_in: Optional[int] = None, num_chains: int = 4, num_blocks: int = 500,
            seed: int = 0, temperature=math.inf, replacement: bool = True, ot: bool = True,
            ot_points: int = 2000, constants_: Optional[BoundConstants] = None,
            predict_gap: bool = True, curvature_=None) -> dict:
    """Coupled W2 estimates for Lambda = lambda I next to the plug-in bounds (one Fig. D.1 point).

    `num_steps` post-burn-in steps per chain, summarised in `num_blocks` blocks; burn-in defaults
    to 5 / (lambda mu), five relaxation times of the slowest proxy direction. `gap_predicted` is
    ||mean_shift|| with the exact stationary covariance of the proxy (`predict.stationary_cov`;
    pass `curvature_` to reuse a `Curvature`).
    """
    lam = _check_step(step_size)
    c = constants(model, theta_hat) if constants_ is None else constants_
    if burn_in is None:
        burn_in = int(math.ceil(5 / (lam * c.mu)))
    blocks = max(1, min(int(num_blocks), int(num_steps)))
    block = max(1, int(num_steps) // blocks)
    draws = coupled_sample(model, theta_hat, lam, batch_size=batch_size, num_draws=blocks,
                           block=block, burn_in=burn_in, num_chains=num_chains, seed=seed,
                           temperature=temperature, replacement=replacement)
    est = estimate_w2(draws, ot=ot, max_points=ot_points)
    reg = regime(c, lam, batch_size)
    gap_pred = None
    if predict_gap:
        from inertia.sgmcmc.offline import curvature
        from inertia.sgmcmc.predict import stationary_cov

        curv = curvature(model, theta_hat) if curvature_ is None else curvature_
        S = stationary_cov(curv, lam, batch_size=batch_size, temperature=temperature,
                           replacement=replacement)
        gap_pred = float(np.linalg.norm(mean_shift(model, theta_hat, S)))
    return {
        "step_size": lam, "batch_size": int(batch_size), "ratio": lam / batch_size,
        "coupled": est.coupled, "coupled_se": est.coupled_se, "mean_gap": est.mean_gap,
        "gap_predicted": gap_pred,
        "ot": est.ot, "ess": est.ess, "psi_m2": est.psi_m2, "psi_m4": est.psi_m4,
        "bound": w2_bound(c, lam, batch_size, temperature),
        "bound_theorem_m4_lemma": theorem_bound(c, lam, fourth_moment_bound(
            c, lam, batch_size, temperature)),
        "bound_theorem_m4_measured": theorem_bound(c, lam, est.psi_m4),
        "m4_lemma": fourth_moment_bound(c, lam, batch_size, temperature),
        "in_theorem_regime": reg["theorem"], "in_corollary_regime": reg["corollary"],
        "burn_in": burn_in, "steps": blocks * block, "chains": num_chains,
    }


def loglog_slope(x, y, se=None) -> tuple[float, float]:
    """Least-squares slope of log y on log x and its standard error (weights 1/Var(log y) from
    standard errors `se` of y when given; otherwise from the residuals)."""
    lx, ly = np.log(np.asarray(x, float)), np.log(np.asarray(y, float))
    if lx.size < 2:
        raise ValueError("a slope needs at least two points")
    w = np.ones_like(lx) if se is None else (np.asarray(y, float) / np.asarray(se, float)) ** 2
    X = np.stack([np.ones_like(lx), lx], axis=1)
    XtW = X.T * w
    cov = np.linalg.inv(XtW @ X)
    beta = cov @ (XtW @ ly)
    if se is None:
        dof = max(lx.size - 2, 1)
        cov = cov * float(np.sum((ly - X @ beta) ** 2)) / dof
    return float(beta[1]), float(math.sqrt(max(cov[1, 1], 0.0)))


__all__ = ["BoundConstants", "constants", "third_derivative_norms", "regime",
           "fourth_moment_bound", "theorem_bound", "corollary_constant", "w2_bound", "mean_shift",
           "CoupledDraws", "coupled_sample", "ot_w2", "W2Estimate", "estimate_w2", "measure",
           "loglog_slope"]
