"""The approximation-quality check of every fit (Pareto k-hat of p~/q, PSIS): adequate on Gaussian
targets with corrected moments equal to the exact ones, unreliable on a banana, a funnel and a
skewed Gamma posterior where the Gaussian is poor, PSIS-corrected means closer to the truth than
the Gaussian's where k-hat <= 0.7; in the table, the JSON, to_arviz and the CLI's exit status 4;
the log weights of each kernel's coordinates; the looks' sizes, the third cut to a tenth of the
fit's time (scripted k-hats and clock); an approximate GP (proper, weakly identified) neither
called improper nor adequate; a d = 50 spline regression (proper, weakly identified) not called
improper, its corrected answer right against exact moments; messages whose shown k-hat gives their
verdict.

Cost: nine automatic fits of d <= 5 targets, three paper-mode fits of d = 4, and (slow) one
automatic fit each of d = 24 and d = 50: under a minute on two shared cores.
"""
import dataclasses
import json
import math
import warnings

import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import digamma, polygamma

from inertia.cli import main
from inertia.targets import from_potential
from inertia.targets.gaussian import gaussian
from inertia.vi import fit
from inertia.variational.quality import assess, borderline_draws, second_look_draws, third_look_draws


def _fit(target, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fit(target, **kw)


MEAN = np.array([1.0, -2.0, 0.5, 3.0])
COV = np.array([[2.0, 0.6, 0.0, 0.3], [0.6, 1.0, 0.2, 0.0], [0.0, 0.2, 0.5, 0.1],
                [0.3, 0.0, 0.1, 1.5]])


def _gaussian_target():
    t = gaussian(MEAN, np.linalg.inv(COV))
    # no exact expectations: the fit and the check run as on a user's model
    return from_potential(t.potential, 4)


def test_gaussian_target_is_adequate_and_corrected_moments_are_exact():
    t = _gaussian_target()
    res = _fit(t, ensure="adequate")  # adequate: the fit itself comes back
    assert type(res).__name__ == "FitResult"
    q = res.quality
    assert res.converged and q["verdict"] == "adequate" and q["khat"] < 0.5
    assert q["num_draws"] == 4000 and q["ess"] > 3000
    assert res.verdict.numbers["pareto_khat"] == q["khat"] and res.verdict.problems == ()
    assert res.verdict.quality == "adequate"
    # a deliberately wrong q (1.3x wider, shifted by 0.3 sd): weights bounded (k-hat < 0.5) and the
    # PSIS-corrected moments equal the exact ones within 4 Monte Carlo s.e. (sd / sqrt(ESS) for a
    # mean; sd * sqrt(2 / ESS) for an sd, a Gaussian's; a failure probability ~1e-4 per entry)
    sd = np.sqrt(np.diag(COV))
    L = 1.3 * np.linalg.cholesky(COV)
    wrong = dataclasses.replace(res, mean=MEAN + 0.3 * sd, factor=L, cov=L @ L.T, coords="chol")
    wrong.quality, wrong.quality_weights = assess(t, wrong)
    assert wrong.quality["khat"] < 0.5
    rows = wrong.summary()
    ess = wrong.quality["ess"]
    for i, r in enumerate(rows):
        assert abs(r["mean"] - MEAN[i]) > 0.2 * sd[i]  # the Gaussian's columns are off
        assert abs(r["mean_psis"] - MEAN[i]) < 4 * sd[i] / math.sqrt(ess)
        assert abs(r["sd_psis"] - sd[i]) < 4 * sd[i] * math.sqrt(2.0 / ess)


def _banana(b):
    return from_potential(lambda x: 0.5 * x[0] ** 2 / 4.0 + 0.5 * (x[1] - b * x[0] ** 2) ** 2, 2)


def _funnel(x):
    v, z = x[0], x[1:]
    return v ** 2 / 18.0 + 0.5 * jnp.sum(z ** 2) * jnp.exp(-v) + 0.5 * z.size * v


def _log_gamma(a):
    """theta = log lambda, lambda ~ Gamma(a, 1): E theta = digamma(a), var theta = trigamma(a)."""
    return from_potential(lambda th: -(a * th[0] - jnp.exp(th[0])), 1)


@pytest.mark.parametrize("name", ["banana", "funnel", "gamma"])
def test_poor_gaussians_are_unreliable(name):
    target, truth_sd = {
        "banana": (_banana(0.5), np.array([2.0, math.sqrt(1 + 2 * 0.25 * 16)])),  # sd x1 = 2.45
        "funnel": (from_potential(_funnel, 5), np.array([3.0] + [math.exp(9 / 4)] * 4)),
        "gamma": (_log_gamma(0.3), np.array([math.sqrt(polygamma(1, 0.3))])),
    }[name]
    res = _fit(target)
    q = res.quality
    # above 0.7, or on a longer look not below 0.7 by its sd after a shorter look above it
    assert q["verdict"] == "unreliable" and not q["corrected"]
    assert q["khat"] > 0.7 or (q["earlier_khat"] > 0.7 and q["khat"] + q["khat_sd"] >= 0.7)
    # the second look's draws, or the third's: 64,000 unless the fit's gradient count cut it
    assert q["num_draws"] == q["looks"][-1]
    assert q["num_draws"] in (second_look_draws(res), borderline_draws(res)) or (
        q.get("third_look_capped") and second_look_draws(res) <= q["num_draws"] < 64000)
    # the Gaussian is poor: some sd at least 25 % off
    sds = np.array([r["sd"] for r in res.summary()])
    assert np.max(np.abs(sds / truth_sd - 1)) > 0.25
    assert res.verdict.quality == "unreliable"
    assert "mean_psis" not in res.summary()[0]
    assert "unreliable" in res.table() and "run `sample`" in res.table()
    with pytest.raises(ValueError, match="k-hat"):
        res.psis_draws()


@pytest.mark.parametrize("name", ["gamma", "banana"])
def test_corrected_mean_closer_where_usable(name):
    if name == "gamma":  # Gamma(2, 1) in log space
        target, truth, i = _log_gamma(2.0), digamma(2.0), 0
        truth_sd = math.sqrt(polygamma(1, 2.0))
    else:  # x1 | x0 ~ N(0.1 x0^2, 1), x0 ~ N(0, 4): E x1 = 0.4, sd x1 = sqrt(1 + 2 * 0.01 * 16)
        target, truth, i = _banana(0.1), 0.4, 1
        truth_sd = math.sqrt(1.32)
    res = _fit(target)
    if name == "gamma":  # the Gaussian's mean is off by 0.03 sd only: on the default 16,000-32,000
        # draws the corrected mean's error (PSIS keeps a bias of its own at k-hat 0.5-0.7) ranged
        # 0.00-0.02 over 8 check seeds against the Gaussian's 0.024; on 128,000 draws 0.001-0.014
        res.quality, res.quality_weights = assess(target, res, num_draws=128000)
    q = res.quality
    assert q["khat"] < 0.7 and q["corrected"]
    r = res.summary()[i]
    # closer by more than 2 Monte Carlo s.e. of the corrected mean (sd / sqrt(ESS)); with k-hat in
    # 0.5-0.7 PSIS keeps a bias of its own, so no exactness is claimed here (it is on Gaussians)
    # (the Gaussian's exact mean and sd, not its 4000-draw Monte Carlo ones)
    se = truth_sd / math.sqrt(q["ess"])
    gauss_mean, gauss_sd = res.mean[i], math.sqrt(res.cov[i, i])
    assert abs(r["mean_psis"] - truth) < abs(gauss_mean - truth) - 2 * se
    assert abs(r["sd_psis"] - truth_sd) < abs(gauss_sd - truth_sd)
    draws = res.psis_draws(20000, seed=1)  # resampled draws carry the corrected mean
    assert abs(draws[:, i].mean() - r["mean_psis"]) < 4 * truth_sd / math.sqrt(min(q["ess"], 20000))
    assert "*_psis" in res.table()


def test_quality_in_json_arviz_and_paper_mode():
    t = gaussian(MEAN, np.linalg.inv(COV)).replace(alpha=0.4, beta=5.0)
    res = _fit(t, method="stl-proj", num_steps=400, seed=[0, 1])  # paper mode, two seeds
    q = res.quality
    assert len(q["khat_per_seed"]) == 2 and q["khat"] == max(q["khat_per_seed"])
    assert q["verdict"] == "adequate"
    d = json.loads(json.dumps(res.to_dict()))
    assert d["quality"]["verdict"] == "adequate" and d["numbers"]["pareto_khat"] == q["khat"]
    from inertia.results.idata import read_attrs

    attrs = read_attrs(res.to_arviz(num_draws=100))
    assert attrs["quality"]["khat"] == q["khat"]
    assert "approximation quality: adequate" in res.report()
    plain = _fit(t, method="stl-proj", num_steps=400, seed=[0, 1], quality=False)
    np.testing.assert_array_equal(plain.mean, res.mean)  # the check changes nothing
    assert plain.quality is None


def test_cli_exits_4_when_unreliable(tmp_path, capsys):
    f = tmp_path / "funnel.py"
    f.write_text("import jax.numpy as jnp\n\n"
                 "def logp(x, data):\n"
                 "    v, z = x[0], x[1:]\n"
                 "    return -(v ** 2 / 18.0 + 0.5 * jnp.sum(z ** 2) * jnp.exp(-v) + 2.0 * v)\n\n"
                 "logp_init = jnp.zeros(5)\n")
    out = tmp_path / "fit.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        rc = main(["fit", "--model", f"{f}:logp", "--json", str(out), "--quiet"])
        printed = capsys.readouterr()
        assert rc == 4, printed
        assert "approximation quality: unreliable" in printed.out and "k-hat" in printed.err
        assert json.loads(out.read_text())["quality"]["verdict"] == "unreliable"
        assert main(["fit", "--model", f"{f}:logp", "--quiet", "--allow-unreliable"]) == 0


def test_ensure_adequate_runs_the_exact_sampler_from_the_fit():
    res = _fit(_log_gamma(0.3), ensure="adequate")  # k-hat ~0.95: escalated
    assert type(res).__name__ == "SampleResult"
    assert res.fit.verdict.quality == "unreliable" and res.fit.converged
    assert "unreliable" in res.escalated and res.verdict.numbers["escalated"] == res.escalated
    r = res.summary()[0]  # E theta = digamma(0.3) within 4 Monte Carlo s.e. of the chains
    assert res.converged and abs(r["mean"] - digamma(0.3)) < 4 * r["mcse"]
    with pytest.raises(ValueError, match="ensure"):
        fit(_log_gamma(0.3), ensure="good")


@pytest.fixture(scope="module")
def gaussian_fit():
    t = _gaussian_target()
    return t, _fit(t)


def test_a_longer_look_extends_the_first_with_the_same_draws(gaussian_fit):
    t, res = gaussian_fit
    from inertia.variational.quality import draws_of, log_weights

    first = log_weights(t, res, 4000)
    rest = log_weights(t, res, 9000, start=4000)
    both = log_weights(t, res, 9000)
    assert rest.shape == (1, 5000)
    np.testing.assert_array_equal(np.concatenate([first, rest], axis=1), both)
    x = draws_of(res, 9000, 0)[0]  # the draws behind the weights: q's law, not one repeated block
    assert len(np.unique(x[:, 0])) == 9000
    # 9000 draws of N(m, S): each coordinate's mean within 4 s.e. (sd / sqrt(9000)) of m
    sd = np.sqrt(np.diag(res.cov))
    assert np.all(np.abs(x.mean(0) - res.mean) < 4 * sd / math.sqrt(9000))


def test_second_look_is_half_the_fits_evaluations_within_its_bounds(gaussian_fit):
    _, res = gaussian_fit

    def with_evals(g, h=0, dim=4):
        hist = {**res.history, "grad_evals": np.array([g]), "hvp_evals": np.array([h])}
        return dataclasses.replace(res, history=hist, dim=dim)

    assert second_look_draws(with_evals(50_000, 2_000)) == 26_000
    assert second_look_draws(with_evals(1_000)) == 16_000
    assert second_look_draws(with_evals(10**6)) == 32_000
    assert second_look_draws(with_evals(1_000, dim=1)) == 32_000  # d = 1: the long bias
    assert second_look_draws(with_evals(50_000, dim=1000)) == 8388  # 64 MiB of normals


def _assess_scripted(gaussian_fit, monkeypatch, khats, evals=1000):
    """`quality.assess` of the Gaussian fit with each look's k-hat scripted and the fit's gradient
    count set to `evals` (1000: the third look is THIRD_DRAWS = 32,000 draws)."""
    import inertia.variational.quality as quality

    t, res = gaussian_fit
    script = iter(khats)
    real = quality._psislw
    monkeypatch.setattr(quality, "_psislw", lambda lw: (real(lw)[0], next(script)))
    res = dataclasses.replace(res, history={**res.history, "grad_evals": np.array([evals]),
                                            "hvp_evals": np.array([0])}, cost=None)
    return quality.assess(t, res)


@pytest.mark.parametrize("khats, draws", [
    ((0.55, 0.66, 0.72), 32000), ((0.55, 0.45, 0.4), 32000), ((0.55, 0.9, 0.35), 32000),
    ((0.55, 0.6), 16000), ((0.45, 0.3), 16000), ((0.3,), 4000)])
def test_a_third_look_only_where_k_hat_straddles_a_threshold(gaussian_fit, monkeypatch, khats,
                                                             draws):
    # the looks' k-hats scripted: 0.66 at 16,000 draws is within its sd (1.66 / sqrt(380) = 0.085)
    # of 0.7, 0.45 within its sd (0.074) of 0.5; 0.6 is not (1.2 sd from either); 0.9 is an
    # "unreliable" to confirm on a third look (32,000 draws after a fit of 1000 gradients);
    # at 4000 draws 0.3 is 1.5 sd (0.11) below 0.5 and stops there, 0.45 is not
    q, lw = _assess_scripted(gaussian_fit, monkeypatch, khats)
    assert q["num_draws"] == draws == lw.shape[1]
    assert q["khat"] == khats[-1]
    assert q["khat_sd"] == pytest.approx(abs(1 + khats[-1]) / math.sqrt(math.ceil(
        min(draws / 5, 3 * math.sqrt(draws)))))


@pytest.mark.parametrize("khats, verdict", [
    ((0.55, 0.9, 0.66), "unreliable"), ((0.55, 0.9, 0.35), "adequate"),
    ((0.55, 0.9, 0.55), "usable with correction")])
def test_an_unreliable_look_is_overturned_only_clearly_below_0_7(gaussian_fit, monkeypatch,
                                                                  khats, verdict):
    # 0.9 at 16,000 draws asks for a third look, 32,000 draws here (sd there 1.66 / sqrt(537) =
    # 0.072): 0.66 is within it of 0.7 and stays "unreliable", naming the shorter look's k-hat;
    # 0.35 and 0.55 are clear of it
    q, _ = _assess_scripted(gaussian_fit, monkeypatch, khats)
    assert q["num_draws"] == 32000 and q["verdict"] == verdict
    assert q["corrected"] == (verdict != "unreliable")
    assert ("0.90 on the shorter look" in q["message"]) == (verdict == "unreliable")


def _hsgp_regression(m=20, n=60, seed=0):
    """y = a + f(x) + noise, f a squared-exponential GP in its Hilbert-space approximation (m basis
    functions on [-1.5, 1.5], NumPyro's Laplacian eigenfunctions; Riutort-Mayol et al. 2023, eq. 8)
    with wide priors, as brms's gp(x, k = m): proper, and weakly identified along the amplitude,
    the length-scale and the high-frequency coefficients; d = m + 4."""
    import numpyro
    import numpyro.distributions as dist
    from numpyro.contrib.hsgp.laplacian import eigenfunctions

    from inertia.targets.numpyro import from_numpyro

    L = 1.5
    omega = np.pi * np.arange(1, m + 1) / (2 * L)  # square roots of the Laplacian's eigenvalues

    def model(x, y=None):
        a = numpyro.sample("intercept", dist.Normal(0.0, 10.0))
        alpha = numpyro.sample("alpha", dist.HalfNormal(10.0))
        ell = numpyro.sample("ell", dist.InverseGamma(2.0, 0.5))
        sigma = numpyro.sample("sigma", dist.HalfNormal(10.0))
        beta = numpyro.sample("beta", dist.Normal(0.0, 1.0).expand([m]))
        # sqrt of the spectral density alpha^2 sqrt(2 pi) ell exp(-(ell omega)^2 / 2), in logs: its
        # square root underflows to 0 for the highest frequencies, where sqrt's gradient is NaN
        half_log_s = (jnp.log(alpha) + 0.25 * math.log(2 * math.pi) + 0.5 * jnp.log(ell)
                      - 0.25 * (ell * omega) ** 2)
        f = eigenfunctions(x, ell=L, m=m) @ (jnp.exp(half_log_s) * beta)
        numpyro.sample("y", dist.Normal(a + f, sigma), obs=y)

    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(-1, 1, n))
    y = np.sin(3 * x) + 0.5 * x + 0.3 * rng.normal(size=n)
    return from_numpyro(model, jnp.asarray(x), jnp.asarray(y))


@pytest.mark.slow  # one automatic fit of a d = 24 NumPyro model and its mode search: ~10 s of CPU
def test_approximate_gp_is_proper_and_its_gaussian_unreliable():
    from inertia.targets.mode import find_mode, inverse_factor, probe_unbounded

    t = _hsgp_regression()
    # the improper-target probe stays silent on this proper, weakly identified model: from a
    # random start with a tiny frame, and at the mode
    x0 = np.random.default_rng(1).uniform(-2, 2, t.dim)
    assert probe_unbounded(t, x0, 1e-3 * np.eye(t.dim)) is None
    mode = find_mode(t)
    assert mode.converged and probe_unbounded(t, mode.x, inverse_factor(mode.hessian)) is None
    res = _fit(t)
    assert res.converged and "improper" not in res.verdict.numbers
    q = res.quality
    assert q["verdict"] == "unreliable" and q["khat"] > 0.7
    assert res.verdict.quality == "unreliable"
    # and rightly so: NumPyro NUTS (5000 draws after 2000 warm-up, target acceptance 0.95, ESS 1190
    # for alpha) gives the GP amplitude alpha an sd of 1.55, the Gaussian's is about a tenth of it;
    # a factor 2 leaves room for the reference's own error (2-3 % Monte Carlo, its divergences)
    alpha = next(r for r in res.summary() if r["name"] == "alpha")
    assert alpha["sd"] < 0.5 * 1.55


@pytest.mark.parametrize("k", [0.4996, 0.49999, 0.5, 0.5004, 0.6996, 0.7, 0.7004, 0.70001, 0.93])
def test_the_message_never_contradicts_its_own_k_hat(k):
    # the k-hat the text shows, read back, gives the verdict the text states
    from inertia.variational.quality import khat_sd, message, verdict_of

    q = {"khat": k, "num_draws": 16000, "ess": 900.0, "verdict": verdict_of(k),
         "khat_sd": khat_sd(k, 16000)}
    text = message(q)
    said = float(text.split("Pareto k-hat ")[1].split(" ")[0])
    assert text.startswith(f"approximation quality: {verdict_of(said)} (")
    assert verdict_of(said) == q["verdict"]
    assert f"+- {khat_sd(k, 16000):.2f} on 16000 draws" in text


def test_the_third_look_is_sized_by_the_fits_gradients(gaussian_fit):
    # up to 64,000 draws, at most the fit's gradient (and HVP) evaluations per seed but at least
    # 32,000, in whole blocks of 4000; never fewer than already drawn
    _, res = gaussian_fit

    def with_evals(grads, hvps=0, dim=res.dim):
        return dataclasses.replace(res, dim=dim, history={
            **res.history, "grad_evals": np.array([grads]), "hvp_evals": np.array([hvps])})

    assert third_look_draws(with_evals(1000), 16000) == 32000
    assert third_look_draws(with_evals(30000, 10000), 16000) == 40000
    assert third_look_draws(with_evals(50000), 16000) == 48000
    assert third_look_draws(with_evals(10**6), 16000) == 64000
    assert third_look_draws(with_evals(50000), 52000) == 52000
    assert third_look_draws(with_evals(10**6, dim=1000), 8388) == 8388  # 64 MiB of normals


@pytest.mark.parametrize("evals, khats, looks, verdict", [
    (1000, (0.55, 0.9, 0.66), [4000, 16000, 32000], "unreliable"),
    (1000, (0.55, 0.66, 0.6), [4000, 16000, 32000], "usable with correction"),
    (45000, (0.55, 0.9, 0.35), [4000, 22500, 44000], "adequate"),
    (200000, (0.55, 0.9, 0.66), [4000, 32000, 64000], "unreliable")])
def test_the_third_looks_draws_follow_the_fits_gradients(gaussian_fit, monkeypatch, evals, khats,
                                                         looks, verdict):
    q, lw = _assess_scripted(gaussian_fit, monkeypatch, khats, evals)
    assert q["looks"] == looks and q["num_draws"] == looks[-1] == lw.shape[1]
    assert q["verdict"] == verdict
    cut = looks[-1] < 64000
    assert q.get("third_look_capped", False) == cut
    assert ("a third look of 64000 cut to the fit's own gradient count" in q["message"]) == cut
    assert f"on {looks[-1]} draws of q" in q["message"]


def test_the_check_is_the_same_on_a_slow_machine(monkeypatch):
    """One seed, the same numbers and words whatever the clock says: with every clock read 100 s
    after the last (a machine far slower, or loaded, in the check's eyes) the fit's check takes the
    same three looks and says the same."""
    import time

    fast = _fit(_banana(0.5), seed=0)
    now = [time.perf_counter()]

    def slow():
        now[0] += 100.0
        return now[0]

    monkeypatch.setattr(time, "perf_counter", slow)
    monkeypatch.setattr(time, "monotonic", slow)
    slowed = _fit(_banana(0.5), seed=0)
    monkeypatch.undo()
    assert len(fast.quality["looks"]) == 3  # the third look, the one a clock could size, is taken
    assert slowed.quality == fast.quality
    np.testing.assert_array_equal(slowed.quality_weights, fast.quality_weights)


def test_the_vi_guide_states_the_third_looks_budget():
    # the numbers of docs/vi.md's "How many draws" are the code's
    from pathlib import Path

    from inertia.variational import quality

    text = " ".join((Path(__file__).resolve().parents[2] / "docs" / "vi.md").read_text().split())
    assert quality.THIRD_DRAWS == 32000 and "at least 32,000" in text
    assert quality.BORDER_DRAWS == 64000 and "up to 64,000" in text
    assert quality.FIRST_DRAWS == 4000 and "blocks of 4000 draws" in text
    assert "never on a clock" in text


@pytest.mark.parametrize("method", ["fd-prox", "stl-proj", "ngvi"])
def test_every_methods_fit_is_checked_on_its_own_gaussian(method):
    # paper mode, one method of each kernel's coordinates (every registered method's result is in
    # chol, sym or cov coordinates; the factor family's in tests/vi/test_factor.py): the log weights
    # are -V(x) - log N(x; m, Sigma) at its draws, Sigma = the result's cov (scipy's density); a
    # factor that is not a square root of cov, or a misread mean, is off by O(1) nats
    from scipy.stats import multivariate_normal

    from inertia.variational.quality import draws_of, log_weights

    t = gaussian(MEAN, np.linalg.inv(COV)).replace(alpha=0.4, beta=5.0)
    res = _fit(t, method=method, num_steps=300, batch_size=8, seed=3)
    q = res.quality
    assert q is not None and q["num_draws"] >= 4000 and q["khat"] is not None
    x = draws_of(res, 4000, 0)[0]
    V = np.array([float(t.potential(jnp.asarray(xi))) for xi in x[:200]])
    expected = -V - multivariate_normal(res.mean, res.cov).logpdf(x[:200])
    np.testing.assert_allclose(log_weights(t, res, 4000)[0, :200], expected, rtol=0, atol=1e-8)


def _spline_regression(n=120, k=48, prior_sd=10.0, seed=0):
    """(target, exact means, exact sds) of y = a + B b + noise, B 48 cubic B-splines on [0, 1],
    b ~ N(0, 10^2), a ~ N(0, 10^2), log sigma ~ N(0, 1); theta = (a, log sigma, b), d = 50:
    proper, weakly identified (neighbouring splines overlap, wide priors). Exact moments: given
    log sigma the (a, b) posterior is Gaussian (conjugate), and log sigma's marginal is summed on
    a grid of 4001 points over [-2.5, -0.5] (its weight at either end below 1e-12)."""
    from scipy.interpolate import BSpline
    from scipy.special import logsumexp

    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(0, 1, n))
    y = np.sin(6 * x) + 0.3 * rng.normal(size=n)
    knots = np.concatenate([np.zeros(3), np.linspace(0, 1, k - 2), np.ones(3)])
    B = BSpline.design_matrix(x, knots, 3).toarray()

    def V(th):
        a, ls, b = th[0], th[1], th[2:]
        return (0.5 * jnp.sum(((y - a - B @ b) / jnp.exp(ls)) ** 2) + n * ls
                + 0.5 * jnp.sum(b ** 2) / prior_sd ** 2 + 0.5 * a ** 2 / 100 + 0.5 * ls ** 2)

    X = np.column_stack([np.ones(n), B])
    prior = np.diag([1 / 100] + [1 / prior_sd ** 2] * k)
    grid = np.linspace(-2.5, -0.5, 4001)
    logp, mus, covs = [], [], []
    for ls in grid:
        P = X.T @ X * np.exp(-2 * ls) + prior
        mu = np.linalg.solve(P, X.T @ y * np.exp(-2 * ls))
        logp.append(-n * ls - 0.5 * ls ** 2 - 0.5 * y @ y * np.exp(-2 * ls) + 0.5 * mu @ P @ mu
                    - 0.5 * np.linalg.slogdet(P)[1])
        mus.append(mu)
        covs.append(np.linalg.inv(P))
    w = np.exp(np.array(logp) - logsumexp(logp))
    assert max(w[0], w[-1]) < 1e-12
    mus, covs = np.array(mus), np.array(covs)
    m = w @ mus
    var = np.einsum("g,gii->i", w, covs) + w @ mus ** 2 - m ** 2
    m_ls = w @ grid
    sd_ls = math.sqrt(w @ (grid - m_ls) ** 2)
    mean = np.concatenate([[m[0], m_ls], m[1:]])
    sd = np.concatenate([[math.sqrt(var[0]), sd_ls], np.sqrt(var[1:])])
    return from_potential(V, k + 2), mean, sd


@pytest.mark.slow  # one automatic fit of a d = 50 target, its check on 64,000 draws: 3-10 s
def test_a_weakly_identified_spline_regression_is_proper_and_its_correction_right():
    t, mean, sd = _spline_regression()
    res = _fit(t)
    # a proper posterior with weakly identified directions: no improper-target alarm
    assert res.converged and "improper" not in res.verdict.numbers
    q = res.quality
    assert q["corrected"] and q["verdict"] != "unreliable"
    rows = res.summary()
    gauss_sd = np.array([r["sd"] for r in rows])
    # the Gaussian's sd of log sigma is too small (0.065 against 0.084; the KL-optimal Gaussian
    # is narrow), more than the suite's 0.2 sd off: the answer to read is the corrected one ...
    assert np.max(np.abs(gauss_sd / sd - 1)) > 0.2
    # ... and it is within 0.1 sd in every mean and sd: half the suite's 0.2, and about 10 Monte
    # Carlo s.e. of a PSIS mean or sd at its ESS (1 / sqrt(ESS) = 0.008 at ESS 14,000)
    err_mean = np.abs(np.array([r["mean_psis"] for r in rows]) - mean) / sd
    err_sd = np.abs(np.array([r["sd_psis"] for r in rows]) / sd - 1)
    assert np.max(err_mean) < 0.1 and np.max(err_sd) < 0.1
