"""NumPyro models as targets: the potential in NumPyro's unconstrained space, outputs constrained back.

The target works on the flat vector of the model's unconstrained latent sites (sorted-name order, as
`jax.flatten_util`); `target.info["constrain"](x)` maps such vectors back to constrained sites.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .. import _compile
from .._scope import entry_point
from ..data.checks import bad_entries, int64_notes
from .base import Target, TargetError, cast_floats, from_logdensity, jitted, ravel
from ..posterior import check_unique_names
from .labels import inverse_label, unconstrained_names


def _numpyro():
    try:
        import numpyro  # noqa: F401
        from numpyro.infer.util import initialize_model
    except ImportError as err:
        raise ImportError("from_numpyro needs NumPyro, a dependency of inertia: pip install numpyro") from err
    return initialize_model


INIT_RADIUS = 2.0  # starts drawn uniform(-2, 2) on the unconstrained space, as init_to_uniform
INIT_TRIES = 100


def _improper_value(msg):
    """Value of a latent `ImproperUniform` site in the abstract trace: its support's image of zeros."""
    from numpyro.distributions import ImproperUniform
    from numpyro.distributions.transforms import biject_to

    fn = msg.get("fn")
    if msg["type"] != "sample" or msg.get("is_observed") or not isinstance(fn, ImproperUniform):
        return None
    t = biject_to(fn.support)
    shape = tuple(msg["kwargs"].get("sample_shape") or ()) + tuple(t.inverse_shape(fn.shape()))
    return t(jnp.zeros(shape))


def _traced_init(model, model_args, model_kwargs, seed, labels=None, shapes=None):
    """(prototype, potential_fn, postprocess_fn) from one abstract trace of the model (`jax.eval_shape`)."""
    from functools import partial

    from numpyro import handlers
    from numpyro.distributions.transforms import biject_to
    from numpyro.infer.util import constrain_fn, potential_energy

    observed = []

    def proto(key):
        seeded = handlers.substitute(handlers.seed(model, key), substitute_fn=_improper_value)
        tr = handlers.trace(seeded).get_trace(*model_args, **model_kwargs)
        observed.extend((k, site["fn"], site["value"]) for k, site in tr.items()
                        if site["type"] == "sample" and site["is_observed"])
        latent = {k: site for k, site in tr.items()
                  if site["type"] == "sample" and not site["is_observed"]}
        discrete = {k: type(site["fn"]).__name__ for k, site in latent.items()
                    if getattr(site["fn"], "is_discrete", False)}
        if discrete:
            raise TargetError(
                "inertia needs continuous latent sites; marginalise or enumerate them in NumPyro "
                f"(discrete latent sites: {', '.join(f'{k} ({v})' for k, v in discrete.items())}"
                "; marginalising sums the site out of the model, e.g. a mixture's assignment "
                "into numpyro.distributions.MixtureSameFamily)")
        if shapes is not None:  # latent and deterministic sites: their display names
            shapes.update({k: tuple(jnp.shape(site["value"])) for k, site in tr.items()
                           if site["type"] == "deterministic" or k in latent})
        if labels is not None:
            labels.update({k: inverse_label(biject_to(site["fn"].support))
                           for k, site in latent.items()})
        return {k: biject_to(site["fn"].support).inv(site["value"]) for k, site in latent.items()}

    found = jax.eval_shape(proto, jax.ShapeDtypeStruct((2,), jnp.uint32))  # a key's shape only
    _check_observed(observed)
    z = {k: np.zeros(v.shape, v.dtype) for k, v in found.items()}
    return (z, partial(potential_energy, model, model_args, model_kwargs),
            partial(constrain_fn, model, model_args, model_kwargs, return_deterministic=True))


def _check_observed(observed) -> None:
    """TargetError naming observed data that are not finite or outside their distribution's support."""
    for name, fn, value in observed:
        if isinstance(value, jax.core.Tracer):
            continue
        value = np.asarray(value)
        if value.dtype.kind not in "fiub":
            continue
        bad = bad_entries(name, value)
        if bad:
            raise TargetError(f"the data of observed site {name!r} are not finite: {bad}; every "
                              "observed value must be a number (drop or impute the missing ones "
                              "before the fit)")
        try:
            inside = np.asarray(fn.support(jnp.asarray(value)))
        except Exception:  # a support that depends on the parameters (traced): not checked here
            continue
        if inside.shape != value.shape:
            inside = inside if inside.ndim == 0 else None
        if inside is None:
            continue
        bad = bad_entries(name, value, inside)
        if bad:
            raise TargetError(f"the data of observed site {name!r} lie outside the support of its "
                              f"{type(fn).__name__} distribution ({fn.support}): {bad}; the log "
                              "likelihood is -inf there: fix the data or the likelihood")


def _initialise(model, model_args, model_kwargs, seed, labels=None, shapes=None):
    """(prototype, start or None, potential_fn, postprocess_fn): abstract trace, else `initialize_model`."""
    try:
        z, potential_fn, postprocess_fn = _traced_init(model, tuple(model_args), model_kwargs,
                                                       seed, labels, shapes)
        return z, None, potential_fn, postprocess_fn
    except TargetError:
        raise
    except Exception:
        initialize_model = _numpyro()
        try:
            info = initialize_model(jax.random.PRNGKey(seed), model, model_args=model_args,
                                    model_kwargs=model_kwargs, dynamic_args=False)
        except Exception as err:  # NumPyro raises RuntimeError / ValueError variants
            note = int64_notes(dict(model_kwargs, **{f"argument {i}": a
                                                     for i, a in enumerate(model_args)}))
            raise TargetError(f"NumPyro could not initialise the model: {err}"
                              + (f" ({note})" if note else "")) from err
        return info.param_info.z, info.param_info.z, info.potential_fn, info.postprocess_fn


def _valid_start(target, seed, who: str = "NumPyro"):
    """A flat start with finite V and grad V: uniform(-2, 2) draws (init_to_uniform), up to 100 tries."""
    vg = jitted(target, "value_and_grad")
    rng = np.random.default_rng(seed)
    for _ in range(INIT_TRIES):
        x = rng.uniform(-INIT_RADIUS, INIT_RADIUS, target.dim)
        v, g = vg(_compile.device(x))
        if np.isfinite(float(v)) and np.all(np.isfinite(np.asarray(g))):
            return _compile.device(x)
    raise TargetError(f"{who} could not initialise the model: no point with a finite log density "
                      f"and gradient was found in {INIT_TRIES} draws of uniform(-2, 2) on the "
                      "unconstrained space")


def _check_names(shapes, z0):
    """TargetError when two sites (latent or deterministic) share a display name (`b[0]` beside `b`)."""
    shapes = shapes or {k: tuple(jnp.shape(v)) for k, v in z0.items()}
    try:
        check_unique_names(shapes, "NumPyro model")
    except ValueError as err:
        raise TargetError(str(err)) from None


@entry_point()  # float64, fewer garbage collections while tracing (inertia._scope)
def from_numpyro(model, *model_args, alpha=None, beta=None, name=None, seed=0,
                 model_kwargs=None, **kwargs) -> Target:
    """Target V(u) = NumPyro's potential (negative log joint + log |Jacobian|) at unconstrained u.

    `model(*model_args, **kwargs)`; model keywords named alpha/beta/name/seed go in `model_kwargs`.
    `alpha`, `beta`: curvature bounds of V. `info`: "constrain", "sites", "init", "names", "numpyro".
    """
    mkw = dict(model_kwargs or {})
    mkw.update(kwargs)
    labels = {}
    shapes = {}
    z0, start, potential_fn, postprocess_fn = _initialise(model, model_args, mkw, seed, labels,
                                                          shapes)
    if not z0:
        raise TargetError("the NumPyro model has no latent sample sites (everything is observed)")
    flat0, unravel = ravel(z0)
    _check_names(shapes, z0)

    # jitted once here so that the model (NumPyro's effect handlers, slow to trace) is traced once per
    # input shape; every transform and enclosing jit of the fit reuses that jaxpr
    logdensity = _compile.jit(lambda params: -potential_fn(params))

    constrain_flat = _compile.jit(jax.vmap(lambda v: postprocess_fn(unravel(v))))

    def constrain(x):
        """Constrained sample and deterministic sites for unconstrained x of shape (..., d)."""
        traced = isinstance(x, jax.core.Tracer)
        x = jnp.asarray(x, dtype=jnp.float64) if traced else np.asarray(x, dtype=np.float64)
        if x.shape[-1:] != flat0.shape:
            raise ValueError(f"expected unconstrained vectors with last axis {flat0.shape[0]}; "
                             f"got shape {x.shape}")
        lead = x.shape[:-1]
        flat = x.reshape((-1, flat0.shape[0]))
        out = constrain_flat(flat)
        if traced:
            return {k: jnp.reshape(v, lead + v.shape[1:]) for k, v in out.items()}
        return {k: np.reshape(np.asarray(v), lead + v.shape[1:]) for k, v in out.items()}

    label = name or f"numpyro:{getattr(model, '__name__', 'model')}"
    sites = {k: tuple(jnp.shape(v)) for k, v in z0.items()}
    extra = {"constrain": constrain, "postprocess": postprocess_fn, "sites": sites, "init": flat0,
             "names": unconstrained_names(sites, labels if set(labels) == set(sites) else None),
             "numpyro": {"model": model, "args": tuple(model_args), "kwargs": mkw}}

    def recast(dtype):  # the model re-traced on its data in dtype; the latent point in dtype
        args, kw = cast_floats((model_args, mkw), dtype)
        potential = _initialise(model, args, kw, seed)[2]
        return from_logdensity(lambda p: -potential(p), cast_floats(z0, dtype))

    target = from_logdensity(logdensity, z0, alpha=alpha, beta=beta, name=label, info=extra,
                             recast=recast)
    with _compile.tier_for(target):
        extra["init"] = (_valid_start(target, seed) if start is None
                         else jax.flatten_util.ravel_pytree(start)[0].astype(jnp.float64))
    return target


__all__ = ["from_numpyro"]
