"""`inertia reproduce lower-bound | lower-bound-asymptotic`: the three parts as resumable cells,
their slopes, summaries, Markdown and figures."""
from __future__ import annotations

import math

import numpy as np

from ..hard import R_RULES, hard_family
from .._runner import (cell_key, dump_json, markdown_table, run_cells, save_plot, start,
                      write_text)
from .probability import probability_cell, reference_cell
from .transcripts import DEFAULT_RULE, transcript_cell

FULL = dict(
    kappas=[1e2, 10**2.5, 1e3, 10**3.5, 1e4, 10**4.5, 1e5], prob_samples=2**22,
    run_kappas=[1e2, 1e3, 1e4, 1e5], run_dim=None,
    methods=["fd-proj", "paired-proj", "stl-proj", "price-stl-proj"],
    batch_size=8, num_steps=200, seeds=[0, 1, 2], mc_samples=200_000)
QUICK = dict(
    kappas=[1e2, 1e3, 1e4], prob_samples=2**16,
    run_kappas=[1e2, 1e3], run_dim=None, methods=["stl-proj"],
    batch_size=4, num_steps=40, seeds=[0, 1, 2], mc_samples=20_000)


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
    out, _, store = start(out)

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
    from inertia.plots import _plt

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
