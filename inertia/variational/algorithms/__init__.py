"""VI algorithms as pure kernels (`init`, `step`); see `inertia.variational.registry` for the methods."""
