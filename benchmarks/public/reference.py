"""References of the public suite's posteriors that have none published: one long float64 NumPyro
NUTS run each (4 chains x (1 000 warm-up + 2 500 draws), target_accept_prob 0.95, dense mass up
to d = 200 and diagonal above; a centred model with a non-centred twin is run as the twin, the
same posterior); per named quantity its mean, sd and MCSEs (inertia's diagnostics, ArviZ's
rules), 200 of the draws, and the run's R-hat, ESS and divergences.
Run: `nice -n 10 python benchmarks/public/reference.py [names...] [--force]`; writes
benchmarks/public/reference/<name>.npz (resumable per posterior).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import jax  # noqa: E402
import numpy as np  # noqa: E402

import catalogue  # noqa: E402
import stat_models as sm  # noqa: E402
from samplers import init_points, max_rhat, min_ess, stacked, summarise  # noqa: E402

WARMUP, DRAWS, CHAINS, KEEP = 1000, 2500, 4, 200
TWINS = {"hier_centred_50": (sm.hier_noncentred, sm.hier_centred_data),
         "GLMM_Poisson_data-GLMM_Poisson_model": (sm.glmm_poisson_noncentred,
                                                  lambda: catalogue.load_data("GLMM_Poisson_data")),
         "irt_2pl-irt_2pl": (sm.irt_2pl_noncentred, lambda: catalogue.load_data("irt_2pl")),
         "radon_mn-radon_hierarchical_intercept_centered": (
             sm.radon_hierarchical_intercept_noncentred, lambda: catalogue.load_data("radon_mn")),
         "radon_mn-radon_variable_intercept_slope_centered": (
             sm.radon_variable_intercept_slope_noncentred, lambda: catalogue.load_data("radon_mn"))}


def run(name, seed=2024, warmup=WARMUP, draws=DRAWS):
    from numpyro.infer import MCMC, NUTS

    if name in TWINS:
        model, data = TWINS[name]
        post = catalogue._numpyro(name + "-twin", model, (data(),))
    else:
        post = catalogue.load(name)
    dense = post.dim <= 200
    kern = NUTS(potential_fn=post.target.potential, dense_mass=dense, target_accept_prob=0.95)
    mc = MCMC(kern, num_warmup=warmup, num_samples=draws, num_chains=CHAINS,
              chain_method="sequential", progress_bar=False)
    t0 = time.perf_counter()
    mc.run(jax.random.PRNGKey(seed), init_params=init_points(post, CHAINS, seed),
           extra_fields=("diverging",))
    wall = time.perf_counter() - t0
    x = np.asarray(mc.get_samples(group_by_chain=True))
    div = int(np.sum(np.asarray(mc.get_extra_fields()["diverging"])))
    s = summarise(post, x)
    names, q = stacked(post, x)
    flat = q.reshape(-1, q.shape[-1])
    how = (f"NumPyro NUTS float64, {'dense' if dense else 'diagonal'} mass, target_accept_prob "
           f"0.95, {CHAINS} chains x ({warmup} warm-up + {draws} draws)"
           + (" on the non-centred twin" if name in TWINS else ""))
    np.savez_compressed(
        HERE / "reference" / f"{name}.npz", names=np.asarray(names), how=np.asarray(how),
        mean=np.array([s[k]["mean"] for k in names]), sd=np.array([s[k]["sd"] for k in names]),
        mcse_mean=np.array([s[k]["mcse_mean"] for k in names]),
        mcse_sd=np.array([s[k]["mcse_sd"] for k in names]),
        draws=flat[::flat.shape[0] // KEEP][:KEEP], min_ess_bulk=np.asarray(min_ess(s)),
        max_rhat=np.asarray(max_rhat(s)), divergences=np.asarray(div), seconds=np.asarray(wall))
    print(f"{name}: d = {post.dim}, {wall:.0f} s, min bulk ESS {min_ess(s):.0f}, max R-hat "
          f"{max_rhat(s):.4f}, divergences {div}", flush=True)


def main(argv=None):
    todo = [e.name for e in catalogue.ENTRIES if e.reference == "NUTS"]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=todo)
    ap.add_argument("--force", action="store_true")
    a = ap.parse_args(argv)
    for name in a.names:
        if (HERE / "reference" / f"{name}.npz").exists() and not a.force:
            continue
        run(name)


if __name__ == "__main__":
    main()
