"""Targets pi = exp(-V)/Z: potentials with gradients, HVPs and (where possible) exact expectations."""
from .base import (GaussianExpectations, ObservationModel, Target, TargetError, check_point,
                   from_logdensity, from_potential)
from .gaussian import gaussian, kappa_family
from .zoo import MODELS, make_target

# imported on first use: they load scipy.optimize, scipy.sparse and scipy.spatial, which a model
# of the user's never needs
_LAZY = {name: module for module, names in {
    "glm": ("glm_target", "hermite_nodes", "logistic_regression", "probit_regression"),
    "graph_probit": ("graph_probit", "graph_probit_dataset", "graph_probit_reference"),
}.items() for name in names}


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


def from_numpyro(model, *args, **kwargs):
    """Target in the unconstrained space of a NumPyro model."""
    from .numpyro import from_numpyro as _from_numpyro

    return _from_numpyro(model, *args, **kwargs)


def from_pymc(model, **kwargs):
    """Target in the unconstrained space of a PyMC model (needs the optional pymc extra)."""
    from .pymc import from_pymc as _from_pymc

    return _from_pymc(model, **kwargs)


__all__ = [
    "GaussianExpectations", "ObservationModel", "Target", "TargetError", "check_point",
    "from_logdensity", "from_potential", "from_numpyro", "from_pymc", "gaussian", "kappa_family",
    "glm_target", "hermite_nodes", "logistic_regression", "probit_regression", "graph_probit",
    "graph_probit_dataset", "graph_probit_reference", "MODELS",
    "make_target",
]
