"""How good the fitted Gaussian is as an answer: Pareto k-hat of the importance weights p~/q.

Draws x_j = m + A xi_j of q (the draws behind the summary) get log weights
log w_j = -V(x_j) - log q(x_j); Pareto-smoothed importance sampling (Vehtari, Simpson, Gelman, Yao &
Gabry 2024, ArviZ's `psislw`) fits a generalised Pareto tail to the largest weights, whose shape k-hat
says whether q can stand in for the posterior (Yao, Vehtari, Simpson & Gelman 2018): below 0.5 the
Gaussian is adequate; 0.5-0.7 its PSIS-reweighted expectations are usable; above 0.7 neither is, and
the exact sampler is the answer. The check reads the fit and never changes it.

Number of draws: FIRST_DRAWS = 4000 per seed, and NUM_DRAWS = 32,000 when k-hat there is 0.5 or
more. PSIS fits the largest 3 sqrt(S) weights; in low dimensions p/q has a maximum in the bulk of q
where the weights bunch (their density is singular at that maximum), and with S = 4000 or 8000
the fitted tail (the largest 4.8 % or 3.4 %) reaches into that bunch: k-hat came out 3-6 on
near-Gaussian posteriors whose k-hat at 32,000 draws is 0.3-0.6 (a 1-D logistic posterior, Gamma(5)
and Gamma(50) posteriors in log space; 5 repetitions each), a false "unreliable". At 32,000 draws
the tail is the largest 537 (1.7 %) and the 5 repetitions agreed within 0.15; PSIS itself is
reliable where S >= 10^(1 / (1 - k)) (Vehtari et al. 2024, section 3.2.3), at 32,000 for every
k up to 0.78, past the 0.7 threshold. A fit whose k-hat is below 0.5 at 4000 draws stops there
(k-hat's sampling sd about (1 + k) / sqrt(190) < 0.11: 0.5 is then at least 1.5 sd away for a
k-hat below 0.33, and the bunching only raises k-hat). The second look's normals are kept within
MAX_BYTES (64 MiB): above d = 262 it uses fewer draws (at least 4000); the bunching is a
low-dimensional effect (in high d a log weight is a sum over many directions, with no singular
density at its maximum).
"""
from __future__ import annotations

import math
import time
import warnings
from typing import Optional

import numpy as np

FIRST_DRAWS = 4000  # draws of q per seed of the first look (= results.build.FIT_DRAWS)
NUM_DRAWS = 32000  # draws of q per seed when k-hat at FIRST_DRAWS is 0.5 or more
MAX_BYTES = 64 * 2**20  # the second look's normals at most this large: 32,000 draws up to d = 262
ADEQUATE, USABLE = 0.5, 0.7  # k-hat thresholds (Yao et al. 2018; Vehtari et al. 2024)
CORRECTED = ("mean", "sd", "q5", "q95")  # the table's columns with a PSIS-corrected twin


def verdict_of(khat: float) -> str:
    """"adequate" (k-hat < 0.5), "usable with correction" (0.5-0.7) or "unreliable" (> 0.7 or not
    finite)."""
    if not math.isfinite(khat) or khat > USABLE:
        return "unreliable"
    return "adequate" if khat < ADEQUATE else "usable with correction"


def message(quality: dict) -> str:
    """The plain-words line of a quality dict: verdict, k-hat, ESS and what to do."""
    k, n = quality["khat"], quality["num_draws"]
    kt = "not finite" if k is None else f"{k:.2f}"
    head = (f"approximation quality: {quality['verdict']} (Pareto k-hat {kt} on {n} draws of q, "
            f"PSIS ESS {quality['ess']:.0f})")
    if quality["verdict"] == "adequate":
        return head + ": the Gaussian is a good stand-in for the posterior"
    if quality["verdict"] == "usable with correction":
        return (head + ": use the importance-corrected (*_psis) columns, not the Gaussian's")
    return (head + ": q is a poor approximation of the posterior and its means, sds and quantiles "
            "may be far off; run `sample` (exact MCMC) for this model")


def _psislw(lw):
    """(smoothed normalised log weights, k-hat) along the last axis, by ArviZ."""
    from ..results.idata import arviz

    az = arviz()
    with warnings.catch_warnings():  # the verdict says it in words
        warnings.simplefilter("ignore")
        if hasattr(az, "psislw"):
            out, k = az.psislw(lw)
        else:  # pragma: no cover - ArviZ 1.x
            from arviz_stats import psislw

            out, k = psislw(lw)
    return np.asarray(out, dtype=np.float64), np.asarray(k, dtype=np.float64)


BLOCK_SEED = 1_000_003  # block j >= 1 of the normals is seeded seed + j * BLOCK_SEED


def _normals(res, num_draws, seed):
    """(seed, draw, d) normals: blocks of FIRST_DRAWS draws of one compiled shape, the first
    exactly `FitResult.sample(key_of(seed), FIRST_DRAWS)`'s (the summary's own draws), block j
    from seed + j * BLOCK_SEED (no new program for 32,000 draws)."""
    from .._random import host_normal, key_of

    mean = np.asarray(res.mean)
    width = res.dim + _rank(res)  # the factor family draws (z, eps) of length r + d
    blocks = []
    for j in range(-(-num_draws // FIRST_DRAWS)):
        n = min(FIRST_DRAWS, num_draws - j * FIRST_DRAWS)
        size = FIRST_DRAWS if num_draws >= FIRST_DRAWS else n
        shape = (size, width) if mean.ndim == 1 else (mean.shape[0], size, width)
        key = key_of((seed + j * BLOCK_SEED) % 2**63)
        xi = np.asarray(host_normal(key, shape, mean.dtype), dtype=np.float64)
        blocks.append((xi[None] if mean.ndim == 1 else xi)[:, :n])
    return np.concatenate(blocks, axis=1)


def _rank(res) -> int:
    """r of a factor-family result (`vi.factor`, covariance B B^T + diag(D^2)); 0 otherwise."""
    return int(res.cov.rank) if getattr(res, "coords", None) == "factor" else 0


def draws_of(res, num_draws, seed):
    """(seed, draw, d) draws m + A xi of q at `_normals(res, num_draws, seed)` (m + B z + D eps for
    the factor family)."""
    xi = _normals(res, num_draws, seed)
    if _rank(res):
        return res.cov.draws(np.asarray(res.mean, np.float64), xi)
    means = np.asarray(res.mean, dtype=np.float64).reshape(-1, res.dim)
    factors = np.asarray(res.factor, dtype=np.float64).reshape(-1, res.dim, res.dim)
    return means[:, None, :] + np.einsum("snj,sij->sni", xi, factors)


def log_weights(target, res, num_draws: int = NUM_DRAWS, seed: int = 0) -> np.ndarray:
    """(seed, draw) raw log weights -V(x_j) - log q(x_j) at the draws x_j = m + A xi_j of
    `draws_of(res, num_draws, seed)`, V by the objective monitor's compiled batched potential
    (the data are its arguments); -inf where V is not finite (a draw outside the support)."""
    from .monitor import CHUNK, _on_draws

    if _rank(res):
        return _factor_log_weights(target, res, num_draws, seed)
    xi = _normals(res, num_draws, seed)
    means = np.asarray(res.mean, dtype=np.float64).reshape(-1, res.dim)
    factors = np.asarray(res.factor, dtype=np.float64).reshape(-1, res.dim, res.dim)
    on_draws, frame = _on_draws(target)
    c = min(CHUNK, num_draws)
    out = []
    for s in range(means.shape[0]):
        m, A = means[s], factors[s]
        sign, logdet = np.linalg.slogdet(A)
        if frame is not None:
            shift, F = frame
            m, A = shift + F @ m, F @ A  # V(z) = V_parent(shift + F z): q's density stays in z
        z = xi[s]
        pad = (-num_draws) % c
        zz = np.concatenate([z, np.repeat(z[:1], pad, 0)]) if pad else z
        V = np.concatenate([np.asarray(on_draws(m, A, zz[i:i + c]), dtype=np.float64)
                            for i in range(0, zz.shape[0], c)])[:num_draws]
        logq = -0.5 * np.sum(z * z, axis=1) - 0.5 * res.dim * math.log(2 * math.pi) - logdet
        if not sign:  # a singular factor: q has no density
            logq = np.full(num_draws, np.nan)
        lw = -V - logq
        out.append(np.where(np.isfinite(lw), lw, -np.inf))
    return np.stack(out)


def _factor_log_weights(target, res, num_draws, seed):
    """(1, draw) log weights of a factor-family q (Woodbury form of log q; no d x d matrix)."""
    from ..targets.base import potential_on_rows

    X = draws_of(res, num_draws, seed)[0]
    V = potential_on_rows(target.potential, X)
    lw = -V - res.cov.log_density(np.asarray(res.mean, np.float64), X)
    return np.where(np.isfinite(lw), lw, -np.inf)[None]


def assess(target, res, num_draws: Optional[int] = None,
           seed: int = 0) -> tuple[dict, np.ndarray]:
    """(quality dict, (seed, draw) PSIS-smoothed normalised log weights) of a fit: k-hat (the worst
    seed's), the PSIS effective sample size 1 / sum w^2 (the worst seed's), the verdict and how long
    the check took; on FIRST_DRAWS draws of q per seed, then NUM_DRAWS where k-hat >= 0.5 (module
    docstring), or on `num_draws` when given."""
    t0 = time.perf_counter()
    quality, smoothed = _assess_at(target, res, num_draws or FIRST_DRAWS, seed)
    if num_draws is None and not (quality["khat"] is not None and quality["khat"] < ADEQUATE):
        more = min(NUM_DRAWS, max(FIRST_DRAWS, MAX_BYTES // (8 * res.dim)))
        if more > FIRST_DRAWS:
            quality, smoothed = _assess_at(target, res, more, seed)
    quality["seconds"] = time.perf_counter() - t0
    return quality, smoothed


def _assess_at(target, res, num_draws, seed):
    """`assess` on `num_draws` draws of q per seed."""
    lw = log_weights(target, res, num_draws, seed)
    finite = np.isfinite(lw)
    smoothed = np.full_like(lw, -np.inf)
    ks, ess = [], []
    for s in range(lw.shape[0]):
        ok = finite[s]
        if ok.sum() < 10:
            ks.append(math.inf)
            ess.append(0.0)
            continue
        sm, k = _psislw(lw[s, ok])
        smoothed[s, ok] = sm
        w = np.exp(sm)
        ks.append(float(k))
        ess.append(float(1.0 / np.sum(w * w)))
    khat = float(max(ks))
    quality = {"khat": khat if math.isfinite(khat) else None,
               "khat_per_seed": [k if math.isfinite(k) else None for k in ks],
               "ess": float(min(ess)), "ess_per_seed": ess, "num_draws": int(num_draws),
               "seed": int(seed), "outside_support": float(1.0 - finite.mean()),
               "verdict": verdict_of(khat), "thresholds": [ADEQUATE, USABLE]}
    quality["corrected"] = quality["verdict"] != "unreliable"
    quality["message"] = message(quality)
    return quality, smoothed


def _weighted_stats(x, w, quantiles=(0.05, 0.95)):
    """(mean, sd, quantiles) of draws x with normalised weights w (quantiles of the weighted
    empirical distribution, linear between the cumulative weights' midpoints)."""
    mean = float(np.sum(w * x))
    var = float(np.sum(w * (x - mean) ** 2)) / max(1.0 - float(np.sum(w * w)), 1e-300)
    order = np.argsort(x)
    xs, ws = x[order], w[order]
    cdf = np.cumsum(ws) - 0.5 * ws
    qs = [float(np.interp(p, cdf, xs)) for p in quantiles]
    return mean, math.sqrt(max(var, 0.0)), qs


def corrected_rows(res, rows: list) -> list:
    """The summary rows with PSIS-corrected mean_psis, sd_psis, q5_psis, q95_psis where the fit is
    not unreliable (k-hat <= 0.7), from the quality's own draws of q (seeds pooled, each seed's
    weights given equal mass); the rows unchanged otherwise."""
    quality, lw = getattr(res, "quality", None), getattr(res, "quality_weights", None)
    if not quality or lw is None or not quality.get("corrected"):
        return rows
    from ..results.idata import flat_rows, sites_of

    info = dict(getattr(res, "model_info", None) or {})
    if getattr(res, "constrain", None) is not None:
        info.setdefault("constrain", res.constrain)
    sites = sites_of(draws_of(res, quality["num_draws"], quality["seed"]), info, res.names)
    labels, x = flat_rows(sites)
    w = np.exp(lw) / lw.shape[0]  # (seed, draw): each seed's weights sum to 1 / seeds
    flat, wf = x.reshape(-1, x.shape[2]), w.reshape(-1)
    index = {lab: i for i, lab in enumerate(labels)}
    out = []
    for r in rows:
        i = index.get(r["name"])
        r = dict(r)
        if i is not None:
            mean, sd, (q5, q95) = _weighted_stats(flat[:, i], wf)
            r.update(mean_psis=mean, sd_psis=sd, q5_psis=q5, q95_psis=q95)
        out.append(r)
    return out


def resample(res, num_draws: Optional[int] = None, seed: int = 0) -> np.ndarray:
    """(num_draws, d) draws of q resampled with the PSIS weights (multinomial, seeds pooled, each
    seed's weights given equal mass): approximately the posterior's where k-hat <= 0.7."""
    quality, lw = getattr(res, "quality", None), getattr(res, "quality_weights", None)
    if not quality or lw is None:
        raise ValueError("this fit has no importance weights (fit(..., quality=False), or loaded)")
    if not quality.get("corrected"):
        raise ValueError(f"PSIS resampling needs k-hat <= {USABLE}; {quality['message']}")
    draws = draws_of(res, quality["num_draws"], quality["seed"]).reshape(-1, res.dim)
    w = (np.exp(lw) / lw.shape[0]).reshape(-1)
    n = int(num_draws or quality["num_draws"])
    rng = np.random.default_rng(seed)
    return draws[rng.choice(draws.shape[0], size=n, replace=True, p=w / w.sum())]


__all__ = ["assess", "log_weights", "draws_of", "corrected_rows", "resample", "verdict_of", "message",
           "FIRST_DRAWS", "NUM_DRAWS", "ADEQUATE", "USABLE", "CORRECTED"]
