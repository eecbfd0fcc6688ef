"""Robustness posteriors of the warm-up: models nobody here tuned the sampler on, as written.

- gp_pois_regr: posteriordb `gp_pois_regr-gp_pois_regr` (Poisson GP latent field, d = 13);
- accel_gp: posteriordb `mcycle_gp-accel_gp` (brms Hilbert-space approximate GP, d = 66);
- horseshoe: regularised horseshoe logistic regression (Piironen & Vehtari 2017), n = 300,
  p = 200, d = 403, simulated data;
- irt-centred: two-parameter logistic IRT written centred, J = 1,000 x K = 20, d = 1,044.

References: posteriordb's reference draws (gp_pois_regr; f_tilde = L^-1 f per draw) and summary
statistics (accel_gp); long float64 NUTS runs (horseshoe, IRT: `--reference`, stored in
benchmarks/results/robust_reference.json). Per posterior and sampler: converged, the largest
|mean - ref| / ref sd and |sd - ref sd| / ref sd, and gradients per bulk ESS (warm-up included).
Gradients per ESS are deterministic for a seed.

Run: `OPENBLAS_NUM_THREADS=1 python benchmarks/robust.py [names] [--methods inertia,nuts-dense]
[--posteriordb DIR] [--json out.json]` (DIR: a posteriordb checkout, for the references).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE / "posteriors"))
sys.path.insert(0, str(ROOT))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import numpyro  # noqa: E402
import numpyro.distributions as dist  # noqa: E402
from numpyro.distributions import constraints  # noqa: E402

from models import HARD, Posterior  # noqa: E402
from samplers import max_rhat, min_ess, run_nuts, summarise  # noqa: E402

from inertia.targets import from_numpyro  # noqa: E402

REF = ROOT / "benchmarks" / "results" / "robust_reference.json"
PDB = "posterior_database"


# ---------------------------------------------------------------- models
def gp_pois_regr(x, k):
    rho = numpyro.sample("rho", dist.Gamma(25.0, 4.0))
    alpha = numpyro.sample("alpha", dist.HalfNormal(2.0))
    f_tilde = numpyro.sample("f_tilde", dist.Normal(0.0, 1.0).expand([x.shape[0]]))
    d2 = (x[:, None] - x[None, :]) ** 2
    cov = alpha ** 2 * jnp.exp(-0.5 * d2 / rho ** 2) + 1e-10 * jnp.eye(x.shape[0])
    f = jnp.linalg.cholesky(cov) @ f_tilde
    numpyro.sample("k", dist.Poisson(jnp.exp(f)), obs=k)


def _half_t(name, df, scale):
    """A positive site with a half-Student-t prior, as Stan writes it (real<lower=0> + lpdf)."""
    v = numpyro.sample(name, dist.ImproperUniform(constraints.positive, (), ()))
    numpyro.factor(name + "_prior", dist.StudentT(df, 0.0, scale).log_prob(v) + jnp.log(2.0))
    return v


def _gpa(X, sdgp, lscale, z, slambda):
    spd = sdgp ** 2 * jnp.sqrt(2 * jnp.pi) * lscale * jnp.exp(-0.5 * lscale ** 2 * slambda ** 2)
    return X @ (jnp.sqrt(spd) * z)


def accel_gp(Y, X1, s1, X2, s2):
    icpt = numpyro.sample("Intercept", dist.StudentT(3.0, -13.0, 36.0))
    sd1 = _half_t("sdgp_1", 3.0, 36.0)
    ls1 = numpyro.sample("lscale_1", dist.InverseGamma(1.124909, 0.0177))
    z1 = numpyro.sample("zgp_1", dist.Normal(0.0, 1.0).expand([X1.shape[1]]))
    icpt_s = numpyro.sample("Intercept_sigma", dist.StudentT(3.0, 0.0, 10.0))
    sd2 = _half_t("sdgp_sigma_1", 3.0, 36.0)
    ls2 = numpyro.sample("lscale_sigma_1", dist.InverseGamma(1.124909, 0.0177))
    z2 = numpyro.sample("zgp_sigma_1", dist.Normal(0.0, 1.0).expand([X2.shape[1]]))
    mu = icpt + _gpa(X1, sd1, ls1, z1, s1)
    sigma = jnp.exp(icpt_s + _gpa(X2, sd2, ls2, z2, s2))
    numpyro.sample("Y", dist.Normal(mu, sigma), obs=Y)


def horseshoe(X, y, p0=10.0, slab_scale=2.0, slab_df=4.0):
    n, p = X.shape
    tau0 = p0 / (p - p0) * 2.0 / np.sqrt(n)  # pseudo-sigma 2 for the logistic likelihood
    tau = numpyro.sample("tau", dist.HalfCauchy(tau0))
    lam = numpyro.sample("lambda", dist.HalfCauchy(1.0).expand([p]))
    c2 = numpyro.sample("c2", dist.InverseGamma(0.5 * slab_df, 0.5 * slab_df * slab_scale ** 2))
    z = numpyro.sample("z", dist.Normal(0.0, 1.0).expand([p]))
    lam_t = jnp.sqrt(c2 * lam ** 2 / (c2 + tau ** 2 * lam ** 2))
    beta = tau * lam_t * z
    a = numpyro.sample("a", dist.Normal(0.0, 5.0))
    numpyro.sample("y", dist.Bernoulli(logits=a + X @ beta), obs=y)


def horseshoe_data(n=300, p=200, seed=1):
    r = np.random.default_rng(seed)
    X = r.standard_normal((n, p))
    beta = np.zeros(p)
    beta[:8] = [2.0, -1.5, 1.5, -1.0, 1.0, -0.8, 0.8, 0.5]
    y = (r.random(n) < 1 / (1 + np.exp(-(0.3 + X @ beta)))).astype(np.float64)
    return jnp.asarray(X), jnp.asarray(y)


def irt_centred(jj, kk, y, J, K):
    theta = numpyro.sample("theta", dist.Normal(0.0, 1.0).expand([J]))
    mu_a = numpyro.sample("mu_a", dist.Normal(0.0, 1.0))
    sigma_a = numpyro.sample("sigma_a", dist.HalfNormal(1.0))
    mu_b = numpyro.sample("mu_b", dist.Normal(0.0, 1.0))
    sigma_b = numpyro.sample("sigma_b", dist.HalfNormal(1.0))
    log_a = numpyro.sample("log_a", dist.Normal(mu_a, sigma_a).expand([K]))
    b = numpyro.sample("b", dist.Normal(mu_b, sigma_b).expand([K]))
    logit = jnp.exp(log_a)[kk] * (theta[jj] - b[kk])
    numpyro.sample("y", dist.Bernoulli(logits=logit), obs=y)


def irt_data(J=1000, K=20, seed=2):
    r = np.random.default_rng(seed)
    theta = r.standard_normal(J)
    a = np.exp(0.2 + 0.3 * r.standard_normal(K))
    b = 0.5 * r.standard_normal(K)
    jj, kk = np.repeat(np.arange(J), K), np.tile(np.arange(K), J)
    y = (r.random(J * K) < 1 / (1 + np.exp(-a[kk] * (theta[jj] - b[kk])))).astype(np.float64)
    return jnp.asarray(jj), jnp.asarray(kk), jnp.asarray(y), J, K


# ---------------------------------------------------------------- references
def _pdb_json(pdb, path):
    """A posteriordb file (zipped or not) from a checkout directory or a bare git mirror."""
    import subprocess

    p = Path(pdb)
    if (p / PDB).exists():
        f = p / PDB / path
        if f.suffix == ".zip":
            with zipfile.ZipFile(f) as z:
                return json.loads(z.read(z.namelist()[0]))
        return json.loads(f.read_text())
    raw = subprocess.run(["git", "-C", str(p), "show", f"HEAD:{PDB}/{path}"], check=True,
                         capture_output=True).stdout
    if path.endswith(".zip"):
        import io

        with zipfile.ZipFile(io.BytesIO(raw)) as z:
            return json.loads(z.read(z.namelist()[0]))
    return json.loads(raw)


def gp_pois_regr_reference(pdb):
    """Means and sds of rho, alpha and f_tilde = L(rho, alpha)^-1 f over the reference draws."""
    data = _pdb_json(pdb, "data/data/gp_pois_regr.json.zip")
    x = np.asarray(data["x"], dtype=np.float64)
    chains = _pdb_json(pdb, "reference_posteriors/draws/draws/gp_pois_regr-gp_pois_regr.json.zip")
    rho = np.concatenate([c["rho"] for c in chains])
    alpha = np.concatenate([c["alpha"] for c in chains])
    f = np.stack([np.concatenate([c[f"f[{i + 1}]"] for c in chains]) for i in range(len(x))], 1)
    d2 = (x[:, None] - x[None, :]) ** 2
    ft = np.empty_like(f)
    for s in range(len(rho)):
        L = np.linalg.cholesky(alpha[s] ** 2 * np.exp(-0.5 * d2 / rho[s] ** 2) + 1e-10 * np.eye(len(x)))
        ft[s] = np.linalg.solve(L, f[s])
    q = {"rho": rho, "alpha": alpha, **{f"f_tilde[{i}]": ft[:, i] for i in range(len(x))}}
    return {k: {"mean": float(v.mean()), "sd": float(v.std(ddof=1))} for k, v in q.items()}


def accel_reference(pdb):
    """Means and sds from posteriordb's summary statistics (mean and mean of squares)."""
    base = "reference_posteriors/summary_statistics"
    m = _pdb_json(pdb, f"{base}/mean_value/mean_value/mcycle_gp-accel_gp.json")
    s = _pdb_json(pdb, f"{base}/mean_squared_value/mean_squared_value/mcycle_gp-accel_gp.json")
    out = {}
    for name, mu, sq in zip(m["names"], m["mean_value"], s["mean_squared_value"]):
        if "[" in name:  # Stan's 1-based index -> the site's 0-based one
            site, i = name[:-1].split("[")
            name = f"{site}[{int(i) - 1}]"
        out[name] = {"mean": float(mu), "sd": float(np.sqrt(max(sq - mu * mu, 0.0)))}
    return out


# ---------------------------------------------------------------- posteriors
def load(name, pdb=None):
    if name == "gp_pois_regr":
        data = _pdb_json(pdb, "data/data/gp_pois_regr.json.zip")
        args = (jnp.asarray(data["x"], dtype=jnp.float64), jnp.asarray(data["k"]))
        post = Posterior(name, HARD, from_numpyro(gp_pois_regr, *args, name=name),
                         "posteriordb gp_pois_regr-gp_pois_regr (d = 13)")
        return post, (gp_pois_regr_reference(pdb) if pdb else None)
    if name == "accel_gp":
        d = _pdb_json(pdb, "data/data/mcycle_gp.json.zip")
        args = tuple(jnp.asarray(d[k], dtype=jnp.float64) for k in
                     ("Y", "Xgp_1", "slambda_1", "Xgp_sigma_1", "slambda_sigma_1"))
        args = (args[0], args[1], args[2][:, 0], args[3], args[4][:, 0])
        post = Posterior(name, HARD, from_numpyro(accel_gp, *args, name=name),
                         "posteriordb mcycle_gp-accel_gp (d = 66)")
        return post, (accel_reference(pdb) if pdb else None)
    stored = json.loads(REF.read_text()) if REF.exists() else {}
    if name == "horseshoe":
        post = LogScales(name, HARD, from_numpyro(horseshoe, *horseshoe_data(), name=name),
                         "regularised horseshoe logistic, n = 300, p = 200 (d = 403)")
        return post, stored.get(name)
    if name == "irt-centred":
        post = Posterior(name, HARD, from_numpyro(irt_centred, *irt_data(), name=name),
                         "IRT 2PL centred, J = 1,000 x K = 20 (d = 1,044)")
        return post, stored.get(name)
    raise ValueError(name)


class LogScales(Posterior):
    """A posterior judged on the logs of its positive sites (half-Cauchy scales have no finite
    moments)."""

    positive = ("tau", "lambda", "c2")

    def named(self, x):
        out = super().named(x)
        pos = lambda k: k.split("[")[0] in self.positive  # noqa: E731
        return {(f"log {k}" if pos(k) else k): (np.log(v) if pos(k) else v) for k, v in out.items()}


NAMES = ("gp_pois_regr", "accel_gp", "horseshoe", "irt-centred")


def errors(summary, ref):
    """Largest |mean - ref| / ref sd and |sd - ref sd| / ref sd, and where."""
    em, es, at_m, at_s = 0.0, 0.0, None, None
    for k, r in (ref or {}).items():
        if k not in summary or not r["sd"] > 1e-12:
            continue
        m = abs(summary[k]["mean"] - r["mean"]) / r["sd"]
        s = abs(summary[k]["sd"] - r["sd"]) / r["sd"]
        if not m <= em:
            em, at_m = m, k
        if not s <= es:
            es, at_s = s, k
    return em, at_m, es, at_s


def run_inertia(post, seed=0):
    from inertia.mcmc import sample

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sample(post.target, seed=seed)
    wall = time.perf_counter() - t0
    t = res.tuning or {}
    return {"draws": np.asarray(res._kept(None)), "grads": int(res.total_grad_evals),
            "wall_s": wall, "converged": bool(res.converged),
            "verdict": res.diagnostics.verdict() if res.diagnostics is not None else None,
            "detail": {"params": res.params, "num_steps": res.num_steps,
                       "warmup_grad_evals": int(res.warmup_grad_evals),
                       "precondition": t.get("precondition"),
                       "fit": {k: v for k, v in (t.get("fit") or {}).items()
                               if isinstance(v, (int, float, str, bool))},
                       "stage2_runs": t.get("stage2_runs"),
                       "windows": (t.get("fit") or {}).get("windows"),
                       "chains": res.chains}}


def run(name, method, pdb, seed=0):
    post, ref = load(name, pdb)
    if method == "inertia":
        out = run_inertia(post, seed)
    else:
        out = run_nuts(post, dense=method == "nuts-dense", seed=seed)
        out["converged"] = None
    s = summarise(post, out["draws"])
    ess, rhat = min_ess(s), max_rhat(s)
    if out["converged"] is None:
        div = out["detail"]["divergences"]
        out["converged"] = bool(rhat <= 1.01 and ess >= 100 and div == 0)
    em, at_m, es, at_s = errors(s, ref)
    row = {"posterior": name, "method": method, "converged": out["converged"],
           "right": bool(ref) and em <= 0.15 and es <= 0.15,
           "max_mean_err": em, "at_mean": at_m, "max_sd_err": es, "at_sd": at_s,
           "min_ess_bulk": ess, "max_rhat": rhat, "grads": out["grads"],
           "grads_per_ess": out["grads"] / max(ess, 1e-9), "wall_s": out["wall_s"],
           "verdict": out.get("verdict"), "detail": out["detail"]}
    return row, s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*", default=list(NAMES))
    ap.add_argument("--methods", default="inertia,nuts-dense")
    ap.add_argument("--posteriordb", default="/work/.mirror/stan-dev+posteriordb/repo")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None)
    ap.add_argument("--reference", action="store_true",
                    help="store a long diagonal NUTS run's means and sds as the reference")
    a = ap.parse_args()
    rows = []
    for name in a.names:
        if a.reference:
            post, _ = load(name, a.posteriordb)
            out = run_nuts(post, dense=False, seed=100 + a.seed, num_warmup=1500,
                           num_samples=2500, max_samples=5000, target_ess=2000.0)
            s = summarise(post, out["draws"])
            stored = json.loads(REF.read_text()) if REF.exists() else {}
            stored[name] = {k: {"mean": v["mean"], "sd": v["sd"]} for k, v in s.items()}
            REF.write_text(json.dumps(stored, indent=1))
            print(name, "reference: min ESS", min_ess(s), "max R-hat", max_rhat(s),
                  "divergences", out["detail"]["divergences"], flush=True)
            continue
        for method in a.methods.split(","):
            row, _ = run(name, method, a.posteriordb, a.seed)
            rows.append(row)
            print(f"{name:14s} {method:11s} converged={row['converged']!s:5s} "
                  f"right={row['right']!s:5s} mean_err={row['max_mean_err']:.3f} "
                  f"({row['at_mean']}) sd_err={row['max_sd_err']:.3f} ({row['at_sd']}) "
                  f"ESS={row['min_ess_bulk']:.0f} R-hat={row['max_rhat']:.3f} "
                  f"grads={row['grads']} grads/ESS={row['grads_per_ess']:.1f} "
                  f"wall={row['wall_s']:.0f}s", flush=True)
            if method == "inertia":
                print("   ", row["verdict"], "\n   ", json.dumps(row["detail"], default=str)[:1500],
                      flush=True)
            if a.json:
                Path(a.json).write_text(json.dumps(rows, indent=1, default=str))


if __name__ == "__main__":
    main()
