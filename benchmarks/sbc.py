"""Simulation-based calibration (Talts et al. 2018; Modrak et al. 2023) of `inertia.mcmc.sample`.

For each model, R replications theta_r ~ prior, y_r ~ p(y | theta_r) are drawn by NumPyro from the
model itself; the posterior draws of theta_r given y_r come from ONE call of the default sampler,
`inertia.mcmc.sample(target)` (automatic warm-up, whitened frame, Metropolis-adjusted HFHR, run
until converged), on the product of the R posteriors: the model holds R independent copies of its
parameters and the data of all replications are one array, so the replications share one
compilation and one warm-up. The rank of theta_r among L = 99 thinned draws (25 evenly spaced
draws per chain, the last dropped) is uniform on {0, ..., 99} when the sampler is right; the ranks
of every parameter are binned into B = 10 bins and tested by Pearson's chi-square (B - 1 degrees of
freedom) and by their mean (a shift test), the smaller p-value doubled; Holm's step-down procedure
over a model's parameters at level alpha / (number of models), Bonferroni over the models, keeps
the family-wise error rate of all models at alpha.

    python3 benchmarks/sbc.py --replications 1000 --out docs/validation   # 1,000 replications
    python3 benchmarks/sbc.py --ci --out docs/validation                  # the test suite's sizes

(a run of 1,000 replications per model takes long: the product target has 1,000 x d parameters).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import time
import warnings
from pathlib import Path
from typing import Callable, Optional

import numpy as np

NUM_DRAWS = 99  # thinned posterior draws per replication: ranks 0..99
BINS = 10
FWER = 0.01  # family-wise error rate of a whole SBC run (all parameters of all models)


@dataclasses.dataclass
class Model:
    """A NumPyro model `fn(R, y=None)` holding R independent copies of its parameters (leading axis
    R at every latent site) and their data y (leading axis R); `sites` are the checked sites."""

    name: str
    fn: Callable
    sites: tuple
    description: str


CONSTRAINED_ROWS = 2  # rows of 3 observations: few, so that the posteriors stay wide and an error
# in a Jacobian (a factor of order one in the density) moves the ranks visibly (a dropped
# log-Jacobian of sigma shifts log sigma by about its posterior variance); one row makes a funnel
# (sigma -> 0 with w pinned) that the chains mix through slowly


def _constrained(R, y=None):
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0).expand([R]).to_event(1))
    w = numpyro.sample("w", dist.Dirichlet(jnp.ones(3)).expand([R]).to_event(1))
    numpyro.sample("y", dist.Normal(3.0 * w[:, None, :], sigma[:, None, None])
                   .expand([R, CONSTRAINED_ROWS, 3]).to_event(3), obs=y)


def _hierarchical(R, y=None):
    import numpyro
    import numpyro.distributions as dist

    J = 5
    mu = numpyro.sample("mu", dist.Normal(0.0, 1.0).expand([R]).to_event(1))
    tau = numpyro.sample("tau", dist.HalfNormal(1.0).expand([R]).to_event(1))
    eta = numpyro.sample("eta", dist.Normal(0.0, 1.0).expand([R, J]).to_event(2))
    theta = mu[:, None] + tau[:, None] * eta
    numpyro.sample("y", dist.Normal(theta, 0.8).to_event(2), obs=y)


_T_X = np.linspace(-1.5, 1.5, 12)


def _student_t(R, y=None):
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    x = jnp.asarray(_T_X)
    a = numpyro.sample("a", dist.Normal(0.0, 1.0).expand([R]).to_event(1))
    b = numpyro.sample("b", dist.Normal(0.0, 1.0).expand([R]).to_event(1))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0).expand([R]).to_event(1))
    loc = a[:, None] + b[:, None] * x[None, :]
    numpyro.sample("y", dist.StudentT(3.0, loc, sigma[:, None]).to_event(2), obs=y)


GLM_D, GLM_N = 20, 60


def _glm_design():
    """Fixed design (GLM_N, GLM_D): AR(1) correlation 0.8 between columns, seed 0."""
    rng = np.random.default_rng(0)
    C = 0.8 ** np.abs(np.subtract.outer(np.arange(GLM_D), np.arange(GLM_D)))
    return rng.standard_normal((GLM_N, GLM_D)) @ np.linalg.cholesky(C).T / math.sqrt(GLM_D)


_GLM_X = _glm_design()


def _glm(R, y=None):
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    beta = numpyro.sample("beta", dist.Normal(0.0, 1.0).expand([R, GLM_D]).to_event(2))
    eta = beta @ jnp.asarray(_GLM_X).T  # (R, N)
    numpyro.sample("y", dist.Poisson(jnp.exp(1.0 + eta)).to_event(2), obs=y)


def _normal(R, y=None):
    import numpyro
    import numpyro.distributions as dist

    theta = numpyro.sample("theta", dist.Normal(0.0, 1.0).expand([R]).to_event(1))
    numpyro.sample("y", dist.Normal(theta[:, None], 1.0).expand([R, 4]).to_event(2), obs=y)


def _mixture(R, y=None):
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    comp = dist.MixtureSameFamily(dist.Categorical(probs=jnp.array([0.5, 0.5])),
                                  dist.Normal(jnp.array([-1.0, 1.0]), jnp.array([0.5, 0.5])))
    theta = numpyro.sample("theta", comp.expand([R]).to_event(1))
    numpyro.sample("y", dist.Normal(theta, 1.0).to_event(1), obs=y)


MODELS = {
    "constrained": Model("constrained", _constrained, ("sigma", "w"),
                         "sigma ~ HalfNormal(1), w ~ Dirichlet(1, 1, 1), y (2 x 3) ~ N(3 w, sigma)"),
    "hierarchical": Model("hierarchical", _hierarchical, ("mu", "tau", "eta"),
                          "non-centred: mu ~ N(0, 1), tau ~ HalfNormal(1), eta_j ~ N(0, 1), "
                          "y_j ~ N(mu + tau eta_j, 0.8), j = 1..5"),
    "student_t": Model("student_t", _student_t, ("a", "b", "sigma"),
                       "y_i ~ StudentT(3, a + b x_i, sigma), 12 points, N(0, 1) / HalfNormal(1) "
                       "priors"),
    "glm": Model("glm", _glm, ("beta",),
                 f"Poisson regression, d = {GLM_D}, {GLM_N} rows, AR(1) 0.8 correlated design, "
                 "beta ~ N(0, I)"),
    "mixture": Model("mixture", _mixture, ("theta",),
                     "theta ~ 0.5 N(-1, 0.5) + 0.5 N(1, 0.5), y ~ N(theta, 1): a bimodal posterior"),
    # conjugate: theta | y ~ N(sum y / 5, 1 / 5); the power check's model (the unadjusted schemes'
    # stationary law there is known in closed form)
    "normal": Model("normal", _normal, ("theta",), "theta ~ N(0, 1), y (4) ~ N(theta, 1)"),
}
CALIBRATED = ("constrained", "hierarchical", "student_t", "glm", "mixture")
# the test suite's sizes (tests/mcmc/test_sbc.py): replications per model, steps after warm-up
CI_REPLICATIONS = {"constrained": 200, "hierarchical": 40, "student_t": 50, "glm": 25, "mixture": 100}
CI_NUM_STEPS = 500


def simulate(model: Model, R: int, seed: int):
    """(true parameters {site: (R, ...)}, data y (R, ...)) from the model's own prior predictive."""
    import jax
    from numpyro import handlers

    tr = handlers.trace(handlers.seed(model.fn, jax.random.PRNGKey(seed))).get_trace(R)
    theta = {k: np.asarray(tr[k]["value"]) for k in model.sites}
    return theta, np.asarray(tr["y"]["value"])


def thin(x, num_draws: int = NUM_DRAWS):
    """(chain, draw, ...) -> (num_draws, ...): evenly spaced draws of every chain, pooled, the
    last ones dropped to num_draws."""
    c, n = x.shape[:2]
    per = -(-(num_draws) // c)
    idx = np.linspace(0, n - 1, per).round().astype(int)
    return x[:, idx].reshape((c * per,) + x.shape[2:])[:num_draws]


def ranks(theta: dict, draws: dict) -> dict:
    """{parameter label: ranks (R,)}: the number of draws below the true value, per replication
    and per component of each site (draws {site: (L, R, ...)})."""
    out = {}
    for site, t in theta.items():
        d = draws[site]
        r = np.sum(d < t[None], axis=0)  # (R, ...)
        flat = r.reshape(r.shape[0], -1)
        shape = t.shape[1:]
        labels = [site] if not shape else [f"{site}[{','.join(map(str, i))}]"
                                           for i in np.ndindex(*shape)]
        for j, lab in enumerate(labels):
            out[lab] = flat[:, j]
    return out


def bins_for(R: int) -> int:
    """The most equal bins of the NUM_DRAWS + 1 ranks, at most BINS, with >= 5 replications
    expected in each (Pearson's chi-square approximation)."""
    return max(b for b in (2, 4, 5, 10) if b <= BINS and R / b >= 5)


def chi_square(r, num_draws: int = NUM_DRAWS, bins: int = BINS):
    """(statistic, p-value): Pearson's chi-square of ranks in {0..num_draws} binned into `bins`
    equal bins ((num_draws + 1) must be a multiple of bins), bins - 1 degrees of freedom."""
    from scipy.stats import chi2

    if (num_draws + 1) % bins:
        raise ValueError("num_draws + 1 must be a multiple of bins")
    counts = np.bincount(np.asarray(r) * bins // (num_draws + 1), minlength=bins)
    e = len(r) / bins
    stat = float(np.sum((counts - e) ** 2 / e))
    return stat, float(chi2.sf(stat, bins - 1))


def mean_rank(r, num_draws: int = NUM_DRAWS):
    """(z, two-sided p-value) of the mean rank against num_draws / 2, its value under uniform ranks
    on {0..num_draws} (variance ((num_draws + 1)^2 - 1) / 12 per rank): the shift test, sharper than
    the chi-square for a posterior that is displaced (e.g. by a missing log-Jacobian)."""
    from scipy.stats import norm

    r = np.asarray(r, dtype=np.float64)
    z = (r.mean() - num_draws / 2) / math.sqrt(((num_draws + 1) ** 2 - 1) / 12 / len(r))
    return float(z), float(2 * norm.sf(abs(z)))


def rank_pvalue(r, bins: int, num_draws: int = NUM_DRAWS) -> float:
    """One parameter's p-value: the smaller of the chi-square's (any non-uniformity) and the mean
    rank's (a shift), Bonferroni-corrected for the two (x 2), so that Holm's procedure over the
    parameters keeps its family-wise level."""
    p_chi = chi_square(r, num_draws, bins)[1]
    p_shift = mean_rank(r, num_draws)[1]
    return min(1.0, 2.0 * min(p_chi, p_shift))


def holm(pvalues: dict, alpha: float) -> list:
    """Labels rejected by Holm's step-down procedure at family-wise level alpha."""
    items = sorted(pvalues.items(), key=lambda kv: kv[1])
    m = len(items)
    rejected = []
    for k, (lab, p) in enumerate(items):
        if p > alpha / (m - k):
            break
        rejected.append(lab)
    return rejected


@dataclasses.dataclass
class SBCResult:
    model: str
    replications: int
    ranks: dict
    pvalues: dict
    seconds: float
    num_steps: int
    dim: int
    sample: object = dataclasses.field(default=None, repr=False)


def run(model: Model, R: int, seed: int = 0, sampler: Optional[Callable] = None,
        num_steps: Optional[int] = None) -> SBCResult:
    """One SBC of `sampler(target, seed)` (default: `inertia.mcmc.sample(target, seed=seed,
    num_steps=num_steps)`: the automatic warm-up, then num_steps steps, or run until converged when
    None) on R replications of `model`, all in one product target."""
    import jax.numpy as jnp

    from inertia.mcmc import sample
    from inertia.targets.numpyro import from_numpyro

    t0 = time.perf_counter()
    theta, y = simulate(model, R, seed)
    target = from_numpyro(model.fn, R, jnp.asarray(y))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the verdict is checked by the caller
        res = (sampler or (lambda t, s: sample(t, seed=s, num_steps=num_steps)))(target, seed + 1)
    kept = res.draws[:, int(round(res.burn_in_default * res.draws.shape[1])):]
    sites = target.info["constrain"](thin(kept))
    draws = {k: np.asarray(sites[k]) for k in model.sites}
    rk = ranks(theta, draws)
    pv = {k: rank_pvalue(v, bins_for(R)) for k, v in rk.items()}
    return SBCResult(model.name, R, rk, pv, time.perf_counter() - t0, res.num_steps,
                     target.dim, res)


def plot(result: SBCResult, path, max_panels: int = 8):
    """Rank histograms of up to max_panels parameters with the 99 % band of a uniform bin count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from scipy.stats import binom

    labs = list(result.ranks)[:max_panels]
    cols = min(4, len(labs))
    rows = -(-len(labs) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.4 * rows), squeeze=False)
    R = result.replications
    B = bins_for(R)
    lo, hi = binom.ppf([0.005, 0.995], R, 1.0 / B)
    for ax, lab in zip(axes.flat, labs):
        counts = np.bincount(result.ranks[lab] * B // (NUM_DRAWS + 1), minlength=B)
        ax.axhspan(lo, hi, color="0.85")
        ax.bar(np.arange(B), counts, width=0.9, color="C0")
        ax.set_title(f"{lab} (p = {result.pvalues[lab]:.2f})", fontsize=9)
        ax.set_xticks([])
    for ax in list(axes.flat)[len(labs):]:
        ax.axis("off")
    fig.suptitle(f"{result.model}: ranks of {R} replications among {NUM_DRAWS} draws", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replications", type=int, default=1000)
    ap.add_argument("--num-steps", type=int, default=None,
                    help="steps after the warm-up (default: run until converged, as `sample`)")
    ap.add_argument("--ci", action="store_true",
                    help="the test suite's sizes (CI_REPLICATIONS, CI_NUM_STEPS): a few minutes")
    ap.add_argument("--models", default=",".join(CALIBRATED))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="docs/validation")
    ap.add_argument("--alpha", type=float, default=FWER)
    a = ap.parse_args(argv)
    import inertia  # noqa: F401

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    names = a.models.split(",")
    summary = {}
    for name in names:
        R = CI_REPLICATIONS[name] if a.ci else a.replications
        r = run(MODELS[name], R, a.seed, num_steps=CI_NUM_STEPS if a.ci else a.num_steps)
        rejected = holm(r.pvalues, a.alpha / len(names))
        plot(r, out / f"sbc_{name}.png")
        summary[name] = {"replications": r.replications, "dim": r.dim, "num_steps": r.num_steps,
                         "seconds": round(r.seconds, 1), "min_p": min(r.pvalues.values()),
                         "rejected": rejected, "converged": bool(r.sample.converged)}
        print(name, json.dumps(summary[name]), flush=True)
    path = out / "sbc_summary.json"  # models not run keep their earlier entries
    kept = json.loads(path.read_text()) if path.exists() else {}
    path.write_text(json.dumps({**kept, **summary}, indent=1) + "\n")
    bad = [n for n, s in summary.items() if s["rejected"]]
    print("SBC", "FAILED for " + ", ".join(bad) if bad else "passed",
          f"(Holm at family-wise level {a.alpha} over {len(names)} models)")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
