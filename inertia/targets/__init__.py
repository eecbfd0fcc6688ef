"""Targets pi = exp(-V)/Z: potentials with gradients, HVPs and (where possible) exact expectations."""
from .base import (GaussianExpectations, ObservationModel, Target, TargetError, check_point,
                   from_logdensity, from_potential)
from .gaussian import gaussian, kappa_family
from .glm import glm_target, hermite_nodes, logistic_regression, probit_regression

__all__ = [
    "GaussianExpectations", "ObservationModel", "Target", "TargetError", "check_point",
    "from_logdensity", "from_potential", "gaussian", "kappa_family", "glm_target",
    "hermite_nodes", "logistic_regression", "probit_regression",
]
