"""Prox maps and projections of spec §2 against a generic constrained solver (scipy)."""
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import minimize

from inertia.vi import family

TOL = 1e-7


def _lower(rng, d, scale=1.0):
    return np.tril(rng.normal(scale=scale, size=(d, d)))


def _solve(obj, x0, cons=(), bounds=None):
    res = minimize(obj, x0, method="SLSQP", constraints=cons, bounds=bounds,
                   options={"ftol": 1e-15, "maxiter": 2000})
    # SLSQP may stop on a line-search warning once at machine precision; the comparison below
    # (to 1e-7) is the actual check, so only a failed start is fatal here.
    assert res.nit > 1, res.message
    return res.x


def test_phi_is_scalar_prox():
    y, eta = np.linspace(-3, 3, 13), 0.7
    x = np.asarray(family.phi(jnp.asarray(y), eta))
    # stationarity of -eta log x + (x - y)^2 / 2 at x > 0
    np.testing.assert_allclose(-eta / x + (x - y), 0.0, atol=1e-12)
    assert np.all(x > 0)


@pytest.mark.parametrize("coords", ["chol", "sym"])
def test_entropy_prox_matches_solver(coords):
    rng = np.random.default_rng(1)
    d, eta = 3, 0.3
    Y = _lower(rng, d) if coords == "chol" else (lambda M: (M + M.T) / 2)(rng.normal(size=(d, d)))
    X = np.asarray(family.prox_entropy(jnp.asarray(Y), eta, coords))
    if coords == "chol":
        idx = np.tril_indices(d)

        def unpack(v):
            L = np.zeros((d, d)); L[idx] = v; return L

        def obj(v):
            L = unpack(v)
            return -eta * np.sum(np.log(np.maximum(np.diag(L), 1e-300))) + 0.5 * np.sum((L - Y) ** 2)

        bounds = [(1e-9, None) if i == j else (None, None) for i, j in zip(*idx)]
        ref = unpack(_solve(obj, np.eye(d)[idx], bounds=bounds))
    else:
        iu = np.triu_indices(d)

        def unpack(v):
            C = np.zeros((d, d)); C[iu] = v; return C + np.triu(C, 1).T

        def obj(v):
            C = unpack(v)
            w = np.linalg.eigvalsh(C)
            if w[0] <= 0:
                return 1e10
            return -eta * np.sum(np.log(w)) + 0.5 * np.sum((C - Y) ** 2)

        ref = unpack(_solve(obj, np.eye(d)[iu]))
    np.testing.assert_allclose(X, ref, atol=TOL)


def test_norm_constrained_prox_matches_solver_and_is_feasible():
    rng = np.random.default_rng(2)
    d, eta, R = 3, 0.2, 1.5
    idx = np.tril_indices(d)
    for scale in (0.3, 3.0):  # inactive and active norm constraint
        Y = _lower(rng, d, scale)
        X = np.asarray(family.prox_norm_constrained(jnp.asarray(Y), eta, R))

        def unpack(v):
            L = np.zeros((d, d)); L[idx] = v; return L

        def obj(v):
            L = unpack(v)
            return -eta * np.sum(np.log(np.maximum(np.diag(L), 1e-300))) + 0.5 * np.sum((L - Y) ** 2)

        cons = [{"type": "ineq", "fun": lambda v: R**2 - np.sum(v**2)}]
        bounds = [(1e-9, None) if i == j else (None, None) for i, j in zip(*idx)]
        ref = unpack(_solve(obj, 0.5 * np.eye(d)[idx], cons, bounds))
        np.testing.assert_allclose(X, ref, atol=TOL)
        assert np.linalg.norm(X) <= R + 1e-12


def test_project_KL_matches_solver_idempotent_feasible():
    rng = np.random.default_rng(3)
    d, R, tau0 = 4, 2.0, 0.3
    idx = np.tril_indices(d)
    for scale in (0.3, 3.0):
        Y = _lower(rng, d, scale)
        X = np.asarray(family.project_KL(jnp.asarray(Y), R, tau0))
        cons = [{"type": "ineq", "fun": lambda v: R**2 - np.sum(v**2)}]
        bounds = [(tau0, None) if i == j else (None, None) for i, j in zip(*idx)]
        v = _solve(lambda v: 0.5 * np.sum((v - Y[idx]) ** 2), np.full(len(idx[0]), tau0), cons,
                   bounds)
        ref = np.zeros((d, d)); ref[idx] = v
        np.testing.assert_allclose(X, ref, atol=TOL)
        assert np.linalg.norm(X) <= R + 1e-12 and np.all(np.diag(X) >= tau0)
        X2 = np.asarray(family.project_KL(jnp.asarray(X), R, tau0))
        np.testing.assert_allclose(X2, X, atol=1e-13)


def test_project_spectrum_matches_solver_idempotent():
    rng = np.random.default_rng(4)
    d, lo, hi = 3, 0.4, 1.5
    M = rng.normal(scale=2.0, size=(d, d))
    Y = (M + M.T) / 2
    X = np.asarray(family.project_spectrum(jnp.asarray(Y), lo, hi))
    w = np.linalg.eigvalsh(X)
    assert w[0] >= lo - 1e-12 and w[-1] <= hi + 1e-12
    iu = np.triu_indices(d)

    def unpack(v):
        C = np.zeros((d, d)); C[iu] = v; return C + np.triu(C, 1).T

    cons = [{"type": "ineq", "fun": lambda v: np.linalg.eigvalsh(unpack(v))[0] - lo},
            {"type": "ineq", "fun": lambda v: hi - np.linalg.eigvalsh(unpack(v))[-1]}]
    ref = unpack(_solve(lambda v: 0.5 * np.sum((unpack(v) - Y) ** 2), np.eye(d)[iu], cons))
    np.testing.assert_allclose(X, ref, atol=1e-6)  # SLSQP on eigenvalue constraints is less sharp
    np.testing.assert_allclose(family.project_spectrum(jnp.asarray(X), lo, hi), X, atol=1e-13)


def test_psi_extension_is_C1_and_bounded_curvature():
    tau0 = 0.25
    t = jnp.linspace(-1.0, 2.0, 3001)
    p, dp = family.psi(t, tau0), family.psi_prime(t, tau0)
    np.testing.assert_allclose(family.psi(jnp.asarray(tau0), tau0), -np.log(tau0))
    np.testing.assert_allclose(family.psi_prime(jnp.asarray(tau0 - 1e-12), tau0), -1 / tau0,
                               rtol=1e-9)
    # psi' is the derivative of psi (central differences) and 0 <= psi'' <= 1/tau0^2
    fd = np.gradient(np.asarray(p), np.asarray(t))
    np.testing.assert_allclose(fd[1:-1], np.asarray(dp)[1:-1], atol=5e-3)
    d2 = np.diff(np.asarray(dp)) / np.diff(np.asarray(t))
    assert d2.min() >= -1e-9 and d2.max() <= 1 / tau0**2 + 1e-6
