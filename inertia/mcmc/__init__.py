"""inertia.mcmc: exact (Metropolis-adjusted) HFHR, the default, and the unadjusted HFHR, KLMC and ULA
schemes with exact Gaussian diagnostics (spec HFHR.md, docs/hfhr.md)."""
from .._compile import per_target as _per_target
from .._gc import fewer_collections as _fewer_collections
from .._threads import blas_limited as _blas_limited
from . import sample as _sample_module

# one BLAS thread (inertia._threads); programs compiled at the target's tier (inertia._compile);
# fewer garbage collections while tracing (inertia._gc)
_sample_module.sample = _blas_limited(_fewer_collections()(_per_target("sample")(_sample_module.sample)))
from .gaussian import GaussianDiagnostics, StationaryLaw, affine_map, propagate, stationary_affine, w2_gaussian
from .kernels import (REGISTRY, ExactInfo, ExactState, Info, KineticState, LangevinState, Method,
                      Params, get_method, hfhr, hfhr_exact, hfhr_rm, klmc, ula, uld_rm)
from .nag import hfhr_euler_step, nag_sc, nag_to_hfhr
from .sample import SampleResult, sample
from .tuning import default_parameters, tune_ess, tune_gaussian
from .gaussian import chain_statistics

__all__ = [
    "sample", "SampleResult", "REGISTRY", "get_method", "Method", "Params", "Info", "KineticState",
    "LangevinState", "hfhr", "hfhr_exact", "ExactState", "ExactInfo", "klmc", "ula", "hfhr_rm", "uld_rm", "GaussianDiagnostics", "StationaryLaw", "affine_map",
    "propagate", "stationary_affine", "w2_gaussian", "nag_sc", "nag_to_hfhr", "hfhr_euler_step",
    "default_parameters", "tune_gaussian", "tune_ess", "chain_statistics",
]
