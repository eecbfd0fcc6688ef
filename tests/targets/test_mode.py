"""Mode finder at extreme conditioning: closed-form modes at kappa = 1e10, the Newton decrement,
the Laplace factor's accuracy, and the probe for a potential that falls without bound."""
import warnings

import numpy as np
import jax.numpy as jnp
from inertia.targets import from_potential
from inertia.targets.curvature import estimate_curvature
from inertia.targets.mode import find_mode, inverse_factor, probe_unbounded


def _rotated_quadratic(kappa, d=6, seed=0):
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    P = (Q * np.logspace(0, np.log10(kappa), d)) @ Q.T
    P = 0.5 * (P + P.T)
    mu = 100.0 * rng.standard_normal(d)
    return from_potential(lambda x: 0.5 * (x - mu) @ jnp.asarray(P) @ (x - mu), d), P, mu


def test_quadratic_mode_at_kappa_1e10_to_a_tiny_fraction_of_an_sd():
    t, P, mu = _rotated_quadratic(1e10)
    m = find_mode(t)
    sd = np.sqrt(np.diag(np.linalg.inv(P)))
    assert m.converged and m.decrement <= 1e-6
    assert np.max(np.abs(m.x - mu) / sd) < 1e-4


def _year_regression(sigma=1.13, n=62, seed=0):
    """y = a + b x + N(0, sigma) on years 1952..2013 with a N(0, 1e4) x N(0, 10) prior, sigma
    known: V is quadratic with the MAP in closed form; kappa of hess V ~ 1e10."""
    x = np.arange(1952.0, 1952.0 + n)
    rng = np.random.default_rng(seed)
    y = -60.7 + 0.035 * x + rng.normal(0.0, sigma, n)
    X = np.c_[np.ones(n), x]
    P = X.T @ X / sigma**2 + np.diag([1e-8, 1e-2])
    xj, yj = jnp.asarray(x), jnp.asarray(y)

    def V(th):
        r = yj - th[0] - th[1] * xj
        return 0.5 * jnp.sum(r**2) / sigma**2 + 0.5 * th[0] ** 2 * 1e-8 + 0.5 * th[1] ** 2 * 1e-2

    # the closed form in centred coordinates (a' = a + b c), mapped back exactly
    c = x.mean()
    T = np.array([[1.0, -c], [0.0, 1.0]])
    Xc = np.c_[np.ones(n), x - c]
    Pc = Xc.T @ Xc / sigma**2 + T.T @ np.diag([1e-8, 1e-2]) @ T
    mode = T @ np.linalg.solve(Pc, Xc.T @ y / sigma**2)
    sd = np.sqrt(np.diag(T @ np.linalg.inv(Pc) @ T.T))
    return from_potential(V, 2), mode, sd, np.linalg.cond(P)


def test_regression_on_years_map_at_kappa_1e10():
    t, mode, sd, kappa = _year_regression()
    assert kappa > 1e9
    m = find_mode(t)
    assert m.converged
    assert np.max(np.abs(m.x - mode) / sd) < 1e-3


def test_inverse_factor_whitens_a_kappa_1e12_hessian():
    _, P, _ = _rotated_quadratic(1e12, d=5)
    C = inverse_factor(P)
    assert np.array_equal(C, np.tril(C))
    w = np.linalg.eigvalsh(C.T @ P @ C)
    assert np.max(np.abs(w - 1.0)) < 1e-3  # the product C C^T would lose everything here


def test_laplace_factor_of_the_year_regression_whitens_it():
    t, mode, sd, _ = _year_regression()
    est = estimate_curvature(t, num_points=2)
    assert est.map_converged
    np.testing.assert_allclose(np.sqrt(np.sum(est.factor**2, axis=1)), sd, rtol=1e-3)


def test_probe_names_a_potential_that_falls_without_bound():
    def V(x):  # a standard normal inside x0 <= 4, exp(10 x0) beyond: infinite mass
        return jnp.where(x[0] <= 4.0, 0.5 * jnp.sum(x**2), 0.5 * jnp.sum(x[1:] ** 2) + 8.0
                         - 10.0 * (x[0] - 4.0))

    t = from_potential(V, 3)
    found = probe_unbounded(t, np.zeros(3), np.eye(3))
    assert found is not None and found["direction"][0] > 0.99
    proper = from_potential(lambda x: jnp.sum(jnp.log1p(x**2)), 3)  # Cauchy-like: heavy, proper
    assert probe_unbounded(proper, np.zeros(3), np.eye(3)) is None


def test_probe_is_silent_on_rays_that_leave_the_support():
    # V = inf beyond |x| = 3 (a truncated normal): the far rays' differences are inf - inf
    t = from_potential(lambda x: jnp.where(jnp.max(jnp.abs(x)) < 3.0, 0.5 * jnp.sum(x**2),
                                           jnp.inf), 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert probe_unbounded(t, np.zeros(2), np.eye(2)) is None


def test_not_converged_is_reported_on_an_unbounded_potential():
    m = find_mode(from_potential(lambda x: -x[0] + 0.5 * x[1] ** 2, 2))
    assert not m.converged and m.reason


def _infinite_where(bad, d=3):
    """V = ||x - 1||^2 / 2, +inf where `bad(x)`: the mode is 1 (closed form)."""
    return from_potential(lambda x: jnp.where(bad(x), jnp.inf, 0.5 * jnp.sum((x - 1.0) ** 2)), d)


def test_a_start_where_v_is_not_finite_is_left_for_the_next():
    """V is +inf at 0, the first start: the search goes on from the uniform starts and finds the
    mode 1 (it raised at the first start)."""
    t = _infinite_where(lambda x: jnp.all(x == 0.0))
    m = find_mode(t)
    assert m.converged and np.allclose(m.x, 1.0, atol=1e-6)
    assert "not finite at the first start" in m.reason


def test_a_potential_infinite_at_every_start_is_refused():
    """V is +inf wherever x_0 < 5 (every start: 0 and the box [-2, 2]^d): a TargetError naming
    the starts tried, not a mode."""
    import pytest
    from inertia.targets.base import TargetError

    t = _infinite_where(lambda x: x[0] < 5.0)
    with pytest.raises(TargetError, match="further starts"):
        find_mode(t)
