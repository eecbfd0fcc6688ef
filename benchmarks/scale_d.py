"""Cost against d: inertia's sample and fit beside NumPyro NUTS (diagonal and dense mass) and
BlackJAX MCLMC on three model families with d from a hundred to ten thousand.

Families (NumPyro models; d is the number of unconstrained parameters):
- "hier": non-centred hierarchical logistic regression, G = d - 3 groups, N = 8 G rows;
- "glmm": Poisson GLMM with crossed random effects (rows and columns of a table, non-centred),
  R = C = (d - 3) / 2 levels, N = 4 (R + C) cells drawn at random;
- "field": latent Gaussian field on a k x k grid (d = k^2; intrinsic random-walk precision
  tau (sum of squared neighbour differences) + 0.01 |f|^2, tau = 4) with Poisson counts per cell.
Runs (each in a fresh process, float64 enabled explicitly in the peers' processes, empty JAX cache):
- "sample": `inertia.mcmc.sample(target)` (default: run until R-hat <= 1.01 and bulk ESS >= 400);
  "sample-low-rank": the same with the frame forced low-rank (`frame="low-rank"`) at every d;
- "fit": `inertia.vi.fit(target)` (automatic mode);
- "nuts-diag" / "nuts-dense": NumPyro NUTS, 4 chains x (1,000 warm-up + 1,000 draws), sequential;
  dense only up to --max-dense-d;
- "mclmc": BlackJAX MCLMC, 4 chains (vmapped), 2,000 tuning steps (`mclmc_find_L_and_step_size`,
  diagonal preconditioning) + 2,000 draws each; 2 gradients per step (isokinetic McLachlan).
Per run: gradients including warm-up (all chains), min bulk ESS and max R-hat over parameters
(ArviZ, on the unconstrained draws), gradients per ESS, first-run wall time (model set-up,
compilation and run), the process's peak resident memory, the verdict (inertia's own; peers:
R-hat <= 1.01 and ESS >= 400), and, for inertia's runs, the time per gradient step. `fit` has no
ESS: its row gives gradients, wall time, memory and verdict.

Run (one command, the full grid; hours on 2 cores):
    python benchmarks/scale_d.py --out benchmarks/results/scale_d.jsonl --plot docs/scale_d.png
Smaller: --dims 100 300 --families hier glmm --methods sample nuts-diag; a saved run's table and
plot: --report benchmarks/results/scale_d.jsonl [--plot PNG].
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

FAMILIES = ("hier", "glmm", "field")
METHODS = ("sample", "sample-low-rank", "fit", "nuts-diag", "nuts-dense", "mclmc")
DIMS = (100, 300, 1000, 3000, 10000)


def model_and_data(family: str, d: int, seed: int = 0):
    """(NumPyro model, args) of `family` with about d unconstrained parameters."""
    import numpy as np
    import numpyro
    import numpyro.distributions as dist

    rng = np.random.default_rng(seed)
    if family == "hier":
        G = d - 3
        n = 8 * G
        g = rng.integers(0, G, n)
        x = rng.normal(size=n)
        y = rng.binomial(1, 1 / (1 + np.exp(-(rng.normal(0, 0.7, G)[g] + 0.8 * x)))).astype(float)

        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "posteriors"))
        from models import hier_logistic  # the posterior suite's model, at G groups

        return hier_logistic, (g, x, y, G)
    if family == "glmm":
        R = (d - 3) // 2
        C = d - 3 - R
        n = 4 * (R + C)
        r, c = rng.integers(0, R, n), rng.integers(0, C, n)
        eta = 1.0 + 0.5 * rng.normal(size=R)[r] + 0.3 * rng.normal(size=C)[c]
        y = rng.poisson(np.exp(eta)).astype(float)

        def glmm(r, c, y, R, C):
            import jax.numpy as jnp

            b0 = numpyro.sample("b0", dist.Normal(0, 2))
            sr = numpyro.sample("sigma_row", dist.HalfNormal(1.0))
            sc = numpyro.sample("sigma_col", dist.HalfNormal(1.0))
            with numpyro.plate("R", R):
                a = numpyro.sample("a", dist.Normal(0, 1))
            with numpyro.plate("C", C):
                b = numpyro.sample("b", dist.Normal(0, 1))
            numpyro.sample("y", dist.Poisson(jnp.exp(b0 + sr * a[r] + sc * b[c])), obs=y)

        return glmm, (r, c, y, R, C)
    if family == "field":
        k = int(round(d ** 0.5))
        i, j = np.meshgrid(np.linspace(0, 1, k), np.linspace(0, 1, k), indexing="ij")
        truth = 1.0 + np.sin(3 * i) * np.cos(2 * j)
        y = rng.poisson(np.exp(truth)).astype(float)

        def field(y, k, tau=4.0):
            import jax.numpy as jnp

            f = numpyro.sample("f", dist.ImproperUniform(dist.constraints.real_vector, (),
                                                         event_shape=(k, k)))
            rough = jnp.sum((f[1:] - f[:-1]) ** 2) + jnp.sum((f[:, 1:] - f[:, :-1]) ** 2)
            numpyro.factor("gmrf", -0.5 * tau * rough - 0.005 * jnp.sum(f ** 2))
            numpyro.sample("y", dist.Poisson(jnp.exp(f)), obs=y)

        return field, (y, k)
    raise ValueError(f"unknown family {family!r}")


def _ess_rhat(draws):
    """(min bulk ESS, max R-hat) over parameters of draws (chain, draw, d), ArviZ."""
    import numpy as np

    from inertia.diagnostics import arviz_stats

    st = arviz_stats(np.asarray(draws, dtype=np.float64))
    return float(np.nanmin(st["ess_bulk"])), float(np.nanmax(st["rhat"]))


def _flat(samples, chains):
    """{site: (chain, draw, ...)} -> (chain, draw, d)."""
    import numpy as np

    parts = [np.asarray(v).reshape(chains, np.shape(v)[1], -1) for _, v in sorted(samples.items())]
    return np.concatenate(parts, axis=-1)


def run_inertia(method, model, args):
    import numpy as np

    from inertia.targets import from_numpyro

    t = from_numpyro(model, *args)
    if method.startswith("sample"):
        from inertia.mcmc import sample

        r = sample(t, seed=0, frame="low-rank" if method == "sample-low-rank" else "auto")
        ess, rhat = _ess_rhat(r.draws)
        steps = int(np.sum(r.grad_evals)) if np.ndim(r.grad_evals) else int(r.grad_evals)
        return {"grads": int(r.total_grad_evals), "ess": ess, "rhat": rhat,
                "converged": bool(r.converged), "frame": r.tuning.get("precondition"),
                "sampling_grads_per_chain": steps}
    from inertia.vi import fit

    r = fit(t, seed=0)
    h = r.history
    grads = int(np.asarray(h["grad_evals"])[-1]) + 2 * int(np.asarray(h.get("hvp_evals", [0]))[-1])
    return {"grads": grads, "ess": None, "rhat": None, "converged": bool(r.converged),
            "vi_method": r.method}


def run_nuts(dense, model, args, warmup=1000, draws=1000, chains=4):
    import jax
    import numpy as np
    from numpyro.infer import MCMC, NUTS

    mcmc = MCMC(NUTS(model, dense_mass=dense), num_warmup=warmup, num_samples=draws,
                num_chains=chains, chain_method="sequential", progress_bar=False)
    key = jax.random.PRNGKey(0)
    mcmc.warmup(key, *args, extra_fields=("num_steps",), collect_warmup=True)
    warm = int(np.sum(mcmc.get_extra_fields()["num_steps"]))
    mcmc.run(jax.random.PRNGKey(1), *args, extra_fields=("num_steps",))
    samp = int(np.sum(mcmc.get_extra_fields()["num_steps"]))
    sites = {k: v for k, v in mcmc.get_samples(group_by_chain=True).items()}
    ess, rhat = _ess_rhat(_flat(sites, chains))
    return {"grads": warm + samp, "warmup_grads": warm, "ess": ess, "rhat": rhat,
            "converged": bool(rhat <= 1.01 and ess >= 400)}


def run_mclmc(model, args, tune=2000, draws=2000, chains=4):
    import blackjax
    import jax
    import jax.numpy as jnp
    import numpy as np

    from inertia.targets import from_numpyro

    t = from_numpyro(model, *args)
    logdensity = lambda x: -t.potential(x)  # noqa: E731
    kernel = blackjax.mcmc.mclmc.build_kernel()
    x0 = jnp.asarray(t.info["init"])

    def one(key):
        k0, k1, k2 = jax.random.split(key, 3)
        state = blackjax.mcmc.mclmc.init(x0, logdensity, k0)
        state, params, n_tune = blackjax.mclmc_find_L_and_step_size(
            kernel, tune, state, k1, logdensity_fn=logdensity)
        alg = blackjax.mclmc(logdensity, L=params.L, step_size=params.step_size,
                             inverse_mass_matrix=params.inverse_mass_matrix)

        def step(s, k):
            s, _ = alg.step(k, s)
            return s, s.position

        _, xs = jax.lax.scan(step, state, jax.random.split(k2, draws))
        return xs, n_tune

    xs, n_tune = jax.jit(jax.vmap(one))(jax.random.split(jax.random.PRNGKey(0), chains))
    ess, rhat = _ess_rhat(np.asarray(xs))
    grads = 2 * (int(np.sum(np.asarray(n_tune))) + chains * draws)
    return {"grads": grads, "ess": ess, "rhat": rhat, "converged": bool(rhat <= 1.01 and ess >= 400)}


def one(family, d, method):
    """One run in this process: its JSON row."""
    import resource

    t0 = time.perf_counter()
    if method in ("nuts-diag", "nuts-dense", "mclmc"):
        import jax

        jax.config.update("jax_enable_x64", True)  # the peers in float64, as inertia
    model, args = model_and_data(family, d)
    if method in ("sample", "sample-low-rank", "fit"):
        out = run_inertia(method, model, args)
    elif method == "mclmc":
        out = run_mclmc(model, args)
    else:
        out = run_nuts(method == "nuts-dense", model, args)
    wall = time.perf_counter() - t0
    row = {"family": family, "d": d, "method": method, "wall_s": round(wall, 2),
           "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
           **out}
    if row.get("ess"):
        row["grads_per_ess"] = round(row["grads"] / row["ess"], 2)
    if row.get("grads"):
        row["ms_per_grad"] = round(1e3 * wall / row["grads"], 4)  # first run: compile included
    return row


def run_grid(families, dims, methods, out, timeout, max_dense_d):
    rows = []
    for family in families:
        for d in dims:
            for method in methods:
                if method == "nuts-dense" and d > max_dense_d:
                    continue
                env = dict(os.environ, INERTIA_JAX_CACHE="off", JAX_COMPILATION_CACHE_DIR="")
                cmd = [sys.executable, os.path.abspath(__file__), "--one", family, str(d), method]
                t0 = time.perf_counter()
                try:
                    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
                    line = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
                    row = (json.loads(line[-1]) if line else
                           {"family": family, "d": d, "method": method,
                            "error": (p.stderr.strip().splitlines() or ["no output"])[-1][:300]})
                except subprocess.TimeoutExpired:
                    row = {"family": family, "d": d, "method": method,
                           "error": f"over {timeout} s", "wall_s": round(time.perf_counter() - t0)}
                rows.append(row)
                print(json.dumps(row), flush=True)
                if out:
                    with open(out, "a") as fh:
                        fh.write(json.dumps(row) + "\n")
    return rows


def table(rows):
    head = f"{'family':6} {'d':>6} {'method':10} {'grads/ESS':>10} {'wall s':>8} {'MB':>7} verdict"
    lines = [head]
    for r in rows:
        gpe = r.get("grads_per_ess")
        lines.append(f"{r['family']:6} {r['d']:>6} {r['method']:10} "
                     f"{'-' if gpe is None else f'{gpe:.1f}':>10} {r.get('wall_s', '-'):>8} "
                     f"{r.get('peak_rss_mb', '-'):>7} "
                     f"{r.get('error') or ('converged' if r.get('converged') else 'NOT converged')}")
    return "\n".join(lines)


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fams = sorted({r["family"] for r in rows})
    fig, axes = plt.subplots(2, len(fams), figsize=(4.5 * len(fams), 7), squeeze=False)
    for j, fam in enumerate(fams):
        for method in METHODS:
            rs = sorted((r for r in rows if r["family"] == fam and r["method"] == method
                         and "error" not in r), key=lambda r: r["d"])
            for i, key in enumerate(("grads_per_ess", "wall_s")):
                pts = [(r["d"], r[key]) for r in rs if r.get(key)]
                if pts:
                    axes[i, j].loglog(*zip(*pts), "o-", label=method)
        axes[0, j].set_title(fam)
        axes[0, j].set_ylabel("gradients per ESS (warm-up included)")
        axes[1, j].set_ylabel("first-run wall time (s)")
        axes[1, j].set_xlabel("d")
        axes[0, j].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--families", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    ap.add_argument("--dims", nargs="+", type=int, default=list(DIMS))
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    ap.add_argument("--max-dense-d", type=int, default=1000)
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per run")
    ap.add_argument("--out", default=None, help="append JSON rows to this file")
    ap.add_argument("--plot", default=None)
    ap.add_argument("--report", default=None, help="table (and --plot) of a saved run")
    ap.add_argument("--one", nargs=3, metavar=("FAMILY", "D", "METHOD"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.one:
        print(json.dumps(one(a.one[0], int(a.one[1]), a.one[2])), flush=True)
        return
    if a.report:
        with open(a.report) as fh:
            rows = [json.loads(ln) for ln in fh if ln.strip()]
    else:
        rows = run_grid(a.families, a.dims, a.methods, a.out, a.timeout, a.max_dense_d)
    print(table(rows))
    if a.plot:
        plot(rows, a.plot)


if __name__ == "__main__":
    main()
