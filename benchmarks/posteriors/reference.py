"""Reference means and sds of the suite's named quantities, with their Monte Carlo standard errors.

Exact where the law is known (banana, funnel, mixture: closed-form moments; scaled-linear and
gp-gaussian: Gaussian posteriors by linear algebra; MCSE 0). Otherwise one long NumPyro NUTS run
on the target's potential: dense mass matrix, target_accept_prob 0.95, 4 chains x (2 000 warm-up
+ 20 000 draws), R-hat <= 1.01 checked; means, sds, ArviZ MCSEs and bulk ESS stored per quantity.
The centred models (eight schools, hier-linear-8, multilevel-40, schools-t) take their non-centred
twins' references (the same posteriors, `models.SHARED_REFERENCE`).
Run: `OPENBLAS_NUM_THREADS=1 python benchmarks/posteriors/reference.py [names...] [--force]`;
writes benchmarks/results/posteriors_reference.json (resumable per posterior).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

import jax  # noqa: E402
import numpy as np  # noqa: E402

from models import NAMES, SHARED_REFERENCE, load  # noqa: E402
from samplers import max_rhat, min_ess, summarise  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "posteriors_reference.json"
WARMUP, DRAWS, CHAINS = 2000, 20000, 4


def exact_reference(post):
    q = {k: {"mean": post.exact["mean"][k], "sd": post.exact["sd"][k], "mcse_mean": 0.0,
             "mcse_sd": 0.0, "ess_bulk": None} for k in post.exact["mean"]}
    return {"how": "exact (closed form)", "quantities": q}


def nuts_reference(post, seed=0, warmup=WARMUP, draws=DRAWS):
    from numpyro.infer import MCMC, NUTS

    from samplers import init_points

    kern = NUTS(potential_fn=post.target.potential, dense_mass=True, target_accept_prob=0.95)
    mc = MCMC(kern, num_warmup=warmup, num_samples=draws, num_chains=CHAINS,
              chain_method="sequential", progress_bar=False)
    t0 = time.perf_counter()
    mc.run(jax.random.PRNGKey(1000 + seed), init_params=init_points(post, CHAINS, 1000 + seed),
           extra_fields=("diverging", "num_steps"))
    wall = time.perf_counter() - t0
    x = np.asarray(mc.get_samples(group_by_chain=True))
    ef = mc.get_extra_fields()
    s = summarise(post, x)
    q = {k: {kk: v[kk] for kk in ("mean", "sd", "mcse_mean", "mcse_sd", "ess_bulk")}
         for k, v in s.items()}
    return {"how": f"NumPyro NUTS, dense mass, target_accept_prob 0.95, {CHAINS} chains x "
                   f"({warmup} warm-up + {draws} draws)",
            "min_ess_bulk": min_ess(s), "max_rhat": max_rhat(s),
            "divergences": int(np.sum(np.asarray(ef["diverging"]))),
            "mean_tree_steps": float(np.mean(np.asarray(ef["num_steps"]))),
            "seconds": wall, "quantities": q}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=list(NAMES))
    ap.add_argument("--force", action="store_true", help="redo references already stored")
    ap.add_argument("--draws", type=int, default=DRAWS)
    ap.add_argument("--out", default=str(OUT))
    a = ap.parse_args(argv)
    out = Path(a.out)
    refs = json.loads(out.read_text()) if out.exists() else {}
    done = set()
    for name in a.names:
        name = SHARED_REFERENCE.get(name, name)  # a centred model: its non-centred twin's run
        if (name in refs and not a.force) or name in done:
            continue
        done.add(name)
        post = load(name)
        t0 = time.perf_counter()
        refs[name] = exact_reference(post) if post.exact else nuts_reference(post, draws=a.draws)
        r = refs[name]
        print(f"{name:26s} {r['how']}: {time.perf_counter() - t0:.0f} s, min ESS "
              f"{r.get('min_ess_bulk')}, max R-hat {r.get('max_rhat')}, divergences "
              f"{r.get('divergences')}", flush=True)
        if r.get("max_rhat", 1.0) > 1.01:
            print(f"  WARNING: {name}: R-hat {r['max_rhat']:.4f} > 1.01", flush=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(refs, indent=1, sort_keys=True))
    for name, src in SHARED_REFERENCE.items():
        if src in refs:
            refs[name] = dict(refs[src], how=refs[src]["how"] + f" (of {src}: the same posterior)")
    out.write_text(json.dumps(refs, indent=1, sort_keys=True))
    return refs


if __name__ == "__main__":
    main()
