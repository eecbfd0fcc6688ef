"""`inertia reproduce lower-bound`: the hard family of Theorem 3.1, measured (docs/lower-bound.md).

1. probability that a query lands in the hidden region: typical (a query from N(0, I), and from the
   iterates' Gaussians along runs) and worst case over fixed queries (Lemma B.5: any query on or
   outside the sphere of radius a), Monte Carlo with Clopper-Pearson intervals and exact laws,
   against kappa with fitted log-log slopes;
2. GVI methods run on V_v, V_B and a tripwire copy of V_B (NaN on any hidden query) as one compiled
   program with the same keys: transcripts agree until the first hidden query; queries until then; final gap on V_v;
3. the gap of N(0, I) on V_v (reduced reference optimisation + Monte Carlo tail correction).

Parts 2 and 3 default to the "unit-energy" radius, whose initial gap is the paper's 1 + o(1);
`rule="asymptotic"` (R^2 = 2 log kappa - 3 log log kappa) stays available, and part 1 and part 3
report both radii.
"""
from __future__ import annotations

import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import scipy.integrate
import scipy.stats

from ..targets.hard import (R_RULES, ball_gap_of_standard, halfspace_energy, halfspace_optimum,
                            hard_family, hard_pair, radius, symmetric_correction,
                            symmetric_objective, symmetric_optimum, project_ball)
from ._runner import (CellStore, cell_key, dump_json, markdown_table, run_cells, save_plot,
                      write_text)

FULL = dict(
    kappas=[1e2, 10**2.5, 1e3, 10**3.5, 1e4, 10**4.5, 1e5], prob_samples=2**22,
    run_kappas=[1e2, 1e3, 1e4, 1e5], run_dim=None,
    methods=["fd-proj", "paired-proj", "stl-proj", "price-stl-proj"],
    batch_size=8, num_steps=200, seeds=[0, 1, 2], mc_samples=200_000)
QUICK = dict(
    kappas=[1e2, 1e3, 1e4], prob_samples=2**16,
    run_kappas=[1e2, 1e3], run_dim=None, methods=["stl-proj"],
    batch_size=4, num_steps=40, seeds=[0, 1, 2], mc_samples=20_000)
DEFAULT_RULE = "unit-energy"  # initial gap 1 + o(1), as the paper states (docs/lower-bound.md)
CHUNK = 2**15
SAMPLE_POINTS = {"paired": 2}  # random query points per batch sample (paired: X and Y); others 1


def _cp(hits, n, level=0.95):
    ci = scipy.stats.binomtest(int(hits), int(n)).proportion_ci(level, method="exact")
    return float(ci.low), float(ci.high)


def exact_standard_probability(R, a, d):
    """P(v^T P_B(X) > R) for X ~ N(0, I_d): int_R^inf phi(t) P(chi2_{d-1} <= t^2 (a^2/R^2 - 1)) dt."""
    f = lambda t: scipy.stats.norm.pdf(t) * scipy.stats.chi2.cdf(t * t * (a * a / (R * R) - 1), d - 1)
    val, _ = scipy.integrate.quad(f, R, np.inf, epsabs=0, epsrel=1e-12, limit=200)
    return float(val)


def exact_worst_probability(R, a, d):
    """Lemma B.5: sup over fixed queries x of P_v(x hidden), v uniform on the sphere.

    x is hidden iff v^T x > R max(1, |x|/a); the threshold on v^T x / |x| is smallest, R / a, for
    every |x| >= a, and (1 + v^T x/|x|) / 2 ~ Beta((d-1)/2, (d-1)/2)."""
    k = 0.5 * (d - 1)
    return float(scipy.stats.beta.sf(0.5 * (1.0 + R / a), k, k))


def _count_hidden(target, num, seed, sphere=False):
    """Hidden-region hits among num draws from N(0, I_d) (or, with sphere, uniform on the sphere
    of radius a: by rotation invariance, a fixed worst-case query against a uniform v), by the
    target's own predicate."""
    hidden = target.info["in_hidden_region"]
    d, a = target.dim, target.info["a"]

    @jax.jit
    def count(key):
        X = jax.random.normal(key, (CHUNK, d))
        if sphere:
            X = a * X / jnp.linalg.norm(X, axis=1, keepdims=True)
        return jnp.sum(jax.vmap(hidden)(X))

    keys = jax.random.split(jax.random.PRNGKey(seed), -(-num // CHUNK))
    return int(sum(int(count(k)) for k in keys)), len(keys) * CHUNK


def probability_cell(kappa, rule, num, seed):
    t = hard_family(kappa, R=rule, seed=seed)
    R, a, d = t.info["R"], t.info["a"], t.dim
    hits, n = _count_hidden(t, num, seed)
    lo, hi = _cp(hits, n)
    whits, _ = _count_hidden(t, num, seed + 1, sphere=True)
    return {"kappa": kappa, "rule": rule, "R": R, "a": a, "d": d, "n": n, "hits": hits,
            "p_hat": hits / n, "ci": [lo, hi], "p_exact": exact_standard_probability(R, a, d),
            "p_halfspace": float(scipy.stats.norm.sf(R)),
            "worst_hits": whits, "p_worst_hat": whits / n, "worst_ci": list(_cp(whits, n)),
            "p_worst_exact": exact_worst_probability(R, a, d)}


def reference_cell(kappa, rule, dim, mc_samples):
    """Gap of N(0, I) on V_v: F*_v from the 3-parameter symmetric optimum (quadrature), F_v(N(0, I))
    by quadrature and, as a check, by Monte Carlo of the tail term with its standard error."""
    R = radius(kappa, rule)
    t = hard_family(kappa, R=rule, dim=dim)
    d, a = t.dim, t.info["a"]
    mu, sv, sp, F_star = symmetric_optimum(kappa, R, a, d)
    F_gamma = symmetric_objective(kappa, R, a, d, 0.0, 1.0, 1.0)
    quad_err = max(abs(symmetric_objective(kappa, R, a, d, *p, order=128)
                       - symmetric_objective(kappa, R, a, d, *p)) for p in [(mu, sv, sp), (0, 1, 1)])
    c0, c0_se = symmetric_correction(kappa, R, a, d, 0.0, 1.0, num_samples=mc_samples, seed=1)
    F_gamma_mc = 0.5 * d + float(halfspace_energy(kappa, R, 0.0, 1.0)) + c0
    _, _, fH, f0 = halfspace_optimum(kappa, R)
    gap_ball, s_ball = ball_gap_of_standard(kappa, a, d)
    return {"kappa": kappa, "rule": rule, "R": R, "a": a, "d": d,
            "energy_excess": F_gamma - 0.5 * d, "opt_mu": mu, "opt_sigma_v": sv,
            "opt_sigma_perp": sp, "F_gamma": F_gamma, "F_star": F_star, "gap": F_gamma - F_star,
            "gap_mc": F_gamma_mc - F_star, "gap_mc_se": c0_se, "quad_err": quad_err,
            "gap_halfspace": f0 - fH, "gap_ball": gap_ball, "ball_opt_scale": s_ball}


def switch_target(tv, cap, poison):
    """One oracle for the three runs: V_B + cap * (V_v - V_B), answering `poison` added at hidden
    query points. (cap, poison) = (1, 0): V_v; (0, 0): V_B; (0, NaN): tripwire copy of V_B whose
    iterates turn NaN from the first update with a hidden query. cap and poison may be traced, so the
    three runs share one compiled program (and V_v, V_B agree bitwise until a hidden query)."""
    a, c = tv.info["a"], tv.info["kappa"] - 1.0
    proj, hidden = tv.info["projection"], tv.info["in_hidden_region"]

    def core(x):
        pb = project_ball(x, a)
        return x + c * (x - pb) + jnp.where(hidden(x), cap * c * (pb - proj(x)), 0.0)

    def potential(x):
        rb, rk = x - project_ball(x, a), x - proj(x)
        return 0.5 * (x @ x) + 0.5 * c * (rb @ rb + cap * (rk @ rk - rb @ rb))

    def grad(x):
        return core(x) + jnp.where(hidden(x), poison, 0.0)

    def hvp(x, u):
        return jax.jvp(core, (x,), (u,))[1] + jnp.where(hidden(x), poison, 0.0)

    return tv.replace(potential=potential, grad=grad, hvp=hvp, name=tv.name + "-switch")


def _record(st, coords, v, z):
    """(m, A z, finite, [v^T m, v^T Sigma v, Q]) with Q = (|m|^2 + tr Sigma)/2 - log det A."""
    m, A = np.asarray(st.m), np.asarray(st.A)
    fin = all(bool(np.all(np.isfinite(np.asarray(x)))) for x in st)
    Av = A.T @ v if coords == "chol" else A @ v
    if not fin:
        logdet = np.nan
    elif coords == "chol":
        logdet = np.log(np.abs(np.diag(A))).sum()
    else:
        logdet = np.linalg.slogdet(A)[1]
    Q = 0.5 * (m @ m + np.sum(A * A)) - logdet
    return m, A @ z, fin, np.array([m @ v, Av @ Av, Q])


def lockstep(kappa, method, *, R=DEFAULT_RULE, dim=None, v_seed=0, seeds=(0,), num_steps=100,
             batch_size=8):
    """Run `method` on V_v, V_B and the tripwire copy of V_B with identical keys (those of `fit`).

    Returns per-seed arrays over steps 0..num_steps: `diff` (max |V_v - V_B| over the mean and a
    fixed random projection of the factor), `same` (diff == 0), `clean` (no hidden query so far),
    and for both runs v^T m, v^T Sigma v and Q = (|m|^2 + tr Sigma)/2 - log det Sigma / 2, plus the
    final (mean, cov) of both runs.
    """
    from ..vi import make_kernel

    tv, _ = hard_pair(kappa, R=R, dim=dim, seed=v_seed)
    _, m_spec, est, _, rule = make_kernel(tv, method, batch_size=batch_size)
    d = tv.dim
    v = np.asarray(tv.info["v"])
    z = np.random.default_rng(12345).standard_normal(d)
    m0, A0 = jnp.zeros(d), jnp.eye(d)

    keys = np.stack([np.asarray(jax.random.split(jax.random.PRNGKey(sd), num_steps))
                     for sd in seeds])  # as in `fit`

    def run(target):
        # one compiled single-seed step driven from Python: a vmapped (over seeds) step or scan of
        # these kernels deadlocked the XLA CPU runtime on 2 cores for d >= 65 (docs/lower-bound.md)
        kern = make_kernel(target, method, batch_size=batch_size)[0]
        step = jax.jit(lambda st, k: kern.step(st, k)[0])
        recs, finals = [], []
        for i in range(len(seeds)):
            st = kern.init(m0, A0)
            rec = [_record(st, kern.coords, v, z)]
            for k in range(num_steps):
                st = step(st, keys[i, k])
                rec.append(_record(st, kern.coords, v, z))
            recs.append(tuple(np.stack(x) for x in zip(*rec)))
            m, cov = kern.gaussian(st)
            finals.append((np.asarray(m), np.asarray(cov)))
        recs = tuple(np.stack(x) for x in zip(*recs))  # (seeds, steps + 1, ...)
        return recs, (np.stack([f[0] for f in finals]), np.stack([f[1] for f in finals]))

    (mv, zv, _, st_v), final_v = run(switch_target(tv, 1.0, 0.0))
    (mb, zb, _, st_b), final_b = run(switch_target(tv, 0.0, 0.0))
    (_, _, fin, _), _ = run(switch_target(tv, 0.0, np.nan))
    dif = np.maximum(np.abs(mv - mb).max(-1), np.abs(zv - zb).max(-1))
    clean = np.logical_and.accumulate(fin, axis=1)
    g, h = est.cost(d, batch_size)
    return {"same": dif == 0, "diff": dif, "clean": clean, "stats_v": st_v, "stats_b": st_b,
            "final_v": final_v, "final_b": final_b,
            "queries_per_update": g + h,
            "points_per_update": SAMPLE_POINTS.get(est.name, 1) * batch_size,
            "eta": rule.eta, "targets": (tv, None)}


def _tail_mc(target, num):
    """jit (key, m, L) -> ((kappa-1)[e_{K_v} - e_{H_v}](X), hidden(X)) for num draws X ~ N(m, L L^T)."""
    kappa, R, d = target.info["kappa"], target.info["R"], target.dim
    proj, hidden = target.info["projection"], target.info["in_hidden_region"]
    vj = jnp.asarray(target.info["v"])

    @jax.jit
    def mc(key, m, L):
        X = m + jax.random.normal(key, (num, d)) @ L.T
        r = jax.vmap(lambda x: x - proj(x))(X)
        t = X @ vj
        corr = (kappa - 1.0) * 0.5 * (jnp.sum(r * r, 1) - jnp.maximum(t - R, 0.0) ** 2)
        return corr, jnp.sum(jax.vmap(hidden)(X))

    return mc


def objective_v(target, m, S, *, num, seed, mc=None):
    """F_v(q) = Q(q) + (kappa-1) E e_{H_v} (closed form) + (kappa-1) E[e_{K_v} - e_{H_v}] (MC) and the
    MC hit frequency of the hidden region; returns (F, se, hits, n)."""
    kappa, R, v = target.info["kappa"], target.info["R"], target.info["v"]
    mc = mc or _tail_mc(target, num)
    try:
        L = np.linalg.cholesky(S)
    except np.linalg.LinAlgError:  # a run that diverged (non-finite or non-PD final covariance)
        return math.nan, math.nan, -1, num
    corr, hits = mc(jax.random.PRNGKey(seed), jnp.asarray(m), jnp.asarray(L))
    corr = np.asarray(corr)
    Q = 0.5 * (m @ m + np.trace(S)) - 0.5 * np.linalg.slogdet(S)[1]
    F = Q + float(halfspace_energy(kappa, R, v @ m, v @ S @ v)) + corr.mean()
    return float(F), float(corr.std(ddof=1) / math.sqrt(num)), int(hits), num


def transcript_cell(kappa, method, *, dim, seeds, num_steps, batch_size, mc_samples, ref,
                    rule=DEFAULT_RULE):
    out = lockstep(kappa, method, R=rule, dim=dim, v_seed=0, seeds=seeds, num_steps=num_steps,
                   batch_size=batch_size)
    tv, _ = out["targets"]
    R = tv.info["R"]
    qpu, ppu = out["queries_per_update"], out["points_per_update"]
    mc = _tail_mc(tv, mc_samples)
    rows = []
    for i, seed in enumerate(seeds):
        same, clean = out["same"][i], out["clean"][i]
        hit = int(np.argmin(clean)) if not clean.all() else None  # update holding the first hit
        div = int(np.argmin(same)) if not same.all() else None
        agree = bool(same[:hit].all()) if hit is not None else bool(same.all())
        mu_t, s2_t, Q_b = out["stats_b"][i].T
        p_k = scipy.stats.norm.sf((R - mu_t) / np.sqrt(s2_t))  # reference-run iterates (indep. of v)
        mu_v, s2_v, Q_v = out["stats_v"][i].T
        gap_path_v = (Q_v + halfspace_energy(kappa, R, mu_v, s2_v)) - ref["F_star"]
        gap_path_b = (Q_b + halfspace_energy(kappa, R, mu_t, s2_t)) - ref["F_star"]
        mv, Sv = out["final_v"][0][i], out["final_v"][1][i]
        Fv, Fv_se, hv, n = objective_v(tv, mv, Sv, num=mc_samples, seed=100 + seed, mc=mc)
        mb, Sb = out["final_b"][0][i], out["final_b"][1][i]
        Fb, Fb_se, hb, _ = objective_v(tv, mb, Sb, num=mc_samples, seed=100 + seed, mc=mc)
        rows.append({
            "seed": seed, "first_hit_update": hit, "first_divergence_update": div,
            "agree_until_hit": agree, "diverge_at_hit": (div == hit),
            "queries_through_first_hit": None if hit is None else hit * qpu,
            "points_through_first_hit": None if hit is None else hit * ppu,
            "expected_hidden_points": float(ppu * p_k[:-1].sum()),
            "p_iterates": p_k.tolist(), "gap_path_v": gap_path_v.tolist(),
            "gap_path_b_on_v": gap_path_b.tolist(),
            "final_gap_v": Fv - ref["F_star"], "final_gap_v_se": math.hypot(Fv_se, ref["quad_err"]),
            "final_gap_b_on_v": Fb - ref["F_star"], "final_gap_b_on_v_se": Fb_se,
            "final_hidden_mc": [hb, n, *_cp(hb, n)]})
    return {"kappa": kappa, "method": method, "d": tv.dim, "R": R, "batch_size": batch_size,
            "num_steps": num_steps, "queries_per_update": qpu, "points_per_update": ppu,
            "total_queries": num_steps * qpu, "eta": out["eta"], "gap_gamma": ref["gap"],
            "seeds": rows}


def _slope(kappas, p, hits=None):
    """Weighted least-squares slope of log p on log kappa (weights = hits, var log p ~ 1/hits)."""
    x, y = np.log(np.asarray(kappas)), np.log(np.asarray(p))
    w = None if hits is None else np.sqrt(np.maximum(np.asarray(hits, float), 1.0))
    coef, cov = np.polyfit(x, y, 1, w=w, cov="unscaled" if hits is not None else True)
    return float(coef[0]), float(math.sqrt(cov[0, 0])), float(coef[1])


def run(out, quick: bool = False, rule: str = DEFAULT_RULE, **options) -> dict:
    """Run the three parts (resumable cells under out/cells) and write JSON, Markdown and PNGs;
    `rule` is the radius of the transcript runs (part 2)."""
    if rule not in R_RULES:
        raise ValueError(f"unknown radius rule {rule!r}; choose from {R_RULES}")
    cfg = dict(QUICK if quick else FULL, rule=rule)
    out = Path(out)
    store = CellStore(out / "cells")

    prob_cells = [(cell_key(part="prob", kappa=k, rule=r, n=cfg["prob_samples"], worst=1),
                   (lambda k=k, r=r: probability_cell(k, r, cfg["prob_samples"], 0)))
                  for r in R_RULES for k in cfg["kappas"]]
    prob = run_cells(store, prob_cells, "lower-bound: hit probability")
    ref_cells = [(cell_key(part="ref", kappa=k, rule=r, d=hard_family(k, R=r).dim,
                           n=cfg["mc_samples"]),
                  (lambda k=k, r=r: reference_cell(k, r, None, cfg["mc_samples"])))
                 for r in R_RULES for k in cfg["kappas"]]
    refs = run_cells(store, ref_cells, "lower-bound: initial gap")
    run_refs = {}
    for k in cfg["run_kappas"]:
        dim = cfg["run_dim"] or hard_family(k, R=rule).dim
        key = cell_key(part="ref", kappa=k, rule=rule, d=dim, n=cfg["mc_samples"])
        run_refs[k] = store.get_or_compute(
            key, lambda k=k, dim=dim: reference_cell(k, rule, dim, cfg["mc_samples"]))
    tr_cells = [(cell_key(part="run", kappa=k, method=m, b=cfg["batch_size"], steps=cfg["num_steps"],
                          seeds=len(cfg["seeds"]), d=cfg["run_dim"] or "auto", rule=rule),
                 (lambda k=k, m=m: transcript_cell(
                     k, m, dim=cfg["run_dim"], seeds=cfg["seeds"], num_steps=cfg["num_steps"],
                     batch_size=cfg["batch_size"], mc_samples=cfg["mc_samples"], ref=run_refs[k],
                     rule=rule)))
                for k in cfg["run_kappas"] for m in cfg["methods"]]
    runs = run_cells(store, tr_cells, "lower-bound: transcripts")

    prob, refs, runs = list(prob.values()), list(refs.values()), list(runs.values())
    slopes = {}
    for r in R_RULES:
        rows = [c for c in prob if c["rule"] == r]
        ks = [c["kappa"] for c in rows]
        ok = [c for c in rows if c["hits"] > 0]
        mc = _slope([c["kappa"] for c in ok], [c["p_hat"] for c in ok], [c["hits"] for c in ok])
        ex = _slope(ks, [c["p_exact"] for c in rows])
        wx = _slope(ks, [c["p_worst_exact"] for c in rows])
        slopes[r] = {"mc_slope": mc[0], "mc_slope_se": mc[1], "exact_slope": ex[0],
                     "mc_intercept": mc[2], "worst_exact_slope": wx[0]}
    summary = _summaries(runs)
    result = {"config": {k: v for k, v in cfg.items()}, "quick": quick,
              "hit_probability": prob, "slopes": slopes, "initial_gap": refs,
              "run_references": list(run_refs.values()), "transcripts": runs,
              "transcript_summary": summary}
    dump_json(result, out / "results.json")
    write_text(out / "results.md", _markdown(result))
    _plots(result, out)
    return {**result, "cells_computed": store.computed, "cells_reused": store.reused}


def _summaries(runs):
    rows = []
    for c in runs:
        s = c["seeds"]
        hits = [r["first_hit_update"] for r in s if r["first_hit_update"] is not None]
        never = [r for r in s if r["first_hit_update"] is None]
        p = np.array([r["p_iterates"] for r in s])
        rows.append({
            "kappa": c["kappa"], "method": c["method"], "d": c["d"], "seeds": len(s),
            "seeds_hit": len(hits), "all_agree_until_hit": all(r["agree_until_hit"] for r in s),
            "all_diverge_at_hit": all(r["diverge_at_hit"] for r in s if r["first_hit_update"]
                                      is not None),
            "median_queries_to_hit": (float(np.median([r["queries_through_first_hit"] for r in s
                                                       if r["first_hit_update"] is not None]))
                                      if hits else None),
            "total_queries": c["total_queries"],
            "mean_p_iterates": float(p.mean()),
            "expected_hidden_points": float(np.mean([r["expected_hidden_points"] for r in s])),
            "final_gap_no_hit": (float(np.mean([r["final_gap_v"] for r in never]))
                                 if never else None),
            "final_gap_no_hit_se": (float(math.sqrt(sum(r["final_gap_v_se"] ** 2 for r in never))
                                          / len(never)) if never else None),
            "final_gap_hit": (float(np.mean([r["final_gap_v"] for r in s
                                             if r["first_hit_update"] is not None]))
                              if hits else None),
            "gap_gamma": c["gap_gamma"]})
    return rows


def _markdown(res) -> str:
    txt = ["# Lower bound (Theorem 3.1): the hard family, measured\n",
           "Unmollified potentials; (kappa-1) E(G-R)_+^2/2 = 1 ('unit-energy', the default: initial "
           "gap 1 + o(1)) or R^2 = 2 log kappa - 3 log log kappa ('asymptotic'); d = ceil(R^4), "
           f"a = (1 + R^-1/2) sqrt(d). Transcripts (part 2) use the {res['config']['rule']} "
           "radius.\n",
           "\n## 1. Probability that a query is in the hidden region\n\n"
           "typical: a query from N(0, I); worst: a fixed query on the sphere of radius a "
           "against a uniform hidden direction (Lemma B.5's bound).\n\n"]
    hdr = ["rule", "kappa", "R", "d", "a", "samples", "typical: hits", "p (MC)",
           "95% CI (Clopper-Pearson)", "p (exact)", "kappa * p", "worst: p (MC)", "95% CI",
           "p (exact)", "kappa * p"]
    rows = [[c["rule"], f"{c['kappa']:.3g}", c["R"], c["d"], c["a"], c["n"], c["hits"], c["p_hat"],
             f"[{c['ci'][0]:.3g}, {c['ci'][1]:.3g}]", c["p_exact"], c["kappa"] * c["p_exact"],
             c["p_worst_hat"], f"[{c['worst_ci'][0]:.3g}, {c['worst_ci'][1]:.3g}]",
             c["p_worst_exact"], c["kappa"] * c["p_worst_exact"]]
            for c in res["hit_probability"]]
    txt.append(markdown_table(hdr, rows))
    for r, s in res["slopes"].items():
        txt.append(f"\nlog-log slope ({r}): typical, Monte Carlo {s['mc_slope']:.3f} ± "
                   f"{s['mc_slope_se']:.3f} (weighted LS), exact {s['exact_slope']:.3f}; worst "
                   f"case, exact {s['worst_exact_slope']:.3f}; theory -1 + o(1).\n")
    txt.append("\n## 2. Transcripts on V_v and V_B with the same keys\n")
    hdr = ["kappa", "method", "d", "seeds hit", "agree until hit", "diverge at hit",
           "median queries to 1st hit", "total queries", "mean p(iterate)",
           "expected hidden points", "final gap V_v (no hit)", "final gap V_v (hit)",
           "gap of N(0,I)"]
    rows = [[f"{s['kappa']:.3g}", s["method"], s["d"], f"{s['seeds_hit']}/{s['seeds']}",
             s["all_agree_until_hit"], s["all_diverge_at_hit"], s["median_queries_to_hit"],
             s["total_queries"], s["mean_p_iterates"], s["expected_hidden_points"],
             None if s["final_gap_no_hit"] is None else
             f"{s['final_gap_no_hit']:.4f} ± {s['final_gap_no_hit_se']:.1g}",
             s["final_gap_hit"], s["gap_gamma"]] for s in res["transcript_summary"]]
    txt.append(markdown_table(hdr, rows))
    txt.append("\n## 3. Gap of N(0, I) on V_v (paper: 1 + o(1))\n")
    hdr = ["rule", "kappa", "R", "d", "energy excess (kappa-1)E e_Kv", "gap F(N(0,I)) - F*",
           "quadrature err", "gap (MC tail term)", "MC s.e.", "q*: mean along v", "sd along v",
           "sd across v", "gap of N(0,I) on V_B"]
    rows = [[c["rule"], f"{c['kappa']:.3g}", c["R"], c["d"], c["energy_excess"], c["gap"],
             c["quad_err"], c["gap_mc"], c["gap_mc_se"], c["opt_mu"], c["opt_sigma_v"],
             c["opt_sigma_perp"], c["gap_ball"]] for c in res["initial_gap"]]
    txt.append(markdown_table(hdr, rows))
    return "".join(txt)


def _plots(res, out):
    from ..plots import _plt

    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for r, mk in zip(R_RULES, "os"):
        rows = [c for c in res["hit_probability"] if c["rule"] == r]
        k = np.array([c["kappa"] for c in rows])
        p = np.array([c["p_hat"] for c in rows])
        lo = np.array([c["ci"][0] for c in rows])
        hi = np.array([c["ci"][1] for c in rows])
        s = res["slopes"][r]
        ax.errorbar(k, p, yerr=[p - lo, hi - p], fmt=mk, capsize=3,
                    label=f"N(0,I), {r} R: MC, slope {s['mc_slope']:.2f}±{s['mc_slope_se']:.2f}")
        ax.plot(k, [c["p_exact"] for c in rows], "k:", lw=1)
        ax.plot(k, [c["p_worst_exact"] for c in rows], mk + "-", mfc="none", lw=0.8,
                label=f"worst fixed query (|x| = a), {r} R: exact")
    by_method = {}
    for srow in res["transcript_summary"]:
        by_method.setdefault(srow["method"], []).append((srow["kappa"], srow["mean_p_iterates"]))
    for mth, pts in by_method.items():
        pts = sorted(pts)
        ax.plot([a for a, _ in pts], [b for _, b in pts], "^--", ms=4, lw=0.8,
                label=f"iterates of {mth} (mean)")
    ks = np.array([c["kappa"] for c in res["hit_probability"]])
    ax.plot(ks, 1.0 / ks, color="gray", lw=0.8, label="1/kappa")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("kappa")
    ax.set_ylabel("P(query in hidden region)")
    ax.legend(fontsize=6)
    save_plot(fig, out / "hit_probability.png", dpi=120)

    runs = res["transcripts"]
    kappas = sorted({c["kappa"] for c in runs})
    fig, axes = plt.subplots(2, len(kappas), figsize=(3.2 * len(kappas), 5.5), squeeze=False)
    for j, kap in enumerate(kappas):
        for c in [c for c in runs if c["kappa"] == kap]:
            gv = np.array([r["gap_path_v"] for r in c["seeds"]])
            gb = np.array([r["gap_path_b_on_v"] for r in c["seeds"]])
            p = np.array([r["p_iterates"] for r in c["seeds"]])
            line, = axes[0, j].plot(np.mean(gv, 0), label=c["method"])
            axes[0, j].plot(np.mean(gb, 0), ":", color=line.get_color())
            axes[1, j].plot(np.mean(p, 0), color=line.get_color())
            for r in c["seeds"]:
                if r["first_hit_update"] is not None:
                    axes[1, j].axvline(r["first_hit_update"], color=line.get_color(), lw=0.5,
                                       alpha=0.5)
        axes[0, j].set_title(f"kappa={kap:.0e}", fontsize=8)
        axes[0, j].set_ylabel("gap on V_v (solid: run on V_v, dotted: on V_B)", fontsize=6)
        axes[1, j].set_yscale("log")
        axes[1, j].set_xlabel("update")
        axes[1, j].set_ylabel("P(iterate draw in hidden region); lines: 1st hit", fontsize=6)
    axes[0, 0].legend(fontsize=6)
    save_plot(fig, out / "transcripts.png", dpi=120)

    fig, ax = plt.subplots(figsize=(5.5, 4))
    for r, mk in zip(R_RULES, "os"):
        rows = [c for c in res["initial_gap"] if c["rule"] == r]
        ax.errorbar([c["kappa"] for c in rows], [c["gap"] for c in rows],
                    yerr=[2 * c["gap_mc_se"] for c in rows], fmt=mk + "-", capsize=3,
                    label=f"gap of N(0,I), {r} R")
        ax.plot([c["kappa"] for c in rows], [c["energy_excess"] for c in rows], mk + ":",
                alpha=0.6, label=f"energy excess, {r} R")
    ax.axhline(1.0, color="gray", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("kappa")
    ax.set_ylabel("F(N(0,I)) - F* on V_v")
    ax.legend(fontsize=7)
    save_plot(fig, out / "initial_gap.png", dpi=120)


def run_asymptotic(out, quick: bool = False, **options) -> dict:
    """The same experiment with the asymptotic radius R^2 = 2 log kappa - 3 log log kappa."""
    return run(out, quick, rule="asymptotic", **options)


EXPERIMENTS = {"lower-bound": run, "lower-bound-asymptotic": run_asymptotic}
