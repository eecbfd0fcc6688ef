"""The posterior suite: non-Gaussian and hierarchical targets beside near-Gaussian ones.

Each entry is a `Posterior`: an inertia `Target` on an unconstrained space, a map from that space
to named scalar quantities (NumPyro models: their constrained sample and deterministic sites;
the others: the coordinates themselves), and where the law is known in closed form its exact
means and sds of those quantities. Simulated data come from fixed numpy seeds named below.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np

import inertia.config

inertia.config.enable_x64()  # this script's own JAX arrays (and peers') in float64

import inertia  # noqa: F401  (float64)
import numpyro
import numpyro.distributions as dist
from inertia.posterior import named_draws
from inertia.targets import Target, from_numpyro, from_potential

HARD, NEAR = "non-Gaussian / hierarchical", "near-Gaussian"


@dataclasses.dataclass
class Posterior:
    """A target, its named quantities and (when known) their exact means and sds."""

    name: str
    group: str
    target: Target
    description: str
    exact: Optional[dict] = None  # {"mean": {name: float}, "sd": {name: float}}

    @property
    def dim(self) -> int:
        return self.target.dim

    def named(self, x) -> dict:
        """{quantity: draws} for unconstrained draws x of shape (..., dim)."""
        x = np.asarray(x, dtype=np.float64)
        constrain = self.target.info.get("constrain")
        names = self.target.info.get("names")
        out = named_draws(x, names=None if constrain else names, constrain=constrain)
        return {k: np.asarray(v) for k, v in out.items()}


def _flat(name, potential, names, **kw):
    return from_potential(potential, len(names), name=name, info={"names": list(names)}, **kw)


# --- exact laws ------------------------------------------------------------------------------

def banana() -> Posterior:
    """x1 ~ N(0, 9), x2 | x1 ~ N(0.25 (x1^2 - 9), 1): E x = 0, var x2 = 1 + 0.0625 * 2 * 81."""
    def V(x):
        return x[0] ** 2 / 18.0 + 0.5 * (x[1] - 0.25 * (x[0] ** 2 - 9.0)) ** 2

    ex = {"mean": {"x[0]": 0.0, "x[1]": 0.0}, "sd": {"x[0]": 3.0, "x[1]": float(np.sqrt(11.125))}}
    return Posterior("banana", HARD, _flat("banana", V, ["x[0]", "x[1]"]),
                     "banana, d = 2 (x1 ~ N(0,9), x2|x1 ~ N(x1^2/4 - 9/4, 1))", exact=ex)


def banana_draws(n, rng):
    x1 = 3.0 * rng.standard_normal(n)
    return np.stack([x1, 0.25 * (x1 ** 2 - 9.0) + rng.standard_normal(n)], axis=1)


FUNNEL_D = 10


def funnel() -> Posterior:
    """Neal's funnel, d = 10: v ~ N(0, 9), x_i | v ~ N(0, e^v) (i < 9); sd x_i = e^(9/4)."""
    k = FUNNEL_D - 1

    def V(z):
        v, x = z[0], z[1:]
        return v ** 2 / 18.0 + 0.5 * jnp.sum(x ** 2) * jnp.exp(-v) + 0.5 * k * v

    names = ["v"] + [f"x[{i}]" for i in range(k)]
    ex = {"mean": {n: 0.0 for n in names},
          "sd": {"v": 3.0, **{n: float(np.exp(9.0 / 4.0)) for n in names[1:]}}}
    return Posterior("funnel", HARD, _flat("funnel", V, names),
                     "Neal's funnel, d = 10 (centred: v, x_1..x_9)", exact=ex)


def funnel_draws(n, rng):
    v = 3.0 * rng.standard_normal(n)
    return np.concatenate([v[:, None], np.exp(v / 2)[:, None]
                           * rng.standard_normal((n, FUNNEL_D - 1))], axis=1)


# two Gaussian components in d = 4, centres 4 apart on x[0] (a 2-nat barrier: chains cross)
MIX_W = np.array([0.3, 0.7])
MIX_MU = np.array([[-2.0, 0.0, 0.0, 0.0], [2.0, 0.0, 0.0, 0.0]])
MIX_SD = np.array([0.7, 1.0])


def mixture() -> Posterior:
    """0.3 N(-2 e1, 0.49 I) + 0.7 N(2 e1, I) in d = 4, with exact moments."""
    d = MIX_MU.shape[1]
    w, mu, sd = jnp.asarray(MIX_W), jnp.asarray(MIX_MU), jnp.asarray(MIX_SD)

    def V(x):
        lp = (jnp.log(w) - d * jnp.log(sd)
              - 0.5 * jnp.sum((x[None, :] - mu) ** 2, axis=1) / sd ** 2)
        return -jax.scipy.special.logsumexp(lp)

    mean = MIX_W @ MIX_MU
    second = MIX_W @ (MIX_SD[:, None] ** 2 + MIX_MU ** 2)
    names = [f"x[{i}]" for i in range(d)]
    ex = {"mean": dict(zip(names, mean.tolist())),
          "sd": dict(zip(names, np.sqrt(second - mean ** 2).tolist()))}
    return Posterior("mixture", HARD, _flat("mixture", V, names),
                     "2-component Gaussian mixture, d = 4 (weights 0.3/0.7, centres 4 apart)",
                     exact=ex)


def mixture_draws(n, rng):
    k = rng.choice(2, size=n, p=MIX_W)
    return MIX_MU[k] + MIX_SD[k][:, None] * rng.standard_normal((n, MIX_MU.shape[1]))


def _gaussian(name, group, description, A, b, names):
    """Target V = x'Ax/2 - b'x with its exact Gaussian law N(A^-1 b, A^-1)."""
    A, b = np.asarray(A, dtype=np.float64), np.asarray(b, dtype=np.float64)
    Aj, bj = jnp.asarray(A), jnp.asarray(b)
    cov = np.linalg.inv(A)
    mean = cov @ b

    def V(x):
        return 0.5 * x @ (Aj @ x) - bj @ x

    ex = {"mean": dict(zip(names, mean.tolist())),
          "sd": dict(zip(names, np.sqrt(np.diag(cov)).tolist()))}
    return Posterior(name, group, _flat(name, V, names), description, exact=ex), mean, cov


def scaled_linear() -> Posterior:
    """Linear regression, known noise sd 1, N(0, 10^2) prior, predictors scaled 0.1 ... 30 and
    correlated (rng seed 11, n = 200, p = 8): an exact Gaussian posterior."""
    rng = np.random.default_rng(11)
    n, p = 200, 8
    Z = rng.standard_normal((n, p)) @ np.linalg.cholesky(0.5 * np.eye(p) + 0.5).T
    X = Z * np.geomspace(0.1, 30.0, p)
    y = X @ (rng.normal(0, 1, p) / np.geomspace(0.1, 30.0, p)) + rng.standard_normal(n)
    A = X.T @ X + np.eye(p) / 100.0
    post, _, _ = _gaussian("scaled-linear", NEAR, "badly scaled linear regression, d = 8 "
                           "(predictor scales 0.1..30, correlation 0.5; exact)", A, X.T @ y,
                           [f"w[{i}]" for i in range(p)])
    return post


def _matern32(t, ell):
    r = np.abs(t[:, None] - t[None, :]) / ell
    return (1 + np.sqrt(3) * r) * np.exp(-np.sqrt(3) * r)


def gp_gaussian() -> Posterior:
    """Latent Gaussian field with Gaussian likelihood, non-centred: f = L u, u ~ N(0, I), L L' the
    Matern-3/2 kernel (lengthscale 0.3, + 1e-6 I) on 20 points of [0, 1], y = f + N(0, 0.3^2)
    (rng seed 12). The posterior of u is exactly N(P^-1 L'y/s^2, P^-1), P = I + L'L/s^2."""
    rng = np.random.default_rng(12)
    n, s = 20, 0.3
    t = np.linspace(0, 1, n)
    L = np.linalg.cholesky(_matern32(t, 0.3) + 1e-6 * np.eye(n))
    y = np.sin(6 * t) + s * rng.standard_normal(n)
    A = np.eye(n) + L.T @ L / s ** 2
    post, mean, cov = _gaussian("gp-gaussian", NEAR, "latent Gaussian field (GP, Gaussian "
                                "likelihood, non-centred), d = 20 (exact)", A, L.T @ y / s ** 2,
                                [f"u[{i}]" for i in range(n)])
    fm, fc = L @ mean, L @ cov @ L.T
    names = [f"u[{i}]" for i in range(n)] + [f"f[{i}]" for i in range(n)]
    post.exact["mean"].update({f"f[{i}]": float(v) for i, v in enumerate(fm)})
    post.exact["sd"].update({f"f[{i}]": float(v) for i, v in enumerate(np.sqrt(np.diag(fc)))})

    def named(x, _L=L):
        x = np.asarray(x, dtype=np.float64)
        f = x @ _L.T
        return {**{f"u[{i}]": x[..., i] for i in range(n)},
                **{f"f[{i}]": f[..., i] for i in range(n)}}

    post.named = named  # u and the field f = L u
    return post


# --- NumPyro models (references by long NUTS runs, benchmarks/posteriors/reference.py) -----------

SCHOOLS_Y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
SCHOOLS_SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])


def schools_centred(sigma, y):
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
    with numpyro.plate("J", len(y)):
        theta = numpyro.sample("theta", dist.Normal(mu, tau))
        numpyro.sample("y", dist.Normal(theta, sigma), obs=y)


def schools_noncentred(sigma, y):
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
    with numpyro.plate("J", len(y)):
        theta_tilde = numpyro.sample("theta_tilde", dist.Normal(0.0, 1.0))
        theta = numpyro.deterministic("theta", mu + tau * theta_tilde)
        numpyro.sample("y", dist.Normal(theta, sigma), obs=y)


def hier_logistic(g, x, y, G):
    mu = numpyro.sample("mu", dist.Normal(0, 2))
    tau = numpyro.sample("tau", dist.HalfNormal(1.0))
    with numpyro.plate("G", G):
        z = numpyro.sample("z", dist.Normal(0, 1))
    beta = numpyro.sample("beta", dist.Normal(0, 2))
    numpyro.sample("y", dist.Bernoulli(logits=mu + tau * z[g] + beta * x), obs=y)


def hier_logistic_data():
    """100 groups, 2 000 rows, numpy default_rng(0): group effects N(0, 0.7^2), slope 0.8."""
    r = np.random.default_rng(0)
    G = 100
    g = r.integers(0, G, 2000)
    x = r.normal(size=2000)
    y = r.binomial(1, 1 / (1 + np.exp(-(r.normal(0, 0.7, G)[g] + 0.8 * x)))).astype(float)
    return jnp.asarray(g), jnp.asarray(x), jnp.asarray(y), G


def student_t_regression(X, y):
    a = numpyro.sample("a", dist.Normal(0.0, 1.0))
    b = numpyro.sample("b", dist.Normal(0.0, 1.0).expand([X.shape[1]]).to_event(1))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    nu = numpyro.sample("nu", dist.Gamma(2.0, 0.1))
    numpyro.sample("y", dist.StudentT(nu, a + X @ b, sigma), obs=y)


def rw_poisson(y):
    T = y.shape[0]
    mu = numpyro.sample("mu", dist.Normal(0.0, 2.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(0.5))
    eps = numpyro.sample("eps", dist.Normal(0.0, 1.0).expand([T]).to_event(1))
    f = numpyro.deterministic("f", mu + sigma * jnp.cumsum(eps))
    numpyro.sample("y", dist.Poisson(jnp.exp(f)), obs=y)


def rw_poisson_data():
    """30 counts, numpy default_rng(3): log-rate 1 + a random walk with step sd 0.25."""
    r = np.random.default_rng(3)
    f = 1.0 + np.cumsum(0.25 * r.standard_normal(30))
    return (jnp.asarray(r.poisson(np.exp(f)).astype(float)),)


def hier_linear(g, x, y, G):
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = numpyro.sample("tau", dist.HalfNormal(2.0))
    b = numpyro.sample("b", dist.Normal(0.0, 5.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(2.0))
    with numpyro.plate("G", G):
        a = numpyro.sample("a", dist.Normal(mu, tau))
    numpyro.sample("y", dist.Normal(a[g] + b * x, sigma), obs=y)


def hier_linear_noncentred(g, x, y, G):
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = numpyro.sample("tau", dist.HalfNormal(2.0))
    b = numpyro.sample("b", dist.Normal(0.0, 5.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(2.0))
    with numpyro.plate("G", G):
        a_raw = numpyro.sample("a_raw", dist.Normal(0.0, 1.0))
    a = numpyro.deterministic("a", mu + tau * a_raw)
    numpyro.sample("y", dist.Normal(a[g] + b * x, sigma), obs=y)


def hier_linear_data():
    """8 groups x 6 rows, numpy default_rng(4): intercepts N(1, 0.5^2), slope 0.7, noise sd 1."""
    r = np.random.default_rng(4)
    G = 8
    g = np.repeat(np.arange(G), 6)
    x = r.standard_normal(g.size)
    y = r.normal(1.0, 0.5, G)[g] + 0.7 * x + r.standard_normal(g.size)
    return jnp.asarray(g), jnp.asarray(x), jnp.asarray(y), G


def multilevel_data():
    """40 groups of unequal size (10 of 1 row, 8 of 2, 8 of 5, 8 of 15, 6 of 40: 426 rows), numpy
    default_rng(7): intercepts N(1, 0.5^2), slope 0.7, noise sd 1; data-rich groups are best
    centred, data-poor ones non-centred."""
    r = np.random.default_rng(7)
    sizes = [1] * 10 + [2] * 8 + [5] * 8 + [15] * 8 + [40] * 6
    G = len(sizes)
    g = np.repeat(np.arange(G), sizes)
    x = r.standard_normal(g.size)
    y = r.normal(1.0, 0.5, G)[g] + 0.7 * x + r.standard_normal(g.size)
    return jnp.asarray(g), jnp.asarray(x), jnp.asarray(y), G


def funnel_model(d=FUNNEL_D):
    """Neal's funnel as a NumPyro model: v ~ N(0, 3^2), x_i | v ~ N(0, e^v), i < d - 1."""
    v = numpyro.sample("v", dist.Normal(0.0, 3.0))
    numpyro.sample("x", dist.Normal(0.0, jnp.exp(v / 2)).expand([d - 1]).to_event(1))


def funnel_model_noncentred(d=FUNNEL_D):
    v = numpyro.sample("v", dist.Normal(0.0, 3.0))
    x_raw = numpyro.sample("x_raw", dist.Normal(0.0, 1.0).expand([d - 1]).to_event(1))
    numpyro.deterministic("x", jnp.exp(v / 2) * x_raw)


def funnel_numpyro(model, name, description):
    names = ["v"] + [f"x[{i}]" for i in range(FUNNEL_D - 1)]
    ex = {"mean": {n: 0.0 for n in names},
          "sd": {"v": 3.0, **{n: float(np.exp(9.0 / 4.0)) for n in names[1:]}}}
    return _numpyro(name, HARD, description, model, (), exact=ex)


SCHOOLS_T_DF = 3.0


def schools_t(sigma, y):
    """Eight schools with a Student-t (3 degrees of freedom) group law, centred."""
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
    with numpyro.plate("J", len(y)):
        theta = numpyro.sample("theta", dist.StudentT(SCHOOLS_T_DF, mu, tau))
        numpyro.sample("y", dist.Normal(theta, sigma), obs=y)


def schools_t_noncentred(sigma, y):
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
    with numpyro.plate("J", len(y)):
        theta_tilde = numpyro.sample("theta_tilde", dist.StudentT(SCHOOLS_T_DF, 0.0, 1.0))
        theta = numpyro.deterministic("theta", mu + tau * theta_tilde)
        numpyro.sample("y", dist.Normal(theta, sigma), obs=y)


def stoch_vol(y):
    T = y.shape[0]
    mu = numpyro.sample("mu", dist.Normal(0.0, 2.0))
    phi = numpyro.sample("phi", dist.Uniform(-1.0, 1.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(0.5))
    eta = numpyro.sample("eta", dist.Normal(0.0, 1.0).expand([T]).to_event(1))

    def step(h, e):
        h = mu + phi * (h - mu) + sigma * e
        return h, h

    h0 = mu + sigma * eta[0]
    _, h = jax.lax.scan(step, h0, eta[1:])
    h = jnp.concatenate([h0[None], h])
    numpyro.sample("y", dist.Normal(0.0, jnp.exp(h / 2)), obs=y)


def stoch_vol_data():
    """50 returns, numpy default_rng(5): log-variance AR(1) with mu -1, phi 0.9, sigma 0.4, started
    at h_1 ~ N(mu, sigma^2) (as the model: no 1/sqrt(1 - phi^2) singularity at |phi| = 1)."""
    r = np.random.default_rng(5)
    h = np.empty(50)
    h[0] = -1 + 0.4 * r.standard_normal()
    for t in range(1, 50):
        h[t] = -1 + 0.9 * (h[t - 1] + 1) + 0.4 * r.standard_normal()
    return (jnp.asarray(np.exp(h / 2) * r.standard_normal(50)),)


def logistic(X, y):
    w = numpyro.sample("w", dist.Normal(0.0, 1.0).expand([X.shape[1]]).to_event(1))
    numpyro.sample("y", dist.Bernoulli(logits=X @ w), obs=y)


def german_data():
    from inertia.data import load_dataset

    d = load_dataset("german")
    X = np.concatenate([np.ones((d.X.shape[0], 1)), d.X], axis=1)
    y = (np.asarray(d.y) == 1).astype(float)
    return jnp.asarray(X), jnp.asarray(y)


def diabetes_data():
    from inertia.data import load_dataset

    d = load_dataset("diabetes")
    y = np.asarray(d.y, dtype=float)
    return jnp.asarray(d.X), jnp.asarray((y - y.mean()) / y.std())


def ar(y, p):
    c = numpyro.sample("c", dist.Normal(0.0, 1.0))
    phi = numpyro.sample("phi", dist.Normal(0.0, 0.5).expand([p]).to_event(1))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    lags = jnp.stack([y[p - k - 1:y.shape[0] - k - 1] for k in range(p)], axis=1)
    numpyro.sample("y", dist.Normal(c + lags @ phi, sigma), obs=y[p:])


def ar5_data():
    """AR(5), 300 points, numpy default_rng(6): phi = (0.5, -0.2, 0.1, 0.05, -0.1), noise sd 1."""
    r = np.random.default_rng(6)
    phi = np.array([0.5, -0.2, 0.1, 0.05, -0.1])
    y = np.zeros(400)
    for t in range(5, 400):
        y[t] = 0.3 + phi @ y[t - 5:t][::-1] + r.standard_normal()
    return jnp.asarray(y[100:]), 5


def _numpyro(name, group, description, model, args, **kw):
    return Posterior(name, group, from_numpyro(model, *args, name=name), description, **kw)


def _schools(model):
    return (jnp.asarray(SCHOOLS_SIGMA), jnp.asarray(SCHOOLS_Y))


BUILDERS: dict[str, Callable[[], Posterior]] = {
    "banana": banana,
    "funnel": funnel,
    "mixture": mixture,
    "eight-schools-centred": lambda: _numpyro(
        "eight-schools-centred", HARD, "eight schools, centred (d = 10)", schools_centred,
        _schools(None)),
    "eight-schools-noncentred": lambda: _numpyro(
        "eight-schools-noncentred", HARD, "eight schools, non-centred (d = 10)",
        schools_noncentred, _schools(None)),
    "hier-logistic-100": lambda: _numpyro(
        "hier-logistic-100", HARD, "100-group hierarchical logistic, non-centred (d = 103, "
        "2 000 rows)", hier_logistic, hier_logistic_data()),
    "student-t-diabetes": lambda: _numpyro(
        "student-t-diabetes", HARD, "Student-t regression, unknown nu, on diabetes (d = 13)",
        student_t_regression, diabetes_data()),
    "rw-poisson": lambda: _numpyro(
        "rw-poisson", HARD, "latent random-walk field with Poisson counts, non-centred (d = 32)",
        rw_poisson, rw_poisson_data()),
    "hier-linear-8": lambda: _numpyro(
        "hier-linear-8", HARD, "8-group hierarchical linear regression, centred, 6 rows a group "
        "(d = 12)", hier_linear, hier_linear_data()),
    "hier-linear-8-noncentred": lambda: _numpyro(
        "hier-linear-8-noncentred", HARD, "8-group hierarchical linear regression, non-centred "
        "(d = 12; the reference of hier-linear-8)", hier_linear_noncentred, hier_linear_data()),
    "stoch-vol-50": lambda: _numpyro(
        "stoch-vol-50", HARD, "stochastic volatility, 50 returns, non-centred (d = 53)",
        stoch_vol, stoch_vol_data()),
    "logistic-german": lambda: _numpyro(
        "logistic-german", NEAR, "logistic regression on German credit, N(0,1) prior (d = 21)",
        logistic, german_data()),
    "scaled-linear": scaled_linear,
    "ar5": lambda: _numpyro("ar5", NEAR, "AR(5) with intercept and unknown noise sd, 300 points "
                            "(d = 7)", ar, ar5_data()),
    "gp-gaussian": gp_gaussian,
    "multilevel-40": lambda: _numpyro(
        "multilevel-40", HARD, "40-group hierarchical linear regression, centred, 1 to 40 rows a "
        "group (d = 44, 426 rows)", hier_linear, multilevel_data()),
    "multilevel-40-noncentred": lambda: _numpyro(
        "multilevel-40-noncentred", HARD, "the same, non-centred (the reference of "
        "multilevel-40)", hier_linear_noncentred, multilevel_data()),
    "funnel-numpyro": lambda: funnel_numpyro(
        funnel_model, "funnel-numpyro", "Neal's funnel as a NumPyro model, centred (d = 10)"),
    "funnel-numpyro-noncentred": lambda: funnel_numpyro(
        funnel_model_noncentred, "funnel-numpyro-noncentred",
        "Neal's funnel as a NumPyro model, non-centred (d = 10)"),
    "schools-t": lambda: _numpyro(
        "schools-t", HARD, "eight schools with a Student-t(3) group law, centred (d = 10)",
        schools_t, _schools(None)),
    "schools-t-noncentred": lambda: _numpyro(
        "schools-t-noncentred", HARD, "the same, non-centred (the reference of schools-t)",
        schools_t_noncentred, _schools(None)),
}
# centred models whose reference is a long run of their non-centred twin (the same posterior)
SHARED_REFERENCE = {"eight-schools-centred": "eight-schools-noncentred",
                    "hier-linear-8": "hier-linear-8-noncentred",
                    "multilevel-40": "multilevel-40-noncentred",
                    "schools-t": "schools-t-noncentred"}
# the centred hierarchies that `sample` reparameterises, each beside its hand-non-centred twin
# (benchmarks/posteriors/reparam.py)
REPARAM_PAIRS = {"eight-schools-centred": "eight-schools-noncentred",
                 "hier-linear-8": "hier-linear-8-noncentred",
                 "multilevel-40": "multilevel-40-noncentred",
                 "funnel-numpyro": "funnel-numpyro-noncentred",
                 "schools-t": "schools-t-noncentred"}
# twins that serve only as references (eight-schools-noncentred stays a suite entry of its own)
NAMES = tuple(n for n in BUILDERS
              if n not in set(REPARAM_PAIRS.values()) - {"eight-schools-noncentred"})
EXACT_DRAWS = {"banana": banana_draws, "funnel": funnel_draws, "mixture": mixture_draws,
               "funnel-numpyro": funnel_draws}


def load(name: str) -> Posterior:
    """The posterior called `name` (see NAMES)."""
    if name not in BUILDERS:
        raise KeyError(f"unknown posterior {name!r}; choose from {', '.join(NAMES)}")
    return BUILDERS[name]()
