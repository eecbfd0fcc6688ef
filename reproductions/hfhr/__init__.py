"""HFHR experiments ("Experiments to run"): `inertia reproduce hfhr-gaussian |
hfhr-logistic | hfhr-bnn | hfhr-mixture [--quick]`, one module each. Every cell is saved as JSON;
a rerun resumes.

These are our experiments of the paper's kinds; no number is the paper's (docs/hfhr.md).
"""
from __future__ import annotations

from . import bnn, gaussian, logistic, mixture
from ._common import LOGI_METHODS
from .bnn import BNN_FULL, BNN_QUICK, run_bnn
from .gaussian import GAUSS_FULL, GAUSS_QUICK, TOL, run_gaussian
from .logistic import LOGI_FULL, LOGI_QUICK, run_logistic
from .mixture import MIX_FULL, MIX_QUICK, run_mixture

EXPERIMENTS = {**gaussian.EXPERIMENTS, **logistic.EXPERIMENTS, **bnn.EXPERIMENTS,
               **mixture.EXPERIMENTS}

__all__ = ["EXPERIMENTS", "BNN_FULL", "BNN_QUICK", "GAUSS_FULL", "GAUSS_QUICK", "LOGI_FULL",
           "LOGI_METHODS", "LOGI_QUICK", "MIX_FULL", "MIX_QUICK", "TOL", "run_bnn",
           "run_gaussian", "run_logistic", "run_mixture"]
