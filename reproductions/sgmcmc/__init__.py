"""Experiments of the calibrated SG(L)D paper (Wang, Huggins et al. 2026, Section 6):
`inertia reproduce sgmcmc-linear | sgmcmc-boston | sgmcmc-poisson | sgmcmc-predict | sgmcmc-nn |
sgmcmc-cost [--quick] [--reps N]`, and the authors' code designs `sgmcmc-linear-code |
sgmcmc-boston-code | sgmcmc-poisson-code` (printed and code tuning rules side by side). Every cell
is saved as JSON; a rerun resumes. We use SGD (beta = inf) as the paper does; the printed designs
start at theta_hat and drop the first 10 % of iterations.

One module per part of the paper: `tables` (Tables 2-4 as printed), `code_designs` (the same
tables in the authors' code designs), `predict` (Fig. 1, Table E.1), `nn` (Fig. 2) and `cost`
(Tables D.1-D.2); `_data`, `_runs` and `_report` hold what they share.
"""
from __future__ import annotations

from . import code_designs, cost, nn, predict, tables
from ._data import (THETA_SEED, _boston, _german, sim_linear, sim_linear_code, sim_poisson,
                    sim_poisson_code)
from ._report import PREDICTED_NOTE, _with_reps
from ._runs import _nuts_reference, model_mode
from .code_designs import (BOSTON_CODE_FULL, BOSTON_CODE_QUICK, LINEAR_CODE_FULL,
                           LINEAR_CODE_QUICK, LINEAR_RULES, PAPER_T2_CALIB, POISSON_CODE_FULL,
                           POISSON_CODE_QUICK, POISSON_RULES, run_boston_code, run_linear_code,
                           run_poisson_code)
from .cost import COST_FULL, COST_QUICK, run_cost
from .nn import NN_FULL, NN_QUICK, NN_SIZES, run_nn
from .predict import PAPER_E1, PREDICT_FULL, PREDICT_QUICK, run_predict
from .tables import (BOSTON_FULL, BOSTON_QUICK, LINEAR_FULL, LINEAR_QUICK, PAPER_T2, PAPER_T3,
                     PAPER_T4, POISSON_FULL, POISSON_QUICK, run_boston, run_linear, run_poisson)

EXPERIMENTS = {**code_designs.EXPERIMENTS, **tables.EXPERIMENTS, **predict.EXPERIMENTS,
               **nn.EXPERIMENTS, **cost.EXPERIMENTS}

__all__ = ["EXPERIMENTS", "THETA_SEED", "PREDICTED_NOTE", "model_mode",
           "sim_linear", "sim_poisson", "sim_linear_code", "sim_poisson_code",
           "LINEAR_FULL", "LINEAR_QUICK", "PAPER_T2", "run_linear",
           "BOSTON_FULL", "BOSTON_QUICK", "PAPER_T3", "run_boston",
           "POISSON_FULL", "POISSON_QUICK", "PAPER_T4", "run_poisson",
           "LINEAR_CODE_FULL", "LINEAR_CODE_QUICK", "POISSON_CODE_FULL", "POISSON_CODE_QUICK",
           "BOSTON_CODE_FULL", "BOSTON_CODE_QUICK", "LINEAR_RULES", "POISSON_RULES",
           "PAPER_T2_CALIB", "run_linear_code", "run_poisson_code", "run_boston_code",
           "PREDICT_FULL", "PREDICT_QUICK", "PAPER_E1", "run_predict",
           "NN_FULL", "NN_QUICK", "NN_SIZES", "run_nn", "COST_FULL", "COST_QUICK", "run_cost",
           "_boston", "_german", "_nuts_reference", "_with_reps"]
