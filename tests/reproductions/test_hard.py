"""The hard family of Theorem 3.1: projection, curvature, hidden region, objective formulas."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize
import scipy.stats

import inertia  # noqa: F401  (float64)
from inertia.targets import TargetError
from reproductions.hard import (_tail_sq, ball_gap_of_standard, halfspace_energy,
                                  halfspace_optimum, hard_family, hard_pair, radius,
                                  symmetric_correction)

KAPPA, DIM = 1e3, 6


@pytest.fixture(scope="module")
def pair():
    return hard_pair(KAPPA, dim=DIM, seed=3)


def _points(tv, n, rng):
    """Points spread over all four projection cases: inside K, ball-only, half-space-only, rim."""
    v, R, a = tv.info["v"], tv.info["R"], tv.info["a"]
    x = rng.standard_normal((n, DIM)) * rng.uniform(0, 1.5 * a, (n, 1)) / math.sqrt(DIM)
    return x + rng.uniform(-1, 3, (n, 1)) * R * v


def _generic_projection(x, v, R, a):
    """Projection onto {|y| <= a, v^T y <= R} by a generic route: SLSQP on the primal, multipliers
    (lam, mu) >= 0 from its KKT residual x - y = lam y + mu v, then Newton on the concave
    Lagrange dual g(lam, mu) with y(lam, mu) = (x - mu v)/(1 + lam) (SLSQP alone stops near 1e-7)."""
    cons = [{"type": "ineq", "fun": lambda y: a * a - y @ y, "jac": lambda y: -2 * y},
            {"type": "ineq", "fun": lambda y: R - y @ v, "jac": lambda y: -v}]
    y0 = scipy.optimize.minimize(lambda y: 0.5 * np.sum((y - x) ** 2), np.zeros_like(x),
                                 jac=lambda y: y - x, constraints=cons, method="SLSQP",
                                 options={"ftol": 1e-15, "maxiter": 500}).x
    active = np.array([y0 @ y0 > a * a - 1e-5, y0 @ v > R - 1e-5])
    z = np.zeros(2)
    if active.any():
        cols = np.stack([y0, v], 1)[:, active]
        z[active] = np.linalg.lstsq(cols, x - y0, rcond=None)[0]
        for _ in range(30):  # Newton on the dual over the active multipliers
            y = (x - z[1] * v) / (1 + z[0])
            gr = np.array([0.5 * (y @ y - a * a), y @ v - R])
            H = -np.array([[y @ y, y @ v], [y @ v, 1.0]]) / (1 + z[0])
            z[active] -= np.linalg.solve(H[np.ix_(active, active)], gr[active])
        assert np.all(z >= 0)
    return (x - z[1] * v) / (1 + z[0])


def test_projection_matches_generic_solver_and_is_idempotent(pair):
    tv, _ = pair
    v, R, a = tv.info["v"], tv.info["R"], tv.info["a"]
    P = jax.jit(jax.vmap(tv.info["projection"]))
    X = _points(tv, 200, np.random.default_rng(0))
    Y = np.asarray(P(jnp.asarray(X)))
    on_ball = np.abs(np.sum(Y * Y, 1) - a * a) < 1e-9
    on_plane = np.abs(Y @ v - R) < 1e-9
    cases = {(bool(b), bool(p)) for b, p in zip(on_ball, on_plane)}
    assert cases == {(False, False), (True, False), (False, True), (True, True)}
    ref = np.stack([_generic_projection(x, v, R, a) for x in X])
    np.testing.assert_allclose(Y, ref, atol=1e-8, rtol=0)
    np.testing.assert_allclose(np.asarray(P(jnp.asarray(Y))), Y, atol=1e-13, rtol=0)
    assert np.all(np.sum(Y * Y, 1) <= a * a * (1 + 1e-13)) and np.all(Y @ v <= R + 1e-12)


def test_hessian_eigenvalues_between_1_and_kappa(pair):
    tv, tb = pair
    X = jnp.asarray(_points(tv, 60, np.random.default_rng(1)))
    for t in (tv, tb):
        eig = np.linalg.eigvalsh(np.asarray(jax.jit(jax.vmap(t.hessian))(X)))
        assert eig.min() >= 1 - 1e-9 and eig.max() <= KAPPA * (1 + 1e-12)
    # the bounds are attained: identity inside K, kappa across the cap's face
    eig = np.linalg.eigvalsh(np.asarray(jax.jit(jax.vmap(tv.hessian))(X)))
    assert np.isclose(eig.min(), 1.0) and np.isclose(eig.max(), KAPPA)


def test_potentials_agree_exactly_outside_hidden_region_and_differ_inside(pair):
    tv, tb = pair
    X = jnp.asarray(_points(tv, 400, np.random.default_rng(2)))
    hidden = np.asarray(jax.vmap(tv.info["in_hidden_region"])(X))
    assert 20 < hidden.sum() < 380
    Vv, Vb = (np.asarray(jax.jit(jax.vmap(t.potential))(X)) for t in (tv, tb))
    Gv, Gb = (np.asarray(jax.jit(jax.vmap(t.grad))(X)) for t in (tv, tb))
    assert np.array_equal(Vv[~hidden], Vb[~hidden]) and np.array_equal(Gv[~hidden], Gb[~hidden])
    assert np.all(Vv[hidden] > Vb[hidden])
    assert np.all(np.abs(Gv[hidden] - Gb[hidden]).max(axis=1) > 0)
    # grad V = x + (kappa - 1)(x - P_K x) is the derivative of the potential (envelope theorem)
    np.testing.assert_allclose(Gv, np.asarray(jax.vmap(jax.grad(tv.potential))(X)),
                               rtol=1e-9, atol=1e-9)


def test_radius_rules_dimension_and_info():
    k = 1e5
    L = math.log(k)
    assert radius(k) == pytest.approx(math.sqrt(2 * L - 3 * math.log(L)), rel=1e-14)
    Ru = radius(k, "unit-energy")
    assert 0.5 * (k - 1) * _tail_sq(Ru) == pytest.approx(1.0, rel=1e-10)
    t = hard_family(k, seed=0)
    R = t.info["R"]
    assert t.dim == math.ceil(R**4) == 247
    assert t.info["a"] == pytest.approx((1 + R**-0.5) * math.sqrt(247))
    assert np.linalg.norm(t.info["v"]) == pytest.approx(1.0)
    assert (t.alpha, t.beta, t.info["mollified"]) == (1.0, k, False)
    np.testing.assert_array_equal(hard_family(k, seed=0, variant="ball").info["v"], t.info["v"])
    with pytest.raises(TargetError, match="kappa"):
        hard_family(1.0)
    with pytest.raises(TargetError, match="variant"):
        hard_family(100.0, variant="cap")
    with pytest.raises(TargetError, match="R < a"):
        hard_family(100.0, R=5.0, dim=2)
    with pytest.raises(TargetError, match="shape"):
        hard_family(100.0, dim=4, v=np.ones(3))


def test_objective_formulas_against_monte_carlo():
    """E_gamma (kappa-1) e_{K_v} from the target's own potential equals the half-space closed form
    plus the (tail) correction, within 4 Monte Carlo standard errors."""
    k = 100.0
    tv = hard_family(k, dim=10, seed=1)
    R, a, d = tv.info["R"], tv.info["a"], tv.dim
    X = jax.random.normal(jax.random.PRNGKey(0), (400_000, d))
    pen = np.asarray(jax.jit(jax.vmap(lambda x: tv.potential(x) - 0.5 * x @ x))(X))
    closed = halfspace_energy(k, R, 0.0, 1.0)
    corr, corr_se = symmetric_correction(k, R, a, d, 0.0, 1.0, num_samples=400_000, seed=1)
    se = pen.std() / math.sqrt(pen.size)
    assert abs(pen.mean() - closed - corr) < 4 * math.hypot(se, corr_se)
    # the 1-D optimum is stationary and beats N(0, I)
    mu, sig, fstar, f0 = halfspace_optimum(k, R)
    f = lambda m, s: 0.5 * (m * m + s * s) - math.log(s) + halfspace_energy(k, R, m, s * s)
    h = 1e-5
    assert abs(f(mu + h, sig) - f(mu - h, sig)) / (2 * h) < 1e-6
    assert abs(f(mu, sig + h) - f(mu, sig - h)) / (2 * h) < 1e-6
    assert fstar < f0 and mu < 0 and sig < 1
    gap_ball, s = ball_gap_of_standard(k, a, d)
    assert 0 <= gap_ball < 1e-3 and s <= 1
