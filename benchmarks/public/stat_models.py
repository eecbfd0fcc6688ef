"""Models as statisticians write them, at d = 45-403, whose references are long float64 NUTS runs
computed here (benchmarks/public/reference.py): posteriordb models that have data but no
reference draws there (irt_2pl, the Minnesota radon hierarchies, the Poisson GLMM) and, on
simulated data from fixed numpy seeds, a 50-group centred hierarchy, posteriordb's regularised
horseshoe logistic regression at n = 300, p = 200 and its Poisson GP (gp_pois_regr) on 50 points.
Each is written as the Stan model is (centred where the Stan model is centred).
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from pdb_models import exp_quad, gp_pois_regr


def irt_2pl(d):
    I, J = d["I"], d["J"]
    sigma_theta = numpyro.sample("sigma_theta", dist.HalfCauchy(2.0))
    theta = numpyro.sample("theta", dist.Normal(0.0, sigma_theta).expand([J]).to_event(1))
    sigma_a = numpyro.sample("sigma_a", dist.HalfCauchy(2.0))
    a = numpyro.sample("a", dist.LogNormal(0.0, sigma_a).expand([I]).to_event(1))
    mu_b = numpyro.sample("mu_b", dist.Normal(0.0, 5.0))
    sigma_b = numpyro.sample("sigma_b", dist.HalfCauchy(2.0))
    b = numpyro.sample("b", dist.Normal(mu_b, sigma_b).expand([I]).to_event(1))
    logits = a[:, None] * (theta[None, :] - b[:, None])  # (I, J)
    numpyro.sample("y", dist.Bernoulli(logits=logits).to_event(2), obs=d["y"])


def radon_variable_intercept_slope_centered(d):
    J, idx = d["J"], d["county_idx"] - 1
    sigma_y = numpyro.sample("sigma_y", dist.HalfNormal(1.0))
    sigma_alpha = numpyro.sample("sigma_alpha", dist.HalfNormal(1.0))
    sigma_beta = numpyro.sample("sigma_beta", dist.HalfNormal(1.0))
    mu_alpha = numpyro.sample("mu_alpha", dist.Normal(0.0, 10.0))
    mu_beta = numpyro.sample("mu_beta", dist.Normal(0.0, 10.0))
    alpha = numpyro.sample("alpha", dist.Normal(mu_alpha, sigma_alpha).expand([J]).to_event(1))
    beta = numpyro.sample("beta", dist.Normal(mu_beta, sigma_beta).expand([J]).to_event(1))
    mu = alpha[idx] + d["floor_measure"] * beta[idx]
    numpyro.sample("log_radon", dist.Normal(mu, sigma_y).to_event(1), obs=d["log_radon"])


def radon_hierarchical_intercept_centered(d):
    J, idx = d["J"], d["county_idx"] - 1
    sigma_alpha = numpyro.sample("sigma_alpha", dist.HalfNormal(1.0))
    sigma_y = numpyro.sample("sigma_y", dist.HalfNormal(1.0))
    mu_alpha = numpyro.sample("mu_alpha", dist.Normal(0.0, 10.0))
    beta = numpyro.sample("beta", dist.Normal(0.0, 10.0).expand([2]).to_event(1))
    alpha = numpyro.sample("alpha", dist.Normal(mu_alpha, sigma_alpha).expand([J]).to_event(1))
    mu = alpha[idx] + d["log_uppm"] * beta[0] + d["floor_measure"] * beta[1]
    numpyro.sample("log_radon", dist.Normal(mu, sigma_y).to_event(1), obs=d["log_radon"])


def glmm_poisson(d):
    """posteriordb's GLMM_Poisson_model: bounded uniform priors (beta2's bound (-10, 20) and its
    uniform(-10, 10) prior give the support (-10, 10))."""
    n, year = d["n"], d["year"]
    alpha = numpyro.sample("alpha", dist.Uniform(-20.0, 20.0))
    beta1 = numpyro.sample("beta1", dist.Uniform(-10.0, 10.0))
    beta2 = numpyro.sample("beta2", dist.Uniform(-10.0, 10.0))
    beta3 = numpyro.sample("beta3", dist.Uniform(-10.0, 10.0))
    sigma = numpyro.sample("sigma", dist.Uniform(0.0, 5.0))
    eps = numpyro.sample("eps", dist.Normal(0.0, sigma).expand([n]).to_event(1))
    log_lambda = alpha + beta1 * year + beta2 * year ** 2 + beta3 * year ** 3 + eps
    numpyro.sample("C", dist.Poisson(jnp.exp(log_lambda)).to_event(1), obs=d["C"])


def hier_centred(d):
    """Eight schools' model with J groups, centred."""
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
    theta = numpyro.sample("theta", dist.Normal(mu, tau).expand([d["J"]]).to_event(1))
    numpyro.sample("y", dist.Normal(theta, d["sigma"]).to_event(1), obs=d["y"])


def hier_centred_data(J=50, seed=61):
    """50 groups, numpy default_rng(61): theta_j ~ N(4, 4^2), sigma_j uniform on [4, 16]."""
    r = np.random.default_rng(seed)
    sigma = r.uniform(4.0, 16.0, J)
    y = r.normal(4.0, 4.0, J) + sigma * r.standard_normal(J)
    return {"J": J, "y": jnp.asarray(y), "sigma": jnp.asarray(sigma)}


def logistic_regression_rhs(d):
    """posteriordb's logistic_regression_rhs (Piironen and Vehtari's regularised horseshoe)."""
    p = d["d"]
    beta0 = numpyro.sample("beta0", dist.Normal(0.0, d["scale_icept"]))
    z = numpyro.sample("z", dist.Normal(0.0, 1.0).expand([p]).to_event(1))
    tau = numpyro.sample("tau", dist.FoldedDistribution(
        dist.StudentT(d["nu_global"], 0.0, 2.0 * d["scale_global"])))
    lam = numpyro.sample("lambda", dist.FoldedDistribution(
        dist.StudentT(d["nu_local"], 0.0, 1.0)).expand([p]).to_event(1))
    caux = numpyro.sample("caux", dist.InverseGamma(0.5 * d["slab_df"], 0.5 * d["slab_df"]))
    c = d["slab_scale"] * jnp.sqrt(caux)
    lam_t = jnp.sqrt(c ** 2 * lam ** 2 / (c ** 2 + tau ** 2 * lam ** 2))
    beta = numpyro.deterministic("beta", z * lam_t * tau)
    numpyro.sample("y", dist.Bernoulli(logits=beta0 + d["x"] @ beta).to_event(1), obs=d["y"])


def rhs_data(n=300, p=200, p0=5, seed=62):
    """n = 300 rows, p = 200 standard-normal predictors, 5 non-zero coefficients (+-1.5, +-1,
    0.75), intercept 0, numpy default_rng(62); the hyperparameters of Piironen and Vehtari
    (2017) with a prior guess of 5 relevant predictors."""
    r = np.random.default_rng(seed)
    x = r.standard_normal((n, p))
    beta = np.zeros(p)
    beta[:p0] = [1.5, -1.5, 1.0, -1.0, 0.75]
    y = r.binomial(1, 1.0 / (1.0 + np.exp(-(x @ beta)))).astype(np.int64)
    return {"n": n, "d": p, "y": jnp.asarray(y), "x": jnp.asarray(x), "scale_icept": 5.0,
            "scale_global": p0 / (p - p0) / np.sqrt(n), "nu_global": 1.0, "nu_local": 1.0,
            "slab_scale": 2.0, "slab_df": 4.0}


def gp_pois_data(N=50, seed=63):
    """gp_pois_regr's model on 50 points of [-10, 10], numpy default_rng(63): a latent draw
    f = 1.5 sin(x / 2) + 0.5, counts Poisson(exp f)."""
    r = np.random.default_rng(seed)
    x = np.linspace(-10.0, 10.0, N)
    k = r.poisson(np.exp(1.5 * np.sin(x / 2.0) + 0.5)).astype(np.int64)
    return {"N": N, "x": jnp.asarray(x), "k": jnp.asarray(k)}


__all__ = ["irt_2pl", "radon_variable_intercept_slope_centered",
           "radon_hierarchical_intercept_centered", "glmm_poisson", "hier_centred",
           "hier_centred_data", "logistic_regression_rhs", "rhs_data", "gp_pois_data",
           "gp_pois_regr", "exp_quad", "hier_noncentred", "glmm_poisson_noncentred"]


def hier_noncentred(d):
    """hier_centred, non-centred: the same posterior (the reference run of hier_centred_50)."""
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
    eta = numpyro.sample("eta", dist.Normal(0.0, 1.0).expand([d["J"]]).to_event(1))
    numpyro.deterministic("theta", mu + tau * eta)
    numpyro.sample("y", dist.Normal(mu + tau * eta, d["sigma"]).to_event(1), obs=d["y"])


def glmm_poisson_noncentred(d):
    """glmm_poisson with eps = sigma * eps_raw: the same posterior (its reference run)."""
    n, year = d["n"], d["year"]
    alpha = numpyro.sample("alpha", dist.Uniform(-20.0, 20.0))
    beta1 = numpyro.sample("beta1", dist.Uniform(-10.0, 10.0))
    beta2 = numpyro.sample("beta2", dist.Uniform(-10.0, 10.0))
    beta3 = numpyro.sample("beta3", dist.Uniform(-10.0, 10.0))
    sigma = numpyro.sample("sigma", dist.Uniform(0.0, 5.0))
    eps_raw = numpyro.sample("eps_raw", dist.Normal(0.0, 1.0).expand([n]).to_event(1))
    eps = numpyro.deterministic("eps", sigma * eps_raw)
    log_lambda = alpha + beta1 * year + beta2 * year ** 2 + beta3 * year ** 3 + eps
    numpyro.sample("C", dist.Poisson(jnp.exp(log_lambda)).to_event(1), obs=d["C"])


# --- non-centred twins: the same posteriors, for the reference runs (reference.py) -------------

def irt_2pl_noncentred(d):
    I, J = d["I"], d["J"]
    sigma_theta = numpyro.sample("sigma_theta", dist.HalfCauchy(2.0))
    theta_raw = numpyro.sample("theta_raw", dist.Normal(0.0, 1.0).expand([J]).to_event(1))
    theta = numpyro.deterministic("theta", sigma_theta * theta_raw)
    sigma_a = numpyro.sample("sigma_a", dist.HalfCauchy(2.0))
    a_raw = numpyro.sample("a_raw", dist.Normal(0.0, 1.0).expand([I]).to_event(1))
    a = numpyro.deterministic("a", jnp.exp(sigma_a * a_raw))
    mu_b = numpyro.sample("mu_b", dist.Normal(0.0, 5.0))
    sigma_b = numpyro.sample("sigma_b", dist.HalfCauchy(2.0))
    b_raw = numpyro.sample("b_raw", dist.Normal(0.0, 1.0).expand([I]).to_event(1))
    b = numpyro.deterministic("b", mu_b + sigma_b * b_raw)
    logits = a[:, None] * (theta[None, :] - b[:, None])
    numpyro.sample("y", dist.Bernoulli(logits=logits).to_event(2), obs=d["y"])


def radon_variable_intercept_slope_noncentred(d):
    J, idx = d["J"], d["county_idx"] - 1
    sigma_y = numpyro.sample("sigma_y", dist.HalfNormal(1.0))
    sigma_alpha = numpyro.sample("sigma_alpha", dist.HalfNormal(1.0))
    sigma_beta = numpyro.sample("sigma_beta", dist.HalfNormal(1.0))
    mu_alpha = numpyro.sample("mu_alpha", dist.Normal(0.0, 10.0))
    mu_beta = numpyro.sample("mu_beta", dist.Normal(0.0, 10.0))
    a_raw = numpyro.sample("alpha_raw", dist.Normal(0.0, 1.0).expand([J]).to_event(1))
    b_raw = numpyro.sample("beta_raw", dist.Normal(0.0, 1.0).expand([J]).to_event(1))
    alpha = numpyro.deterministic("alpha", mu_alpha + sigma_alpha * a_raw)
    beta = numpyro.deterministic("beta", mu_beta + sigma_beta * b_raw)
    mu = alpha[idx] + d["floor_measure"] * beta[idx]
    numpyro.sample("log_radon", dist.Normal(mu, sigma_y).to_event(1), obs=d["log_radon"])


def radon_hierarchical_intercept_noncentred(d):
    J, idx = d["J"], d["county_idx"] - 1
    sigma_alpha = numpyro.sample("sigma_alpha", dist.HalfNormal(1.0))
    sigma_y = numpyro.sample("sigma_y", dist.HalfNormal(1.0))
    mu_alpha = numpyro.sample("mu_alpha", dist.Normal(0.0, 10.0))
    beta = numpyro.sample("beta", dist.Normal(0.0, 10.0).expand([2]).to_event(1))
    a_raw = numpyro.sample("alpha_raw", dist.Normal(0.0, 1.0).expand([J]).to_event(1))
    alpha = numpyro.deterministic("alpha", mu_alpha + sigma_alpha * a_raw)
    mu = alpha[idx] + d["log_uppm"] * beta[0] + d["floor_measure"] * beta[1]
    numpyro.sample("log_radon", dist.Normal(mu, sigma_y).to_event(1), obs=d["log_radon"])
