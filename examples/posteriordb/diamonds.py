"""Linear regression on a design matrix, posteriordb's `diamonds` model (brms-generated Stan).

Data (diamonds.json): N (int), Y (N reals), K (int, columns of X including the intercept's),
X (N x K design matrix, first column ones), prior_only (int, 1: sample the prior only). As in the
Stan model the predictors X[:, 1:] are centred, b ~ normal(0, 1), Intercept ~ student_t(3, 8, 10),
sigma ~ half-student_t(3, 0, 10); `b_Intercept` is the intercept on the uncentred predictors.
"""
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def model(N, Y, K, X, prior_only):
    means_X = jnp.mean(X[:, 1:], axis=0)
    Xc = X[:, 1:] - means_X
    b = numpyro.sample("b", dist.Normal(0.0, 1.0).expand([K - 1]).to_event(1))
    intercept = numpyro.sample("Intercept", dist.StudentT(3.0, 8.0, 10.0))
    sigma = numpyro.sample("sigma", dist.FoldedDistribution(dist.StudentT(3.0, 0.0, 10.0)))
    numpyro.deterministic("b_Intercept", intercept - means_X @ b)
    if not prior_only:
        numpyro.sample("Y", dist.Normal(intercept + Xc @ b, sigma).to_event(1), obs=Y)
