"""Graph-probit target: kNN graph, Laplacian, curvature bounds, derivatives, reference optimum."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn.neighbors import NearestNeighbors
from scipy.special import ndtr

import inertia  # noqa: F401  (float64)
from inertia.targets import TargetError
from inertia.targets.graph_probit import (graph_probit, graph_probit_dataset,
                                          graph_probit_objective, graph_probit_reference,
                                          knn_graph, normalized_laplacian)

@pytest.fixture(scope="module")
def small():
    """A small synthetic two-cluster problem (n = 40, p = 3): distances have no ties."""
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-1, 1, (20, 3)), rng.normal(1, 1, (20, 3))])
    y = np.repeat([0, 1], 20)
    return X, y


@pytest.fixture(scope="module")
def sonar():
    return graph_probit_dataset("sonar")  # ships with the package


def test_knn_graph_matches_sklearn(small):
    X, _ = small
    k = 5
    A = NearestNeighbors(n_neighbors=k).fit(X).kneighbors_graph(None).toarray()
    W = knn_graph(X, k)
    np.testing.assert_array_equal(W, np.maximum(A, A.T))
    np.testing.assert_array_equal(knn_graph(X, k, mutual=True), A * A.T)
    assert np.all(np.diag(W) == 0) and np.all(W.sum(1) >= k)
    with pytest.raises(TargetError, match="k must be"):
        knn_graph(X, len(X))


def test_knn_ties_go_to_lower_index():
    # Point 0 has three neighbours at distance 1 (indices 1, 2, 3); k = 2 keeps 1 and 2.
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [5.0, 5.0]])
    W = knn_graph(X, 2, mutual=True)
    assert W[0, 1] == W[0, 2] == 1 and W[0, 3] == 0


def test_normalized_laplacian_formula_and_spectrum(small):
    X, _ = small
    W = knn_graph(X, 4)
    L = normalized_laplacian(W)
    dinv = 1.0 / np.sqrt(W.sum(1))
    np.testing.assert_allclose(L, np.eye(len(W)) - dinv[:, None] * W * dinv[None, :], atol=1e-15)
    ev = np.linalg.eigvalsh(L)
    assert ev[0] > -1e-12 and ev[-1] <= 2 + 1e-12
    # Null vector D^{1/2} 1 (one per connected component).
    np.testing.assert_allclose(L @ np.sqrt(W.sum(1)), 0.0, atol=1e-12)
    # A bipartite graph reaches the upper end 2 exactly.
    ring = np.roll(np.eye(6), 1, axis=1)
    ev_ring = np.linalg.eigvalsh(normalized_laplacian(ring + ring.T))
    assert abs(ev_ring[-1] - 2.0) < 1e-12 and abs(ev_ring[0]) < 1e-12


def test_target_bounds_and_info(small):
    X, y = small
    t = graph_probit(X, y, k=5, tau=49.0)
    lam = float(np.linalg.eigvalsh(normalized_laplacian(knn_graph(X, 5)))[-1])
    assert t.dim == 40 and t.alpha == 1.0
    assert t.beta == pytest.approx(2 + 49 * lam, rel=1e-14) and t.kappa == t.beta
    assert {"n", "p", "k", "tau", "kappa"} <= set(t.info) and t.info["p"] == 3


def test_derivatives_equal_autodiff_and_closed_form(small):
    X, y = small
    t = graph_probit(X, y, k=5, tau=49.0)
    W = knn_graph(X, 5)
    Q = np.eye(40) + 49.0 * normalized_laplacian(W)
    yt = 2.0 * y - 1.0
    z = jax.random.normal(jax.random.PRNGKey(1), (40,)) * 3.0
    v = jax.random.normal(jax.random.PRNGKey(2), (40,))
    zn = np.asarray(z)
    V_closed = 0.5 * zn @ Q @ zn - np.sum(np.log(ndtr(yt * zn)))

    @jax.jit
    def both(z, v):
        auto_hvp = jax.jvp(jax.grad(t.potential), (z,), (v,))[1]
        return (t.potential(z), t.grad(z), jax.grad(t.potential)(z), t.hvp(z, v), auto_hvp,
                t.hessian(z), jax.hessian(t.potential)(z))

    V, g, g_auto, hv, hv_auto, H, H_auto = both(z, v)
    assert float(V) == pytest.approx(V_closed, rel=1e-12)
    np.testing.assert_allclose(g, g_auto, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(hv, hv_auto, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(H, H_auto, rtol=1e-10, atol=1e-10)


def test_curvature_bounds_on_sonar(sonar):
    t = sonar
    assert t.dim == 208 and t.info["p"] == 60 and t.alpha == 1.0
    kappa = t.info["kappa"]
    hessian = jax.jit(t.hessian)
    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    for key, scale in zip(keys, [0.1, 1.0, 5.0, 30.0]):
        z = scale * jax.random.normal(key, (t.dim,))
        ev = np.linalg.eigvalsh(np.asarray(hessian(z)))
        assert ev[0] >= 1.0 and ev[-1] <= kappa
        assert ev[-1] > kappa - 1.0  # lambda_max(Q) = kappa - 1 and diag(w) >= 0


def test_reference_meets_acceptance_on_sonar(sonar):
    t = sonar
    m, S, F, d = graph_probit_reference(t, order=192)
    assert d["accepted"] and d["order"] == 192 and d["check_order"] == 384
    assert d["grad_norm"] <= 1e-5 and d["cov_residual"] <= 1e-8
    assert d["objective_diff"] <= 1e-8 and d["grad_norm_check_order"] <= 1e-5
    # Independent check with the target's own (JAX) quadrature expectations: same F, zero gradient.
    e = jax.jit(t.expectations_at(192))(jnp.asarray(m), jnp.asarray(S))
    entropy = 0.5 * t.dim * math.log(2 * math.pi * math.e) + 0.5 * np.linalg.slogdet(S)[1]
    assert float(e.value) - entropy == pytest.approx(F, abs=1e-8)
    np.testing.assert_allclose(e.grad, 0.0, atol=1e-8)
    np.testing.assert_allclose(np.asarray(e.hess) @ S, np.eye(t.dim), atol=1e-8)
    # F_ref is a minimum: perturbing the mean or the covariance raises F.
    Q = np.asarray(jax.jit(jax.hessian(t.observations.prior))(jnp.zeros(t.dim)))
    yt = np.asarray(t.observations.data[1])
    rng = np.random.default_rng(3)
    u = rng.normal(size=t.dim)
    B = rng.normal(size=(t.dim, t.dim)) / t.dim
    for dm, dS in [(1e-3 * u, 0.0), (0.0, 1e-3 * B @ B.T), (1e-2 * u, 0.0)]:
        assert graph_probit_objective(Q, yt, m + dm, S + dS, 192) > F


def test_dataset_constructor_rejects_regression():
    with pytest.raises(TargetError, match="classification"):
        graph_probit_dataset("diabetes")
