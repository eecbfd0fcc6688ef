"""The factor-covariance family (vi.factor): its algebra against the dense matrix, the choice rule,
and the fit on a Gaussian whose covariance lies in the family (the KL optimum is the target)."""
import numpy as np
import pytest
from scipy.stats import multivariate_normal

from inertia.targets import gaussian
from inertia.vi import fit
from inertia.variational.factor import FactorCovariance, choose_family


def _low_rank_gaussian(d=40, r=2, seed=0):
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((d, r))
    D = np.exp(0.3 * rng.standard_normal(d))
    S = B @ B.T + np.diag(D ** 2)
    mu = rng.standard_normal(d)
    return gaussian(mu, np.linalg.inv(S)).replace(alpha=None, beta=None), mu, S


def test_factor_covariance_algebra_matches_the_dense_matrix():
    """log det (determinant lemma), the Woodbury quadratic form and log q equal the dense ones to
    rounding; draws m + B z + D eps have covariance Sigma (4e5 draws: entries within 5 s.e.)."""
    rng = np.random.default_rng(1)
    C = FactorCovariance(rng.standard_normal((12, 3)), np.exp(rng.standard_normal(12)))
    S, m = C.dense(), rng.standard_normal(12)
    X = rng.standard_normal((7, 12)) * 3
    assert C.logdet() == pytest.approx(np.linalg.slogdet(S)[1], rel=1e-12)
    np.testing.assert_allclose(C.log_density(m, X), multivariate_normal(m, S).logpdf(X),
                               rtol=1e-11)
    np.testing.assert_allclose(C @ X.T, S @ X.T, rtol=1e-12)
    np.testing.assert_allclose(C.diagonal(), np.diag(S), rtol=1e-12)
    draws = C.draws(m, rng.standard_normal((400_000, 15)))
    emp = np.cov(draws.T)
    se = np.sqrt((S ** 2 + np.outer(np.diag(S), np.diag(S))) / 400_000)  # Var of a sample cov
    assert np.max(np.abs(emp - S) / se) < 5.0


def test_choice_rule(monkeypatch):
    """Factor above d = 1000 or where the full-rank arrays exceed free memory; full rank at and
    below 1000 when they fit, and whenever a (full-rank) method or the family is named."""
    assert choose_family(1001, None, None, 64, 1)[0] == "factor"
    assert choose_family(1000, None, None, 64, 1)[0] == "full-rank"
    assert choose_family(5000, "stl-proj", None, 64, 1)[0] == "full-rank"
    assert choose_family(10, None, "factor", 8, 1) == ("factor", "family given")
    import inertia.resources as resources

    monkeypatch.setattr(resources, "available_bytes", lambda: 10 * 2**20)  # 10 MiB free
    fam, why = choose_family(500, None, None, 64, 1)
    assert fam == "factor" and "GiB is free" in why
    with pytest.raises(ValueError, match="family must be"):
        choose_family(10, None, "low-rank", 8, 1)


def test_factor_fit_recovers_a_gaussian_in_the_family():
    """Target N(mu, B B^T + D^2), rank 2, d = 40: the family's KL optimum is the target itself.
    The run stops when F_hat's decrease over a window is within 2 paired s.e. of 256 common draws
    and then averages the iterates for as many updates; KL(q || p) left was 0.0044-0.0055 nats and
    the largest mean error 0.007-0.018 marginal sds on seeds 0-3 (measured): asserted at 0.02 nats
    and 0.07 sd (about 4x)."""
    t, mu, S = _low_rank_gaussian()
    res = fit(t, family="factor", rank=2, seed=0)
    assert res.converged and res.coords == "factor" and res.cov.rank == 2
    Sq, mq = res.cov.dense(), np.asarray(res.mean)
    P = np.linalg.inv(S)
    kl = 0.5 * (np.trace(P @ Sq) - 40 + (mu - mq) @ P @ (mu - mq)
                + np.linalg.slogdet(S)[1] - np.linalg.slogdet(Sq)[1])
    assert 0 <= kl < 0.02
    assert np.max(np.abs(mq - mu) / np.sqrt(np.diag(S))) < 0.07
    assert res.quality["verdict"] == "adequate"
    assert res.cost["gradients"] == res.num_steps * res.batch_size  # the updates' gradients
    js = res.to_dict()
    assert js["cov"]["form"] == "B B^T + diag(D^2)" and np.shape(js["cov"]["B"]) == (40, 2)
    assert "factor covariance" in res.table().splitlines()[0]


def test_automatic_mode_takes_the_factor_family_above_the_threshold(monkeypatch):
    """With the threshold lowered to 20, fit(target) at d = 40 fits the factor family and says so
    (event, result, table); a method named keeps the full-rank family."""
    import inertia.targets.mode as mode

    monkeypatch.setattr(mode, "MATRIX_FREE_DIM", 20)
    t, _, _ = _low_rank_gaussian()
    res = fit(t, num_steps=400, quality=False)
    assert res.coords == "factor" and res.family["name"] == "factor"
    assert "d = 40 > 20" in res.family["reason"] and res.events[0]["event"] == "family chosen"
    with pytest.raises(ValueError, match="takes no method"):
        fit(t, "stl-proj", family="factor")


def test_the_docs_state_the_codes_threshold_rank_and_batch():
    """docs/vi.md's family rule: the threshold, the default rank and batch are the code's."""
    import re
    from pathlib import Path

    from inertia.targets.mode import MATRIX_FREE_DIM
    from inertia.variational import factor

    text = " ".join((Path(__file__).resolve().parents[2] / "docs" / "vi.md").read_text().split())
    assert re.search(r"full rank up to d = (\d+), factor covariance above", text).group(1) == \
        str(MATRIX_FREE_DIM)
    assert re.search(r"when d <= (\d+) \(`MATRIX_FREE_DIM`", text).group(1) == str(MATRIX_FREE_DIM)
    assert re.search(r"rank \*\*r = (\d+)\*\* by default", text).group(1) == str(factor.RANK)
    assert re.search(r"b = \*\*(\d+)\*\* draws", text).group(1) == str(factor.BATCH)


def test_saved_factor_fit_loads_its_factor_form(tmp_path):
    """save / inertia.load keep the factor form: the loaded cov is the same B and D."""
    import inertia

    t, _, _ = _low_rank_gaussian(d=12)
    res = fit(t, family="factor", rank=2, num_steps=300, quality=False)
    path = tmp_path / "f.nc"
    res.save(path)
    back = inertia.load(path)
    np.testing.assert_allclose(back.cov.B, res.cov.B)
    np.testing.assert_allclose(back.cov.D, res.cov.D)


def test_divergence_keeps_the_last_finite_state():
    """A gradient that is NaN beyond x_0 = 2.5 (0.6 % of N(0, 1) draws, 16 per update): the run
    stops NOT CONVERGED naming the updates, and its answer is the finite state before them."""
    import jax.numpy as jnp

    from inertia.targets import from_potential
    from inertia.variational.factor import fit_factor

    t = from_potential(lambda x: 0.5 * x @ x + x[0] * jnp.where(x[0] > 2.5, jnp.nan, 0.0), 5)
    out = fit_factor(t, np.zeros(5), np.ones(5), rank=2, num_steps=2000, every=10)
    assert not out["verdict"].converged and "not finite" in out["verdict"].line()
    assert np.all(np.isfinite(out["mean"])) and np.all(np.isfinite(out["cov"].D))


def test_entropy_gradient_is_the_closed_form():
    """The traced (1/2) log det Sigma (determinant lemma) and its gradients equal the dense ones:
    d/dB = Sigma^-1 B and d/dlogD = diag(Sigma^-1) D^2 (Ong et al. 2018, Sec. 3.2), to rounding."""
    import jax

    from inertia.variational.factor import half_logdet

    rng = np.random.default_rng(3)
    B, logD = rng.standard_normal((9, 3)), 0.4 * rng.standard_normal(9)
    S = B @ B.T + np.diag(np.exp(2 * logD))
    P = np.linalg.inv(S)
    val = half_logdet(B, logD)
    gB, gD = jax.grad(half_logdet, argnums=(0, 1))(B, logD)
    assert float(val) == pytest.approx(0.5 * np.linalg.slogdet(S)[1], rel=1e-12)
    np.testing.assert_allclose(gB, P @ B, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gD, np.diag(P) * np.exp(2 * logD), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("start", ["offset", "narrow", "wide"])
def test_factor_run_reaches_the_target_from_several_starts(start):
    """fit_factor (the run itself, stopping rule and averaging) from starts N(x0, diag(s^2)) away
    from the target N(mu, B B^T + D^2) (d = 40, rank 2): x0 = mu + 2 marginal sds, s = sd / 3 or
    3 sd. KL(q || p) left was 0.0050-0.0060 nats and the largest mean error 0.015-0.028 sds on seeds
    0-3 from each start (measured); asserted < 0.02 nats and 0.07 sds (the fit-level test's bounds,
    about 3x)."""
    from inertia.variational.factor import fit_factor

    t, mu, S = _low_rank_gaussian()
    sd = np.sqrt(np.diag(S))
    x0, s = {"offset": (mu + 2 * sd, sd), "narrow": (mu, sd / 3),
             "wide": (mu - sd, 3 * sd)}[start]
    out = fit_factor(t, x0, s, rank=2, seed=0)
    assert out["verdict"].converged
    Sq, mq = out["cov"].dense(), out["mean"]
    P = np.linalg.inv(S)
    kl = 0.5 * (np.trace(P @ Sq) - 40 + (mu - mq) @ P @ (mu - mq)
                + np.linalg.slogdet(S)[1] - np.linalg.slogdet(Sq)[1])
    assert 0 <= kl < 0.02
    assert np.max(np.abs(mq - mu) / sd) < 0.07


def test_factor_fit_in_float32():
    """dtype="float32": the updates' compiled program holds no float64 array (only scalars may be),
    the result says float32 and still reaches the Gaussian target of the float64 test (KL < 0.02
    nats, mean within 0.07 sds: float32 rounding, ~1e-7 relative, is far below the Monte Carlo
    error those bounds allow)."""
    import re

    from inertia.variational.factor import fit_factor

    t, mu, S = _low_rank_gaussian()
    out = fit_factor(t, mu, np.sqrt(np.diag(S)), rank=2, num_steps=20, every=10,
                     dtype="float32")
    hlo = out["programs"][0].as_text()
    assert re.search(r"f32\[\d+,\d+\]", hlo) and not re.search(r"f64\[\d", hlo)
    res = fit(t, family="factor", rank=2, seed=0, dtype="float32")
    assert res.dtype == "float32" and res.converged
    Sq, mq = res.cov.dense(), np.asarray(res.mean)
    assert Sq.dtype == np.float64 and mq.dtype == np.float64  # the results stay float64
    P = np.linalg.inv(S)
    kl = 0.5 * (np.trace(P @ Sq) - 40 + (mu - mq) @ P @ (mu - mq)
                + np.linalg.slogdet(S)[1] - np.linalg.slogdet(Sq)[1])
    assert 0 <= kl < 0.02
    assert np.max(np.abs(mq - mu) / np.sqrt(np.diag(S))) < 0.07
    with pytest.raises(ValueError, match="dtype"):
        fit_factor(t, mu, np.ones(40), dtype="float16")


@pytest.mark.slow  # two runs at d = 1000 (70 s on 2 loaded cores): the shortfall needs a large d
def test_averaging_runs_until_the_average_plateaus():
    """Target N(mu, B B^T + D^2) at d = 1000, rank 2 (the family's optimum is the target): the
    constant-step iterates plateau at their noise floor after ~1000 updates; averaging for only as
    many updates as that took (num_steps = 2 x plateau, now NOT CONVERGED) left KL(q || p) =
    0.35-0.39 nats on seeds 0-2, averaging until the average's F_hat plateaus 0.18-0.25 (ratio
    0.50-0.66; measured): asserted KL < 0.3 (below every fixed-length value) and below 0.8 x the
    fixed-length one of the same seed."""
    from inertia.variational.factor import fit_factor

    d = 1000
    t, mu, S = _low_rank_gaussian(d=d, r=2)
    sd = np.sqrt(np.diag(S))
    P, logdet = np.linalg.inv(S), np.linalg.slogdet(S)[1]

    def kl(out):
        Sq, mq = out["cov"].dense(), out["mean"]
        return 0.5 * (np.trace(P @ Sq) - d + (mu - mq) @ P @ (mu - mq) + logdet
                      - np.linalg.slogdet(Sq)[1])

    out = fit_factor(t, mu, sd, rank=2, seed=0)
    plateau = out["averaged"]["from_step"]
    assert out["verdict"].converged and out["verdict"].numbers["averaging_steps"] >= plateau
    cut = fit_factor(t, mu, sd, rank=2, seed=0, num_steps=2 * plateau)
    assert not cut["verdict"].converged and "averaging phase" in cut["verdict"].line()
    assert kl(out) < 0.3 and kl(out) < 0.8 * kl(cut)
