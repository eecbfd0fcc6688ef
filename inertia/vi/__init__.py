"""Full-covariance Gaussian VI with accelerated proximal and projected methods (Park, Jang & Chen 2026).

`fit(target, method, ...)` runs any method of `METHODS`; see README's method table.
"""
from . import family
from .estimators import ESTIMATORS, Estimator
from .fit import FitResult, hitting_step, make_kernel
from .ensure import fit  # after .fit: the function, not the module, is inertia.vi.fit
from .options import FitOptions
from .objective import Reference, entropy, gaps, objective, reference
from .registry import METHODS, PAPER_METHODS, Method, get_method, momentum

__all__ = ["fit", "FitOptions", "FitResult", "hitting_step", "make_kernel", "METHODS", "PAPER_METHODS",
    "Method", "get_method",
           "momentum", "ESTIMATORS", "Estimator", "objective", "reference", "gaps", "entropy",
           "Reference", "family"]
