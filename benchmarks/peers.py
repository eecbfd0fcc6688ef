"""Peer benchmark: inertia's accelerated Gaussian VI vs NumPyro SVI and BlackJAX full-rank VI.

Same posteriors (WDBC logistic, d = 31; graph-probit Sonar, d = 208), float64, one process, one
machine. Every method's Gaussian is scored with inertia's exact objective (`inertia.vi.gaps`), and
wall time (compilation excluded for everyone, reported separately) and gradient queries to reach
gaps 1e-1 ... 1e-6 nats are reported. Peers: NumPyro `SVI` + `AutoMultivariateNormal` +
`Trace_ELBO(num_particles=P)` and BlackJAX `fullrank_vi(num_samples=P)` (STL estimator, its
default), both with optax Adam over a grid of learning rates and particle counts, all started at
N(0, I) like inertia; the best configuration per threshold is kept (an oracle choice in the peers'
favour). Run: `python benchmarks/peers.py [--quick] [--out DIR]`; writes peers.json, the table in
benchmarks/results/benchmarks_log.md is made from it, and peers.png.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import inertia.config

inertia.config.enable_x64()  # this script's own JAX arrays (and peers') in float64

import inertia  # noqa: F401  (float64)
from inertia import vi
from inertia.targets.zoo import make_target
from inertia.variational.multistage import fit_multistage

THRESHOLDS = (1e-1, 1e-2, 1e-3, 1e-4, 1e-6)
CHECKPOINTS = 100


def _log(msg):
    print(msg, file=sys.stderr, flush=True)


def _timed_chunks(chunk, state, num_chunks):
    """Run a compiled chunk num_chunks times; returns the (mean, cov) snapshots and seconds."""
    means, covs, secs, elapsed = [], [], [], 0.0
    for _ in range(num_chunks):
        t = time.perf_counter()
        state, m, S = chunk(state)
        jax.block_until_ready(S)
        elapsed += time.perf_counter() - t
        means.append(np.asarray(m))
        covs.append(np.asarray(S))
        secs.append(elapsed)
    return means, covs, secs


def _record(target, library, method, config, m0, S0, means, covs, secs, every, per_step,
            compile_s):
    ms = np.stack([m0] + means)
    Ss = np.stack([S0] + covs)
    gap = safe_gaps(target, ms, Ss)
    steps = np.arange(len(ms)) * every
    return {"library": library, "method": method, "config": config, "step": steps.tolist(),
            "grad_evals": (steps * per_step).tolist(), "seconds": [0.0] + list(secs),
            "gap": [float(g) if np.isfinite(g) else None for g in gap],
            "compile_seconds": compile_s}


def safe_gaps(target, ms, Ss):
    """Exact gaps of a batch of Gaussians; NaN for those whose quadrature does not converge."""
    try:
        return vi.gaps(target, ms, Ss)[0]
    except FloatingPointError:
        out = []
        for m, S in zip(ms, Ss):
            try:
                out.append(float(vi.gaps(target, m[None], S[None])[0][0]))
            except FloatingPointError:
                out.append(float("nan"))
        return np.asarray(out)


def numpyro_svi(target, lr, particles, seed=0):
    """(svi, state): NumPyro SVI on exp(-V) with an AutoMultivariateNormal guide started at
    N(0, I), Trace_ELBO(num_particles), optax Adam(lr)."""
    import numpyro
    import numpyro.distributions as dist
    import optax
    from numpyro.infer import SVI, Trace_ELBO
    from numpyro.infer.autoguide import AutoMultivariateNormal
    from numpyro.infer.initialization import init_to_value

    d = target.dim

    def model():
        theta = numpyro.sample("theta", dist.ImproperUniform(dist.constraints.real_vector, (),
                                                             (d,)))
        numpyro.factor("log_density", -target.potential(theta))

    guide = AutoMultivariateNormal(model, init_loc_fn=init_to_value(values={"theta": jnp.zeros(d)}),
                                   init_scale=1.0)
    svi = SVI(model, guide, optax.adam(lr), Trace_ELBO(num_particles=particles))
    return svi, svi.init(jax.random.PRNGKey(seed))


def run_numpyro(target, lr, particles, num_steps, seed=0):
    """NumPyro SVI, AutoMultivariateNormal guide, Trace_ELBO(num_particles), optax Adam(lr)."""
    svi, state = numpyro_svi(target, lr, particles, seed)
    d = target.dim
    every = max(1, num_steps // CHECKPOINTS)

    def chunk(st):
        st, _ = jax.lax.scan(lambda s, _: svi.update(s), st, None, length=every)
        p = svi.get_params(st)
        L = p["auto_scale_tril"]
        return st, p["auto_loc"], L @ L.T

    t = time.perf_counter()
    compiled = jax.jit(chunk).lower(state).compile()
    compile_s = time.perf_counter() - t
    means, covs, secs = _timed_chunks(compiled, state, num_steps // every)
    return _record(target, "numpyro", "SVI AutoMVN + Adam", {"lr": lr, "particles": particles},
                   np.zeros(d), np.eye(d), means, covs, secs, every, particles, compile_s)


def run_blackjax(target, lr, particles, num_steps, seed=0):
    """BlackJAX fullrank_vi (STL estimator) with optax Adam(lr), num_samples = particles."""
    import blackjax
    import optax
    from blackjax.vi.fullrank_vi import _unflatten_cholesky

    d = target.dim
    frvi = blackjax.fullrank_vi(lambda x: -target.potential(x), optax.adam(lr),
                                num_samples=particles)
    state = frvi.init(jnp.zeros(d))
    every = max(1, num_steps // CHECKPOINTS)
    keys = jax.random.split(jax.random.PRNGKey(seed), num_steps).reshape(-1, every, 2)

    def chunk(carry):
        st, i = carry
        st, _ = jax.lax.scan(lambda s, k: frvi.step(k, s), st, keys[i])
        L = _unflatten_cholesky(st.chol_params, d)
        return (st, i + 1), st.mu, L @ L.T

    carry = (state, jnp.int32(0))
    t = time.perf_counter()
    compiled = jax.jit(chunk).lower(carry).compile()
    compile_s = time.perf_counter() - t
    means, covs, secs = _timed_chunks(compiled, carry, num_steps // every)
    return _record(target, "blackjax", "fullrank_vi + Adam", {"lr": lr, "particles": particles},
                   np.zeros(d), np.eye(d), means, covs, secs, every, particles, compile_s)


def _from_fit(res, library, method, config):
    h = res.history
    gap = np.asarray(h["gap"]).reshape(len(h["step"]), -1).mean(axis=1)
    return {"library": library, "method": method, "config": config,
            "step": np.asarray(h["step"]).tolist(), "grad_evals": np.asarray(h["grad_evals"]).tolist(),
            "seconds": np.asarray(h["seconds"]).tolist(),
            "gap": [float(g) if np.isfinite(g) else None for g in gap],
            "compile_seconds": res.compile_seconds}


def run_inertia(target, method, batch_size, num_steps, seed=0):
    res = vi.fit(target, method, batch_size=batch_size, num_steps=num_steps, seed=seed,
                 checkpoint_every=max(1, num_steps // CHECKPOINTS))
    return _from_fit(res, "inertia", f"{method} (acc)", {"batch": batch_size})


def run_multistage(target, method, batch_size, max_grad_evals, seed=0):
    res = fit_multistage(target, method, target_gap=min(THRESHOLDS) / 2, batch_size=batch_size,
                         max_grad_evals=max_grad_evals, max_stages=10, seed=seed)
    out = _from_fit(res, "inertia", f"{method} multistage", {"batch0": batch_size})
    out["stages"] = res.stages
    return out


def hitting(run, thr):
    """(seconds, grad_evals, step) at the first checkpoint with gap <= thr, or None."""
    for s, g, k, gap in zip(run["seconds"], run["grad_evals"], run["step"], run["gap"]):
        if gap is not None and gap <= thr:
            return s, g, k
    return None


SETTINGS = {
    "full": {"peer_steps": {"wdbc": 5000, "sonar": 5000}, "lrs": (3e-3, 1e-2, 3e-2),
             "particles": (1, 16), "inertia_steps": {"wdbc": 3000, "sonar": 3000},
             "exact_steps": {"wdbc": 1000, "sonar": 1000}, "batches": (1,),
             "multistage_grads": {"wdbc": 3e5, "sonar": 3e5}},
    "quick": {"peer_steps": {"wdbc": 1000, "sonar": 500}, "lrs": (1e-2,), "particles": (1,),
              "inertia_steps": {"wdbc": 500, "sonar": 300}, "exact_steps": {"wdbc": 300, "sonar": 300},
              "batches": (1,), "multistage_grads": {"wdbc": 5e3, "sonar": 5e3}},
}
PROBLEMS = {"wdbc": ("logistic", "wdbc"), "sonar": ("graph-probit", "sonar")}
INERTIA_METHODS = ("paired-proj", "stl-proj")


def run_problem(key, cfg, out_runs):
    model, data = PROBLEMS[key]
    target = make_target(model, data=data)
    vi.reference(target)  # F* solved once, before any timing
    _log(f"[{key}] {target.name}: d = {target.dim}, kappa = {target.kappa:.0f}")
    runs = []
    res = vi.fit(target, "exact-apg", num_steps=cfg["exact_steps"][key],
                 checkpoint_every=max(1, cfg["exact_steps"][key] // CHECKPOINTS))
    runs.append(_from_fit(res, "inertia", "exact-apg (acc, quadrature expectations)", {}))
    _log(f"  inertia exact-apg: final gap {runs[-1]['gap'][-1]}")
    for method in cfg.get("methods", INERTIA_METHODS):
        for b in cfg["batches"]:
            runs.append(run_inertia(target, method, b, cfg["inertia_steps"][key]))
            _log(f"  inertia {method} b={b}: final gap {runs[-1]['gap'][-1]}")
    for b in cfg["batches"][:1]:
        runs.append(run_multistage(target, "paired-proj", b, cfg["multistage_grads"][key]))
        _log(f"  inertia multistage: final gap {runs[-1]['gap'][-1]}")
    for lib, fn in (("numpyro", run_numpyro), ("blackjax", run_blackjax)):
        for P in cfg["particles"]:
            for lr in cfg["lrs"]:
                runs.append(fn(target, lr, P, cfg["peer_steps"][key]))
                gaps = [g for g in runs[-1]["gap"] if g is not None]
                _log(f"  {lib} lr={lr} P={P}: best gap {min(gaps) if gaps else None}")
    for r in runs:
        r["problem"] = key
    out_runs.extend(runs)
    return runs


def best_by_label(runs, thr):
    """For each (library, method) the configuration reaching thr fastest in wall time (or None)."""
    best = {}
    for r in runs:
        h = hitting(r, thr)
        label = (r["library"], r["method"])
        cur = best.get(label)
        if h is not None and (cur is None or h[0] < cur[0][0]):
            best[label] = (h, r["config"])
        else:
            best.setdefault(label, None)
    return best


def table(runs):
    """Markdown rows: per (library, method), best wall time [s] / gradient queries per threshold."""
    labels = sorted({(r["library"], r["method"]) for r in runs})
    rows = []
    for lib, meth in labels:
        row = [lib, meth]
        for thr in THRESHOLDS:
            b = best_by_label([r for r in runs if (r["library"], r["method"]) == (lib, meth)],
                              thr).get((lib, meth))
            if b is None:
                row.append("never")
                continue
            queries = f"{b[0][1]:.3g}" if b[0][1] else "n/a"
            cfg = ", ".join(f"{k}={v}" for k, v in b[1].items())
            row.append(f"{b[0][0]:.3g} s / {queries}" + (f" ({cfg})" if cfg else ""))
        rows.append(row)
    return rows


def speedups(runs, thr):
    """Best inertia time, best peer time and their ratio at threshold thr (None if unreached)."""
    def best(lib_filter):
        hs = [hitting(r, thr) for r in runs if lib_filter(r["library"])]
        hs = [h[0] for h in hs if h is not None]
        return min(hs) if hs else None

    ours, peer = best(lambda l: l == "inertia"), best(lambda l: l != "inertia")
    ratio = (peer / ours) if ours and peer else None
    return ours, peer, ratio


def plot(runs, path):
    from inertia.plots import _plt

    plt = _plt()
    probs = sorted({r["problem"] for r in runs})
    fig, axes = plt.subplots(1, len(probs), figsize=(6 * len(probs), 4.5), squeeze=False)
    colors = {"inertia": "C0", "numpyro": "C1", "blackjax": "C2"}
    for ax, p in zip(axes[0], probs):
        sel = [r for r in runs if r["problem"] == p]
        for lib in ("numpyro", "blackjax", "inertia"):
            for r in sel:
                if r["library"] != lib:
                    continue
                g = np.array([np.nan if v is None else v for v in r["gap"]], dtype=float)
                t = np.asarray(r["seconds"], dtype=float)
                ok = (g > 0) & (t > 0)
                ms = "multistage" in r["method"]
                ax.plot(t[ok], g[ok], color="C3" if ms else colors[lib],
                        alpha=0.9 if lib == "inertia" else 0.35, lw=2 if ms else 1)
        for lib, c in list(colors.items()) + [("inertia multistage", "C3")]:
            ax.plot([], [], color=c, label=lib)
        for thr in THRESHOLDS:
            ax.axhline(thr, color="grey", lw=0.5, ls=":")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("wall time [s] (compilation excluded)")
        ax.set_ylabel("F(q) - F*  [nats]")
        ax.set_title(p)
        ax.grid(True, which="both", alpha=0.2)
        ax.legend(fontsize=8)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default="benchmarks/results")
    ap.add_argument("--problems", default="wdbc,sonar")
    ap.add_argument("--methods", default=",".join(INERTIA_METHODS),
                    help="inertia stochastic methods to run (comma separated)")
    ap.add_argument("--report", action="store_true",
                    help="only redo the tables and plot from DIR/peers.json (several files: "
                         "comma-separated --out)")
    args = ap.parse_args(argv)
    cfg = SETTINGS["quick" if args.quick else "full"]
    if args.report:
        runs = [r for o in args.out.split(",")
                for r in json.loads((Path(o) / "peers.json").read_text())["runs"]]
        plot(runs, Path(args.out.split(",")[0]) / "peers.png")
        report(runs)
        return 0
    cfg = dict(cfg, methods=tuple(m for m in args.methods.split(",") if m))
    out = Path(args.out)
    runs = []
    meta = {"jax": jax.__version__, "devices": [str(d) for d in jax.devices()],
            "settings": {k: v for k, v in cfg.items()}, "thresholds": THRESHOLDS}
    for key in args.problems.split(","):
        run_problem(key, cfg, runs)
        from reproductions._runner import dump_json

        dump_json({"meta": meta, "runs": runs}, out / "peers.json")
    plot(runs, out / "peers.png")
    report(runs)
    return 0


def report(runs):
    """Print the Markdown tables and the speed-up lines per problem."""
    for key in sorted({r["problem"] for r in runs}):
        sel = [r for r in runs if r["problem"] == key]
        print(f"\n### {key}\n")
        print("| library | method | " + " | ".join(f"gap {t:g}" for t in THRESHOLDS) + " |")
        print("|---|---|" + "---|" * len(THRESHOLDS))
        for row in table(sel):
            print("| " + " | ".join(row) + " |")
        for thr in THRESHOLDS:
            ours, peer, ratio = speedups(sel, thr)
            print(f"gap {thr:g}: inertia {ours} s, best peer {peer} s, ratio {ratio}")


if __name__ == "__main__":
    raise SystemExit(main())
