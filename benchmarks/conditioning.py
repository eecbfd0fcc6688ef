"""Extreme conditioning and latent fields: fit(target) and sample(target) with defaults.

Bayesian linear regressions y ~ N(a + b x, sigma) on uncentred, year-like covariates x = c + u
(u: 62 equally spaced values with sd 18, c chosen so that the posterior precision of (a, b) has
condition number kappa = 1e6, 1e9, 1e12), with the noise sd known (the posterior is exactly
Gaussian: exact mean and covariance, KL of q to it in closed form) and unknown (sigma ~ HalfNormal
prior; reference moments from a long NumPyro NUTS run in centred coordinates, exact there up to
Monte Carlo error). A latent Gaussian-process Poisson regression (d = 13, non-centred) against a
long NumPyro NUTS run with a dense mass matrix.

    python benchmarks/conditioning.py [--only regression|gp] [--out benchmarks/results/conditioning.json]
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import inertia.config  # noqa: E402

inertia.config.enable_x64()  # this script's own JAX arrays (and peers') in float64

import inertia  # noqa: E402,F401  (float64)
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

N_OBS = 62
SIGMA_TRUE = 1.13
PRIOR_A, PRIOR_B, PRIOR_SIGMA = 1e4, 10.0, 5.0


def offset_for(kappa: float, n: int = N_OBS) -> float:
    """c such that X^T X of [1, c + u] (u centred, equally spaced, sd 18) has condition kappa."""
    u = np.linspace(-31.0, 31.0, n)
    lo, hi = 0.0, 1e8
    for _ in range(200):
        c = math.sqrt(lo * hi) if lo > 0 else hi / 2
        X = np.c_[np.ones(n), c + u]
        w = np.linalg.eigvalsh(X.T @ X)
        if w[-1] / w[0] < kappa:
            lo = c
        else:
            hi = c
    return c


def regression_data(kappa: float, seed: int = 0):
    """(x, y): uncentred covariate with posterior-precision condition number ~kappa."""
    c = offset_for(kappa)
    x = c + np.linspace(-31.0, 31.0, N_OBS)
    rng = np.random.default_rng(seed)
    y = 9.3 + 0.035 * (x - c) + rng.normal(0.0, SIGMA_TRUE, N_OBS)
    return x, y


def regression_model(x, y, sigma=None):
    """a ~ N(0, 1e4), b ~ N(0, 10), sigma ~ HalfNormal(5) (or known), y ~ N(a + b x, sigma)."""
    import numpyro
    import numpyro.distributions as dist

    a = numpyro.sample("alpha", dist.Normal(0.0, PRIOR_A))
    b = numpyro.sample("beta", dist.Normal(0.0, PRIOR_B))
    s = numpyro.sample("sigma", dist.HalfNormal(PRIOR_SIGMA)) if sigma is None else sigma
    numpyro.sample("y", dist.Normal(a + b * x, s), obs=y)


def exact_known(x, y, sigma=SIGMA_TRUE):
    """Exact Gaussian posterior (mean, cov) of (a, b) with sigma known."""
    X = np.c_[np.ones_like(x), x]
    P = X.T @ X / sigma**2 + np.diag([PRIOR_A ** -2, PRIOR_B ** -2])
    C = np.linalg.inv(P)
    return C @ (X.T @ y) / sigma**2, C


def _centring(x):
    """T with theta = T phi, (a, b) = (a' - b c, b): X theta = [1, x - c] phi, c = mean(x)."""
    c = float(np.mean(x))
    return c, np.array([[1.0, -c], [0.0, 1.0]])


def _conditional(x, y, sigma):
    """(mean, cov in centred phi, log p(y | sigma) up to a constant) of (a, b) given sigma."""
    c, T = _centring(x)
    Xc = np.c_[np.ones_like(x), x - c]
    P = Xc.T @ Xc / sigma**2 + T.T @ np.diag([PRIOR_A ** -2, PRIOR_B ** -2]) @ T
    L = np.linalg.cholesky(P)
    r = Xc.T @ y / sigma**2
    mean = np.linalg.solve(P, r)
    logml = (-len(y) * math.log(sigma) - 0.5 * float(y @ y) / sigma**2 + 0.5 * float(r @ mean)
             - float(np.sum(np.log(np.diag(L)))))
    return mean, np.linalg.inv(P), logml


def reference_unknown(x, y, num: int = 4000):
    """Posterior mean and sd of (alpha, beta, sigma) by quadrature over log sigma (the conditional
    of (a, b) given sigma is Gaussian): exact up to the grid."""
    c, T = _centring(x)
    ls = np.linspace(math.log(0.3), math.log(5.0), num)
    rows = [_conditional(x, y, math.exp(v)) for v in ls]
    # HalfNormal(5) prior on sigma and the Jacobian of sigma = exp(l)
    logw = np.array([r[2] for r in rows]) - 0.5 * np.exp(2 * ls) / PRIOR_SIGMA**2 + ls
    w = np.exp(logw - logw.max())
    w /= w.sum()
    means = np.array([T @ r[0] for r in rows])
    # second moments in centred coordinates, mapped after the mixture (no cancellation)
    m_phi = np.einsum("k,ki->i", w, np.array([r[0] for r in rows]))
    second = np.einsum("k,kij->ij", w, np.array([r[1] + np.outer(r[0] - m_phi, r[0] - m_phi)
                                                  for r in rows]))
    cov = T @ second @ T.T
    sig = np.exp(ls)
    s_mean = float(w @ sig)
    s_sd = math.sqrt(float(w @ (sig - s_mean) ** 2))
    mean = np.einsum("k,ki->i", w, means)
    return (np.r_[mean, s_mean], np.r_[np.sqrt(np.diag(cov)), s_sd])


def kl_gaussian(m_q, L_q, m_p, S_p):
    """KL(N(m_q, L_q L_q^T) || N(m_p, S_p)), evaluated in coordinates centred by the covariate
    (invariant under the affine map; avoids the cancellation of kappa ~ 1e12)."""
    d = len(m_q)
    Lp = np.linalg.cholesky(S_p)
    from scipy.linalg import solve_triangular

    A = solve_triangular(Lp, L_q, lower=True)
    r = solve_triangular(Lp, m_q - m_p, lower=True)
    return 0.5 * (float(np.sum(A * A)) + float(r @ r) - d - 2 * np.linalg.slogdet(A)[1])


def _target(kappa, known):
    from inertia.targets.numpyro import from_numpyro

    x, y = regression_data(kappa)
    t = from_numpyro(regression_model, x, y, SIGMA_TRUE if known else None,
                     name=f"regression-kappa{kappa:.0e}-{'known' if known else 'unknown'}")
    return t, x, y


def _summary_arrays(rows):
    return (np.array([r["mean"] for r in rows]), np.array([r["sd"] for r in rows]))


def run_regression(kappa: float, known: bool, what: str, seed: int = 0) -> dict:
    """One regression row: fit or sample with defaults, errors against the exact / quadrature
    reference in posterior sds (and KL for the known-noise fit)."""
    from inertia.mcmc import sample
    from inertia.vi import fit

    t, x, y = _target(kappa, known)
    if known:
        m_ref, S_ref = exact_known(x, y)
        ref_mean, ref_sd = m_ref, np.sqrt(np.diag(S_ref))
    else:
        ref_mean, ref_sd = reference_unknown(x, y)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if what == "fit":
            res = fit(t, seed=seed)
            rows = res.summary(num_draws=20000)
            converged = res.converged
            extra = {"method": res.method, "updates": int(res.history["step"][-1]),
                     "reason": res.verdict.numbers.get("stop")}
            if known:
                c, T = _centring(x)
                Ti = np.linalg.inv(T)
                extra["kl"] = kl_gaussian(Ti @ res.mean, Ti @ res.factor, Ti @ m_ref,
                                          Ti @ S_ref @ Ti.T)
        else:
            res = sample(t, seed=seed)
            rows = _draw_rows(t, np.asarray(res.draws))
            converged = bool(res.converged)
            dg = res.diagnostics
            extra = {"steps": int(res.num_steps), "max_rhat": dg.worst_rhat,
                     "min_ess": float(np.nanmin(dg.ess_bulk)),
                     "preconditioner": (res.tuning or {}).get("fit", {}).get("kind")}
    seconds = time.perf_counter() - t0
    mean, sd = _summary_arrays(rows)
    err = np.abs(mean - ref_mean) / ref_sd
    sd_err = np.abs(sd - ref_sd) / ref_sd
    return {"model": "regression", "kappa": kappa, "noise": "known" if known else "unknown",
            "what": what, "converged": converged, "seconds": round(seconds, 2),
            "max_mean_error_sd": float(err.max()), "max_sd_rel_error": float(sd_err.max()),
            "mean": mean.tolist(), "sd": sd.tolist(), "ref_mean": ref_mean.tolist(),
            "ref_sd": ref_sd.tolist(),
            "warnings": sorted({str(w.message)[:160] for w in caught}), **extra}


def _draw_rows(t, draws):
    """[{mean, sd}] per constrained coordinate (sites sorted by name) of chains' draws."""
    from inertia.mcmc.sample import summary_draws

    flat, _ = summary_draws(t, draws, None)
    flat = np.asarray(flat).reshape(-1, flat.shape[-1])
    return [{"mean": float(m), "sd": float(v)} for m, v in zip(flat.mean(0), flat.std(0))]


GP_X = np.array([-10.0, -8.0, -6.0, -4.0, -2.0, 0.0, 2.0, 4.0, 6.0, 8.0, 10.0])
GP_K = np.array([40, 37, 29, 12, 4, 3, 9, 19, 77, 82, 33])


def gp_model(x, k):
    """Latent GP Poisson regression, non-centred (d = 13): rho ~ Gamma(25, 4), alpha ~
    HalfNormal(2), f = chol(K_rho,alpha + 1e-10 I) f_tilde, f_tilde ~ N(0, I), k ~ Poisson(e^f)."""
    import numpyro
    import numpyro.distributions as dist

    rho = numpyro.sample("rho", dist.Gamma(25.0, 4.0))
    alpha = numpyro.sample("alpha", dist.HalfNormal(2.0))
    f_tilde = numpyro.sample("f_tilde", dist.Normal(0.0, 1.0).expand([len(x)]).to_event(1))
    d2 = (x[:, None] - x[None, :]) ** 2
    K = alpha**2 * jnp.exp(-0.5 * d2 / rho**2) + 1e-10 * jnp.eye(len(x))
    f = jnp.linalg.cholesky(K) @ f_tilde
    numpyro.sample("k", dist.Poisson(jnp.exp(f)), obs=k)


GP_REFERENCE = ROOT / "benchmarks" / "results" / "conditioning_gp_reference.json"


def gp_reference(num_chains: int = 4, num_samples: int = 25000, seed: int = 0) -> dict:
    """Long NumPyro NUTS run (dense mass matrix) on the GP model: mean, sd, MC s.e. per site."""
    import numpyro
    from numpyro.infer import MCMC, NUTS

    numpyro.set_host_device_count(1)
    mcmc = MCMC(NUTS(gp_model, dense_mass=True, target_accept_prob=0.9), num_warmup=2000,
                num_samples=num_samples, num_chains=num_chains, chain_method="sequential",
                progress_bar=False)
    t0 = time.perf_counter()
    mcmc.run(jax.random.PRNGKey(seed), jnp.asarray(GP_X), jnp.asarray(GP_K))
    secs = time.perf_counter() - t0
    from numpyro.diagnostics import summary

    s = summary(mcmc.get_samples(group_by_chain=True))
    rows = []
    for site in sorted(s):
        v = s[site]
        for i in np.ndindex(*np.shape(v["mean"])):
            rows.append({"name": site if not i else f"{site}[{i[0]}]",
                         "mean": float(np.asarray(v["mean"])[i]),
                         "sd": float(np.asarray(v["std"])[i]),
                         "n_eff": float(np.asarray(v["n_eff"])[i]),
                         "r_hat": float(np.asarray(v["r_hat"])[i])})
    div = int(np.sum(np.asarray(mcmc.get_extra_fields()["diverging"])))
    return {"sampler": "numpyro NUTS dense_mass, target_accept 0.9", "chains": num_chains,
            "draws_per_chain": num_samples, "warmup": 2000, "seconds": round(secs, 1),
            "divergences": div, "rows": rows}


def run_gp(what: str, seed: int = 0) -> dict:
    """fit or sample the GP model with defaults; errors against the NUTS reference in its sds."""
    from inertia.mcmc import sample
    from inertia.targets.numpyro import from_numpyro
    from inertia.vi import fit

    ref = json.loads(GP_REFERENCE.read_text())
    ref_mean = np.array([r["mean"] for r in ref["rows"]])
    ref_sd = np.array([r["sd"] for r in ref["rows"]])
    t = from_numpyro(gp_model, jnp.asarray(GP_X), jnp.asarray(GP_K), name="gp-poisson")
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if what == "fit":
            res = fit(t, seed=seed)
            rows = res.summary(num_draws=20000)
            converged = res.converged
            extra = {"method": res.method, "updates": int(res.history["step"][-1]),
                     "reason": res.verdict.numbers.get("stop"), "final_objective": res.final_objective}
        else:
            res = sample(t, seed=seed)
            rows = _draw_rows(t, np.asarray(res.draws))
            converged = bool(res.converged)
            dg = res.diagnostics
            extra = {"steps": int(res.num_steps), "max_rhat": dg.worst_rhat,
                     "min_ess": float(np.nanmin(dg.ess_bulk)),
                     "preconditioner": (res.tuning or {}).get("fit", {}).get("kind")}
    seconds = time.perf_counter() - t0
    mean, sd = _summary_arrays(rows)
    err = np.abs(mean - ref_mean) / ref_sd
    return {"model": "gp-poisson", "dim": 13, "what": what, "converged": bool(converged),
            "seconds": round(seconds, 2), "max_mean_error_sd": float(err.max()),
            "max_sd_rel_error": float((np.abs(sd - ref_sd) / ref_sd).max()),
            "warnings": sorted({str(w.message)[:160] for w in caught}), **extra}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", choices=("regression", "gp", "gp-reference"), default=None)
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "conditioning.json")
    args = p.parse_args(argv)
    if args.only == "gp-reference":
        ref = gp_reference()
        GP_REFERENCE.write_text(json.dumps(ref, indent=1))
        print(f"wrote {GP_REFERENCE} ({ref['seconds']} s, {ref['divergences']} divergences)")
        return 0
    rows = json.loads(args.out.read_text())["rows"] if args.out.exists() else []
    keep = [r for r in rows if args.only is not None and
            (r["model"] == "regression") != (args.only == "regression")]
    new = []
    if args.only in (None, "regression"):
        for kappa in (1e6, 1e9, 1e12):
            for known in (True, False):
                for what in ("fit", "sample"):
                    r = run_regression(kappa, known, what)
                    print(json.dumps({k: v for k, v in r.items() if k != "warnings"}), flush=True)
                    new.append(r)
    if args.only in (None, "gp"):
        for what in ("fit", "sample"):
            r = run_gp(what)
            print(json.dumps({k: v for k, v in r.items() if k != "warnings"}), flush=True)
            new.append(r)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"rows": keep + new}, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
