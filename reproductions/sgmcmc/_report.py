"""Summaries of the SG-MCMC tables: intervals over runs, Markdown tables, bar plots, cell grids."""
from __future__ import annotations

import math

import numpy as np

from inertia.plots import _plt
from .._runner import cell_key, finish, markdown_table, run_cells, save_plot


def _interval(vals):
    """Mean and 2.5 / 97.5 percentiles; None marks a divergent run (-> inf); all None -> None."""
    if not vals or all(x is None for x in vals):
        return None
    v = np.array([np.inf if x is None else float(x) for x in vals])  # None among values: failed
    fin = v[np.isfinite(v)]
    if fin.size < v.size:
        return {"mean": math.inf, "lo": float(np.percentile(fin, 2.5)) if fin.size else math.inf,
                "hi": math.inf, "diverged": int(v.size - fin.size)}
    return {"mean": float(v.mean()), "lo": float(np.percentile(v, 2.5)),
            "hi": float(np.percentile(v, 97.5))}


def _fmt(iv, digits=3):
    if iv is None:
        return "—"
    if not math.isfinite(iv["mean"]):
        return "∞"
    m = iv["mean"]
    f = (lambda x: f"{x:.{digits}f}") if abs(m) < 1e3 else (lambda x: f"{x:.2e}")
    return f"{f(m)} [{f(iv['lo'])}, {f(iv['hi'])}]"


def _bar_plot(path, summary, methods, metric, title):
    plt = _plt()
    keys = list(summary)
    fig, ax = plt.subplots(figsize=(1.8 + 1.6 * len(keys), 3.2))
    w = 0.8 / len(methods)
    for j, m in enumerate(methods):
        means, errs = [], [[], []]
        for k in keys:
            iv = summary[k].get(m, {}).get(metric)
            if iv is None or not math.isfinite(iv["mean"]):
                means.append(np.nan)
                errs[0].append(0)
                errs[1].append(0)
            else:
                means.append(iv["mean"])
                errs[0].append(max(iv["mean"] - iv["lo"], 0.0))
                errs[1].append(max(iv["hi"] - iv["mean"], 0.0))
        ax.bar(np.arange(len(keys)) + j * w, means, w, yerr=errs, label=m, capsize=2)
    ax.set_xticks(np.arange(len(keys)) + 0.4 - w / 2)
    ax.set_xticklabels(keys, fontsize=7)
    ax.set_ylabel(metric)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    save_plot(fig, path)


def _metric(cell, method, metric):
    """A cell's metric: None if not applicable, inf if the rule failed (unstable / diverged)."""
    rec = cell.get(method)
    if rec is None:
        return None
    if "error" in rec or (metric != "predicted_cov_err" and rec.get("diverged")):
        return math.inf
    if metric == "predicted_cov_err" and "prediction_error" in rec:
        return math.inf
    return rec.get(metric)


def _summarise(cells, spec_keys, methods, metrics):
    """{group label: {method: {metric: interval}}}."""
    out = {}
    for label, keys in spec_keys:
        vals = [cells[k] for k in keys]
        out[label] = {m: {mt: _interval([_metric(v, m, mt) for v in vals]) for mt in metrics}
                      for m in methods}
    return out


PREDICTED_NOTE = ("\npredicted_cov_err: ||Sigma(Lambda) - S/N||_F / ||S/N||_F from the exact proxy "
                  "solve for each rule's Lambda (no Monte Carlo error; exact for linear models); "
                  "inf: the rule's Lambda has no stationary law (Lambda H outside (0, 2) or "
                  "divergent second moments). cov_err carries Monte Carlo error of a "
                  "finite run.\n")


def _report(summ, groups, methods, metrics, cfg, what, row_label, papers):
    """Markdown: a table per metric (mean [2.5 %, 97.5 %] over cfg["runs"] `what`), the prediction
    note, then each (title, {(row, B): {method: paper value}}) of the paper beside them."""
    table = ""
    for metric in metrics:
        rows = [[lab] + [_fmt(summ[lab][m][metric]) for m in methods] for lab, _ in groups]
        table += f"\n## {metric} (mean [2.5 %, 97.5 %] over {cfg['runs']} {what})\n\n"
        table += markdown_table([row_label] + list(methods), rows)
    table += PREDICTED_NOTE
    for title, paper in papers:
        rows = [[f"{a} B={b}"] + [paper[(a, b)].get(m, "—") for m in methods] for (a, b) in paper]
        table += f"\n## {title}\n\n" + markdown_table([row_label] + list(methods), rows)
    return table


def _with_reps(cfg, reps):
    if reps is None:
        return cfg
    if isinstance(reps, bool) or not isinstance(reps, (int, np.integer)) or reps < 1:
        raise ValueError(f"reps (repetitions per cell group) must be a whole number >= 1, "
                         f"got {reps!r}")
    return dict(cfg, runs=int(reps))


def _batch_grid(exp, cfg, field, settings, cell, **key_fields):
    """(cells, groups) over settings [(value, N)] x B in (16, N // 10) x cfg["runs"] seeds: one
    resumable cell `cell(value, B, seed)` each, keyed by `field`=value, grouped "value B=16|0.1N"."""
    cells, groups = [], []
    for value, N in settings:
        for B, bl in zip((16, N // 10), ("16", "0.1N")):
            keys = []
            for s in range(cfg["runs"]):
                k = cell_key(exp=exp, **{field: value}, B=B, seed=s, **key_fields)
                cells.append((k, lambda v=value, B=B, s=s: cell(v, B, s)))
                keys.append(k)
            groups.append((f"{value} B={bl}", keys))
    return cells, groups


def _table_run(out, t0, store, name, cfg, cells, groups, methods, *, calib, what, row_label,
               papers, title, plot_methods=None, notes=None):
    """Run a table's cells; summarise cov_err, `calib` (None: none) and predicted_cov_err per
    group; write the report (`_report`), the cov_err bar plot and the results files."""
    res = run_cells(store, cells, name)
    metrics = tuple(m for m in ("cov_err", calib, "predicted_cov_err") if m)
    summ = _summarise(res, groups, methods, metrics)
    table = _report(summ, groups, methods, tuple(m for m in (calib, "cov_err",
                                                              "predicted_cov_err") if m),
                    cfg, what, row_label, papers)
    table += f"\nsettings: {cfg}" + (f"; model facts: {notes}" if notes is not None else "") + "\n"
    _bar_plot(out / "cov_err.png", summ, plot_methods or methods, "cov_err", title)
    summary = {"config": cfg, "summary": summ}
    if notes is not None:
        summary["notes"] = notes
    return finish(out, name, store, summary, table, t0)
