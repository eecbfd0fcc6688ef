"""Partial non-centring of a NumPyro model's location-scale sites (Gorinova, Moore & Hoffman 2020).

A latent site x ~ F(loc, scale) of a location-scale family whose loc or scale depends on other
latent sites is rewritten by NumPyro's own `LocScaleReparam(centered=c)` as
x~ ~ F(c loc, scale^c), x = loc + scale^(1-c) (x~ - c loc): c = 1 is the centred model, c = 0
the non-centred one, elementwise. LogNormal sites are rewritten in log space (the same rule on
their base Normal). `find_sites` lists such sites from NumPyro's dependency trace,
`centredness` chooses c from a Gaussian fit of the fully non-centred model (for a normal-normal
hierarchy the optimal c_i = tau^2 / (tau^2 + sigma_i^2) = 1 - Var(x~_i | rest) in the
non-centred coordinate; Papaspiliopoulos, Roberts & Skold 2007, the optimum of VIP), and
`reparameterise` builds the target in the chosen coordinates with `to_original`, the map of its
unconstrained draws to the original model's unconstrained coordinates.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
from .. import _compile

from .numpyro import _improper_value

# NumPyro distribution class -> the parameters kept as they are (LocScaleReparam's shape_params)
FAMILIES = {"Normal": (), "StudentT": ("df",), "Cauchy": (), "Laplace": (), "Logistic": (),
            "Gumbel": (), "LogNormal": ()}
SUFFIX = "_decentered"  # the auxiliary site LocScaleReparam adds beside each rewritten site


class Site(NamedTuple):
    """A latent location-scale site with latent parents: its family, value shape and parents."""

    family: str
    shape: tuple
    parents: tuple


class Reparameterised(NamedTuple):
    """The target in the chosen coordinates, the map of its unconstrained draws (..., d') to the
    original model's unconstrained coordinates (..., d) (NumPy, batched), the same map of one
    flat vector as a JAX function, and the centredness chosen per site."""

    target: object
    to_original: object
    point_map: object
    centred: dict
    sites: dict


def _base(fn):
    """The distribution under Independent / ExpandedDistribution wrappers."""
    import numpyro.distributions as dist

    while isinstance(fn, (dist.Independent, dist.ExpandedDistribution)):
        fn = fn.base_dist
    return fn


def find_sites(model, model_args=(), model_kwargs=None) -> dict:
    """{site: Site} of the latent sites of a location-scale family (`FAMILIES`) whose parameters
    depend on other latent sites (NumPyro's `get_dependencies`, a trace of the model); sites of
    other families or without latent parents are left out."""
    from numpyro import handlers
    from numpyro.infer.inspect import get_dependencies

    model_kwargs = dict(model_kwargs or {})

    def traced(fn):  # loc or scale computed from traced values: maybe from latent sites
        return any(isinstance(getattr(fn, a, None), jax.core.Tracer) for a in ("loc", "scale"))

    def kinds(key):
        seeded = handlers.substitute(handlers.seed(model, key), substitute_fn=_improper_value)
        tr = handlers.trace(seeded).get_trace(*model_args, **model_kwargs)  # flat priors too
        found.update({k: (type(_base(s["fn"])).__name__, tuple(jnp.shape(s["value"])),
                          traced(_base(s["fn"])))
                      for k, s in tr.items()
                      if s["type"] == "sample" and not s["is_observed"]})
        return 0

    found: dict = {}
    jax.eval_shape(kinds, jax.ShapeDtypeStruct((2,), jnp.uint32))
    # constants (the usual priors) are Python or NumPy numbers in the trace: only sites whose
    # loc or scale is a tracer need NumPyro's dependency trace (a model run)
    candidates = {k: v[:2] for k, v in found.items() if v[0] in FAMILIES and v[2]}
    if not candidates:
        return {}
    deps = get_dependencies(model, tuple(model_args), model_kwargs)["prior_dependencies"]
    out = {}
    for k, (family, shape) in candidates.items():
        parents = tuple(sorted(p for p in deps.get(k, {}) if p != k and p in found))
        if parents:
            out[k] = Site(family, shape, parents)
    return out


def _log_loc_scale(centred, shape_params=()):
    """A NumPyro reparameteriser of a LogNormal site: `LocScaleReparam` on its base Normal in log
    space, then exp."""
    from numpyro.infer.reparam import LocScaleReparam, Reparam

    class LogLocScale(Reparam):
        def __call__(self, name, fn, obs):
            import numpyro.distributions as dist

            inner = LocScaleReparam(centred, shape_params)
            base, expand_shape, event_dim = inner._unwrap(fn)
            normal = inner._wrap(dist.Normal(base.loc, base.scale), expand_shape, event_dim)
            new_fn, value = inner(name, normal, obs)
            if new_fn is not None:  # fully centred: the site as it is
                return fn, obs
            return None, jnp.exp(value)

    return LogLocScale()


def config(sites: dict, centred: dict) -> dict:
    """`numpyro.handlers.reparam`'s config: {site: LocScaleReparam(centered=c)} (c per element)."""
    from numpyro.infer.reparam import LocScaleReparam

    out = {}
    for k, s in sites.items():
        c = np.asarray(centred[k], dtype=np.float64)
        c = float(c) if c.ndim == 0 else c
        out[k] = (_log_loc_scale(c) if s.family == "LogNormal"
                  else LocScaleReparam(centered=c, shape_params=FAMILIES[s.family]))
    return out


def _flat_index(target, site: str, shape: tuple) -> np.ndarray:
    """Indices of `site`'s elements in the target's flat unconstrained vector (sites ravelled in
    sorted-name order, `targets.numpyro`)."""
    start = 0
    for k in sorted(target.info["sites"]):
        size = int(np.prod(target.info["sites"][k])) if target.info["sites"][k] else 1
        if k == site:
            return np.arange(start, start + size).reshape(shape)
        start += size
    raise KeyError(site)


def centredness(noncentred_target, sites: dict, mean, factor) -> dict:
    """{site: c} from a Gaussian N(mean, factor factor^T) fitted to the fully non-centred model
    (`factor` a matrix, a vector s for diag(s), or an object with `precision_diagonal()`):
    c_i = 1 - Var(x~_i | rest) = 1 - 1 / P_ii with P the Gaussian's precision (the normal-normal
    optimum tau^2 / (tau^2 + sigma_i^2)), clipped to [0, 1]."""
    if hasattr(factor, "precision_diagonal"):  # a structured factor (vi.factor)
        p_diag = np.asarray(factor.precision_diagonal(), dtype=np.float64)
    elif np.ndim(factor) == 1:  # diag(s): P_ii = 1 / s_i^2
        p_diag = 1.0 / np.square(np.asarray(factor, dtype=np.float64))
    else:
        Finv = np.linalg.inv(np.asarray(factor, dtype=np.float64))
        p_diag = np.sum(Finv * Finv, axis=0)  # P = F^-T F^-1: P_ii = |column i of F^-1|^2
    out = {}
    for k, s in sites.items():
        idx = _flat_index(noncentred_target, k + SUFFIX, s.shape)
        c = np.clip(1.0 - 1.0 / p_diag[idx], 0.0, 1.0)
        out[k] = np.where(np.isfinite(c), c, 0.0)
    return out


def reparameterise(target, sites: dict, centred: dict, *, name: Optional[str] = None,
                   seed: int = 0) -> Reparameterised:
    """The NumPyro target of `handlers.reparam(model, config(sites, centred))` and the map of
    its unconstrained draws to `target`'s unconstrained coordinates (constrain in the new model,
    whose deterministic sites hold the original sites' values; then NumPyro's `unconstrain_fn`
    of the original model)."""
    from numpyro import handlers
    from numpyro.infer.util import unconstrain_fn

    from .numpyro import from_numpyro

    spec = target.info["numpyro"]
    model, args, kwargs = spec["model"], spec["args"], dict(spec["kwargs"])
    new_model = handlers.reparam(model, config=config(sites, centred))
    rt = from_numpyro(new_model, *args, name=name or f"{target.name} (reparameterised)",
                      seed=seed, model_kwargs=kwargs)
    latent = sorted(target.info["sites"])
    constrain = rt.info["postprocess"]
    unravel = rt.unravel

    def one(u):
        values = constrain(unravel(u))
        z = unconstrain_fn(model, args, kwargs, {k: values[k] for k in latent})
        return jnp.concatenate([jnp.ravel(z[k]) for k in latent])

    batched = _compile.jit(jax.vmap(one))

    def to_original(u):
        """Original unconstrained coordinates (..., d) of the new target's draws (..., d')."""
        u = np.asarray(u, dtype=np.float64)
        lead = u.shape[:-1]
        flat = u.reshape(-1, rt.dim)
        x = np.asarray(batched(flat)) if flat.shape[0] else np.zeros((0, target.dim))
        return x.reshape(lead + (target.dim,))

    return Reparameterised(rt, to_original, one, centred, sites)


def noncentred(target, sites: dict, seed: int = 0):
    """The fully non-centred target (every listed site at c = 0)."""
    zero = {k: np.zeros(s.shape) for k, s in sites.items()}
    return reparameterise(target, sites, zero, name=f"{target.name} (non-centred)", seed=seed)


def describe(centred: dict, sites: dict) -> dict:
    """{site: {"family", "parents", "centredness" (list or float), "min", "max"}} for reports."""
    out = {}
    for k, c in centred.items():
        c = np.asarray(c, dtype=np.float64)
        out[k] = {"family": sites[k].family, "parents": list(sites[k].parents),
                  "centredness": c.tolist(), "min": float(c.min()) if c.size else 0.0,
                  "max": float(c.max()) if c.size else 0.0}
    return out


def describe_reparam(r: dict) -> str:
    """One line: which sites were rewritten, with which centredness, at what cost."""
    parts = []
    for k, s in r["sites"].items():
        c = s["centredness"]
        cs = (f"c = {c:.2f}" if isinstance(c, float) else
              f"c = {s['min']:.2f} (all)" if s["min"] == s["max"] else
              f"c from {s['min']:.2f} to {s['max']:.2f}")
        parts.append(f"{k} ({s['family']}, {cs})")
    return ("reparameterised (0 = non-centred, 1 = centred): " + "; ".join(parts)
            + f"; chosen by a Gaussian fit of the non-centred model ({r['fit']}, "
            f"{r['grad_evals']} gradients)")


__all__ = ["find_sites", "config", "centredness", "reparameterise", "noncentred", "describe",
    "describe_reparam",
           "Site", "Reparameterised", "FAMILIES"]
