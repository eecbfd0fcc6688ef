"""User models with constrained sites of seven kinds: default `fit` and `sample` against NumPyro NUTS.

Simplex (Dirichlet), LKJ Cholesky factor, Student-t with HalfCauchy / Gamma, a 40-group hierarchical
logistic, ordered cut-points, Poisson, beta-binomial, and a 100-group hierarchical logistic (where
`fit` switches to ngvi-reparam). Reference: NUTS, 1 000 + 2 000 draws. Reported
per model: wall seconds of fit and sample (Python API, one process, compilation included, with
an empty compilation cache unless INERTIA_JAX_CACHE is set), the
sampler's verdict, and the largest |mean error| / reference sd over each site's coordinates for
the sampler and for draws of the fitted Gaussian (VI), and the sampler's largest relative sd error.
Run: python benchmarks/user_models.py [--json benchmarks/results/user_models.json] [names...]
"""
import argparse
import json
import os
import sys
import tempfile
import time
import traceback
import warnings

# an empty compilation cache, so that every time below is a new model's first run
os.environ.setdefault("INERTIA_JAX_CACHE", tempfile.mkdtemp(prefix="inertia-user-models-"))

import jax
import jax.numpy as jnp
import numpy as np

import inertia.config

inertia.config.enable_x64()  # this script's own JAX arrays (and peers') in float64

import inertia  # noqa: F401  (float64)
import numpyro
import numpyro.distributions as dist
from numpyro.infer import MCMC, NUTS

from inertia.mcmc import sample
from inertia.targets import from_numpyro
from inertia.vi import fit

rng = np.random.default_rng(1)

def dirichlet_multinomial(counts):
    p = numpyro.sample("p", dist.Dirichlet(jnp.ones(4)))
    numpyro.sample("y", dist.Multinomial(total_count=counts.sum(), probs=p), obs=counts)
counts = jnp.array([12., 30., 5., 53.])

def lkj_mvn(y):
    d = y.shape[1]
    L = numpyro.sample("L", dist.LKJCholesky(d, 2.0))
    s = numpyro.sample("s", dist.HalfNormal(2.0).expand([d]).to_event(1))
    mu = numpyro.sample("mu", dist.Normal(0, 5).expand([d]).to_event(1))
    numpyro.sample("y", dist.MultivariateNormal(mu, scale_tril=s[:, None] * L), obs=y)
Ymv = rng.multivariate_normal([1, -1, 0], [[1, .6, .2], [.6, 2, -.3], [.2, -.3, .5]], size=100)

def student_t(x, y):
    a = numpyro.sample("a", dist.Normal(0, 10)); b = numpyro.sample("b", dist.Normal(0, 10))
    s = numpyro.sample("s", dist.HalfCauchy(2.0)); nu = numpyro.sample("nu", dist.Gamma(2.0, 0.1))
    numpyro.sample("y", dist.StudentT(nu, a + b * x, s), obs=y)
xt = rng.normal(size=80); yt = 1 + 2 * xt + rng.standard_t(3, size=80)

def hier_logistic(g, x, y, G):
    mu = numpyro.sample("mu", dist.Normal(0, 2)); tau = numpyro.sample("tau", dist.HalfNormal(1.0))
    with numpyro.plate("G", G):
        z = numpyro.sample("z", dist.Normal(0, 1))
    beta = numpyro.sample("beta", dist.Normal(0, 2))
    numpyro.sample("y", dist.Bernoulli(logits=mu + tau * z[g] + beta * x), obs=y)
G = 40; gh = rng.integers(0, G, size=600); xh = rng.normal(size=600)
yh = (rng.uniform(size=600) < 1 / (1 + np.exp(-(0.3 + 0.8 * rng.normal(size=G)[gh] + 0.5 * xh)))).astype(float)

def ordered(x, y):
    b = numpyro.sample("b", dist.Normal(0, 3))
    c = numpyro.sample("c", dist.TransformedDistribution(dist.Normal(0, 3).expand([3]),
                                                          dist.transforms.OrderedTransform()))
    numpyro.sample("y", dist.OrderedLogistic(b * x, c), obs=y)
xo = rng.normal(size=300); lat = 1.2 * xo + rng.logistic(size=300)
yo = jnp.asarray(np.digitize(lat, [-1, 0, 1.5]))

def poisson_offset(x, y):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([3]).to_event(1))
    numpyro.sample("y", dist.Poisson(jnp.exp(x @ w)), obs=y)
xp = rng.normal(size=(200, 3)) * 0.5; yp = rng.poisson(np.exp(xp @ np.array([0.5, -0.3, 1.0])))

def beta_binomial(n, y):
    a = numpyro.sample("a", dist.Gamma(2, 0.1)); b = numpyro.sample("b", dist.Gamma(2, 0.1))
    with numpyro.plate("N", len(n)):
        th = numpyro.sample("th", dist.Beta(a, b))
        numpyro.sample("y", dist.Binomial(n, th), obs=y)
nb = jnp.array([20, 30, 25, 40, 12, 50, 33, 18]); yb = jnp.array([3, 8, 5, 12, 1, 15, 9, 2])

# 100 groups, 2 000 rows (d = 103; its own generator): the whitened kappa_hat is >= 1e4, so `fit`
# switches to ngvi-reparam
_r2 = np.random.default_rng(0)
G2 = 100; gh2 = _r2.integers(0, G2, 2000); xh2 = _r2.normal(size=2000)
yh2 = _r2.binomial(1, 1 / (1 + np.exp(-(_r2.normal(0, 0.7, G2)[gh2] + 0.8 * xh2)))).astype(float)

MODELS = {
    "dirichlet": (dirichlet_multinomial, (counts,), {}),
    "lkj-mvn": (lkj_mvn, (jnp.asarray(Ymv),), {}),
    "student-t": (student_t, (jnp.asarray(xt), jnp.asarray(yt)), {}),
    "hier-logistic": (hier_logistic, (jnp.asarray(gh), jnp.asarray(xh), jnp.asarray(yh), G), {}),
    "ordered": (ordered, (jnp.asarray(xo), yo), {}),
    "poisson": (poisson_offset, (jnp.asarray(xp), jnp.asarray(yp)), {}),
    "beta-binomial": (beta_binomial, (nb, yb), {}),
    "hier-logistic-100": (hier_logistic, (jnp.asarray(gh2), jnp.asarray(xh2), jnp.asarray(yh2), G2),
                          {}),
}


def errors(ref, draws):
    """Per site: largest |mean error| / sd and largest |sd / sd_ref - 1| (constant coordinates out)."""
    out = {}
    for k, v in ref.items():
        if k not in draws:
            continue
        v, w = v.reshape(len(v), -1), np.asarray(draws[k]).reshape(len(draws[k]), -1)
        sd = v.std(0)
        live = sd > 1e-12
        out[k] = (float(np.max(np.abs(w.mean(0) - v.mean(0))[live] / sd[live])),
                  float(np.max(np.abs(w.std(0)[live] / sd[live] - 1))))
    return out


def run(name, vi_method=None, with_sample=True):
    model, args, kw = MODELS[name]
    mc = MCMC(NUTS(model), num_warmup=1000, num_samples=2000, progress_bar=False)
    mc.run(jax.random.PRNGKey(0), *args, **kw)
    ref = {k: np.asarray(v) for k, v in mc.get_samples().items()}
    t = from_numpyro(model, *args, **kw)
    row = {"model": name, "dim": t.dim}
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        r = fit(t, vi_method, seed=0)
        row["fit_s"] = time.perf_counter() - t0
    row["fit_stopped"] = r.verdict.numbers.get("stop")
    row["fit_method"] = r.method
    row["fit_objective"] = r.final_objective
    q = r.constrain(np.random.default_rng(0).multivariate_normal(r.mean, r.cov, size=4000))
    row["vi"] = errors(ref, q)
    if not with_sample:
        return row
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        s = sample(t, seed=0)
        row["sample_s"] = time.perf_counter() - t0
    row["sample_converged"] = bool(s.converged)
    row["sample_steps"] = int(s.num_steps)
    row["sample_verdict"] = s.diagnostics.line() if s.diagnostics else None
    row["sample"] = errors(ref, t.info["constrain"](np.asarray(s.draws).reshape(-1, t.dim)))
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=list(MODELS))
    ap.add_argument("--json", default=None)
    ap.add_argument("--vi-method", default=None, help="fit's method (default: automatic)")
    ap.add_argument("--no-sample", action="store_true", help="VI only")
    a = ap.parse_args(argv)
    rows = []
    for name in a.names:
        try:
            row = run(name, a.vi_method, not a.no_sample)
        except Exception as err:  # a crash is a finding: record it and go on
            traceback.print_exc(limit=3)
            row = {"model": name, "error": f"{type(err).__name__}: {err}"}
        rows.append(row)
        if "error" in row:
            print(f"{name:14s} FAILED {row['error'][:200]}", flush=True)
            continue
        vi = max(v[0] for v in row["vi"].values())
        if "sample" not in row:
            print(f"{name:14s} d={row['dim']:3d} fit {row['fit_s']:5.1f}s {row['fit_method']} "
                  f"F_hat {row['fit_objective']} VI mean err {vi:.3f} sd err "
                  f"{max(v[1] for v in row['vi'].values()):.3f}", flush=True)
            continue
        sm = max(v[0] for v in row["sample"].values())
        ss = max(v[1] for v in row["sample"].values())
        print(f"{name:14s} d={row['dim']:3d} fit {row['fit_s']:5.1f}s VI mean err {vi:.3f} | "
              f"sample {row['sample_s']:5.1f}s {row['sample_steps']:6d} steps "
              f"{'converged' if row['sample_converged'] else 'NOT CONVERGED'}, mean err {sm:.3f}, "
              f"sd err {ss:.3f}", flush=True)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return rows


if __name__ == "__main__":
    main()
