"""Gaussian VI, the engine: the driver `fit.fit` (bounds and start, method choice, the compiled run,
the stopping rule, averaging; the quality check with `quality=True`), its methods (`registry`,
`algorithms`, `estimators`) and policies. It imports no other driver: the sampler's warm-up fits its
Gaussian here (no quality check, no escalation). The public namespace is `inertia.vi`.
"""
