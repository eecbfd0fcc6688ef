"""How good the fitted Gaussian is: Pareto k-hat of the importance weights p~/q (Yao et al. 2018).

Draws x_j = m + A xi_j of q get log weights -V(x_j) - log q(x_j); PSIS (Vehtari et al. 2024, ArviZ's
`psislw`) fits a generalised Pareto tail whose shape k-hat gives the verdict: below 0.5 adequate,
0.5-0.7 usable with correction, above 0.7 unreliable. The looks' sizes (FIRST_DRAWS, then by the fit's
gradient count, never a clock) and the measurements behind them are in docs/vi.md.
"""
from __future__ import annotations

import math
import warnings
from typing import Optional

import numpy as np

from .._scope import in_float64
from ..results.idata import arviz, flat_rows, sites_of
from .monitor import CHUNK, _on_draws
from ..targets.base import potential_on_rows

FIRST_DRAWS = 4000  # draws of q per seed of the first look (as many as results.build.FIT_DRAWS)
NUM_DRAWS = 32000  # draws of q per seed of the second look, at most (and in d = 1)
SECOND_DRAWS = 16000  # draws of q per seed of the second look, at least
BORDER_DRAWS = 64000  # draws of q per seed of the third look: k-hat within its sd of 0.5 or 0.7
THIRD_DRAWS = 32000  # draws of q per seed of the third look, at least (more up to the fit's count)
MAX_BYTES = 64 * 2**20  # a look's normals at most this large per seed: 64,000 draws up to d = 131
ADEQUATE, USABLE = 0.5, 0.7  # k-hat thresholds (Yao et al. 2018; Vehtari et al. 2024)
CORRECTED = ("mean", "sd", "q5", "q95")  # the table's columns with a PSIS-corrected twin


def verdict_of(khat: float) -> str:
    """"adequate" (k-hat < 0.5), "usable with correction" (0.5-0.7) or "unreliable" (> 0.7 or not finite)."""
    if not math.isfinite(khat) or khat > USABLE:
        return "unreliable"
    return "adequate" if khat < ADEQUATE else "usable with correction"


def shown(khat: float) -> str:
    """k-hat as text, with more than two decimals where two would round it onto a threshold."""
    for digits in range(2, 17):
        text = f"{khat:.{digits}f}"
        if float(text) not in (ADEQUATE, USABLE) or float(text) == khat:
            return text
    return repr(khat)


def message(quality: dict) -> str:
    """The plain-words line of a quality dict: verdict, k-hat (+- its sd), ESS and what to do."""
    k, n = quality["khat"], quality["num_draws"]
    kt = "not finite" if k is None else shown(k)
    sd = quality.get("khat_sd")
    kt += f" +- {sd:.2f}" if k is not None and sd is not None and math.isfinite(sd) else ""
    if quality.get("earlier_khat") is not None:  # `_still_unreliable`
        kt += (f"; {shown(quality['earlier_khat'])} on the shorter look, and not below 0.7 by its "
               "sd on this one")
    wanted = quality.get("third_look_wanted", BORDER_DRAWS)
    cut = (f" (a third look of {wanted} cut to the fit's own gradient count)"
           if quality.get("third_look_capped") else "")
    head = (f"approximation quality: {quality['verdict']} (Pareto k-hat {kt} on {n} draws of q"
            f"{cut}, PSIS ESS {quality['ess']:.0f})")
    if quality["verdict"] == "adequate":
        return head + ": the Gaussian is a good stand-in for the posterior"
    if quality["verdict"] == "usable with correction":
        return (head + ": use the importance-corrected (*_psis) columns, not the Gaussian's")
    return (head + ": q is a poor approximation of the posterior and its means, sds and quantiles "
            "may be far off; run `sample` (exact MCMC) for this model")


def _psislw(lw):
    """(smoothed normalised log weights, k-hat) along the last axis, by ArviZ."""
    az = arviz()
    with warnings.catch_warnings():  # the verdict says it in words
        warnings.simplefilter("ignore")
        if hasattr(az, "psislw"):
            out, k = az.psislw(lw)
        else:  # pragma: no cover - ArviZ 1.x
            from arviz_stats import psislw

            out, k = psislw(lw)
    return np.asarray(out, dtype=np.float64), np.asarray(k, dtype=np.float64)


def _normals(res, num_draws, seed, start=0):
    """(seed, draw, width) host normals of draws start..num_draws - 1: block j from PCG64 seeded (seed, j)."""
    seeds = 1 if np.ndim(res.mean) == 1 else np.shape(res.mean)[0]
    width = res.dim + _rank(res)
    blocks = []
    for j in range(start // FIRST_DRAWS, -(-num_draws // FIRST_DRAWS)):
        lo, hi = max(start, j * FIRST_DRAWS), min(num_draws, (j + 1) * FIRST_DRAWS)
        xi = np.random.default_rng([int(seed), j]).standard_normal((seeds, FIRST_DRAWS, width))
        blocks.append(xi[:, lo - j * FIRST_DRAWS:hi - j * FIRST_DRAWS])
    return np.concatenate(blocks, axis=1)


def _rank(res) -> int:
    """r of a factor-family result (`variational.factor`, covariance B B^T + diag(D^2)); 0 otherwise."""
    return int(res.cov.rank) if getattr(res, "coords", None) == "factor" else 0


def draws_of(res, num_draws, seed, start=0):
    """(seed, draw, d) draws m + A xi of q (m + B z + D eps for the factor family)."""
    xi = _normals(res, num_draws, seed, start)
    if _rank(res):
        return res.cov.draws(np.asarray(res.mean, np.float64), xi)
    means = np.asarray(res.mean, dtype=np.float64).reshape(-1, res.dim)
    factors = np.asarray(res.factor, dtype=np.float64).reshape(-1, res.dim, res.dim)
    return means[:, None, :] + np.matmul(xi, np.swapaxes(factors, 1, 2))


def log_weights(target, res, num_draws: int = NUM_DRAWS, seed: int = 0,
                start: int = 0) -> np.ndarray:
    """(seed, draw) log weights -V(x_j) - log q(x_j) of draws start..num_draws - 1; -inf off the support."""
    if _rank(res):
        return _factor_log_weights(target, res, num_draws, seed, start)
    xi = _normals(res, num_draws, seed, start)
    n = num_draws - start
    means = np.asarray(res.mean, dtype=np.float64).reshape(-1, res.dim)
    factors = np.asarray(res.factor, dtype=np.float64).reshape(-1, res.dim, res.dim)
    on_draws, frame = _on_draws(target)
    c = CHUNK
    out = []
    for s in range(means.shape[0]):
        m, A = means[s], factors[s]
        sign, logdet = np.linalg.slogdet(A)
        if frame is not None:
            shift, F = frame
            m, A = shift + F @ m, F @ A  # V(z) = V_parent(shift + F z): q's density stays in z
        z = xi[s]
        pad = (-n) % c  # whole chunks: the monitor's one compiled shape
        zz = np.concatenate([z, np.repeat(z[:1], pad, 0)]) if pad else z
        V = np.concatenate([np.asarray(on_draws(m, A, zz[i:i + c]), dtype=np.float64)
                            for i in range(0, zz.shape[0], c)])[:n]
        logq = -0.5 * np.sum(z * z, axis=1) - 0.5 * res.dim * math.log(2 * math.pi) - logdet
        if not sign:  # a singular factor: q has no density
            logq = np.full(n, np.nan)
        lw = -V - logq
        out.append(np.where(np.isfinite(lw), lw, -np.inf))
    return np.stack(out)


def _factor_log_weights(target, res, num_draws, seed, start=0):
    """(1, draw) log weights of a factor-family q (Woodbury form of log q; no d x d matrix)."""
    X = draws_of(res, num_draws, seed, start)[0]
    V = potential_on_rows(target.potential, X)
    lw = -V - res.cov.log_density(np.asarray(res.mean, np.float64), X)
    return np.where(np.isfinite(lw), lw, -np.inf)[None]


@in_float64
def assess(target, res, num_draws: Optional[int] = None, seed: int = 0) -> tuple[dict, np.ndarray]:
    """(quality dict, (seed, draw) PSIS-smoothed log weights) of a fit, in up to three looks, in float64."""
    arviz()
    n = num_draws or FIRST_DRAWS
    lw = log_weights(target, res, n, seed)
    quality, smoothed = _assess_lw(lw, seed)
    k = quality["khat"]
    looks, capped = [n], None
    if num_draws is None and not (k is not None and k + quality["khat_sd"] < ADEQUATE):
        doubted = None  # k-hat of a look above 0.7: the next must clear 0.7 by its own sd
        for third, more in ((False, second_look_draws(res)), (True, third_look_draws(res, 0))):
            if third and more < borderline_draws(res):
                capped = more  # the third look's draws, fewer than BORDER_DRAWS by the fit's count
            if more <= n:
                continue
            # the earlier looks' weights kept: only the new draws are evaluated
            lw = np.concatenate([lw, log_weights(target, res, more, seed, start=n)], axis=1)
            quality, smoothed = _assess_lw(lw, seed)
            n = more
            looks.append(n)
            k = quality["khat"]
            if doubted is not None and k is not None and k + quality["khat_sd"] >= USABLE:
                quality = _still_unreliable(quality, doubted)
            if k is None or (k <= USABLE and min(abs(k - ADEQUATE), abs(k - USABLE))
                             >= quality["khat_sd"]):
                break  # not a coin flip at 0.5 or 0.7, nor an "unreliable" to confirm: no more
            doubted = k if k > USABLE else None
        if capped is not None:  # the third look was wanted and the fit's count cut it
            quality = dict(quality, third_look_capped=True,
                           third_look_wanted=borderline_draws(res))
            quality["message"] = message(quality)
    quality["looks"] = looks
    return quality, smoothed


def _fit_evals(res) -> float:
    """The fit's gradient and Hessian-vector evaluations per seed (its history's last counts)."""
    h = res.history or {}
    return sum(float(np.ravel(h[k])[-1]) for k in ("grad_evals", "hvp_evals")
               if h.get(k) is not None and len(h[k]) and np.isfinite(np.ravel(h[k])[-1]))


def third_look_draws(res, drawn: int) -> int:
    """Draws of q per seed of the third look: BORDER_DRAWS, cut to the fit's gradient count."""
    most = borderline_draws(res)
    budget = max(float(THIRD_DRAWS), _fit_evals(res))
    n = most if budget >= most else FIRST_DRAWS * int(budget // FIRST_DRAWS)
    return int(max(drawn, n))


def second_look_draws(res) -> int:
    """Draws of q per seed of the second look: half the fit's gradient count (bounded)."""
    n = NUM_DRAWS
    if res.dim > 1:
        n = int(min(NUM_DRAWS, max(SECOND_DRAWS, _fit_evals(res) // 2)))
    return int(min(n, max(FIRST_DRAWS, MAX_BYTES // (8 * res.dim))))


def borderline_draws(res) -> int:
    """Draws of q per seed of a borderline third look: BORDER_DRAWS, fewer where normals pass MAX_BYTES."""
    return int(min(BORDER_DRAWS, max(FIRST_DRAWS, MAX_BYTES // (8 * res.dim))))


def khat_sd(khat: float, num_draws: int) -> float:
    """k-hat's asymptotic sd |1 + k| / sqrt(M), M = min(S / 5, 3 sqrt(S)) (Hosking & Wallis 1987)."""
    m = math.ceil(min(0.2 * num_draws, 3.0 * math.sqrt(num_draws)))
    return abs(1.0 + khat) / math.sqrt(m) if math.isfinite(khat) else math.inf


def _assess_lw(lw, seed):
    """`assess` on the (seed, draw) raw log weights `lw`."""
    num_draws = lw.shape[1]
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
               "khat_sd": khat_sd(khat, num_draws),
               "verdict": verdict_of(khat), "thresholds": [ADEQUATE, USABLE]}
    quality["corrected"] = quality["verdict"] != "unreliable"
    quality["message"] = message(quality)
    return quality, smoothed


def _still_unreliable(quality: dict, earlier: float) -> dict:
    """The quality of a longer look: "unreliable" stays unless k-hat is below 0.7 by its own sd."""
    q = dict(quality, verdict="unreliable", corrected=False, earlier_khat=float(earlier))
    q["message"] = message(q)
    return q


def _weighted_stats(x, w, quantiles=(0.05, 0.95)):
    """(mean, sd, quantiles) of draws x with normalised weights w."""
    mean = float(np.sum(w * x))
    var = float(np.sum(w * (x - mean) ** 2)) / max(1.0 - float(np.sum(w * w)), 1e-300)
    order = np.argsort(x)
    xs, ws = x[order], w[order]
    cdf = np.cumsum(ws) - 0.5 * ws
    qs = [float(np.interp(p, cdf, xs)) for p in quantiles]
    return mean, math.sqrt(max(var, 0.0)), qs


def corrected_rows(res, rows: list) -> list:
    """Summary rows with PSIS-corrected mean/sd/q5/q95 where k-hat <= 0.7; unchanged otherwise."""
    quality, lw = getattr(res, "quality", None), getattr(res, "quality_weights", None)
    if not quality or lw is None or not quality.get("corrected"):
        return rows
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
    """(num_draws, d) draws of q resampled with the PSIS weights (seeds pooled, equal mass per seed)."""
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


__all__ = ["shown", "assess", "log_weights", "draws_of", "corrected_rows", "resample", "verdict_of",
           "message", "khat_sd", "second_look_draws", "borderline_draws", "third_look_draws",
           "FIRST_DRAWS", "NUM_DRAWS", "ADEQUATE", "USABLE", "CORRECTED"]
