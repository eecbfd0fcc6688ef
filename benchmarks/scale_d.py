"""Cost against d: inertia's sample and fit beside NumPyro NUTS (diagonal and dense mass) and
BlackJAX MCLMC on three model families with d from a hundred to ten thousand.

Families (NumPyro models; d is the number of unconstrained parameters; the first three non-centred
where they have a hierarchy, the last four as a statistician writes them):
- "hier": non-centred hierarchical logistic regression, G = d - 3 groups, N = 8 G rows;
- "glmm": Poisson GLMM with crossed random effects (rows and columns of a table, non-centred),
  R = C = (d - 3) / 2 levels, N = 4 (R + C) cells drawn at random;
- "field": latent Gaussian field on a k x k grid (k = round(sqrt(d)), k^2 parameters; intrinsic random-walk precision
  tau (sum of squared neighbour differences) + 0.01 |f|^2, tau = 4) with Poisson counts per cell;
- "irt" / "irt-nc": IRT two-parameter logistic, J = d - 44 students x K = 20 items, every response
  observed; theta_j ~ N(0, 1), log a_k ~ N(mu_a, sigma_a), b_k ~ N(mu_b, sigma_b),
  logit = a_k (theta_j - b_k); centred as written, or non-centred (the items' standardised offsets);
- "slopes": varying intercepts and slopes, centred, G = (d - 5) / 2 groups x 10 rows,
  (alpha_g, beta_g) ~ N(mu, diag tau^2), Gaussian rows;
- "horseshoe": regularised horseshoe logistic regression (Piironen & Vehtari 2017),
  p = (d - 3) / 2 predictors, N = 2 p rows, 10 non-zero coefficients.
Runs (each in a fresh process, float64 enabled explicitly in the peers' processes, empty JAX cache):
- "sample": `inertia.mcmc.sample(target)` (default: run until R-hat <= 1.01 and bulk ESS >= 400);
  "sample-low-rank": the same with the frame forced low-rank (`frame="low-rank"`) at every d;
- "fit": `inertia.vi.fit(target)` (automatic mode);
- "nuts-diag" / "nuts-dense": NumPyro NUTS, 4 chains x (1,000 warm-up + 1,000 draws), sequential,
  the data arrays arguments of its compiled programs (`jit_model_args=True`, the sizes bound), not
  constants XLA folds; dense only up to --max-dense-d;
- "mclmc": BlackJAX MCLMC, 4 chains (vmapped), 2,000 tuning steps (`mclmc_find_L_and_step_size`,
  diagonal preconditioning) + 2,000 draws each; 2 gradients per step (isokinetic McLachlan);
- "reference": a long NumPyro NUTS run (diagonal mass, 4 chains x (1,000 warm-up + 5,000 draws),
  another seed), run where affordable; its per-coordinate means, sds and Monte Carlo standard
  errors are the reference of the errors below.
Per run: gradients including warm-up (all chains), min bulk ESS and max R-hat over parameters
(`inertia.diagnostics.chain_stats`, on the unconstrained draws), gradients per ESS, first-run wall time (model set-up,
compilation and run), the process's peak resident memory, the verdict (inertia's own; peers:
R-hat <= 1.01 and ESS >= 400), the seconds spent tracing, lowering and compiling (jax.monitoring)
and, for inertia's runs, the time per gradient step. `fit` has no ESS: its row gives gradients,
wall time, memory and verdict. Every run saves its per-coordinate means, sds and MCSEs (unconstrained
coordinates) under --moments; the report compares them with the reference run of the same
family and d (where none was affordable, with the diagonal NUTS run): the largest |mean - ref| / ref sd, and the largest of that difference over its
Monte Carlo error sqrt(mcse^2 + mcse_ref^2), which for a correct sampler is the maximum of d
standard normals (a Bonferroni bound at level 0.01 is the threshold of "consistent").

Run (one command, the full grid; hours on 2 cores):
    python benchmarks/scale_d.py --json benchmarks/results/scale_d.json --plot docs/benchmarks/scale_d.png
Smaller: --dims 100 300 --families hier glmm --methods sample nuts-diag (rows of the same family,
d, method and seed in the JSON file are replaced); --seeds 0 1 2 runs every sampler with each seed
(the data stay seed 0's; NUTS takes keys 10 s and 10 s + 1): the run tables, goals and plot are
seed 0's, and a further table gives gradients per ESS by seed with the ratio of the medians.
A saved run's tables and plot:
    python benchmarks/scale_d.py --report benchmarks/results/scale_d.json --plot docs/benchmarks/scale_d.png
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

FAMILIES = ("hier", "glmm", "field", "irt", "irt-nc", "slopes", "horseshoe")
IRT_ITEMS = 20  # K items of the IRT families; J = d - 2 K - 4 students
METHODS = ("sample", "sample-low-rank", "fit", "nuts-diag", "nuts-dense", "mclmc", "reference")
DEFAULT_METHODS = ("sample", "fit", "nuts-diag", "nuts-dense", "mclmc")
MOMENTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "scale_d")
DIMS = (100, 300, 1000, 3000, 10000)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout


def dim_of(family: str, d: int) -> int:
    """The number of unconstrained parameters of `family` asked for d (the field's is k^2)."""
    if family == "field":
        return int(round(d ** 0.5)) ** 2
    if family == "slopes":  # 2 G + 5
        return 2 * ((d - 5) // 2) + 5
    if family == "horseshoe":  # 2 p + 3
        return 2 * ((d - 3) // 2) + 3
    return int(d)


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
    if family in ("irt", "irt-nc"):
        return _irt(rng, d, centred=family == "irt")
    if family == "slopes":
        return _slopes(rng, d)
    if family == "horseshoe":
        return _horseshoe(rng, d)
    raise ValueError(f"unknown family {family!r}")


def _irt(rng, d, centred=True):
    """IRT two-parameter logistic, J = d - 44 students x K = 20 items, every response observed:
    theta_j ~ N(0, 1), log a_k ~ N(mu_a, sigma_a), b_k ~ N(mu_b, sigma_b), logit = a_k (theta_j - b_k);
    centred (log a and b sampled as written) or non-centred (their standardised offsets)."""
    import numpy as np
    import numpyro
    import numpyro.distributions as dist

    K = IRT_ITEMS
    J = d - 2 * K - 4
    jj, kk = (a.ravel() for a in np.meshgrid(np.arange(J), np.arange(K), indexing="ij"))
    theta, log_a, b = rng.normal(size=J), rng.normal(0.0, 0.3, K), rng.normal(0.0, 1.0, K)
    p = 1 / (1 + np.exp(-np.exp(log_a)[kk] * (theta[jj] - b[kk])))
    y = rng.binomial(1, p).astype(float)

    def irt(jj, kk, y, J, K):
        import jax.numpy as jnp

        mu_a = numpyro.sample("mu_a", dist.Normal(0.0, 1.0))
        sigma_a = numpyro.sample("sigma_a", dist.HalfNormal(1.0))
        mu_b = numpyro.sample("mu_b", dist.Normal(0.0, 2.0))
        sigma_b = numpyro.sample("sigma_b", dist.HalfNormal(2.0))
        with numpyro.plate("J", J):
            th = numpyro.sample("theta", dist.Normal(0.0, 1.0))
        with numpyro.plate("K", K):
            if centred:
                la = numpyro.sample("log_a", dist.Normal(mu_a, sigma_a))
                bk = numpyro.sample("b", dist.Normal(mu_b, sigma_b))
            else:
                la = mu_a + sigma_a * numpyro.sample("log_a_z", dist.Normal(0.0, 1.0))
                bk = mu_b + sigma_b * numpyro.sample("b_z", dist.Normal(0.0, 1.0))
        numpyro.sample("y", dist.Bernoulli(logits=jnp.exp(la)[kk] * (th[jj] - bk[kk])), obs=y)

    return irt, (jj, kk, y, J, K)


def _slopes(rng, d):
    """Varying intercepts and slopes, centred: G = (d - 5) / 2 groups x 10 rows,
    (alpha_g, beta_g) ~ N(mu, diag tau), y ~ N(alpha_g + beta_g x, sigma)."""
    import numpy as np
    import numpyro
    import numpyro.distributions as dist

    G = (d - 5) // 2
    g = np.repeat(np.arange(G), 10)
    x = rng.normal(size=g.size)
    al, be = 1.0 + 0.5 * rng.normal(size=G), -0.5 + 0.3 * rng.normal(size=G)
    y = al[g] + be[g] * x + rng.normal(0.0, 1.0, g.size)

    def slopes(g, x, y, G):
        mu = numpyro.sample("mu", dist.Normal(0.0, 5.0).expand([2]).to_event(1))
        tau = numpyro.sample("tau", dist.HalfNormal(1.0).expand([2]).to_event(1))
        sigma = numpyro.sample("sigma", dist.HalfNormal(2.0))
        with numpyro.plate("G", G):
            a = numpyro.sample("alpha", dist.Normal(mu[0], tau[0]))
            b = numpyro.sample("beta", dist.Normal(mu[1], tau[1]))
        numpyro.sample("y", dist.Normal(a[g] + b[g] * x, sigma), obs=y)

    return slopes, (g, x, y, G)


def _horseshoe(rng, d):
    """Regularised horseshoe logistic regression (Piironen & Vehtari 2017), p = (d - 3) / 2
    predictors, N = 2 p rows, 10 non-zero coefficients: z, lambda (p each), tau, c^2, intercept."""
    import numpy as np
    import numpyro
    import numpyro.distributions as dist

    p = (d - 3) // 2
    n = 2 * p
    X = rng.normal(size=(n, p))
    beta = np.zeros(p)
    beta[:10] = rng.choice([-1.0, 1.0], 10) * rng.uniform(1.0, 2.0, 10)
    y = rng.binomial(1, 1 / (1 + np.exp(-(X @ beta)))).astype(float)

    def horseshoe(X, y, p0=10.0, slab_scale=2.0, slab_df=4.0):
        import jax.numpy as jnp

        n, p = X.shape
        tau0 = p0 / (p - p0) / jnp.sqrt(n) * 2.0  # sigma of a logistic pseudo-likelihood: 2
        alpha = numpyro.sample("alpha", dist.Normal(0.0, 2.0))
        tau = numpyro.sample("tau", dist.HalfCauchy(tau0))
        c2 = numpyro.sample("c2", dist.InverseGamma(slab_df / 2, slab_df / 2 * slab_scale ** 2))
        with numpyro.plate("p", p):
            lam = numpyro.sample("lambda", dist.HalfCauchy(1.0))
            z = numpyro.sample("z", dist.Normal(0.0, 1.0))
        lt = jnp.sqrt(c2 * lam ** 2 / (c2 + tau ** 2 * lam ** 2))
        numpyro.sample("y", dist.Bernoulli(logits=alpha + X @ (z * tau * lt)), obs=y)

    return horseshoe, (X, y)


def _summary(draws):
    """(min bulk ESS, max R-hat, moments) of draws (chain, draw, d) (inertia's diagnostics); moments are the
    per-coordinate mean, sd, MCSE of the mean and bulk ESS."""
    import numpy as np

    from inertia.diagnostics import chain_stats

    x = np.asarray(draws, dtype=np.float64)
    st = chain_stats(x)
    flat = x.reshape(-1, x.shape[-1])
    mom = {"mean": flat.mean(0), "sd": flat.std(0, ddof=1), "mcse": st["mcse_mean"],
           "ess": st["ess_bulk"]}
    return float(np.nanmin(st["ess_bulk"])), float(np.nanmax(st["rhat"])), mom


def run_inertia(method, model, args, seed=0):
    import numpy as np

    from inertia.targets import from_numpyro

    t = from_numpyro(model, *args)
    if method.startswith("sample"):
        from inertia.mcmc import sample

        r = sample(t, seed=seed, frame="low-rank" if method == "sample-low-rank" else "auto")
        ess, rhat, mom = _summary(r.draws)
        steps = int(np.sum(r.grad_evals)) if np.ndim(r.grad_evals) else int(r.grad_evals)
        return {"grads": int(r.total_grad_evals), "ess": ess, "rhat": rhat,
                "converged": bool(r.converged), "frame": r.tuning.get("precondition"),
                "frames_tried": r.tuning.get("fit", {}).get("frames_tried"),
                "sampling_grads_per_chain": steps}, mom
    from inertia.vi import fit

    r = fit(t, seed=seed)
    h = r.history
    grads = int(np.asarray(h["grad_evals"])[-1]) + 2 * int(np.asarray(h.get("hvp_evals", [0]))[-1])
    mom = {"mean": np.asarray(r.mean, np.float64)}
    sd = getattr(r, "sd", None)
    if sd is None and getattr(r, "cov", None) is not None:
        sd = np.sqrt(np.diag(np.asarray(r.cov, np.float64)))
    if sd is not None:
        mom["sd"] = np.asarray(sd, np.float64)
    return {"grads": grads, "ess": None, "rhat": None, "converged": bool(r.converged),
            "vi_method": r.method}, mom


def _unconstrained(model, args, samples, chains):
    """NUTS's constrained draws {site: (chain, draw, ...)} -> unconstrained (chain, draw, d), in
    the flattening of inertia's target (jax.flatten_util.ravel_pytree of the latent sites)."""
    import jax
    import numpy as np
    from jax.flatten_util import ravel_pytree
    from numpyro.infer.util import unconstrain_fn

    bound, arrays = data_as_arguments(model, args)

    def one(params, arrays):
        return ravel_pytree(unconstrain_fn(bound, arrays, {}, params))[0]

    flat = {k: np.asarray(v).reshape((-1,) + np.shape(v)[2:]) for k, v in samples.items()}
    u = np.asarray(jax.jit(jax.vmap(one, in_axes=(0, None)))(flat, arrays))
    return u.reshape(chains, -1, u.shape[-1])


def data_as_arguments(model, args):
    """(model of the data arrays alone, those arrays): the trailing sizes (Python ints, which
    set shapes) bound, so that a compiled program can take every array as an argument."""
    n = next((i for i, a in enumerate(args) if isinstance(a, int)), len(args))
    sizes = tuple(args[n:])

    def bound(*arrays):
        return model(*arrays, *sizes)

    return bound, tuple(args[:n])


def run_nuts(dense, model, args, warmup=1000, draws=1000, chains=4, seed=0):
    import jax
    import numpy as np
    from numpyro.infer import MCMC, NUTS

    # jit_model_args: the data are arguments of NumPyro's compiled programs, not constants that
    # XLA folds (its strongest setting at large d)
    bound, arrays = data_as_arguments(model, args)
    mcmc = MCMC(NUTS(bound, dense_mass=dense), num_warmup=warmup, num_samples=draws,
                num_chains=chains, chain_method="sequential", progress_bar=False,
                jit_model_args=True)
    key = jax.random.PRNGKey(seed)
    mcmc.warmup(key, *arrays, extra_fields=("num_steps",), collect_warmup=True)
    warm = int(np.sum(mcmc.get_extra_fields()["num_steps"]))
    mcmc.run(jax.random.PRNGKey(seed + 1), *arrays, extra_fields=("num_steps",))
    samp = int(np.sum(mcmc.get_extra_fields()["num_steps"]))
    ess, rhat, mom = _summary(_unconstrained(model, args, mcmc.get_samples(group_by_chain=True),
                                             chains))
    return {"grads": warm + samp, "warmup_grads": warm, "ess": ess, "rhat": rhat,
            "converged": bool(rhat <= 1.01 and ess >= 400)}, mom


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
    ess, rhat, mom = _summary(np.asarray(xs))
    grads = 2 * (int(np.sum(np.asarray(n_tune))) + chains * draws)
    return {"grads": grads, "ess": ess, "rhat": rhat,
            "converged": bool(rhat <= 1.01 and ess >= 400)}, mom


def _compile_clock():
    """{kind: seconds} summed over jax.monitoring's tracing, lowering and XLA compilation events."""
    import jax.monitoring as monitoring

    kinds = {"/jax/core/compile/jaxpr_trace_duration": "trace_s",
             "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower_s",
             "/jax/core/compile/backend_compile_duration": "xla_s"}
    acc = {v: 0.0 for v in kinds.values()}

    def listen(event, secs, **kw):
        if event in kinds:
            acc[kinds[event]] += secs

    monitoring.register_event_duration_secs_listener(listen)
    return acc


def one(family, d, method, moments_dir=MOMENTS, seed=0):
    """One run in this process: its JSON row (and its moments saved under moments_dir). `seed`
    (the sampler's; the model's data stay those of seed 0): rows of seeds other than 0 carry it
    and save no moments."""
    import resource

    import numpy as np

    t0 = time.perf_counter()
    clock = _compile_clock()
    if method in ("nuts-diag", "nuts-dense", "mclmc", "reference"):
        import jax

        jax.config.update("jax_enable_x64", True)  # the peers in float64, as inertia
    model, args = model_and_data(family, d)
    if method in ("sample", "sample-low-rank", "fit"):
        out, mom = run_inertia(method, model, args, seed)
    elif method == "mclmc":
        out, mom = run_mclmc(model, args)
    elif method == "reference":
        out, mom = run_nuts(False, model, args, draws=5000, seed=7)
    else:
        out, mom = run_nuts(method == "nuts-dense", model, args, seed=10 * seed)
    wall = time.perf_counter() - t0
    row = {"family": family, "d": d, "dim": dim_of(family, d), "method": method,
           "wall_s": round(wall, 2),
           "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
           **{k: round(v, 2) for k, v in clock.items()}, **out}
    if seed:
        row["seed"] = seed
    if row.get("ess"):
        row["grads_per_ess"] = round(row["grads"] / row["ess"], 2)
    if row.get("grads"):
        row["ms_per_grad"] = round(1e3 * wall / row["grads"], 4)  # first run: compile included
    if moments_dir and not seed:
        os.makedirs(moments_dir, exist_ok=True)
        np.savez_compressed(os.path.join(moments_dir, f"{family}_{d}_{method}.npz"),
                            **{k: np.asarray(v, np.float64) for k, v in mom.items()})
    return row


def errors(row, moments_dir=MOMENTS):
    """Errors of a run's moments against the reference run of its family and d (None if either
    is missing): max |mean - ref| / ref sd, max |sd / ref sd - 1|, and the largest standardised
    mean difference |mean - ref| / sqrt(mcse^2 + mcse_ref^2) with its Bonferroni threshold."""
    import numpy as np
    from scipy.stats import norm

    def load(method):
        path = os.path.join(moments_dir, f"{row['family']}_{row['d']}_{method}.npz")
        return dict(np.load(path)) if os.path.exists(path) else None

    ref, ref_name = load("reference"), "reference"
    if ref is None:  # no long run at this d: the diagonal NUTS run, an independent sampler
        ref, ref_name = load("nuts-diag"), "nuts-diag"
    mom = load(row["method"])
    if row["method"] == ref_name or ref is None or mom is None or "error" in row:
        return None
    if np.shape(mom["mean"]) != np.shape(ref["mean"]):
        return None
    out = {"ref": ref_name,
           "mean_err_sd": float(np.max(np.abs(mom["mean"] - ref["mean"]) / ref["sd"]))}
    if "sd" in mom:
        out["sd_rel_err"] = float(np.max(np.abs(mom["sd"] / ref["sd"] - 1.0)))
    if "mcse" in mom:
        z = np.abs(mom["mean"] - ref["mean"]) / np.sqrt(mom["mcse"] ** 2 + ref["mcse"] ** 2)
        out["max_z"] = float(np.max(z))
        out["z_bound"] = float(norm.isf(0.005 / z.size))  # two-sided 0.01, Bonferroni over d
        out["consistent"] = bool(out["max_z"] <= out["z_bound"])
    return out


def load_rows(path):
    """Rows of a results file: a JSON list, or JSON lines."""
    if not path or not os.path.exists(path):
        return []
    with open(path) as fh:
        text = fh.read().strip()
    if not text:
        return []
    if text.startswith("["):
        return json.loads(text)
    return [json.loads(ln) for ln in text.splitlines() if ln.strip()]


def _key(row):
    return row["family"], row["d"], row["method"], row.get("seed", 0)


def save_row(path, row):
    """Put `row` into the JSON list at `path`, replacing a row of the same family, d, method and
    seed."""
    rows = [r for r in load_rows(path) if _key(r) != _key(row)] + [row]
    rows.sort(key=lambda r: (FAMILIES.index(r["family"]), r["d"], METHODS.index(r["method"]),
                             r.get("seed", 0)))
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(rows, fh, indent=1)
    os.replace(tmp, path)


def run_grid(families, dims, methods, out, timeout, max_dense_d, moments_dir, max_ref_d,
             seeds=(0,)):
    rows = []
    for d in dims:
        for family in families:
            for method, seed in ((m, s) for m in methods for s in seeds):
                if method == "reference" and seed:
                    continue
                if method == "nuts-dense" and d > max_dense_d:
                    continue
                if method == "reference" and d > max_ref_d:
                    continue
                env = dict(os.environ, INERTIA_JAX_CACHE="off", JAX_COMPILATION_CACHE_DIR="")
                cmd = [sys.executable, os.path.abspath(__file__), "--one", family, str(d), method,
                       "--moments", moments_dir or "", "--seed", str(seed)]
                t0 = time.perf_counter()
                try:
                    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
                    line = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
                    row = (json.loads(line[-1]) if line else
                           {"family": family, "d": d, "method": method,
                            **({"seed": seed} if seed else {}),
                            "wall_s": round(time.perf_counter() - t0, 2),
                            "error": (p.stderr.strip().splitlines() or ["no output"])[-1][:300]})
                except subprocess.TimeoutExpired:
                    row = {"family": family, "d": d, "method": method,
                           **({"seed": seed} if seed else {}),
                           "error": f"over {timeout:.0f} s", "wall_s": round(time.perf_counter() - t0)}
                rows.append(row)
                print(json.dumps(row), flush=True)
                if out:
                    save_row(out, row)
    return rows


def _fmt(v, spec):
    return "-" if v is None else format(v, spec)


def _compile_s(row):
    """Seconds of tracing, lowering and XLA compilation in a row (None if not measured)."""
    return None if "xla_s" not in row else row["trace_s"] + row["lower_s"] + row["xla_s"]


def table(rows, moments_dir=MOMENTS):
    """Markdown table of the rows: cost, memory, compilation, verdict and errors."""
    lines = ["| family | d | method | gradients | grads/ESS | wall s | compile s | peak MB | verdict "
             "| against | mean err (ref sd) | sd rel err | max z / bound |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        e = errors(r, moments_dir) or {}
        comp = _compile_s(r)
        verdict = r.get("error") or ("converged" if r.get("converged") else "NOT converged")
        z = (f"{e['max_z']:.1f} / {e['z_bound']:.1f}" if "max_z" in e else "-")
        lines.append(f"| {r['family']} | {dim_of(r['family'], r['d'])} | {r['method']} "
                     f"| {_fmt(r.get('grads'), ',')} "
                     f"| {_fmt(r.get('grads_per_ess'), '.1f')} | {_fmt(r.get('wall_s'), '.0f')} "
                     f"| {_fmt(comp, '.0f')} | {_fmt(r.get('peak_rss_mb'), '.0f')} | {verdict} "
                     f"| {e.get('ref', '-')} "
                     f"| {_fmt(e.get('mean_err_sd'), '.3f')} | {_fmt(e.get('sd_rel_err'), '.3f')} "
                     f"| {z} |")
    return "\n".join(lines)


def goals(rows, method="sample", peer="nuts-diag"):
    """Markdown table of `method` against `peer` per family and d: ratios of gradients per ESS,
    first-run wall time, wall time less compilation, and peak memory (goals: <= 0.5 for the
    gradients and the first-run wall time, <= 2 for the memory; the run converged)."""
    by = {(r["family"], r["d"], r["method"]): r for r in rows if "error" not in r}
    lines = [f"| family | d | {method} / {peer} grads per ESS | wall | wall less compilation "
             "| peak memory | goals met |", "|---|---|---|---|---|---|---|"]
    for (fam, d, m), r in sorted(by.items(), key=lambda kv: (FAMILIES.index(kv[0][0]), kv[0][1])):
        p = by.get((fam, d, peer))
        if m != method or p is None or not r.get("grads_per_ess") or not p.get("grads_per_ess"):
            continue
        g = r["grads_per_ess"] / p["grads_per_ess"]
        w = r["wall_s"] / p["wall_s"]
        mem = r["peak_rss_mb"] / p["peak_rss_mb"]
        run = (None if "xla_s" not in r or "xla_s" not in p else
               (r["wall_s"] - _compile_s(r)) / (p["wall_s"] - _compile_s(p)))
        met = g <= 0.5 and w <= 0.5 and mem <= 2 and r.get("converged")
        lines.append(f"| {fam} | {dim_of(fam, d)} | {g:.2f} | {w:.2f} | {_fmt(run, '.2f')} "
                     f"| {mem:.2f} "
                     f"| {'yes' if met else 'no'} |")
    return "\n".join(lines)


def _by_seed(values: dict) -> str:
    return ", ".join(f"{values[s]:.1f}" for s in sorted(values))


def seed_table(rows, method="sample", peer="nuts-diag"):
    """Markdown table of gradients per ESS over seeds where `method` and `peer` ran with two or
    more: each one's values by seed, and the ratio of their medians."""
    import statistics

    runs = {}
    for r in rows:
        if "error" not in r and r.get("grads_per_ess") and r["method"] in (method, peer):
            runs.setdefault((r["family"], r["d"]), {}).setdefault(r["method"], {})[
                r.get("seed", 0)] = r["grads_per_ess"]
    lines = [f"| family | d | {method} grads per ESS, by seed | {peer}, by seed "
             "| ratio of medians |", "|---|---|---|---|---|"]
    for (fam, d), by in sorted(runs.items(), key=lambda kv: (FAMILIES.index(kv[0][0]), kv[0][1])):
        a, b = by.get(method, {}), by.get(peer, {})
        if len(a) < 2 or len(b) < 2:
            continue
        ratio = statistics.median(a.values()) / statistics.median(b.values())
        lines.append(f"| {fam} | {dim_of(fam, d)} | {_by_seed(a)} | {_by_seed(b)} | {ratio:.2f} |")
    return "\n".join(lines)


LABELS = {"sample": "inertia sample", "sample-low-rank": "inertia sample (low-rank forced)",
          "fit": "inertia fit", "nuts-diag": "NUTS diagonal", "nuts-dense": "NUTS dense",
          "mclmc": "BlackJAX MCLMC", "reference": "reference NUTS (5,000 draws)"}


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fams = [f for f in FAMILIES if any(r["family"] == f for r in rows)]
    fig, axes = plt.subplots(2, len(fams), figsize=(4.5 * len(fams), 7.5), squeeze=False)
    for j, fam in enumerate(fams):
        for method in METHODS:
            if method == "reference":
                continue
            rs = sorted((r for r in rows if r["family"] == fam and r["method"] == method
                         and "error" not in r), key=lambda r: r["d"])
            for i, key in enumerate(("grads_per_ess", "wall_s")):
                pts = [(dim_of(fam, r["d"]), r[key]) for r in rs if r.get(key)]
                if pts:
                    open_ = [p for p, r in zip(pts, [r for r in rs if r.get(key)])
                             if not r.get("converged")]
                    color = f"C{METHODS.index(method)}"  # one colour per method in every panel
                    axes[i, j].loglog(*zip(*pts), "o-", label=LABELS[method], color=color)
                    if open_:  # not converged: hollow markers over the line
                        axes[i, j].loglog(*zip(*open_), "o", mfc="white", color=color)
        axes[0, j].set_title(fam)
        axes[0, j].set_ylabel("gradients per ESS (warm-up included)")
        axes[1, j].set_ylabel("first-run wall time, s (fresh process)")
        axes[1, j].set_xlabel("d")
    handles = {}
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    fig.legend(handles.values(), handles.keys(), loc="lower center", ncol=len(handles), fontsize=8)
    fig.suptitle("cost against d (hollow: not converged; fit has no ESS)", fontsize=9)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(path, dpi=110)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--families", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    ap.add_argument("--dims", nargs="+", type=int, default=list(DIMS))
    ap.add_argument("--methods", nargs="+", default=list(DEFAULT_METHODS) + ["reference"],
                    choices=METHODS)
    ap.add_argument("--max-dense-d", type=int, default=1000)
    ap.add_argument("--max-ref-d", type=int, default=1000, help="largest d of the reference runs")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per run")
    ap.add_argument("--json", default=None, help="results file (a JSON list; rows replaced by key)")
    ap.add_argument("--moments", default=MOMENTS, help="folder of each run's moments ('' : none)")
    ap.add_argument("--plot", default=None)
    ap.add_argument("--report", default=None, help="tables (and --plot) of a saved run")
    ap.add_argument("--seeds", nargs="+", type=int, default=[0],
                    help="samplers' seeds (the data are seed 0's); the tables and the plot are "
                         "seed 0's, the seed table the spread over all")
    ap.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--one", nargs=3, metavar=("FAMILY", "D", "METHOD"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.one:
        print(json.dumps(one(a.one[0], int(a.one[1]), a.one[2], a.moments, a.seed)), flush=True)
        return
    if a.report:
        rows = load_rows(a.report)
    else:
        rows = run_grid(a.families, a.dims, a.methods, a.json, a.timeout, a.max_dense_d,
                        a.moments, a.max_ref_d, a.seeds)
    first = [r for r in rows if not r.get("seed")]
    print(table(first, a.moments))
    print()
    print(goals(first))
    if any(r.get("seed") for r in rows):
        print()
        print(seed_table(rows))
    if a.plot:
        plot(first, a.plot)


if __name__ == "__main__":
    main()
