"""Wall time of a user's run, fresh process each, as the user types it: inertia's CLI vs NumPyro.

A three-site NumPyro regression model in a file plus a 200-row CSV (written to a temp folder):
  inertia fit    --model m.py:model --data d.csv          (automatic VI, prints the table)
  inertia sample --model m.py:model --data d.csv          (automatic HFHR, diagnostics)
  numpyro SVI    AutoMultivariateNormal + Adam(0.01), 5 000 steps (a script, fresh process)
  numpyro NUTS   4 chains (vectorized), 1 000 warm-up + 1 000 draws (a script, fresh process)
Each command runs `--repeats` times; the first run pays the compilation caches' misses (inertia's
cache starts empty: a new model's first run), the best of the rest is what a user re-running sees. Ratios are inertia / NumPyro in the same run.
Run: python benchmarks/user_run.py [--repeats 3] [--json benchmarks/results/user_run.json]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

MODEL = '''import numpyro, numpyro.distributions as dist
import jax.numpy as jnp


def model(x1, x2, y=None):
    a = numpyro.sample("a", dist.Normal(0, 5))
    b = numpyro.sample("b", dist.Normal(0, 5).expand([2]).to_event(1))
    sigma = numpyro.sample("sigma", dist.HalfNormal(2.0))
    mu = a + b[0] * jnp.asarray(x1) + b[1] * jnp.asarray(x2)
    numpyro.sample("y", dist.Normal(mu, sigma), obs=None if y is None else jnp.asarray(y))
'''

NUMPYRO = '''import sys, numpy as np, jax
jax.config.update("jax_enable_x64", True)
import numpyro, optax
sys.path.insert(0, "{folder}")
from m import model
d = np.loadtxt("{folder}/d.csv", delimiter=",", skiprows=1)
kw = dict(x1=d[:, 0], x2=d[:, 1], y=d[:, 2])
if "{what}" == "svi":
    from numpyro.infer import SVI, Trace_ELBO
    from numpyro.infer.autoguide import AutoMultivariateNormal
    guide = AutoMultivariateNormal(model)
    svi = SVI(model, guide, optax.adam(0.01), Trace_ELBO())
    res = svi.run(jax.random.PRNGKey(0), 5000, progress_bar=False, **kw)
    print(guide.median(res.params))
else:
    from numpyro.infer import MCMC, NUTS
    mcmc = MCMC(NUTS(model), num_warmup=1000, num_samples=1000, num_chains=4,
                chain_method="vectorized", progress_bar=False)
    mcmc.run(jax.random.PRNGKey(0), **kw)
    mcmc.print_summary()
'''


def _timed(cmd, env):
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "XLA_FLAGS")}
    with tempfile.TemporaryDirectory() as folder:
        env["INERTIA_JAX_CACHE"] = os.path.join(folder, "jax-cache")  # empty: a new model's run
        with open(os.path.join(folder, "m.py"), "w") as fh:
            fh.write(MODEL)
        rng = np.random.default_rng(0)
        x1, x2 = rng.normal(size=200), rng.normal(size=200)
        y = 1 + 2 * x1 - x2 + 0.5 * rng.normal(size=200)
        np.savetxt(os.path.join(folder, "d.csv"), np.c_[x1, x2, y], delimiter=",",
                   header="x1,x2,y", comments="")
        for what in ("svi", "nuts"):
            with open(os.path.join(folder, f"{what}.py"), "w") as fh:
                fh.write(NUMPYRO.format(folder=folder, what=what))
        model = os.path.join(folder, "m.py") + ":model"
        data = os.path.join(folder, "d.csv")
        cmds = {
            "inertia fit": [sys.executable, "-m", "inertia", "fit", "--model", model, "--data", data],
            "inertia sample": [sys.executable, "-m", "inertia", "sample", "--model", model,
                               "--data", data],
            "numpyro SVI (5000 steps)": [sys.executable, os.path.join(folder, "svi.py")],
            "numpyro NUTS (4 x 1000 + 1000)": [sys.executable, os.path.join(folder, "nuts.py")],
        }
        times = {name: [] for name in cmds}
        for _ in range(args.repeats):  # interleaved, so drifting load hits every command
            for name, cmd in cmds.items():
                times[name].append(_timed(cmd, env))
    rows = {name: {"first_s": t[0], "best_s": min(t[1:] or t), "all_s": t}
            for name, t in times.items()}
    ratios = {
        "fit / numpyro SVI": rows["inertia fit"]["best_s"] / rows["numpyro SVI (5000 steps)"]["best_s"],
        "sample / numpyro NUTS": rows["inertia sample"]["best_s"]
        / rows["numpyro NUTS (4 x 1000 + 1000)"]["best_s"],
        "first fit / first numpyro SVI": rows["inertia fit"]["first_s"]
        / rows["numpyro SVI (5000 steps)"]["first_s"],
        "first sample / first numpyro NUTS": rows["inertia sample"]["first_s"]
        / rows["numpyro NUTS (4 x 1000 + 1000)"]["first_s"],
    }
    out = {"rows": rows, "ratios": ratios, "loadavg": os.getloadavg()[0], "repeats": args.repeats}
    for name, r in rows.items():
        print(f"{name:32s} first {r['first_s']:6.1f} s   best of the rest {r['best_s']:6.1f} s")
    for k, v in ratios.items():
        print(f"{k}: {v:.2f}")
    print(f"load average {out['loadavg']:.1f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    return out


if __name__ == "__main__":
    main()
