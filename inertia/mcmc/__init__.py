"""inertia.mcmc: exact (Metropolis-adjusted) HFHR, the default, and the unadjusted HFHR, KLMC and ULA
schemes with exact Gaussian diagnostics (docs/hfhr.md)."""
from .gaussian import (GaussianDiagnostics, StationaryLaw, affine_map, propagate, stationary_affine,
                       w2_gaussian)
from .kernels import (REGISTRY, ExactInfo, ExactState, Info, KineticState, LangevinState, Method,
                      Params, get_method, hfhr, hfhr_exact, hfhr_rm, klmc, ula, uld_rm)
from .nag import hfhr_euler_step, nag_sc, nag_to_hfhr
from .options import SampleOptions
from .sample import SampleResult, sample
from .tuning import default_parameters, tune_ess, tune_gaussian
from .gaussian import chain_statistics

__all__ = [
    "sample", "SampleOptions", "SampleResult", "REGISTRY", "get_method", "Method", "Params", "Info",
    "KineticState",
    "LangevinState", "hfhr", "hfhr_exact", "ExactState", "ExactInfo", "klmc", "ula", "hfhr_rm",
    "uld_rm", "GaussianDiagnostics", "StationaryLaw", "affine_map",
    "propagate", "stationary_affine", "w2_gaussian", "nag_sc", "nag_to_hfhr", "hfhr_euler_step",
    "default_parameters", "tune_gaussian", "tune_ess", "chain_statistics",
]
