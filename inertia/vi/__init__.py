"""Full-covariance Gaussian VI with accelerated proximal and projected methods (Park, Jang & Chen 2026).

`fit(target, method, ...)` runs any method of `METHODS`; see README's method table. This is the
public namespace: `fit` is the workflow (`inertia.workflows.fit`: the Gaussian fit, the centredness
rewrite with `reparam="auto"`, the exact sampler with `ensure=...`); the fit itself, its methods and
policies live in `inertia.variational`, below the drivers, where the sampler's warm-up uses it too.
"""
from ..variational import family
from ..variational.estimators import ESTIMATORS, Estimator
from ..variational.fit import FitResult, hitting_step, make_kernel
from ..variational.objective import Reference, entropy, gaps, objective, reference
from ..variational.options import FitOptions
from ..variational.registry import METHODS, PAPER_METHODS, Method, get_method, momentum
from ..workflows.fit import fit

__all__ = ["fit", "FitOptions", "FitResult", "hitting_step", "make_kernel", "METHODS",
           "PAPER_METHODS", "Method", "get_method", "momentum", "ESTIMATORS", "Estimator",
           "objective", "reference", "gaps", "entropy", "Reference", "family"]
