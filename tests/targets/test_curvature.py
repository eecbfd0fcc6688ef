"""Curvature estimates against known spectra (issue: VI on the user's own model)."""
import numpy as np
import jax.numpy as jnp
import pytest

from inertia.targets import from_potential, kappa_family
from inertia.targets.curvature import estimate_curvature, with_estimated_bounds


@pytest.mark.parametrize("dim,kappa,dense", [(8, 300.0, 64), (60, 1000.0, 10)])
def test_bounds_within_ten_percent_on_known_spectrum(dim, kappa, dense):
    t = kappa_family(dim=dim, kappa=kappa)
    est = estimate_curvature(t.replace(alpha=None, beta=None), dense_max_dim=dense, margin=1.0)
    assert est.map_converged
    np.testing.assert_allclose(est.mode, t.optimum[0], atol=1e-5)
    assert abs(est.alpha / t.alpha - 1) < 0.1 and abs(est.beta / t.beta - 1) < 0.1
    if dim <= dense:  # the Laplace factor is exact on a Gaussian: factor factor^T = Sigma
        cov = est.factor @ est.factor.T
        np.testing.assert_allclose(cov @ np.asarray(t.hessian(jnp.zeros(dim))), np.eye(dim),
                                   atol=1e-8)
    else:  # matrix-free: the vector s of the diagonal factor diag(s)
        assert np.shape(est.factor) == (dim,) and np.all(est.factor > 0)


def test_margin_and_user_bounds_win():
    t = kappa_family(dim=6, kappa=50.0)
    est = estimate_curvature(t.replace(alpha=None, beta=None), margin=2.0)
    np.testing.assert_allclose([est.alpha, est.beta], [t.alpha / 2, t.beta * 2], rtol=1e-6)
    t2, _ = with_estimated_bounds(t.replace(beta=None))
    assert t2.alpha == t.alpha and t2.beta == pytest.approx(2 * t.beta, rel=1e-6)


def test_logistic_spectrum_at_mode_matches_closed_form():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((200, 5))
    y = (X @ np.array([1.0, -2.0, 0.5, 0.0, 1.0]) + rng.standard_normal(200) > 0).astype(float)

    def V(th):
        z = jnp.asarray(X) @ th
        return jnp.sum(jnp.logaddexp(0.0, z) - jnp.asarray(y) * z) + 0.5 * th @ th

    est = estimate_curvature(from_potential(V, 5), margin=1.0, num_points=1)
    p = 1 / (1 + np.exp(-X @ est.mode))
    H = X.T @ (X * (p * (1 - p))[:, None]) + np.eye(5)
    w = np.linalg.eigvalsh(H)
    np.testing.assert_allclose([est.lambda_min[0], est.lambda_max[0]], [w[0], w[-1]], rtol=1e-6)


def test_indefinite_points_do_not_set_alpha():
    # a double well along x0: hess V is indefinite near 0 but positive at the modes +-1
    def V(x):
        return 2.0 * (x[0] ** 2 - 1.0) ** 2 + 0.5 * x[1] ** 2

    est = estimate_curvature(from_potential(V, 2), init=np.array([0.3, 0.1]), num_points=8)
    assert est.alpha > 0 and np.isfinite(est.beta) and est.beta >= 16.0
    np.testing.assert_allclose(abs(est.mode[0]), 1.0, atol=1e-5)


def test_non_finite_start_is_a_clear_error():
    # NaN at 0 and on the whole box [-2, 2]^d of the further starts (targets.mode.find_mode)
    t = from_potential(lambda x: jnp.where(x[0] < 5.0, jnp.nan, 0.5 * x @ x), 2)
    with pytest.raises(ValueError, match="not finite at the starting point"):
        estimate_curvature(t)


def test_whitened_target_uses_its_parents_compiled_functions():
    """jitted() of V(m + W z) is the chain rule on the parent's compiled V, grad V, hess V and HVP
    (nothing compiled for the whitened target), equal to JAX's derivatives of V(m + W z)."""
    import jax

    from inertia.targets.whiten import whiten
    from inertia.targets.base import _JIT_CACHE, jitted

    rng = np.random.default_rng(0)
    t = from_potential(lambda x: jnp.sum(jnp.cosh(x)) + 0.5 * x @ x + x[0] * x[1] ** 2, 4)
    m, W = rng.normal(size=4), np.tril(rng.normal(size=(4, 4))) + 3 * np.eye(4)
    wt = whiten(t, m, W)
    z, v = jnp.asarray(rng.normal(size=4)), jnp.asarray(rng.normal(size=4))
    val, g = jitted(wt, "value_and_grad")(z)
    np.testing.assert_allclose(val, wt.potential(z), rtol=1e-13)
    np.testing.assert_allclose(g, jax.grad(wt.potential)(z), rtol=1e-12, atol=1e-12)
    H = np.asarray(jax.hessian(wt.potential)(z))
    np.testing.assert_allclose(jitted(wt, "hessian")(z), H, rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(jitted(wt, "hvp")(z, v), H @ np.asarray(v), rtol=1e-12, atol=1e-10)
    assert wt.potential not in _JIT_CACHE and t.potential in _JIT_CACHE


def test_matrix_free_curvature_forms_no_dense_hessian(monkeypatch):
    """Above the threshold (here lowered to 10 for d = 40) the mode search (Newton-CG), the
    extreme eigenvalues (Lanczos) and the Laplace factor use HVPs only: the dense Hessian's
    programs are made to raise, and the answers match the closed form of a Gaussian with diagonal
    precision, where the Rademacher probes of diag(hess V) are exact (v_i^2 = 1, no off-diagonal
    terms): s = diag(P)^-1/2 to rounding; the eigenvalues to Lanczos' tolerance (tol=1e-3)."""
    from inertia.targets import curvature, mode as mode_mod

    def refuse(*a, **k):
        raise AssertionError("a dense Hessian was formed")

    monkeypatch.setattr(curvature, "_jitted_hessian", refuse)
    monkeypatch.setattr(mode_mod, "_dense_hessian", refuse)
    d = 40
    lam = np.geomspace(0.5, 50.0, d)
    mu = np.linspace(-3.0, 3.0, d)
    t = from_potential(lambda x: 0.5 * jnp.sum(jnp.asarray(lam) * (x - jnp.asarray(mu)) ** 2), d)
    est = estimate_curvature(t, dense_max_dim=10, margin=1.0, num_points=2)
    assert est.map_converged and "Lanczos" in est.method
    np.testing.assert_allclose(est.mode, mu, atol=1e-6)
    np.testing.assert_allclose(est.factor, lam ** -0.5, rtol=1e-10)
    np.testing.assert_allclose([min(est.lambda_min), max(est.lambda_max)], [0.5, 50.0], rtol=1e-3)


def test_matrix_free_mode_of_a_correlated_logistic_matches_the_dense_search():
    """Newton-CG on HVPs in the probed diagonal frame (threshold lowered to 5) finds the mode the
    dense trust-region search finds, to the decrement tolerance (1e-6 nats: 0.0014 sds)."""
    from inertia.targets.mode import find_mode

    rng = np.random.default_rng(3)
    X = rng.standard_normal((300, 20)) @ (np.eye(20) + 0.5 * rng.standard_normal((20, 20)))
    y = (X @ rng.standard_normal(20) + rng.standard_normal(300) > 0).astype(float)

    def V(th):
        z = jnp.asarray(X) @ th
        return jnp.sum(jnp.logaddexp(0.0, z) - jnp.asarray(y) * z) + 0.5 * th @ th

    t = from_potential(V, 20)
    dense, free = find_mode(t), find_mode(t, dense_max_dim=5)
    assert dense.converged and free.converged and free.hessian is None
    assert free.method == "trust-krylov" and free.scale.shape == (20,)
    p = 1 / (1 + np.exp(-X @ dense.x))
    H = X.T @ (X * (p * (1 - p))[:, None]) + np.eye(20)
    diff = free.x - dense.x
    assert 0.5 * diff @ H @ diff < 1e-5  # both within 1e-6 nats of the mode in the Laplace metric


def test_lanczos_that_cannot_converge_falls_back_to_the_shifted_problem_and_says_so():
    # a quadratic whose spectrum crowds near zero far below its top (lambda_i = 1e3 (i / (d-1))^4):
    # eigsh's relative tolerance on the smallest eigenvalue (0) cannot be met; the shifted
    # problem finds it to 1e-3 of the largest (1e3), the largest itself to 1e-3 relative
    from inertia.targets.curvature import LANCZOS_TOL, hessian_extremes

    d = 300
    lam = 1e3 * np.linspace(0.0, 1.0, d) ** 4
    t = from_potential(lambda x: 0.5 * jnp.sum(jnp.asarray(lam) * x ** 2), d)
    notes = []
    with pytest.warns(RuntimeWarning, match="did not converge for the smallest"):
        lmin, lmax, H, hvps = hessian_extremes(t, np.zeros(d), dense_max_dim=10, notes=notes)
    assert H is None and len(notes) == 1 and "shifted" in notes[0]
    assert lmax == pytest.approx(1e3, rel=LANCZOS_TOL)
    assert abs(lmin - 0.0) <= 2 * LANCZOS_TOL * 1e3  # absolute, on the scale of the largest
