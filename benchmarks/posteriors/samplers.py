"""The samplers compared on the suite, each run on a posterior's unconstrained target, with its
gradient evaluations counted (warm-up / tuning included) and its draws mapped to named quantities.

- inertia: `inertia.mcmc.sample(target, seed=...)`, the library's default (no method or parameters
  passed); gradients `total_grad_evals` if the result has it, else warm-up + chains x sampling.
- NumPyro NUTS (`potential_fn` = the target's potential; dense or diagonal mass matrix; 4 chains,
  sequential, starts uniform(-2, 2) as NumPyro's default), 1 000 warm-up + 1 000 draws, extended by
  further blocks of draws while the smallest bulk ESS is below the goal or an R-hat above 1.01;
  gradients = leapfrog steps (`num_steps`) of warm-up and sampling + one initial gradient a chain.
- nutpie (`run_nutpie`, the optional peers extra): its default NUTS and its low-rank mass-matrix
  variant, on the same log density through `nutpie.compiled_pyfunc.from_pyfunc`.
- BlackJAX MCLMC: `blackjax.mclmc_find_L_and_step_size` (its defaults, diagonal preconditioning)
  per chain, then MCLMC from the tuned state, extended while the bulk ESS is below the goal or an
  R-hat above 1.01; gradients = 2 a step (isokinetic McLachlan) of tuning and sampling.
"""
from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np

import inertia.config

inertia.config.enable_x64()  # this script's own JAX arrays (and peers') in float64

from inertia.diagnostics import chain_stats

CHAINS = 4
MAX_KEPT = 4000  # draws kept per chain (thinned beyond)


def init_points(post, chains=CHAINS, seed=0):
    """Starts uniform(-2, 2) on the unconstrained space (NumPyro's init_to_uniform rule)."""
    return jnp.asarray(np.random.default_rng(seed).uniform(-2, 2, (chains, post.dim)))


def stacked(post, draws):
    """(names, array (chain, draw, k)) of the named quantities of unconstrained draws
    (chain, draw, dim)."""
    named = post.named(draws)
    names = list(named)
    return names, np.stack([np.asarray(named[k], dtype=np.float64) for k in names], axis=-1)


def summarise(post, draws):
    """Per named quantity: mean, sd, MCSE of both, bulk ESS and R-hat (inertia's diagnostics) of draws
    (chain, draw, dim)."""
    names, x = stacked(post, draws)
    st = chain_stats(x)
    flat = x.reshape(-1, x.shape[-1])
    with np.errstate(all="ignore"):
        mean, sd = flat.mean(axis=0), flat.std(axis=0, ddof=1)
    out = {}
    for i, k in enumerate(names):
        out[k] = {"mean": float(mean[i]), "sd": float(sd[i]),
                  "mcse_mean": float(st["mcse_mean"][i]), "mcse_sd": float(st["mcse_sd"][i]),
                  "ess_bulk": float(st["ess_bulk"][i]), "rhat": float(st["rhat"][i])}
    return out


def min_ess(summary):
    vals = [q["ess_bulk"] for q in summary.values() if q["sd"] > 1e-12]
    vals = [v if np.isfinite(v) else 0.0 for v in vals]
    return float(min(vals)) if vals else 0.0


def max_rhat(summary):
    vals = [q["rhat"] for q in summary.values() if q["sd"] > 1e-12]
    vals = [v if np.isfinite(v) else np.inf for v in vals]
    return float(max(vals)) if vals else np.inf


def _enough(summary, target_ess):
    """Bulk ESS >= target_ess and R-hat <= 1.01 for every quantity (inertia's stopping rule)."""
    return min_ess(summary) >= target_ess and max_rhat(summary) <= 1.01


def _thin(x, kept=MAX_KEPT):
    step = max(1, -(-x.shape[1] // kept))
    return x[:, step - 1::step]


def run_inertia(post, seed=0):
    """inertia's default sampler on the posterior's target; `wall_rerun_s`: the same call again."""
    from inertia.mcmc import sample

    t0 = time.perf_counter()
    res = sample(post.target, seed=seed)
    wall = time.perf_counter() - t0
    t1 = time.perf_counter()
    sample(post.target, seed=seed)  # the same call again: wall time of a re-run
    rerun = time.perf_counter() - t1
    total = getattr(res, "total_grad_evals", None)
    grads = int(total) if total is not None else int(res.warmup_grad_evals
                                                     + res.grad_evals * res.num_chains)
    diag = res.diagnostics
    return {"draws": np.asarray(res._kept(None)), "grads": grads, "wall_s": wall,
            "converged": bool(res.converged),
            "verdict": diag.verdict() if diag is not None else None,
            "detail": {"method": res.method, "params": res.params, "num_steps": res.num_steps,
                       "warmup_grad_evals": int(res.warmup_grad_evals),
                       "sampling_grad_evals_per_chain": int(res.grad_evals),
                       "wall_rerun_s": rerun}}


def run_nuts(post, *, dense, seed=0, num_warmup=1000, num_samples=1000, target_ess=400.0,
             max_samples=16000, chains=CHAINS, progress=False):
    """NumPyro NUTS on the target's potential; draws extended in blocks of num_samples while the
    smallest bulk ESS of the named quantities is below target_ess or an R-hat above 1.01 (at most
    max_samples a chain)."""
    from numpyro.infer import MCMC, NUTS

    kern = NUTS(potential_fn=post.target.potential, dense_mass=dense)
    mc = MCMC(kern, num_warmup=num_warmup, num_samples=num_samples, num_chains=chains,
              chain_method="sequential", progress_bar=progress)
    t0 = time.perf_counter()
    mc.warmup(jax.random.PRNGKey(seed), init_params=init_points(post, chains, seed),
              collect_warmup=True, extra_fields=("num_steps", "diverging"))
    wf = mc.get_extra_fields()
    warm = int(np.sum(np.asarray(wf["num_steps"]))) + chains
    draws, steps, div = [], 0, 0
    while True:
        mc.run(mc.post_warmup_state.rng_key, extra_fields=("num_steps", "diverging"))
        x = np.asarray(mc.get_samples(group_by_chain=True))
        ef = mc.get_extra_fields()
        steps += int(np.sum(np.asarray(ef["num_steps"])))
        div += int(np.sum(np.asarray(ef["diverging"])))
        draws.append(x)
        mc.post_warmup_state = mc.last_state
        allx = np.concatenate(draws, axis=1)
        s = summarise(post, _thin(allx))
        if _enough(s, target_ess) or allx.shape[1] + num_samples > max_samples:
            break
    wall = time.perf_counter() - t0
    allx = np.concatenate(draws, axis=1)
    return {"draws": _thin(allx), "grads": warm + steps, "wall_s": wall,
            "detail": {"dense_mass": dense, "num_warmup": num_warmup,
                       "num_samples": int(allx.shape[1]), "warmup_grads": warm,
                       "sampling_grads": steps, "divergences": div,
                       "warmup_divergences": int(np.sum(np.asarray(wf["diverging"])))}}


def run_mclmc(post, *, seed=0, num_steps=2000, target_ess=400.0, max_steps=64000,
              chains=CHAINS):
    """BlackJAX MCLMC after `mclmc_find_L_and_step_size` (num_steps passed to the tuner, its
    default fractions) per chain; sampling extended while the bulk ESS is below target_ess or an
    R-hat above 1.01."""
    import blackjax

    V = post.target.potential

    def logdensity(x):
        return -V(x)

    kernel = blackjax.mcmc.mclmc.build_kernel()

    def tune(key, x):
        k1, k2 = jax.random.split(key)
        st = blackjax.mcmc.mclmc.init(x, logdensity, k1)
        return blackjax.mclmc_find_L_and_step_size(kernel, num_steps, st, k2,
                                                   logdensity_fn=logdensity)

    tune = jax.jit(tune)

    def one_chain(key, st, L, eps, imm, n, thin):
        def inner(s, k):
            s, _ = kernel(k, s, logdensity, imm, L, eps)
            return s, None

        def outer(s, k):
            s, _ = jax.lax.scan(inner, s, jax.random.split(k, thin))
            return s, s.position

        return jax.lax.scan(outer, st, jax.random.split(key, n))

    block = jax.jit(jax.vmap(one_chain, in_axes=(0, 0, 0, 0, 0, None, None)),
                    static_argnums=(5, 6))
    t0 = time.perf_counter()
    x0 = init_points(post, chains, seed)
    keys = jax.random.split(jax.random.PRNGKey(seed + 1), chains)
    states, Ls, eps, imms, tune_steps = [], [], [], [], 0
    for c in range(chains):
        kt, _ = jax.random.split(keys[c])
        st, params, nt = tune(kt, x0[c])
        states.append(st)
        Ls.append(params.L)
        eps.append(params.step_size)
        imms.append(params.inverse_mass_matrix)
        tune_steps += int(nt)
    state = jax.tree_util.tree_map(lambda *a: jnp.stack(a), *states)
    Ls, eps, imms = jnp.stack(Ls), jnp.stack(eps), jnp.stack(imms)
    kept, done, n, thin, key = None, 0, num_steps, 1, jax.random.PRNGKey(seed + 2)
    while True:
        key, sub = jax.random.split(key)
        state, pos = block(jax.random.split(sub, chains), state, Ls, eps, imms, n // thin, thin)
        done += (n // thin) * thin
        kept = np.asarray(pos) if kept is None else np.concatenate([kept, np.asarray(pos)], axis=1)
        while kept.shape[1] >= 2 * MAX_KEPT:  # every 2 thin-th step from here on
            kept, thin = kept[:, 1::2], 2 * thin
        if not np.all(np.isfinite(kept)):
            break
        if _enough(summarise(post, kept), target_ess) or 2 * done > max_steps:
            break
        n = done
    wall = time.perf_counter() - t0
    allx = kept
    return {"draws": _thin(allx), "grads": 2 * (tune_steps + chains * done) + chains,
            "wall_s": wall,
            "detail": {"tuning_steps": tune_steps, "steps_per_chain": done,
                       "L": np.asarray(Ls).tolist(), "step_size": np.asarray(eps).tolist(),
                       "nonfinite_draws": int(np.sum(~np.isfinite(allx)))}}


def run_nutpie(post, *, seed=0, num_warmup=None, num_samples=1000, target_ess=400.0,
               max_samples=16000, chains=CHAINS, low_rank=False):
    """nutpie (Rust NUTS; mass matrix adapted from gradients and draws, optionally with low-rank
    corrections) on the same log density, through its Python-function interface
    (`nutpie.compiled_pyfunc.from_pyfunc`, the route of its own PyMC JAX backend): logp and
    gradient by one jitted float64 `jax.value_and_grad` of -V. 4 chains, one core, starts
    uniform(-2, 2); nutpie's default warm-up (num_warmup None) and num_samples draws, the whole
    run repeated with twice the draws while the smallest bulk ESS is below target_ess or an R-hat
    above 1.01 (at most max_samples a chain). Gradients: nutpie's `n_steps` of warm-up and
    sampling of every attempt. `wall_rerun_s`: the last attempt run again (compiled)."""
    import nutpie
    from nutpie.compiled_pyfunc import from_pyfunc

    jax.config.update("jax_enable_x64", True)  # float64 in this process, explicitly
    d = post.dim
    vg = jax.jit(jax.value_and_grad(lambda x: -post.target.potential(x)))

    def make_logp_fn():
        def logp(x, **shared):
            v, g = vg(x)
            return float(v), np.asarray(g, dtype=np.float64)
        return logp

    def make_expand_fn(seed1, seed2, chain):
        def expand(x, **shared):
            return {"x": np.array(x, dtype=np.float64)}
        return expand

    def init(s):
        return np.random.default_rng(s).uniform(-2.0, 2.0, d)

    model = from_pyfunc(d, make_logp_fn, make_expand_fn, [np.dtype("float64")], [(d,)], ["x"],
                        make_initial_point_fn=init)
    assert vg(jnp.zeros(d))[0].dtype == jnp.float64
    kw = {} if num_warmup is None else {"tune": num_warmup}

    def once(n):
        t = time.perf_counter()
        tr = nutpie.sample(model, draws=n, chains=chains, cores=1, seed=seed,
                           progress_bar=False, low_rank_modified_mass_matrix=low_rank, **kw)
        return tr, time.perf_counter() - t

    t0 = time.perf_counter()
    n, grads, attempts = num_samples, 0, 0
    while True:
        tr, _ = once(n)
        attempts += 1
        warm = int(np.sum(tr.warmup_sample_stats["n_steps"].values))
        steps = int(np.sum(tr.sample_stats["n_steps"].values))
        grads += warm + steps + chains
        x = np.asarray(tr.posterior["x"].values, dtype=np.float64)
        if _enough(summarise(post, _thin(x)), target_ess) or 2 * n > max_samples:
            break
        n *= 2
    wall = time.perf_counter() - t0
    _, rerun = once(n)
    return {"draws": _thin(x), "grads": grads, "wall_s": wall,
            "detail": {"low_rank": low_rank, "num_warmup": int(tr.warmup_sample_stats.sizes["draw"]),
                       "num_samples": int(n), "attempts": attempts, "warmup_grads": warm,
                       "sampling_grads": steps,
                       "divergences": int(np.sum(tr.sample_stats["diverging"].values)),
                       "wall_rerun_s": rerun, "nutpie": nutpie.__version__}}
