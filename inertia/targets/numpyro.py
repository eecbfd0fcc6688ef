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


def _compiled_init(model, model_args, model_kwargs, seed):
    """(unconstrained initial point, potential_fn, postprocess_fn) with NumPyro's own
    `find_valid_initial_params` run inside one `jax.jit`.

    `initialize_model` evaluates the potential and its gradient op by op, compiling every
    primitive separately (≈ 170 small XLA compilations, 3–16 s for a three-site model); traced
    once, the same search is one compilation. The functions are NumPyro's public
    `potential_energy` and `constrain_fn`, as `initialize_model` builds them.
    """
    from functools import partial

    from numpyro import handlers
    from numpyro.distributions.transforms import biject_to
    from numpyro.infer.util import constrain_fn, find_valid_initial_params, potential_energy

    @jax.jit
    def search(key):
        tr = handlers.trace(handlers.seed(model, key)).get_trace(*model_args, **model_kwargs)
        proto = {k: biject_to(site["fn"].support).inv(site["value"]) for k, site in tr.items()
                 if site["type"] == "sample" and not site["is_observed"]}
        if not proto:
            return proto, jnp.asarray(False)
        (z, _, _), ok = find_valid_initial_params(key, model, model_args=model_args,
                                                  model_kwargs=model_kwargs,
                                                  prototype_params=proto)
        return z, ok

    z, ok = search(jax.random.PRNGKey(seed))
    if z and not bool(ok):
        raise TargetError("NumPyro could not initialise the model: no point with a finite "
                          "log density and gradient was found in 100 tries of init_to_uniform")
    return (z, partial(potential_energy, model, model_args, model_kwargs),
            partial(constrain_fn, model, model_args, model_kwargs, return_deterministic=True))


def _initialise(model, model_args, model_kwargs, seed):
    """(z0, potential_fn, postprocess_fn): the compiled search, or NumPyro's `initialize_model`
    (its own messages) for models the search cannot trace, e.g. discrete or enumerated sites."""
    try:
        return _compiled_init(model, tuple(model_args), model_kwargs, seed)
    except TargetError:
        raise
    except Exception:
        initialize_model = _numpyro()
        try:
            info = initialize_model(jax.random.PRNGKey(seed), model, model_args=model_args,
                                    model_kwargs=model_kwargs, dynamic_args=False)
        except Exception as err:  # NumPyro raises RuntimeError / ValueError variants
            raise TargetError(f"NumPyro could not initialise the model: {err}") from err
        return info.param_info.z, info.potential_fn, info.postprocess_fn


def from_numpyro(model, *model_args, alpha=None, beta=None, name=None, seed=0,
                 model_kwargs=None, **kwargs) -> Target:
    """Target V(u) = NumPyro's potential (negative log joint + log |Jacobian|) at unconstrained u.

    `model(*model_args, **kwargs)` is traced inside one jit that runs NumPyro's
    `find_valid_initial_params` (observed sites fixed by the arguments; models it cannot trace
    fall back to `numpyro.infer.util.initialize_model`). Keyword arguments named alpha / beta /
    name / seed / model_kwargs belong to this function; pass model keywords with those names in `model_kwargs`.
    `alpha`, `beta`: curvature bounds of V, needed by the VI step rules. `Target.astype(float32)`
    re-initialises the model with its floating-point arguments cast to float32.
    `info`: "constrain" (flat (..., d) -> {site: (..., *shape)} constrained values), "sites"
    ({site: unconstrained shape}), "init" (NumPyro's initial unconstrained point, flat).
    """
    mkw = dict(model_kwargs or {})
    mkw.update(kwargs)
    z0, potential_fn, postprocess_fn = _initialise(model, model_args, mkw, seed)
    if not z0:
        raise TargetError("the NumPyro model has no latent sample sites (everything is observed)")
    flat0, unravel = jax.flatten_util.ravel_pytree(z0)
    flat0 = flat0.astype(jnp.float64)

    # jitted once here so that the model (NumPyro's effect handlers, slow to trace) is traced once per
    # input shape; every transform and enclosing jit of the fit reuses that jaxpr
    logdensity = jax.jit(lambda params: -potential_fn(params))

    constrain_flat = jax.jit(jax.vmap(lambda v: postprocess_fn(unravel(v))))

    def constrain(x):
        """Constrained sample and deterministic sites for unconstrained x of shape (..., d)."""
        x = jnp.asarray(x, dtype=jnp.float64)
        if x.shape[-1:] != flat0.shape:
            raise ValueError(f"expected unconstrained vectors with last axis {flat0.shape[0]}; "
                             f"got shape {x.shape}")
        lead = x.shape[:-1]
        flat = x.reshape((-1, flat0.shape[0]))
        out = constrain_flat(flat)
        return {k: jnp.reshape(v, lead + v.shape[1:]) for k, v in out.items()}

    label = name or f"numpyro:{getattr(model, '__name__', 'model')}"
    from ..posterior import site_names

    sites = {k: tuple(jnp.shape(v)) for k, v in z0.items()}
    extra = {"constrain": constrain, "postprocess": postprocess_fn, "sites": sites, "init": flat0,
             "names": site_names(sites)}

    def recast(dtype):  # the model re-traced on its data in dtype; the latent point in dtype
        args, kw = cast_floats((model_args, mkw), dtype)
        potential = _initialise(model, args, kw, seed)[1]
        return from_logdensity(lambda p: -potential(p), cast_floats(z0, dtype))

    return from_logdensity(logdensity, z0, alpha=alpha, beta=beta, name=label, info=extra,
                           recast=recast)


__all__ = ["from_numpyro"]
