"""Targets pi = exp(-V)/Z: potentials with gradients, HVPs and (where possible) exact expectations."""
from .base import (GaussianExpectations, ObservationModel, Target, TargetError, check_point,
                   from_logdensity, from_potential)
from .gaussian import gaussian, kappa_family
from .glm import glm_target, hermite_nodes, logistic_regression, probit_regression
from .graph_probit import graph_probit, graph_probit_dataset, graph_probit_reference
from .hard import hard_family, hard_pair
from .zoo import MODELS, make_target


def from_numpyro(model, *args, **kwargs):
    """Target in the unconstrained space of a NumPyro model (needs the optional numpyro extra)."""
    from .numpyro import from_numpyro as _from_numpyro

    return _from_numpyro(model, *args, **kwargs)


__all__ = [
    "GaussianExpectations", "ObservationModel", "Target", "TargetError", "check_point",
    "from_logdensity", "from_potential", "from_numpyro", "gaussian", "kappa_family", "glm_target",
    "hermite_nodes", "logistic_regression", "probit_regression", "graph_probit",
    "graph_probit_dataset", "graph_probit_reference", "hard_family", "hard_pair", "MODELS",
    "make_target",
]
