"""Targets: GLM derivatives and quadrature expectations, Gaussian targets, pytree log densities."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from inertia.targets import (TargetError, from_logdensity, gaussian, glm_target, kappa_family,
                             logistic_regression, probit_regression)


def _data(n=30, p=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = (rng.uniform(size=n) < 0.5).astype(float)
    return X, y


@pytest.mark.parametrize("build", [logistic_regression, probit_regression])
def test_glm_derivatives_equal_autodiff_and_bounds_hold(build):
    X, y = _data()
    t = build(X, y, prior_scale=2.0)
    x = jnp.asarray(np.random.default_rng(1).normal(size=t.dim))
    v = jnp.asarray(np.random.default_rng(2).normal(size=t.dim))
    np.testing.assert_allclose(t.grad(x), jax.grad(t.potential)(x), rtol=1e-12, atol=1e-12)
    hess = jax.jit(jax.hessian(t.potential))
    H = hess(x)
    np.testing.assert_allclose(t.hvp(x, v), H @ v, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(t.hessian(x), H, rtol=1e-10, atol=1e-12)
    xs = jnp.asarray(np.random.default_rng(3).normal(size=(5, t.dim)))
    M = jnp.asarray(np.random.default_rng(4).normal(size=(t.dim, 2)))
    np.testing.assert_allclose(t.mean_hess_matmul(xs, M),
                               np.mean([hess(z) @ M for z in xs], 0),
                               rtol=1e-10, atol=1e-12)
    for scale in (0.1, 1.0, 10.0):
        w = np.linalg.eigvalsh(hess(scale * x))
        assert t.alpha - 1e-12 <= w[0] and w[-1] <= t.beta + 1e-9
    assert t.alpha == pytest.approx(0.25)


@pytest.mark.parametrize("link", ["logistic", "probit"])
def test_quadrature_expectations_match_monte_carlo(link):
    X, y = _data(n=20, p=2, seed=5)
    t = glm_target(np.hstack([np.ones((20, 1)), X]), y, link=link)
    rng = np.random.default_rng(6)
    m = rng.normal(scale=0.5, size=3)
    B = rng.normal(scale=0.5, size=(3, 3))
    S = B @ B.T + 0.3 * np.eye(3)
    e = t.expectations(jnp.asarray(m), jnp.asarray(S))
    z = jnp.asarray(rng.multivariate_normal(m, S, size=100_000))
    vals, grads = (np.asarray(a) for a in jax.jit(jax.vmap(lambda x: (t.potential(x), t.grad(x))))(z))
    se_v = vals.std() / np.sqrt(len(vals))
    se_g = grads.std(0) / np.sqrt(len(vals))
    assert abs(vals.mean() - float(e.value)) < 5 * se_v
    assert np.all(np.abs(grads.mean(0) - np.asarray(e.grad)) < 5 * se_g)
    # two quadrature rules at high order agree to ~machine precision
    other = glm_target(np.hstack([np.ones((20, 1)), X]), y, link=link,
                       quadrature="hermite" if link == "logistic" else "trapezoid")
    e2 = other.expectations_at(384)(jnp.asarray(m), jnp.asarray(S))
    np.testing.assert_allclose(e2.value, t.expectations_at(384)(jnp.asarray(m), jnp.asarray(S)).value,
                               rtol=1e-10)


def test_glm_bad_input():
    X, y = _data()
    with pytest.raises(TargetError, match="labels"):
        logistic_regression(X, y + 2)
    with pytest.raises(TargetError, match="X must be"):
        glm_target(X[:5], y)
    with pytest.raises(TargetError, match="unknown link"):
        glm_target(X, y, link="cauchit")
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(TargetError, match="non-finite"):
        glm_target(Xn, y)


def test_gaussian_target_and_kappa_family():
    t = kappa_family(6, 1000.0)
    P = t.info["precision"]
    w = np.linalg.eigvalsh(P)
    np.testing.assert_allclose(w, 0.5 * 1000.0 ** (np.arange(6) / 5), rtol=1e-10)
    assert (t.alpha, t.beta) == (0.5, 500.0)
    np.testing.assert_allclose(t.optimum[0], np.ones(6))
    np.testing.assert_allclose(t.optimum[1] @ P, np.eye(6), atol=1e-9)
    with pytest.raises(TargetError, match="positive definite"):
        gaussian(np.zeros(2), -np.eye(2))
    with pytest.raises(TargetError, match="symmetric"):
        gaussian(np.zeros(2), np.array([[1.0, 0.5], [0.0, 1.0]]))


def test_from_logdensity_on_a_pytree():
    def logdens(p):
        return -0.5 * jnp.sum(p["a"] ** 2) - 0.5 * 4.0 * p["b"] ** 2

    t = from_logdensity(logdens, {"a": jnp.zeros(2), "b": jnp.asarray(0.0)}, alpha=1.0, beta=4.0)
    assert t.dim == 3
    x = jnp.asarray([1.0, -2.0, 0.5])
    np.testing.assert_allclose(t.potential(x), 0.5 * 5 + 0.5 * 4 * 0.25)
    np.testing.assert_allclose(t.grad(x), [1.0, -2.0, 2.0])
    np.testing.assert_allclose(t.hessian(x), np.diag([1.0, 1.0, 4.0]))
    assert t.unravel(x)["b"] == 0.5


def test_trapezoid_error_bound_holds_and_the_ladder_skip_changes_no_value():
    """The logistic trapezoid bound dominates |E_K - E_2K| where discretisation dominates rounding,
    and letting `objective` skip the check rung where it guarantees agreement changes no value."""
    from inertia.variational.objective import objective

    rng = np.random.default_rng(3)
    n, d = 120, 6
    X = rng.normal(size=(n, d))
    t = glm_target(X, (X @ rng.normal(size=d) + rng.normal(size=n) > 0).astype(float))
    ms = rng.normal(size=(12, d))
    scales = np.repeat([0.05, 0.5, 3.0, 12.0], 3)
    covs = np.stack([s * s * np.eye(d) for s in scales])
    lo = jax.vmap(lambda m, S: t.expectations_at(48)(m, S).value)(ms, covs)
    hi = jax.vmap(lambda m, S: t.expectations_at(96)(m, S).value)(ms, covs)
    bound = np.asarray(jax.vmap(t.quadrature_error_at(48))(ms, covs))
    diff = np.abs(np.asarray(lo - hi))
    coarse = diff > 1e-9  # discretisation error, not rounding
    assert coarse.sum() >= 3 and np.all(diff[coarse] <= 2 * bound[coarse])
    assert np.all(bound[scales < 0.1] < 1e-20)  # narrow marginals: the check rung is not needed
    plain = t.replace(quadrature_error_at=None)
    v_skip, o_skip = objective(t, ms, covs, return_order=True)
    v_ladder, o_ladder = objective(plain, ms, covs, return_order=True)
    np.testing.assert_array_equal(v_skip, v_ladder)
    assert o_skip == o_ladder


def test_targets_package_loads_the_heavier_families_on_first_use():
    import subprocess
    import sys

    code = ("import sys, inertia.targets as t\n"
            "assert 'inertia.targets.glm' not in sys.modules\n"
            "assert 'inertia.targets.graph_probit' not in sys.modules\n"
            "assert {'logistic_regression', 'graph_probit'} <= set(dir(t))\n"
            "f = t.logistic_regression\n"
            "assert 'inertia.targets.glm' in sys.modules and t.logistic_regression is f\n"
            "from inertia.targets import graph_probit_reference\n"
            "try:\n    t.no_such_family\nexcept AttributeError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "has no attribute 'no_such_family'" in out.stdout


def test_cast_floats_keeps_integers_integer():
    """float32: floats to float32, 64-bit integers to 32 bits of the same kind (numpy or JAX,
    signed or unsigned), other leaves kept; float64: integers untouched; integers past int32
    refused rather than wrapped."""
    from inertia.targets.base import cast_floats

    with jax.enable_x64(True):
        tree = {"x": np.arange(3.0), "g": np.array([0, 2, 1]), "u": np.array([1, 2], np.uint64),
                "jg": jnp.array([1, 0]), "b": np.array([True, False]), "n": 5,
                "s": np.array([1, 2], np.int16)}
        out = cast_floats(tree, "float32")
        assert out["x"].dtype == np.float32
        assert isinstance(out["g"], np.ndarray) and out["g"].dtype == np.int32
        assert out["g"].tolist() == [0, 2, 1]
        assert out["u"].dtype == np.uint32 and isinstance(out["u"], np.ndarray)
        assert isinstance(out["jg"], jax.Array) and out["jg"].dtype == jnp.int32
        assert out["b"] is tree["b"] and out["n"] == 5 and out["s"] is tree["s"]
        same = cast_floats(tree, "float64")
        assert same["g"] is tree["g"] and same["jg"] is tree["jg"] and same["u"] is tree["u"]
        with pytest.raises(TargetError, match="int32"):
            cast_floats(np.array([0, 2 ** 31]), "float32")
