"""Estimators of spec §5: unbiasedness (Monte Carlo z-scores), exactness on quadratics, variance."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from inertia.targets import kappa_family
from inertia.vi import ESTIMATORS
from inertia.variational.family import covariance, entropy_grad, low, project_coords, sym

NUM = 20000  # batch-1 estimates per unbiasedness check
Z_MAX = 4.5  # max |z| over ~20 components: false-alarm probability ~1e-4 under unbiasedness


def _point(d, coords, seed=0):
    rng = np.random.default_rng(seed)
    m = rng.normal(scale=0.5, size=d)
    M = rng.normal(scale=0.3, size=(d, d))
    A = np.tril(M, -1) + np.diag(0.5 + rng.uniform(size=d)) if coords == "chol" else \
        sym(jnp.asarray(M)) + np.eye(d)
    return jnp.asarray(m), jnp.asarray(A)


def _exact(target, est, m, A):
    e = target.expectations(m, covariance(A, est.coords))
    gA = project_coords(e.hess @ A, est.coords)
    if est.full:
        gA = gA + entropy_grad(A, est.coords)
    return e.grad, gA


def _draws(estimate, target, m, A, num=NUM, batch=1):
    keys = jax.random.split(jax.random.PRNGKey(0), num)
    return jax.jit(jax.vmap(lambda k: estimate(target, k, m, A, batch)))(keys)


def _zscores(draws, exact, mask):
    """z-scores of the stochastic components inside the mask (the mask drops the zero upper
    triangle of Cholesky coordinates and the duplicated lower triangle of symmetric ones); a
    component with no spread over the draws must equal the exact value."""
    gm, gA = draws
    out = []
    for g, ex, msk in ((gm, exact[0], None), (gA, exact[1], mask)):
        g = np.asarray(g).reshape(g.shape[0], -1)
        ex = np.asarray(ex).ravel()
        keep = np.ones(ex.shape, bool) if msk is None else np.asarray(msk, bool).ravel()
        se = g.std(axis=0, ddof=1) / np.sqrt(g.shape[0])
        det = se <= 1e-14
        np.testing.assert_allclose(g[:, det], np.broadcast_to(ex[det], g[:, det].shape),
                                   rtol=1e-10, atol=1e-12)
        ok = keep & ~det
        out.append((g.mean(0)[ok] - ex[ok]) / se[ok])
    return np.concatenate(out)


STOCHASTIC = [n for n, e in ESTIMATORS.items() if not e.exact]


@pytest.mark.parametrize("name", STOCHASTIC)
def test_unbiased_on_logistic(name, logistic3):
    est = ESTIMATORS[name]
    m, A = _point(logistic3.dim, est.coords)
    exact = _exact(logistic3, est, m, A)
    mask = np.tril(np.ones((3, 3))) if est.coords == "chol" else np.triu(np.ones((3, 3)))
    z = _zscores(_draws(est.estimate, logistic3, m, A), exact, mask)
    assert np.max(np.abs(z)) < Z_MAX, f"{name}: max |z| = {np.max(np.abs(z)):.2f}"


def test_negative_control_paired_at_same_point_is_detected(logistic3):
    """Paired with Y = X (Hessian at the same point) is biased; the z-test must see it."""
    def biased(target, key, m, L, b):
        xi = jax.random.normal(key, (b, m.shape[0]))
        X = m + xi @ L.T
        HL = jax.vmap(lambda x: target.hess_matmul(x, L))(X)
        g = jax.vmap(target.grad)(X) - jnp.einsum("bij,bj->bi", HL, xi)
        return g.mean(0), low(HL.mean(0))

    est = ESTIMATORS["paired"]
    m, A = _point(3, "chol")
    z = _zscores(_draws(biased, logistic3, m, A), _exact(logistic3, est, m, A),
                 np.tril(np.ones((3, 3))))
    assert np.max(np.abs(z)) > 20


@pytest.fixture(scope="module")
def gauss4():
    return kappa_family(4, 50.0)


@pytest.mark.parametrize("name", ["fd", "paired"])
def test_fd_and_paired_exact_for_every_sample_on_quadratics(name, gauss4):
    est = ESTIMATORS[name]
    m, A = _point(4, "chol", seed=5)
    exact = _exact(gauss4, est, m, A)
    gm, gA = _draws(est.estimate, gauss4, m, A, num=16, batch=2)
    np.testing.assert_allclose(gm, np.broadcast_to(exact[0], gm.shape), atol=1e-9)
    np.testing.assert_allclose(gA, np.broadcast_to(exact[1], gA.shape), atol=1e-9)


def test_price_stl_factor_deterministic_on_quadratics(gauss4):
    est = ESTIMATORS["price-stl"]
    m, C = _point(4, "sym", seed=6)
    _, gC = _draws(est.estimate, gauss4, m, C, num=16, batch=3)
    P = gauss4.info["precision"]
    expected = sym(P @ C) - jnp.linalg.inv(C)
    np.testing.assert_allclose(gC, np.broadcast_to(expected, gC.shape), atol=1e-10)


def test_stl_zero_variance_at_optimum(gauss4):
    mu, cov = gauss4.optimum
    w, Q = np.linalg.eigh(cov)
    C = jnp.asarray((Q * np.sqrt(w)) @ Q.T)
    gm, gC = _draws(ESTIMATORS["stl"].estimate, gauss4, jnp.asarray(mu), C, num=32, batch=4)
    assert np.max(np.abs(gm)) < 1e-10 and np.max(np.abs(gC)) < 1e-10


def test_stl_variance_bound_on_quadratics():
    """E||G_b - grad F||^2 <= ((d + 4)/b) ||grad F||^2 on the d = 8 kappa-family, b = 64."""
    target = kappa_family(8, 100.0)
    est = ESTIMATORS["stl"]
    d, b = 8, 64
    for seed in range(2):
        m, C = _point(d, "sym", seed=10 + seed)
        C = C + 0.5 * jnp.eye(d)
        gm, gC = _exact(target, est, m, C)
        sq = float(jnp.sum(gm**2) + jnp.sum(gC**2))
        dm, dC = _draws(est.estimate, target, m, C, num=2000, batch=b)
        err = np.sum((np.asarray(dm) - np.asarray(gm)) ** 2, 1) + \
            np.sum((np.asarray(dC) - np.asarray(gC)) ** 2, (1, 2))
        mc_se = err.std(ddof=1) / np.sqrt(err.size)
        assert err.mean() <= (d + 4) / b * sq + 3 * mc_se, (err.mean(), (d + 4) / b * sq)
