"""VI algorithms as pure kernels (`init`, `step`); see `inertia.vi.registry` for the methods."""
