"""inertia: momentum-accelerated Bayesian inference on JAX.

Importing inertia turns on JAX float64 (``jax_enable_x64``): objective gaps are reported to 1e-10.
"""
import jax

jax.config.update("jax_enable_x64", True)

__version__ = "0.1.0"
