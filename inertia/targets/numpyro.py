"""NumPyro models as targets: the potential in NumPyro's unconstrained space, outputs constrained back.

NumPyro is optional (`pip install 'inertia[numpyro]'`). The target works on the flat vector of the
model's unconstrained latent sites (sites ravelled in sorted-name order, as `jax.flatten_util`
does); `target.info["constrain"](x)` maps such vectors (any leading batch axes) back to a dict of
constrained sample sites (plus deterministic sites), ready for `inertia.arviz_io.to_arviz_draws`.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from .base import Target, TargetError, cast_floats, from_logdensity


def _numpyro():
    try:
        import numpyro  # noqa: F401
        from numpyro.infer.util import initialize_model
    except ImportError as err:
        raise ImportError("from_numpyro needs NumPyro: pip install 'inertia[numpyro]'") from err
    return initialize_model


def _initialise(model, model_args, model_kwargs, seed):
    initialize_model = _numpyro()
    try:
        return initialize_model(jax.random.PRNGKey(seed), model, model_args=model_args,
                                model_kwargs=model_kwargs, dynamic_args=False)
    except Exception as err:  # NumPyro raises RuntimeError / ValueError variants
        raise TargetError(f"NumPyro could not initialise the model: {err}") from err


def from_numpyro(model, *model_args, alpha=None, beta=None, name=None, seed=0,
                 model_kwargs=None, **kwargs) -> Target:
    """Target V(u) = NumPyro's potential (negative log joint + log |Jacobian|) at unconstrained u.

    `model(*model_args, **kwargs)` is traced once by `numpyro.infer.util.initialize_model`
    (observed sites fixed by the arguments). Keyword arguments named alpha / beta / name / seed /
    model_kwargs belong to this function; pass model keywords with those names in `model_kwargs`.
    `alpha`, `beta`: curvature bounds of V, needed by the VI step rules. `Target.astype(float32)`
    re-initialises the model with its floating-point arguments cast to float32.
    `info`: "constrain" (flat (..., d) -> {site: (..., *shape)} constrained values), "sites"
    ({site: unconstrained shape}), "init" (NumPyro's initial unconstrained point, flat).
    """
    mkw = dict(model_kwargs or {})
    mkw.update(kwargs)
    info = _initialise(model, model_args, mkw, seed)
    z0 = info.param_info.z
    if not z0:
        raise TargetError("the NumPyro model has no latent sample sites (everything is observed)")
    potential_fn, postprocess_fn = info.potential_fn, info.postprocess_fn
    flat0, unravel = jax.flatten_util.ravel_pytree(z0)
    flat0 = flat0.astype(jnp.float64)

    def logdensity(params):
        return -potential_fn(params)

    def constrain(x):
        """Constrained sample and deterministic sites for unconstrained x of shape (..., d)."""
        x = jnp.asarray(x, dtype=jnp.float64)
        if x.shape[-1:] != flat0.shape:
            raise ValueError(f"expected unconstrained vectors with last axis {flat0.shape[0]}; "
                             f"got shape {x.shape}")
        lead = x.shape[:-1]
        flat = x.reshape((-1, flat0.shape[0]))
        out = jax.vmap(lambda v: postprocess_fn(unravel(v)))(flat)
        return {k: jnp.reshape(v, lead + v.shape[1:]) for k, v in out.items()}

    label = name or f"numpyro:{getattr(model, '__name__', 'model')}"
    from ..posterior import site_names

    sites = {k: tuple(jnp.shape(v)) for k, v in z0.items()}
    extra = {"constrain": constrain, "postprocess": postprocess_fn, "sites": sites, "init": flat0,
             "names": site_names(sites)}

    def recast(dtype):  # the model re-traced on its data in dtype; the latent point in dtype
        args, kw = cast_floats((model_args, mkw), dtype)
        potential = _initialise(model, args, kw, seed).potential_fn
        return from_logdensity(lambda p: -potential(p), cast_floats(z0, dtype))

    return from_logdensity(logdensity, z0, alpha=alpha, beta=beta, name=label, info=extra,
                           recast=recast)


__all__ = ["from_numpyro"]
