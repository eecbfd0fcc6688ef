"""External suite, MCMC: inertia's sampler beside BlackJAX NUTS and MCLMC at matched gradient budgets.

Four chains per sampler, each started from N(0, I) on the unconstrained space. At each budget B
(gradient evaluations per chain, tuning/warm-up included) the draws obtained within B are mapped to
the Gym's identity space and compared with its ground truth: the largest standardised error of the
mean max_i |mean_i - truth_i| / sd_i and of the sd max_i |sd_i - sd_i*| / sd_i*, the minimum over
coordinates of numpyro's multi-chain ESS, gradient evaluations per effective sample
(4 B / min ESS) and the number of non-finite draws.

- NUTS: `blackjax.window_adaptation` (500 steps, per chain), then NUTS until the largest budget;
  smaller budgets are prefixes (warm-up gradients counted).
- MCLMC: `blackjax.mclmc_find_L_and_step_size` (diagonal preconditioning, its default fractions)
  then MCLMC, one run per budget (the tuner's length depends on the run's length); 2 gradients per
  isokinetic McLachlan step.
- inertia: `inertia.mcmc.sample` as its API now allows (parameters from curvature bounds, here the
  Hessian eigenvalues at the mode, as the VI run); the first half of the draws within the budget
  is discarded as burn-in. Entries in INERTIA are easy to switch to the auto-tuned `sample(target)`.

Run: `nice -n 19 python benchmarks/suite/run_mcmc.py [--targets a,b] [--report]`; resumable per
(target, sampler) in benchmarks/results/suite_mcmc.json; `--report` writes the "External suite:
MCMC" section of benchmarks/results/benchmarks_log.md.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

import inertia.config  # noqa: E402

inertia.config.enable_x64()  # this script's own JAX arrays (and peers') in float64

import inertia  # noqa: E402,F401  (float64)
from targets import NAMES, curvature_from_hessian, load_suite  # noqa: E402

RESULTS = Path(os.environ.get("SUITE_MCMC_JSON", ROOT / "benchmarks" / "results" / "suite_mcmc.json"))
VI_RESULTS = ROOT / "benchmarks" / "results" / "suite_vi.json"
DOC = ROOT / "benchmarks" / "results" / "benchmarks_log.md"
CHAINS = 4
NUTS_WARMUP = 500
MAX_KEPT = 5000  # draws kept per chain (thinned beyond)
BUDGETS = {"default": (10_000, 30_000)}  # 1e4 and 1e5 asked; 3e4 to fit the shared machine
# item-response (d = 501) and log-Gaussian Cox (1-2 ms a gradient) are left out of the MCMC run
MCMC_NAMES = tuple(n for n in NAMES if n not in ("item-response", "log-gaussian-cox"))


def _log(msg):
    print(msg, file=sys.stderr, flush=True)


def budgets(name):
    return BUDGETS.get(name, BUDGETS["default"])


def _init_positions(d, seed=0):
    return jax.random.normal(jax.random.PRNGKey(seed), (CHAINS, d), dtype=jnp.float64)


# A sampler returns, per chain, kept draws (n, d) and the cumulative gradient count at each draw,
# plus per-budget runs where the sampler needs a separate run per budget.

def run_nuts(entry, bmax):
    import blackjax

    logdensity = lambda x: -entry.target.potential(x)  # noqa: E731
    warm = blackjax.window_adaptation(blackjax.nuts, logdensity)
    adapt = jax.jit(lambda k, x: warm.run(k, x, num_steps=NUTS_WARMUP))

    def sample(key, state, step_size, imm, n, thin):
        kern = blackjax.nuts(logdensity, step_size, imm)

        def inner(c, k):
            st, g = c
            st, info = kern.step(k, st)
            return (st, g + info.num_integration_steps), None

        def outer(c, k):
            c, _ = jax.lax.scan(inner, c, jax.random.split(k, thin))
            return c, (c[0].position, c[1])

        _, out = jax.lax.scan(outer, (state, jnp.int64(0)), jax.random.split(key, n))
        return out

    sample = jax.jit(sample, static_argnums=(4, 5))
    keys = jax.random.split(jax.random.PRNGKey(1), CHAINS)
    x0 = _init_positions(entry.dim)
    chains, info = [], {"step_size": [], "warmup_grads": []}
    for c in range(CHAINS):
        ka, ks = jax.random.split(keys[c])
        (state, params), ainfo = adapt(ka, x0[c])
        wg = int(np.sum(np.asarray(ainfo.info.num_integration_steps)))
        per = max(1.0, wg / NUTS_WARMUP)
        n = int(max(bmax - wg, 0) / per * 1.15) + 1
        thin = max(1, -(-n // MAX_KEPT))
        pos, g = sample(ks, state, params["step_size"], params["inverse_mass_matrix"],
                        -(-n // thin), thin)
        chains.append((np.asarray(pos), wg + np.asarray(g)))
        info["step_size"].append(float(params["step_size"]))
        info["warmup_grads"].append(wg)
    return {b: chains for b in budgets(entry.name)}, info


def run_mclmc(entry, bmax):
    import blackjax

    logdensity = lambda x: -entry.target.potential(x)  # noqa: E731
    kernel = blackjax.mcmc.mclmc.build_kernel()

    def tune(key, x, num_steps):
        k1, k2 = jax.random.split(key)
        st = blackjax.mcmc.mclmc.init(x, logdensity, k1)
        return blackjax.mclmc_find_L_and_step_size(kernel, num_steps, st, k2,
                                                   logdensity_fn=logdensity)

    tune = jax.jit(tune, static_argnums=2)

    def sample(key, st, L, eps, imm, n, thin):
        def inner(s, k):
            s, _ = kernel(k, s, logdensity, imm, L, eps)
            return s, None

        def outer(s, k):
            s, _ = jax.lax.scan(inner, s, jax.random.split(k, thin))
            return s, s.position

        return jax.lax.scan(outer, st, jax.random.split(key, n))[1]

    sample = jax.jit(sample, static_argnums=(5, 6))
    x0 = _init_positions(entry.dim)
    out, info = {}, {}
    for b in budgets(entry.name):
        steps = int(b / 2 / 1.3)  # tuner adds 0.3 of num_steps
        keys = jax.random.split(jax.random.PRNGKey(2), CHAINS)
        chains, inf_b = [], {"L": [], "step_size": [], "tuning_grads": []}
        for c in range(CHAINS):
            kt, ks = jax.random.split(keys[c])
            st, params, ntune = tune(kt, x0[c], steps)
            tg = 2 * int(ntune)
            n = max(0, (b - tg) // 2)
            thin = max(1, -(-n // MAX_KEPT))
            nk = n // thin
            pos = np.asarray(sample(ks, st, params.L, params.step_size,
                                    params.inverse_mass_matrix, nk, thin)) if nk else \
                np.zeros((0, entry.dim))
            chains.append((pos, tg + 2 * thin * np.arange(1, nk + 1)))
            inf_b["L"].append(float(params.L))
            inf_b["step_size"].append(float(params.step_size))
            inf_b["tuning_grads"].append(tg)
        out[b], info[str(b)] = chains, inf_b
    return out, info


def _bounds(entry):
    if VI_RESULTS.exists():
        b = json.loads(VI_RESULTS.read_text()).get(entry.name, {}).get("bounds")
        if b:
            return b
    a, bt, _, note = curvature_from_hessian(entry.target, has_mode=entry.has_mode)
    return {"alpha": a, "beta": bt, "where": note}


def inertia_sampler(method):
    """`inertia.mcmc.sample` with parameters from Hessian bounds (its API needs them today)."""

    def run(entry, bmax):
        from inertia.mcmc import sample
        from inertia.mcmc.kernels import get_method

        bd = _bounds(entry)
        target = entry.target.replace(alpha=bd["alpha"], beta=bd["beta"])
        gps = get_method(method).grads_per_step
        n = bmax // gps
        thin = max(1, -(-n // MAX_KEPT))
        n = (n // thin) * thin
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            res = sample(target, method, num_chains=CHAINS, num_steps=n, seed=0, thinning=thin,
                         on_divergence="stop")
        g = 1 + gps * thin * np.arange(1, res.draws.shape[1] + 1)
        chains = [(res.draws[c], g) for c in range(CHAINS)]
        return {b: chains for b in budgets(entry.name)}, {
            "params": res.params, "bounds": bd, "diverged_at": np.asarray(res.diverged_at).tolist(),
            "burn_in": 0.5}

    run.burn_in = 0.5
    return run


def inertia_auto(method="hfhr"):
    """`inertia.mcmc.sample(target)` as a user calls it: no constants, automatic warm-up (its
    gradients, per chain, count toward the budget); all post-warm-up draws kept."""

    def run(entry, bmax):
        import warnings

        from inertia.mcmc import sample
        from inertia.mcmc.kernels import get_method

        gps = get_method(method).grads_per_step
        n = bmax // gps
        thin = max(1, -(-n // MAX_KEPT))
        n = (n // thin) * thin
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            res = sample(entry.target, method, num_chains=CHAINS, num_steps=n, seed=0,
                         thinning=thin, on_divergence="stop")
        warm = int(res.tuning["grad_evals"]) if res.tuning else 0  # per chain (+ the shared fit)
        g = warm + gps * thin * np.arange(1, res.draws.shape[1] + 1)
        chains = [(res.draws[c], g) for c in range(CHAINS)]
        return {b: chains for b in budgets(entry.name)}, {
            "params": {k: float(v) for k, v in (res.params or {}).items()
                       if np.ndim(v) == 0}, "warmup_grads": warm, "burn_in": 0.0}

    run.burn_in = 0.0
    return run


# name -> runner(entry, largest budget)
INERTIA = {"inertia hfhr": inertia_sampler("hfhr"), "inertia klmc": inertia_sampler("klmc"),
           "inertia default": inertia_auto("hfhr")}


def samplers():
    return {"blackjax-nuts": run_nuts, "blackjax-mclmc": run_mclmc, **INERTIA}


def metrics(entry, chains, budget, burn_in=0.0):
    """Errors, ESS and cost from the draws obtained within `budget` gradients per chain."""
    from numpyro.diagnostics import effective_sample_size

    kept = []
    for pos, g in chains:
        n = int(np.sum(np.asarray(g) <= budget))
        kept.append(pos[int(burn_in * n):n])
    n = min(len(k) for k in kept)
    if n < 4:
        return {"draws_per_chain": n, "reached": False}
    x = np.stack([k[-n:] for k in kept])  # (chains, n, d)
    nonfinite = int(np.sum(~np.all(np.isfinite(x), axis=-1)))
    y = np.asarray(jax.jit(jax.vmap(jax.vmap(entry.constrain)))(jnp.asarray(x)))
    out = {"draws_per_chain": n, "reached": True, "nonfinite_draws": nonfinite}
    if nonfinite or not np.all(np.isfinite(y)):
        return {**out, "mean_err": None, "sd_err": None, "min_ess": None, "grads_per_ess": None}
    flat = y.reshape(-1, y.shape[-1])
    mean_err = np.abs(flat.mean(0) - entry.truth_mean) / entry.truth_sd
    sd_err = np.abs(flat.std(0, ddof=1) - entry.truth_sd) / entry.truth_sd
    ess = np.asarray(effective_sample_size(y))
    min_ess = float(np.min(ess))
    return {**out, "mean_err": float(mean_err.max()), "sd_err": float(sd_err.max()),
            "min_ess": min_ess, "grads_per_ess": CHAINS * budget / min_ess if min_ess > 0 else None}


def _load():
    return json.loads(RESULTS.read_text()) if RESULTS.exists() else {}


def _save(res):
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(res, indent=1))


def run(targets, which, force=False):
    res = _load()
    for entry in load_suite(targets or MCMC_NAMES):
        tres = res.setdefault(entry.name, {"dim": entry.dim, "log_concave": entry.log_concave,
                                            "budgets": list(budgets(entry.name)), "samplers": {}})
        for name, fn in samplers().items():
            if (which and name not in which) or (name in tres["samplers"] and not force):
                continue
            t = time.perf_counter()
            try:
                per_budget, info = fn(entry, max(budgets(entry.name)))
            except Exception as err:  # a failed sampler is a result
                tres["samplers"][name] = {"error": repr(err)[:300]}
                _log(f"[{entry.name}] {name}: ERROR {err!r}"[:300])
                _save(res)
                continue
            burn = getattr(fn, "burn_in", 0.0)
            row = {"info": info, "seconds": time.perf_counter() - t, "at": {}}
            for b, chains in per_budget.items():
                row["at"][str(b)] = metrics(entry, chains, b, burn)
            tres["samplers"][name] = row
            _save(res)
            _log(f"[{entry.name}] {name}: {row['seconds']:.0f}s " + "; ".join(
                f"{b}: mean {m.get('mean_err')} sd {m.get('sd_err')} g/ESS {m.get('grads_per_ess')}"
                for b, m in row["at"].items()))
    return res


def _f(v, fmt="{:.2g}"):
    return "—" if v is None else fmt.format(v)


def _tuning(info, bs):
    """Mean tuning / warm-up gradients per chain (MCLMC: of the largest budget's run)."""
    g = info.get("warmup_grads") or (info.get(str(max(bs)), {}) or {}).get("tuning_grads")
    return f"{np.mean(g):,.0f}" if g else "0"


def report():
    from run_vi import _replace_section

    res = _load()
    lines = ["## External suite: MCMC", "",
             "Generated by `python benchmarks/suite/run_mcmc.py --report` from "
             "`benchmarks/results/suite_mcmc.json`; same Inference Gym posteriors as the VI "
             "section. Four chains from N(0, I) (unconstrained space). At a budget B of gradient "
             "evaluations per chain (tuning and warm-up included) the table gives the largest "
             "standardised error of the mean and of the sd over the coordinates of the Gym's "
             "identity space (against its ground truth), and gradients per effective sample "
             "(4 B / minimum multi-chain ESS over coordinates, numpyro's estimator). NUTS: "
             f"BlackJAX `window_adaptation` ({NUTS_WARMUP} steps) then NUTS; MCLMC: BlackJAX "
             "`mclmc_find_L_and_step_size` then MCLMC (2 gradients per step), one run per budget; "
             "inertia: `inertia.mcmc.sample` with its default parameters at curvature bounds from "
             "the Hessian eigenvalues at the mode (rows inertia hfhr / klmc), first half of the "
             "draws dropped; inertia default: `sample(target)` as a user calls it (no constants, "
             "Laplace-whitened automatic warm-up whose gradients count toward the budget, every "
             "post-warm-up draw kept). Budgets are 1e4 and 3e4 (not the 1e5 asked for: the shared "
             "machine's time did not allow it); item-response and log-Gaussian Cox are left out "
             "of the MCMC run for the same reason. — = budget spent before any draw (warm-up) "
             "or non-finite draws (count shown).",
             ""]
    for name in NAMES:
        if name not in res:
            continue
        t = res[name]
        bs = t["budgets"]
        lines += [f"### {name} (d = {t['dim']}, "
                  f"{'log-concave' if t['log_concave'] else 'not log-concave'})", "",
                  "| sampler | " + " | ".join(f"mean err @{b:.0e} | sd err @{b:.0e} | grads/ESS @{b:.0e}"
                                              for b in bs) + " | tuning grads | non-finite draws |",
                  "|---|" + "---|---|---|" * len(bs) + "---|---|"]
        for s, row in t["samplers"].items():
            if "error" in row:
                lines.append(f"| {s} | error: {row['error'][:80]} |" + " |" * (3 * len(bs) + 1))
                continue
            cells, nf = [], 0
            for b in bs:
                m = row["at"].get(str(b), {})
                nf = max(nf, m.get("nonfinite_draws", 0) or 0)
                cells += [_f(m.get("mean_err")), _f(m.get("sd_err")),
                          _f(m.get("grads_per_ess"), "{:,.0f}")]
            lines.append(f"| {s} | " + " | ".join(cells) + f" | {_tuning(row['info'], bs)} | {nf} |")
        lines.append("")
    _replace_section(DOC, "suite-mcmc", "\n".join(lines))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--targets", help="comma-separated subset of " + ",".join(NAMES))
    p.add_argument("--samplers", help="comma-separated sampler names")
    p.add_argument("--force", action="store_true")
    p.add_argument("--report", action="store_true")
    a = p.parse_args(argv)
    if a.report:
        report()
        return
    run(a.targets.split(",") if a.targets else None,
        set(a.samplers.split(",")) if a.samplers else None, a.force)
    report()


if __name__ == "__main__":
    main()
