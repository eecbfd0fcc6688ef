"""The public suite: every posterior, where it comes from and what its reference is.

- posteriordb posteriors with reference draws (github.com/stan-dev/posteriordb; 10 x 1 000 Stan
  draws, adapt_delta 0.999 or so): every one whose Stan model NumPyro expresses (all but the two
  ODE models, lotka_volterra and one_comp_mm_elim_abs); eight_schools_centered takes the
  reference of eight_schools_noncentered (the same posterior). Data and references are stored
  in data/ and reference/ (extract.py).
- posteriordb models with data but no reference draws there, and three models at d = 50-403 on
  simulated data (stat_models.py): references by long float64 NUTS runs (reference.py).
- Inference Gym targets with published ground-truth means and sds (benchmarks/suite/targets.py).

`load(name)` returns a `Posterior` (benchmarks/posteriors/models.py) whose named quantities carry
Stan's names (1-based indices: `beta[1]`); `reference(name)` the reference means and sds.
"""
from __future__ import annotations

import dataclasses
import gzip
import json
import sys
from pathlib import Path
from typing import Callable, Optional

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for p in (HERE, ROOT / "benchmarks" / "posteriors", ROOT / "benchmarks" / "suite", ROOT):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import jax.numpy as jnp  # noqa: E402

import pdb_models as pm  # noqa: E402
import stat_models as sm  # noqa: E402
from models import Posterior  # noqa: E402

from inertia.targets import from_numpyro, from_potential  # noqa: E402

PDB, COMPUTED, GYM = "posteriordb", "posteriordb model, reference computed here", "Inference Gym"
SIMULATED = "simulated data, reference computed here"


@dataclasses.dataclass(frozen=True)
class Entry:
    name: str
    source: str
    build: Callable[[], Posterior]
    reference: str  # "posteriordb draws", "posteriordb summary statistics", "NUTS", "Gym"
    data: Optional[str] = None  # posteriordb data set (data/<data>.json.gz)
    # latent sites of the NumPyro model from the reference quantities (score test); None: the
    # quantities grouped by site
    sites: Optional[Callable] = None
    shares: Optional[str] = None  # reference file of the same posterior under another name


def load_data(name) -> dict:
    """A stored posteriordb data set: lists as jax arrays (integers kept integer), scalars as is."""
    with gzip.open(HERE / "data" / f"{name}.json.gz", "rb") as f:
        raw = json.loads(f.read())
    out = {}
    for k, v in raw.items():
        if isinstance(v, list):
            a = np.asarray(v)
            out[k] = jnp.asarray(a if a.dtype.kind in "iu" else a.astype(np.float64))
        else:
            out[k] = v
    return out


def stan_name(label: str) -> str:
    """`beta[0]` -> `beta[1]`, `a[0,2]` -> `a[1,3]` (NumPyro's 0-based labels to Stan's)."""
    if "[" not in label:
        return label
    site, idx = label[:-1].split("[")
    return f"{site}[{','.join(str(int(i) + 1) for i in idx.split(','))}]"


def _numpyro(name, model, args=(), kwargs=None):
    target = from_numpyro(model, *args, name=name, model_kwargs=kwargs)
    post = Posterior(name, "", target, name)
    base = Posterior.named.__get__(post)
    post.named = lambda x: {stan_name(k): v for k, v in base(x).items()}
    return post


def _pdb(post_name, model, **kw):
    data = post_name.split("-")[0]
    return Entry(post_name, PDB, lambda: _numpyro(post_name, model, (load_data(data),)),
                 "posteriordb draws", data=data, **kw)


def _pdb_linear(post_name):
    data, kind = post_name.split("-")
    model, args = pm.linear(kind)
    return Entry(post_name, PDB, lambda: _numpyro(post_name, model, args(load_data(data))),
                 "posteriordb draws", data=data)


def _gym(name):
    def build():
        from targets import load_suite

        e = load_suite([name])[0]
        import jax

        constrain = jax.jit(jax.vmap(e.constrain))
        post = Posterior(f"gym:{name}", "", e.target, e.note or name)

        def named(x):
            x = np.asarray(x, dtype=np.float64)
            q = np.asarray(constrain(x.reshape(-1, x.shape[-1]))).reshape(x.shape[:-1] + (-1,))
            return {f"x[{i + 1}]": q[..., i] for i in range(q.shape[-1])}

        post.named = named
        post.truth = (e.truth_mean, e.truth_sd)
        return post
    return Entry(f"gym:{name}", GYM, build, "Gym")


def _computed(name, model, data_fn, source=COMPUTED, data=None):
    return Entry(name, source, lambda: _numpyro(name, model, (data_fn(),)), "NUTS", data=data)


LINEAR = (["earnings-" + k for k in ("earn_height", "log10earn_height", "logearn_height",
                                     "logearn_height_male", "logearn_interaction",
                                     "logearn_interaction_z", "logearn_logheight_male")]
          + ["kidiq-" + k for k in ("kidscore_interaction", "kidscore_momhs", "kidscore_momhsiq",
                                    "kidscore_momiq")]
          + ["kidiq_with_mom_work-" + k for k in ("kidscore_interaction_c",
                                                  "kidscore_interaction_c2",
                                                  "kidscore_interaction_z", "kidscore_mom_work")]
          + ["mesquite-" + k for k in ("logmesquite", "logmesquite_logva", "logmesquite_logvas",
                                       "logmesquite_logvash", "logmesquite_logvolume",
                                       "mesquite")]
          + [f"nes{y}-nes" for y in range(1972, 2001, 4)])


def _es_nc_sites(d, q):
    return {"mu": q["mu"], "tau": q["tau"],
            "theta_trans": (q["theta"] - q["mu"][:, None]) / q["tau"][:, None]}


def _garch_sites(d, q):
    return {"mu": q["mu"], "alpha0": q["alpha0"], "alpha1": q["alpha1"],
            "beta1_unit": q["beta1"] / (1.0 - q["alpha1"])}


ENTRIES = [
    _pdb("arK-arK", pm.ark),
    _pdb("arma-arma11", pm.arma11),
    _pdb("bball_drive_event_0-hmm_drive_0", pm.hmm_drive_0),
    _pdb("bball_drive_event_1-hmm_drive_1", pm.hmm_drive_1),
    _pdb("diamonds-diamonds", pm.diamonds),
    _pdb("eight_schools-eight_schools_noncentered", pm.eight_schools_noncentered,
         sites=_es_nc_sites),
    dataclasses.replace(_pdb("eight_schools-eight_schools_centered", pm.eight_schools_centered),
                        shares="eight_schools-eight_schools_noncentered"),
    _pdb("garch-garch11", pm.garch11, sites=_garch_sites),
    _pdb("gp_pois_regr-gp_pois_regr", pm.gp_pois_regr, sites=pm.gp_pois_regr_sites),
    _pdb("gp_pois_regr-gp_regr", pm.gp_regr),
    _pdb("hmm_example-hmm_example", pm.hmm_example),
    _pdb("kilpisjarvi_mod-kilpisjarvi", pm.kilpisjarvi),
    _pdb("low_dim_gauss_mix-low_dim_gauss_mix", pm.low_dim_gauss_mix),
    dataclasses.replace(_pdb("mcycle_gp-accel_gp", pm.accel_gp),
                        reference="posteriordb summary statistics"),
    _pdb("sblrc-blr", pm.blr),
    _pdb("sblri-blr", pm.blr),
    *[_pdb_linear(n) for n in LINEAR],
    _computed("irt_2pl-irt_2pl", sm.irt_2pl, lambda: load_data("irt_2pl"), data="irt_2pl"),
    _computed("radon_mn-radon_hierarchical_intercept_centered",
              sm.radon_hierarchical_intercept_centered, lambda: load_data("radon_mn"),
              data="radon_mn"),
    _computed("radon_mn-radon_variable_intercept_slope_centered",
              sm.radon_variable_intercept_slope_centered, lambda: load_data("radon_mn"),
              data="radon_mn"),
    _computed("GLMM_Poisson_data-GLMM_Poisson_model", sm.glmm_poisson,
              lambda: load_data("GLMM_Poisson_data"), data="GLMM_Poisson_data"),
    _computed("hier_centred_50", sm.hier_centred, sm.hier_centred_data, SIMULATED),
    _computed("gp_pois_regr_50", sm.gp_pois_regr, sm.gp_pois_data, SIMULATED),
    _computed("logistic_regression_rhs_300x200", sm.logistic_regression_rhs, sm.rhs_data,
              SIMULATED),
    *[_gym(n) for n in ("ill-cond-gaussian", "brownian-missing", "stoch-vol-small", "banana",
                        "neals-funnel", "item-response", "log-gaussian-cox")],
]
BY_NAME = {e.name: e for e in ENTRIES}
NAMES = tuple(BY_NAME)
PDB_REFERENCE = tuple(e.name for e in ENTRIES if e.source == PDB and e.shares is None)
PDB_DATA_ONLY = tuple(sorted({e.data for e in ENTRIES if e.source == COMPUTED}))


def load(name) -> Posterior:
    return BY_NAME[name].build()


def reference(name) -> dict:
    """{"how", "names", "mean", "sd", "mcse_mean", "mcse_sd", "draws" (or None)} of a posterior."""
    e = BY_NAME[name]
    if e.reference == "Gym":
        post = e.build()
        m, s = post.truth
        names = [f"x[{i + 1}]" for i in range(len(m))]
        return {"how": "Inference Gym ground truth", "names": names, "mean": np.asarray(m),
                "sd": np.asarray(s), "mcse_mean": np.zeros(len(m)), "mcse_sd": np.zeros(len(m)),
                "draws": None}
    z = np.load(HERE / "reference" / f"{e.shares or name}.npz")
    names = [str(n) for n in z["names"]]
    return {"how": str(z["how"]), "names": names, "mean": z["mean"], "sd": z["sd"],
            "mcse_mean": z["mcse_mean"], "mcse_sd": z["mcse_sd"],
            "draws": z["draws"] if "draws" in z.files else None}
