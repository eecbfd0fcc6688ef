"""`inertia reproduce lower-bound`: the hard family of Theorem 3.1, measured (docs/lower-bound.md).

1. probability that a query lands in the hidden region: typical (a query from N(0, I), and from the
   iterates' Gaussians along runs) and worst case over fixed queries (Lemma B.5: any query on or
   outside the sphere of radius a), Monte Carlo with Clopper-Pearson intervals and exact laws,
   against kappa with fitted log-log slopes;
2. GVI methods run on V_v, V_B and a tripwire copy of V_B (NaN on any hidden query) as one compiled
   program with the same keys: transcripts agree until the first hidden query; queries until
   then; final gap on V_v;
3. the gap of N(0, I) on V_v (reduced reference optimisation + Monte Carlo tail correction).

Parts 2 and 3 default to the "unit-energy" radius, whose initial gap is the paper's 1 + o(1);
`rule="asymptotic"` (R^2 = 2 log kappa - 3 log log kappa) stays available, and part 1 and part 3
report both radii. `probability` holds parts 1 and 3, `transcripts` part 2, `experiment` the runs
and their report.
"""
from __future__ import annotations

from ..hard import R_RULES
from .experiment import EXPERIMENTS, FULL, QUICK, run, run_asymptotic
from .probability import (CHUNK, _cp, exact_standard_probability, exact_worst_probability,
                          probability_cell, reference_cell)
from .transcripts import (DEFAULT_RULE, SAMPLE_POINTS, lockstep, objective_v, switch_target,
                          transcript_cell)

__all__ = ["EXPERIMENTS", "FULL", "QUICK", "R_RULES", "CHUNK", "DEFAULT_RULE", "SAMPLE_POINTS",
           "exact_standard_probability", "exact_worst_probability", "probability_cell",
           "reference_cell", "switch_target", "lockstep", "objective_v", "transcript_cell", "run",
           "run_asymptotic", "_cp"]
