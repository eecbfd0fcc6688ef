"""`fit` on a user's model: no constants, wrong constants, objective monitor, stopping, names."""
import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from inertia.targets import from_potential, kappa_family, make_target
from inertia.vi import fit
from inertia.variational.monitor import ObjectiveMonitor, paired_difference

from .conftest import small_logistic

ROBUST = dict(restart=True, recover=True, widen=True)
NO_QUALITY = dict(quality=False)  # tests of the optimiser's path, not of q as an answer (PSIS)


@pytest.mark.parametrize("factor", [5.0, 0.2])
def test_wrong_bounds_still_reach_the_gaussian_optimum(factor):
    """Bounds 5x too large or 5x too small: the feasible set is widened, divergence recovered."""
    t = kappa_family(dim=8, kappa=100.0)
    wrong = t.replace(alpha=t.alpha * factor, beta=t.beta * factor)
    with pytest.warns(RuntimeWarning):
        res = fit(wrong, "stl-proj", batch_size=16, num_steps=6000, checkpoint_every=100,
                  seed=0, **ROBUST, **NO_QUALITY)
    assert res.diverged is None
    assert res.final_gap < 1e-6  # STL is exact at the optimum of a Gaussian target
    assert any(e["event"] in ("widened", "recovery") for e in res.events)


def test_wrong_bounds_on_wdbc_logistic():
    t = make_target("logistic", data="wdbc")
    for factor in (5.0, 0.2):
        wrong = t.replace(alpha=t.alpha * factor, beta=t.beta * factor)
        res = fit(wrong, "stl-proj", batch_size=16, num_steps=8000, seed=0, tol=1e-4,
                  init=(np.zeros(t.dim), 0.1 * np.eye(t.dim)), **ROBUST, **NO_QUALITY)
        assert res.diverged is None and res.final_gap < 2e-2, (factor, res.final_gap)


def test_no_constants_small_logistic_converges_and_stops():
    t = small_logistic(n=60, p=3).replace(alpha=None, beta=None)
    res = fit(t, seed=0, init=(np.zeros(t.dim), np.eye(t.dim)))
    gap = res.history["gap"][:, 0]
    assert res.bounds["estimated"] and res.verdict.numbers["stop"]
    assert res.final_gap < 2e-3
    start = int(np.argmax(res.history["averaged"]))  # the phase-1 rule fired here
    assert gap[start] < 0.05 * gap[0]  # not before the objective had converged
    assert res.history["grad_evals"][-1] < 20000 * res.batch_size  # and it did stop


def test_objective_standard_error_is_honest():
    """95 % intervals F_hat +- 1.96 s.e. cover the exact F at the nominal rate (200 replicates)."""
    t = kappa_family(dim=5, kappa=30.0)
    m = jnp.full(5, 0.3)
    L = jnp.linalg.cholesky(jnp.eye(5) * 0.7 + 0.1)
    mon = ObjectiveMonitor(t, "chol", num_draws=64 * 200, seed=3)
    vals = mon(m[None], L[None]).draws[0].reshape(200, 64)
    S = L @ L.T
    exact = float(t.expectations(m, S).value) - 0.5 * 5 * math.log(2 * math.pi * math.e) \
        - float(jnp.sum(jnp.log(jnp.diag(L))))
    est, se = vals.mean(1), vals.std(1, ddof=1) / 8.0
    cover = np.mean(np.abs(est - exact) <= 1.96 * se)
    assert 0.90 <= cover <= 0.99, cover
    # paired differences are far more precise than either value
    _, se_pair = paired_difference(vals[0], vals[0] + 1e-3 * np.arange(64) / 64)
    assert se_pair < 0.01 * se[0]


@pytest.mark.parametrize("wall", [jnp.nan, jnp.inf])
def test_non_finite_region_is_reported(wall):
    t = from_potential(lambda x: jnp.where(x[0] > 0.5, wall, 0.5 * x @ x), 2)
    with pytest.warns(RuntimeWarning, match="non-finite"):
        res = fit(t, "stl-proj", batch_size=8, num_steps=400, seed=0)
    assert res.diverged is not None and "non-finite" in res.diverged["reason"]


def test_numpyro_model_named_output():
    numpyro = pytest.importorskip("numpyro")
    import numpyro.distributions as dist

    from inertia.targets import from_numpyro

    def model(y):
        mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
        sigma = numpyro.sample("sigma", dist.HalfNormal(2.0))
        numpyro.sample("y", dist.Normal(mu, sigma), obs=y)

    y = np.random.default_rng(0).normal(1.5, 0.7, size=50)
    res = fit(from_numpyro(model, y), seed=0)
    rows = {r["name"]: r for r in res.summary()}
    assert set(rows) == {"mu", "sigma"}
    assert rows["mu"]["mean"] == pytest.approx(y.mean(), abs=0.05)
    assert rows["sigma"]["mean"] == pytest.approx(y.std(), rel=0.1) and rows["sigma"]["q5"] > 0
    assert res.to_dict()["names"] == ["mu", "log(sigma)"]  # the unconstrained coordinates
    pytest.importorskip("arviz")
    assert set(res.to_arviz(num_draws=10).posterior.data_vars) >= {"mu", "sigma"}


def test_cli_csv_and_model_file(tmp_path, capsys):
    from inertia.cli import main

    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 2))
    y = (X @ [1.5, -1.0] + rng.normal(size=80) > 0).astype(int)
    csv = tmp_path / "d.csv"
    csv.write_text("dose,age,outcome\n" + "\n".join(f"{a},{b},{c}" for (a, b), c in zip(X, y)))
    out = tmp_path / "o.json"
    rc = main(["fit", "--model", "logistic", "--data", str(csv), "--response", "outcome",
               "--json", str(out), "--quiet"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "intercept" in text and "dose" in text and "age" in text
    d = json.loads(out.read_text())
    assert d["names"] == ["intercept", "dose", "age"] and d["final_gap"] < 1e-2
    mf = tmp_path / "m.py"
    mf.write_text("import jax.numpy as jnp\n"
                  "def ld(p, data):\n    return -0.5 * jnp.sum((p['w'] - 2.0) ** 2 / 0.25)\n"
                  "ld_init = {'w': jnp.zeros(2)}\n")
    rc = main(["fit", "--model", f"{mf}:ld", "--json", str(out), "--quiet"])
    d = json.loads(out.read_text())
    assert rc == 0 and d["names"] == ["w[0]", "w[1]"]
    np.testing.assert_allclose(d["mean"], [2.0, 2.0], atol=1e-6)
    np.testing.assert_allclose(np.asarray(d["cov"]), 0.25 * np.eye(2), atol=1e-6)


def test_kinked_potential_warns_for_hessian_methods():
    kink = from_potential(lambda x: jnp.sum(jnp.abs(x)) + 0.5 * x @ x, 3, alpha=1.0, beta=2.0)
    with pytest.warns(RuntimeWarning, match="not twice differentiable"):
        fit(kink, "price-stl-proj", batch_size=8, num_steps=5)
    from inertia.variational.checks import hessian_consistency

    smooth = kappa_family(dim=3, kappa=10.0)
    assert hessian_consistency(smooth, jnp.zeros(3), jnp.eye(3)) < 4.0


def _spiky(scales, a=1.0, eps=0.01):
    """Product target V = sum phi(x_i / s_i), phi(y) = y^2/2 + a (sqrt(eps^2 + y^2) - eps): the
    curvature at the MAP (1 + a / eps = 101) is 100x the typical one; sd* = sigma* s_i and F* by
    quadrature (monitor convention: F = E V - entropy)."""
    from scipy.optimize import minimize_scalar

    s = np.asarray(scales, dtype=float)

    def V(x):
        y = x / s
        return jnp.sum(0.5 * y**2 + a * (jnp.sqrt(eps**2 + y**2) - eps))

    y, w = np.polynomial.hermite_e.hermegauss(200)
    w = w / w.sum()

    def f1(ls):  # E phi(sigma y) - log sigma, y ~ N(0, 1)
        x = np.exp(ls) * y
        return np.sum(w * (0.5 * x**2 + a * (np.sqrt(eps**2 + x**2) - eps))) - ls

    r = minimize_scalar(f1, bounds=(-5, 3), method="bounded", options={"xatol": 1e-10})
    f_star = len(s) * (r.fun - 0.5 * math.log(2 * math.pi * math.e)) - np.log(s).sum()
    return from_potential(V, len(s)), np.exp(r.x) * s, f_star


def test_whitening_fits_a_spiky_ill_conditioned_target():
    """MAP curvature 100x the typical one and scales 1 : 100: the automatic run (whitened by the
    start) reaches the Gaussian optimum's sds within 3 % in 600 updates; unwhitened it does not and
    says so (stop reason NOT CONVERGED, a warning)."""
    t, sd_star, f_star = _spiky([1.0, 100.0])
    res = fit(t, seed=0, num_steps=600)
    assert res.events[0]["event"] == "whitened" and res.bounds["whitened"]
    se = float(res.history["objective_stderr"][-1][0])  # F_hat mapped back: - log det W
    assert abs(res.final_objective - f_star) < 4 * se
    np.testing.assert_allclose(np.sqrt(np.diag(res.cov)), sd_star, rtol=0.03)
    assert np.all(np.abs(res.mean) < 0.05 * sd_star)
    assert res.converged
    with pytest.warns(RuntimeWarning, match="NOT CONVERGED"):
        off = fit(t, seed=0, num_steps=600, whiten=False)
    assert not off.converged and off.verdict.line().startswith("NOT CONVERGED")
    assert np.max(np.abs(np.sqrt(np.diag(off.cov)) / sd_star - 1)) > 0.03


def test_averaging_extension_halves_the_step_and_never_ends_worse():
    """Small logistic (exact gaps): F_hat still falls at the end of the averaging phase, so the
    average restarts at half the step; the answer is the lower-F_hat average, so the exact gap
    ends no worse than at the restart (to the monitor's resolution, 2e-5 nats here)."""
    t = small_logistic(n=60, p=3).replace(alpha=None, beta=None)
    res = fit(t, seed=0, init=(np.zeros(t.dim), np.eye(t.dim)))
    ext = [e for e in res.events if e["event"] == "averaging extended"]
    assert ext and ext[0]["decrease"] > ext[0]["stderr"]
    avg = [e for e in res.events if e["event"] == "averaging"][0]
    gap = res.history["gap"][:, 0]
    at = list(res.history["step"]).index(ext[0]["step"])
    assert res.final_gap <= gap[at] + 2e-5
    assert res.final_gap < 0.05 * gap[list(res.history["step"]).index(avg["step"])]
    assert res.converged


def test_choose_method_switches_only_on_a_large_whitened_condition_number():
    from inertia.variational.auto import FALLBACK_METHOD, SWITCH_KAPPA, choose_method

    t = kappa_family(4, 10.0)
    assert choose_method(t.replace(alpha=1.0, beta=SWITCH_KAPPA * 0.999)) is None
    assert choose_method(t.replace(alpha=1.0, beta=SWITCH_KAPPA))["method"] == FALLBACK_METHOD
    assert choose_method(t.replace(alpha=None, beta=None)) is None


def test_automatic_switch_runs_ngvi_reparam_and_reaches_the_optimum(monkeypatch):
    """With the switch threshold lowered so that it fires, `fit(target)` runs ngvi-reparam in
    the whitened coordinates, says so in its events, and reaches the Gaussian optimum of the spiky
    target (sds within 3 %, F within 4 s.e.); a method given by the user is never switched."""
    from inertia.variational import auto

    monkeypatch.setattr(auto, "SWITCH_KAPPA", 1.0)
    t, sd_star, f_star = _spiky([1.0, 100.0])
    res = fit(t, seed=0, num_steps=2000)
    assert res.method == "ngvi-reparam"
    assert [e["event"] for e in res.events[:2]] == ["whitened", "method chosen"]
    se = float(res.history["objective_stderr"][-1][0])
    assert abs(res.final_objective - f_star) < 4 * se
    np.testing.assert_allclose(np.sqrt(np.diag(res.cov)), sd_star, rtol=0.03)
    assert fit(t, "stl-proj", seed=0, num_steps=20).method == "stl-proj"


def test_collapsed_covariance_is_floored_with_a_warning_not_a_crash():
    """A covariance that is not positive definite to rounding (an NGVI fit that collapsed in some
    directions raised numpy's LinAlgError when mapped back from whitened coordinates) gets a
    lower-triangular factor of its floored spectrum and a RuntimeWarning; a PD one is untouched."""
    from inertia.variational.auto import _psd_cholesky

    rng = np.random.default_rng(0)
    Q = np.linalg.qr(rng.normal(size=(4, 4)))[0]
    S = (Q * np.array([-1e-20, 1e-20, 0.5, 2.0])) @ Q.T
    with pytest.warns(RuntimeWarning, match="collapsed"):
        L = _psd_cholesky(S)
    assert np.all(np.isfinite(L)) and np.allclose(L, np.tril(L))
    np.testing.assert_allclose(L @ L.T, S, atol=1e-14)
    P = (Q * np.array([0.1, 1.0, 0.5, 2.0])) @ Q.T
    np.testing.assert_array_equal(_psd_cholesky(P), np.linalg.cholesky(P))


def test_natural_gradient_runs_check_on_their_own_time_scale(monkeypatch):
    """ngvi-reparam contracts by ~(1 - rho) per update whatever alpha_hat says, so its checkpoints
    come every max(256 / b, 4 / (10 rho)) updates; an automatic run that switched to it (alpha_hat
    tiny) stops at its plateau's average, at the Gaussian optimum (F within 4 s.e., sds within 3 %):
    3,136 updates here, against 16,275 when spaced by 1 / (eta alpha_hat) (every 155 updates)."""
    from inertia.variational import auto

    monkeypatch.setattr(auto, "SWITCH_KAPPA", 1.0)
    t, sd_star, f_star = _spiky([1.0, 100.0])
    res = fit(t, seed=0)
    assert res.method == "ngvi-reparam" and res.converged
    assert int(np.diff(res.history["step"])[1]) == math.ceil(256 / res.batch_size)
    assert res.verdict.numbers["step"] <= 5000
    se = float(res.history["objective_stderr"][-1][0])
    assert abs(res.final_objective - f_star) < 4 * se
    np.testing.assert_allclose(np.sqrt(np.diag(res.cov)), sd_star, rtol=0.03)


def test_a_hierarchical_model_at_whitened_kappa_700_gets_ngvi_and_converges():
    """An 8-group hierarchical linear model (the speed benchmark's `hier8`, d = 12) is log-concave
    at its Laplace draws but has whitened kappa ~700: stl-proj ran its 20,000 updates without
    converging there, so the kappa rule must send it to ngvi-reparam."""
    numpyro = pytest.importorskip("numpyro")
    import numpyro.distributions as dist

    from inertia.targets import from_numpyro
    from inertia.variational.auto import FALLBACK_METHOD, SWITCH_KAPPA

    def model(g, x, y=None):
        mu = numpyro.sample("mu", dist.Normal(0, 5))
        tau = numpyro.sample("tau", dist.HalfNormal(2.0))
        with numpyro.plate("groups", 8):
            z = numpyro.sample("z", dist.Normal(0, 1))
        b = numpyro.sample("b", dist.Normal(0, 5))
        sigma = numpyro.sample("sigma", dist.HalfNormal(2.0))
        numpyro.sample("y", dist.Normal(mu + tau * z[g] + b * x, sigma), obs=y)

    rng = np.random.default_rng(0)
    g = np.arange(160) % 8
    x = rng.normal(size=160)
    y = 1 + rng.normal(scale=1.5, size=8)[g] + 0.7 * x + rng.normal(size=160)
    res = fit(from_numpyro(model, jnp.asarray(g), jnp.asarray(x), y=jnp.asarray(y)))
    chosen = [e for e in res.events if e.get("event") == "method chosen"]
    assert chosen and chosen[0]["method"] == FALLBACK_METHOD, res.events[:3]
    assert "kappa" in chosen[0]["reason"]
    kappa = float(chosen[0]["reason"].split("kappa ")[1].split()[0])
    assert SWITCH_KAPPA <= kappa < 1e4
    assert res.converged, res.verdict
    assert res.num_steps < 10000
