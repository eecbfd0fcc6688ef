"""posteriordb's Stan models written in NumPyro, one function per Stan model, each taking the
posteriordb data set (a dict of arrays and ints) as it is stored.

Each keeps the Stan model's parameter names and shapes (a Stan `vector[K] beta` is the NumPyro
site `beta` of shape (K,)); Stan's flat priors (a parameter without a sampling statement) are
`ImproperUniform` on the parameter's support. Priors on a constrained parameter written in Stan
without the truncation constant (`sigma ~ cauchy(0, 2.5)` on `real<lower=0>`) are the half
distributions, equal up to that constant. The translation check is tests/test_public_suite.py: on
posteriordb's reference draws the gradient of the log density has mean zero.
arK, garch11 and diamonds are examples/posteriordb's models (imported).
"""
from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "posteriordb"))

import arK as _ark  # noqa: E402
import diamonds as _diamonds  # noqa: E402
import garch11 as _garch11  # noqa: E402


def _flat(name, support=constraints.real, shape=()):
    return numpyro.sample(name, dist.ImproperUniform(support, (), shape))


def _normal_lpdf(x, m, s):
    return dist.Normal(m, s).log_prob(x)


def ark(d):
    _ark.model(d["K"], d["T"], d["y"])


def garch11(d):
    _garch11.model(d["T"], d["y"], d["sigma1"])


def diamonds(d):
    _diamonds.model(d["N"], d["Y"], d["K"], d["X"], d["prior_only"])


def arma11(d):
    y = d["y"]
    mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
    phi = numpyro.sample("phi", dist.Normal(0.0, 2.0))
    theta = numpyro.sample("theta", dist.Normal(0.0, 2.0))
    sigma = numpyro.sample("sigma", dist.HalfCauchy(2.5))
    err1 = y[0] - (mu + phi * mu)

    def step(err_prev, yy):
        y_prev, y_t = yy
        err = y_t - (mu + phi * y_prev + theta * err_prev)
        return err, err

    _, errs = jax.lax.scan(step, err1, (y[:-1], y[1:]))
    err = jnp.concatenate([err1[None], errs])
    numpyro.factor("err", jnp.sum(_normal_lpdf(err, 0.0, sigma)))


def blr(d):
    beta = numpyro.sample("beta", dist.Normal(0.0, 10.0).expand([d["D"]]).to_event(1))
    sigma = numpyro.sample("sigma", dist.HalfNormal(10.0))
    numpyro.sample("y", dist.Normal(d["X"] @ beta, sigma).to_event(1), obs=d["y"])


def regression(X, y, sigma_prior=None):
    """y ~ normal(X beta, sigma), beta flat; sigma flat on (0, inf) or the given half prior."""
    beta = _flat("beta", constraints.real, (X.shape[1],))
    sigma = (_flat("sigma", constraints.positive) if sigma_prior is None
             else numpyro.sample("sigma", sigma_prior))
    numpyro.sample("y", dist.Normal(X @ beta, sigma).to_event(1), obs=y)


def _cols(*cols):
    cols = [np.asarray(c, dtype=np.float64) for c in cols]
    return jnp.asarray(np.column_stack([np.ones_like(cols[0])] + cols))


def _sd(x):
    return np.std(np.asarray(x, dtype=np.float64), ddof=1)  # Stan's sd(): n - 1


def _np(d, *keys):
    return [np.asarray(d[k], dtype=np.float64) for k in keys]


# --- the linear regressions: (design, response, sigma prior) from the data, as transformed data --

def _earnings(kind):
    def design(d):
        earn, h, male = _np(d, "earn", "height", "male")
        le = np.log(earn)
        if kind == "earn_height":
            return _cols(h), earn, None
        if kind == "log10earn_height":
            return _cols(h), np.log10(earn), None
        if kind == "logearn_height":
            return _cols(h), le, None
        if kind == "logearn_height_male":
            return _cols(h, male), le, None
        if kind == "logearn_interaction":
            return _cols(h, male, h * male), le, None
        if kind == "logearn_interaction_z":
            z = (h - h.mean()) / _sd(h)
            return _cols(z, male, z * male), le, None
        if kind == "logearn_logheight_male":
            return _cols(np.log(h), male), le, None
        raise KeyError(kind)
    return design


def _kidiq(kind):
    def design(d):
        ks, hs, iq = _np(d, "kid_score", "mom_hs", "mom_iq")
        half_cauchy = dist.HalfCauchy(2.5)
        if kind == "kidscore_interaction":
            return _cols(hs, iq, hs * iq), ks, half_cauchy
        if kind == "kidscore_momhs":
            return _cols(hs), ks, half_cauchy
        if kind == "kidscore_momhsiq":
            return _cols(hs, iq), ks, half_cauchy
        if kind == "kidscore_momiq":
            return _cols(iq), ks, half_cauchy
        if kind == "kidscore_interaction_c":
            a, b = hs - hs.mean(), iq - iq.mean()
            return _cols(a, b, a * b), ks, None
        if kind == "kidscore_interaction_c2":
            a, b = hs - 0.5, iq - 100.0
            return _cols(a, b, a * b), ks, None
        if kind == "kidscore_interaction_z":
            a, b = (hs - hs.mean()) / (2 * _sd(hs)), (iq - iq.mean()) / (2 * _sd(iq))
            return _cols(a, b, a * b), ks, None
        if kind == "kidscore_mom_work":
            w = np.asarray(d["mom_work"])
            return _cols(w == 2, w == 3, w == 4), ks, None
        raise KeyError(kind)
    return design


def _mesquite(kind):
    def design(d):
        w, d1, d2, ch, th, den, grp = _np(d, "weight", "diam1", "diam2", "canopy_height",
                                          "total_height", "density", "group")
        lcv, lca, lcs = np.log(d1 * d2 * ch), np.log(d1 * d2), np.log(d1 / d2)
        if kind == "mesquite":
            return _cols(d1, d2, ch, th, den, grp), w, None
        lw = np.log(w)
        if kind == "logmesquite":
            return _cols(np.log(d1), np.log(d2), np.log(ch), np.log(th), np.log(den), grp), lw, None
        if kind == "logmesquite_logva":
            return _cols(lcv, lca, grp), lw, None
        if kind == "logmesquite_logvas":
            return _cols(lcv, lca, lcs, np.log(th), np.log(den), grp), lw, None
        if kind == "logmesquite_logvash":
            return _cols(lcv, lca, lcs, np.log(th), grp), lw, None
        if kind == "logmesquite_logvolume":
            return _cols(lcv), lw, None
        raise KeyError(kind)
    return design


def _nes(d):
    y, ideo, race, educ, gender, income = _np(d, "partyid7", "real_ideo", "race_adj", "educ1",
                                              "gender", "income")
    age = np.asarray(d["age_discrete"])
    return _cols(ideo, race, age == 2, age == 3, age == 4, educ, gender, income), y, None


DESIGNS = {**{k: _earnings(k) for k in ("earn_height", "log10earn_height", "logearn_height",
                                        "logearn_height_male", "logearn_interaction",
                                        "logearn_interaction_z", "logearn_logheight_male")},
           **{k: _kidiq(k) for k in ("kidscore_interaction", "kidscore_momhs", "kidscore_momhsiq",
                                     "kidscore_momiq", "kidscore_interaction_c",
                                     "kidscore_interaction_c2", "kidscore_interaction_z",
                                     "kidscore_mom_work")},
           **{k: _mesquite(k) for k in ("mesquite", "logmesquite", "logmesquite_logva",
                                        "logmesquite_logvas", "logmesquite_logvash",
                                        "logmesquite_logvolume")},
           "nes": _nes}


def linear(kind):
    """The NumPyro model of a posteriordb linear regression: model(X, y, sigma_prior)."""
    design = DESIGNS[kind]

    def args(d):
        X, y, prior = design(d)
        return X, jnp.asarray(y), prior
    return regression, args


def kilpisjarvi(d):
    alpha = numpyro.sample("alpha", dist.Normal(d["pmualpha"], d["psalpha"]))
    beta = numpyro.sample("beta", dist.Normal(d["pmubeta"], d["psbeta"]))
    sigma = _flat("sigma", constraints.positive)
    numpyro.sample("y", dist.Normal(alpha + beta * d["x"], sigma).to_event(1), obs=d["y"])


def eight_schools_noncentered(d):
    J = d["J"]
    theta_trans = numpyro.sample("theta_trans", dist.Normal(0.0, 1.0).expand([J]).to_event(1))
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
    theta = numpyro.deterministic("theta", theta_trans * tau + mu)
    numpyro.sample("y", dist.Normal(theta, d["sigma"]).to_event(1), obs=d["y"])


def eight_schools_centered(d):
    J = d["J"]
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
    theta = numpyro.sample("theta", dist.Normal(mu, tau).expand([J]).to_event(1))
    numpyro.sample("y", dist.Normal(theta, d["sigma"]).to_event(1), obs=d["y"])


def exp_quad(x, alpha, rho):
    """Stan's gp_exp_quad_cov on 1-d inputs."""
    r2 = (x[:, None] - x[None, :]) ** 2
    return alpha ** 2 * jnp.exp(-0.5 * r2 / rho ** 2)


def gp_pois_regr(d):
    x = d["x"]
    N = x.shape[0]
    rho = numpyro.sample("rho", dist.Gamma(25.0, 4.0))
    alpha = numpyro.sample("alpha", dist.HalfNormal(2.0))
    f_tilde = numpyro.sample("f_tilde", dist.Normal(0.0, 1.0).expand([N]).to_event(1))
    L = jnp.linalg.cholesky(exp_quad(x, alpha, rho) + 1e-10 * jnp.eye(N))
    f = numpyro.deterministic("f", L @ f_tilde)
    numpyro.sample("k", dist.Poisson(jnp.exp(f)).to_event(1), obs=d["k"])


def gp_pois_regr_sites(d, q):
    """Latent sites of gp_pois_regr from its reference quantities (rho, alpha, f): f_tilde = L^-1 f."""
    x = np.asarray(d["x"], dtype=np.float64)
    N = x.size
    rho, alpha, f = q["rho"], q["alpha"], q["f"]
    r2 = (x[:, None] - x[None, :]) ** 2
    ft = np.empty_like(f)
    for i in range(f.shape[0]):
        K = alpha[i] ** 2 * np.exp(-0.5 * r2 / rho[i] ** 2) + 1e-10 * np.eye(N)
        ft[i] = np.linalg.solve(np.linalg.cholesky(K), f[i])
    return {"rho": rho, "alpha": alpha, "f_tilde": ft}


def gp_regr(d):
    x, y = d["x"], d["y"]
    N = x.shape[0]
    rho = numpyro.sample("rho", dist.Gamma(25.0, 4.0))
    alpha = numpyro.sample("alpha", dist.HalfNormal(2.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    cov = exp_quad(x, alpha, rho) + sigma * jnp.eye(N)  # as the Stan model: sigma, not sigma^2
    numpyro.sample("y", dist.MultivariateNormal(jnp.zeros(N), scale_tril=jnp.linalg.cholesky(cov)),
                   obs=y)


def _forward(log_emit, log_trans):
    """log p(observations) of an HMM: log_emit (N, K), log_trans (K, K) from row j to column k;
    the first state's emission alone at t = 1 (no initial distribution, as the Stan models)."""
    def step(g, le):
        g = jax.scipy.special.logsumexp(g[:, None] + log_trans, axis=0) + le
        return g, None

    g, _ = jax.lax.scan(step, log_emit[0], log_emit[1:])
    return jax.scipy.special.logsumexp(g)


def hmm_example(d):
    K, y = d["K"], d["y"]
    theta1 = numpyro.sample("theta1", dist.Dirichlet(jnp.ones(K)))
    theta2 = numpyro.sample("theta2", dist.Dirichlet(jnp.ones(K)))
    mu = _flat("mu", constraints.positive_ordered_vector, (K,))
    numpyro.factor("mu_prior", _normal_lpdf(mu[0], 3.0, 1.0) + _normal_lpdf(mu[1], 10.0, 1.0))
    log_emit = _normal_lpdf(y[:, None], mu[None, :], 1.0)
    numpyro.factor("hmm", _forward(log_emit, jnp.log(jnp.stack([theta1, theta2]))))


def _hmm_drive(d, ordered, emit):
    K, alpha = d["K"], d["alpha"]
    theta1 = numpyro.sample("theta1", dist.Dirichlet(alpha[0]))
    theta2 = numpyro.sample("theta2", dist.Dirichlet(alpha[1]))
    phi = _flat("phi", ordered, (K,))
    lam = _flat("lambda", ordered, (K,))
    numpyro.factor("priors", _normal_lpdf(phi[0], 0.0, 1.0) + _normal_lpdf(phi[1], 3.0, 1.0)
                   + _normal_lpdf(lam[0], 0.0, 1.0) + _normal_lpdf(lam[1], 3.0, 1.0))
    log_emit = emit(d["u"][:, None], phi[None, :]) + emit(d["v"][:, None], lam[None, :], True)
    numpyro.factor("hmm", _forward(log_emit, jnp.log(jnp.stack([theta1, theta2]))))


def hmm_drive_0(d):
    def emit(x, rate, second=False):  # exponential_lpdf(x | rate)
        return jnp.log(rate) - rate * x
    _hmm_drive(d, constraints.positive_ordered_vector, emit)


def hmm_drive_1(d):
    def emit(x, m, second=False):
        return _normal_lpdf(x, m, d["rho"] if second else d["tau"])
    _hmm_drive(d, constraints.ordered_vector, emit)


def low_dim_gauss_mix(d):
    y = d["y"]
    mu = _flat("mu", constraints.ordered_vector, (2,))
    sigma = numpyro.sample("sigma", dist.HalfNormal(2.0).expand([2]).to_event(1))
    theta = numpyro.sample("theta", dist.Beta(5.0, 5.0))
    numpyro.factor("mu_prior", jnp.sum(_normal_lpdf(mu, 0.0, 2.0)))
    lp = jnp.logaddexp(jnp.log(theta) + _normal_lpdf(y, mu[0], sigma[0]),
                       jnp.log1p(-theta) + _normal_lpdf(y, mu[1], sigma[1]))
    numpyro.factor("mix", jnp.sum(lp))


def _student_t_lpdf(x, nu, m, s):
    return dist.StudentT(nu, m, s).log_prob(x)


def accel_gp(d):
    """brms's Hilbert-space approximate GP for the mean and the log sd of mcycle's acceleration."""
    def spd_sqrt(slambda, sdgp, lscale):  # sqrt of spd_cov_exp_quad, one input dimension
        return jnp.sqrt(sdgp ** 2 * jnp.sqrt(2 * jnp.pi) * lscale
                        * jnp.exp(-0.5 * lscale ** 2 * slambda[:, 0] ** 2))

    half_t = dist.FoldedDistribution(dist.StudentT(3.0, 0.0, 36.0))  # student_t + lccdf(0) term
    intercept = numpyro.sample("Intercept", dist.StudentT(3.0, -13.0, 36.0))
    sdgp_1 = numpyro.sample("sdgp_1", half_t)
    lscale_1 = numpyro.sample("lscale_1", dist.InverseGamma(1.124909, 0.0177))
    zgp_1 = numpyro.sample("zgp_1", dist.Normal(0.0, 1.0).expand([d["NBgp_1"]]).to_event(1))
    intercept_sigma = numpyro.sample("Intercept_sigma", dist.StudentT(3.0, 0.0, 10.0))
    sdgp_sigma_1 = numpyro.sample("sdgp_sigma_1", half_t)
    lscale_sigma_1 = numpyro.sample("lscale_sigma_1", dist.InverseGamma(1.124909, 0.0177))
    zgp_sigma_1 = numpyro.sample("zgp_sigma_1",
                                 dist.Normal(0.0, 1.0).expand([d["NBgp_sigma_1"]]).to_event(1))
    mu = intercept + d["Xgp_1"] @ (spd_sqrt(d["slambda_1"], sdgp_1, lscale_1) * zgp_1)
    log_sigma = intercept_sigma + d["Xgp_sigma_1"] @ (
        spd_sqrt(d["slambda_sigma_1"], sdgp_sigma_1, lscale_sigma_1) * zgp_sigma_1)
    if not d["prior_only"]:
        numpyro.sample("Y", dist.Normal(mu, jnp.exp(log_sigma)).to_event(1), obs=d["Y"])
