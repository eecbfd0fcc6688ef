"""The Gaussian-VI paper's experiments (Park, Jang & Chen 2026, App. D):
`inertia reproduce kappa-scaling | gaussian-methods | graph-probit | logistic [--quick] [--out DIR]`.

One saved cell per (target x method x batch x seed group); a rerun, or a larger run sharing cells,
resumes without recomputing. Sizes can be overridden from Python: `run(out, quick, datasets=[...],
batches=[...], methods=[...], num_steps=...)` computes a subset whose cells the full run reuses.

`gaussian` holds the Gaussian experiments (Figs. 2 and 5), `posteriors` the graph-probit and
logistic-regression ones (Tables 2, 4-6, Figs. 6-7); `_common` what they share.
"""
from __future__ import annotations

from inertia.vi import PAPER_METHODS
from inertia.variational.registry import FIELD_METHODS
from . import gaussian, posteriors
from ._common import (DATASETS, EXACT_ON_GAUSSIANS, LOGISTIC_NODE_FACTORS, PAIRS, SEEDS, TARGETS,
                      THRESHOLDS, graph_probit_target, kappa_target, label, logistic_target,
                      variants)
from .gaussian import GAUSS, KAPPA, run_gaussian_methods, run_kappa_scaling
from .posteriors import GRAPH, LOGISTIC, run_graph_probit, run_logistic

EXPERIMENTS = {**gaussian.EXPERIMENTS, **posteriors.EXPERIMENTS}

__all__ = ["EXPERIMENTS", "PAPER_METHODS", "FIELD_METHODS", "DATASETS", "EXACT_ON_GAUSSIANS",
           "LOGISTIC_NODE_FACTORS", "PAIRS", "SEEDS", "TARGETS", "THRESHOLDS", "KAPPA", "GAUSS",
           "GRAPH", "LOGISTIC", "graph_probit_target", "kappa_target", "logistic_target", "label",
           "variants", "run_kappa_scaling", "run_gaussian_methods", "run_graph_probit",
           "run_logistic"]
