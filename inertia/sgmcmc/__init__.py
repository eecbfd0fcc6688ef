"""Calibrated SGD / SGLD: preconditioned stochastic-gradient samplers whose stationary covariance
matches the sandwich covariance (Wang, Huggins et al. 2026); building blocks in docs/sgmcmc.md.

Algorithm 1 in one call::

    from inertia import sgmcmc
    res = sgmcmc.calibrate("linear", (X, y), batch_size=32, num_steps=20_000, seed=0)
    res.Lambda, res.target_cov, res.predicted_cov, res.empirical_cov, res.iat
"""
from . import kernels, large, models, offline, passes, predict, stream, tuning
from .calibrate import CalibrationResult, CalibrationWarning, calibrate, empirical_ess, rel_fro
from .kernels import SGLDInfo, SGLDState, build_kernel, minibatch_indices, proxy_gradient, sample
from .models import (Model, from_loss, linear_regression, logistic_regression, make_model,
                     poisson_regression)
from .offline import Curvature, curvature, fit_map
from .predict import (IAT, Stationary, autocorrelation, covariance_standard_errors, iat,
                      iterate_average_cov, predicted_ess, stationary, stationary_cov, theory_cov)
from .tuning import METHODS, Tuning, tune

__all__ = [
    "calibrate", "CalibrationResult", "CalibrationWarning", "empirical_ess", "rel_fro",
    "kernels", "large", "models", "offline", "passes", "predict", "stream", "tuning",
    "SGLDInfo", "SGLDState", "build_kernel", "minibatch_indices", "proxy_gradient", "sample",
    "Model", "from_loss", "linear_regression", "logistic_regression", "make_model",
    "poisson_regression", "Curvature", "curvature", "fit_map",
    "IAT", "Stationary", "autocorrelation", "covariance_standard_errors", "iat",
    "iterate_average_cov", "predicted_ess", "stationary", "stationary_cov", "theory_cov",
    "METHODS", "Tuning", "tune",
]
