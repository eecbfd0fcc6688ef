"""What each `inertia reproduce` experiment is, costs and needs, without importing it (no JAX).

`inertia reproduce --list` prints this table and validates names against it before anything heavy
is imported; tests check it matches `reproductions.registry()`. Costs are rough wall times on
a loaded 2-core machine (quick: the test suite's runs; full: docs/reproduction.md, docs/hfhr.md,
docs/sgmcmc-bounds.md); `data` lists the data sets each size loads (see docs/data.md: Pima and
Boston are not shipped and need the cache or a download) and `packages` the Python packages beyond
the core install, all covered by the `experiments` extra.
"""
from __future__ import annotations

from typing import NamedTuple


class Entry(NamedTuple):
    """One experiment: description, rough quick / full cost, data sets (quick, full), packages."""

    description: str
    quick: str
    full: str
    data_quick: tuple = ()
    data_full: tuple = ()
    packages: tuple = ()


_PLOT = ("matplotlib",)
CATALOG: dict[str, Entry] = {
    "kappa-scaling": Entry("VI Fig. 2: STL-proj acc vs plain, updates to a 1e-6 gap vs kappa",
                           "~1 min", "~10 min", packages=_PLOT),
    "gaussian-methods": Entry("VI Fig. 5: all 17 variants on a kappa = 300 Gaussian, exact gaps",
                              "~1 min", "~20 min", packages=_PLOT),
    "graph-probit": Entry("VI Tables 2, 4, 5, Figs. 6-7: graph-probit posteriors",
                          "~1 min", "~1 day (4 h per data set)", ("sonar",),
                          ("sonar", "ionosphere", "wdbc", "pima", "banknote"), _PLOT),
    "logistic": Entry("VI Table 6: matched 1% hitting times, Bayesian logistic regression",
                      "~1 min", "many hours", ("pima",),
                      ("pima", "banknote", "wdbc", "ionosphere", "sonar"), _PLOT),
    "lower-bound": Entry("VI Theorem 3.1: the hard target family, queries vs kappa",
                         "~30 s", "~1 min", packages=_PLOT),
    "lower-bound-asymptotic": Entry("VI Theorem 3.1 with the asymptotic radius "
                                    "R^2 = 2 log kappa - 3 log log kappa", "~30 s", "~1 min",
                                    packages=_PLOT),
    "hfhr-gaussian": Entry("HFHR: exact W2 vs gradients on ill-conditioned Gaussians",
                           "~20 s", "~4 min", packages=_PLOT),
    "hfhr-logistic": Entry("HFHR: logistic-regression error vs a NUTS reference",
                           "~30 s", "~8 min", ("wdbc",), ("wdbc", "german"),
                           _PLOT + ("numpyro",)),
    "hfhr-bnn": Entry("HFHR: Bayesian neural network on diabetes, test log-likelihood",
                      "~30 s", "~21 min", ("diabetes",), ("diabetes",),
                      _PLOT + ("scikit-learn",)),
    "hfhr-mixture": Entry("HFHR: mode switches on a two-component Gaussian mixture",
                          "~20 s", "~8 min", packages=_PLOT),
    "sgmcmc-linear": Entry("SG-MCMC Table 2: misspecified linear regression, log and beta loss",
                           "~30 s", "~10 min", packages=_PLOT),
    "sgmcmc-boston": Entry("SG-MCMC Table 3: Boston housing, 12 predictors",
                           "~30 s", "~10 min", ("boston",), ("boston",), _PLOT),
    "sgmcmc-poisson": Entry("SG-MCMC Table 4: simulated Poisson and German credit",
                            "~30 s", "~10 min", ("german",), ("german",), _PLOT),
    "sgmcmc-linear-code": Entry("SG-MCMC Table 2 as the authors' code runs it (D = 20, outliers, "
                                "code rules beside printed ones, NUTS column)",
                                "~1 min", "~30 min", packages=_PLOT + ("numpyro",)),
    "sgmcmc-boston-code": Entry("SG-MCMC Table 3 in the authors' code setting (sigma from residuals)",
                                "~1 min", "~20 min", ("boston",), ("boston",), _PLOT),
    "sgmcmc-poisson-code": Entry("SG-MCMC Table 4 simulated Poisson, the authors' code design",
                                 "~1 min", "~60 min", packages=_PLOT),
    "sgmcmc-predict": Entry("SG-MCMC Fig. 1, Table E.1: tuning rules' error vs batch size",
                            "~30 s", "~10 min", ("german",), ("german",), _PLOT + ("numpyro",)),
    "sgmcmc-nn": Entry("SG-MCMC Fig. 2: tanh network on diabetes, predicted vs empirical cov",
                       "~30 s", "~10 min", ("diabetes",), ("diabetes",),
                       _PLOT + ("scikit-learn",)),
    "sgmcmc-cost": Entry("SG-MCMC Tables D.1-D.2: time for Lambda vs time to sample",
                         "~20 s", "~5 min"),
    "sgmcmc-w2-bound": Entry("SG-MCMC Fig. D.1: empirical W2 of SGD vs proxy, with the bound",
                             "~30 s", "~10 min", packages=_PLOT + ("pot", "numpyro")),
    "sgmcmc-test-loss": Entry("SG-MCMC Fig. E.3: ridge test loss of SGD iterates vs theory",
                              "~30 s", "~7 min", packages=_PLOT),
}


def describe(extra: dict | None = None) -> str:
    """The `reproduce --list` table: name, description, quick / full cost, data, packages;
    `extra` (name -> description) lists experiments not yet in CATALOG, cost unknown."""
    extra = extra or {}
    w = max(map(len, list(CATALOG) + list(extra)))
    lines = [f"{'name':<{w}}  {'quick':>7}  {'full':<26} data (quick; full)  -- description"]
    for name in sorted(CATALOG):
        e = CATALOG[name]
        data = ",".join(e.data_quick) or "-"
        if e.data_full != e.data_quick:
            data += "; " + (",".join(e.data_full) or "-")
        lines.append(f"{name:<{w}}  {e.quick:>7}  {e.full:<26} {data}  -- {e.description}")
    for name in sorted(extra):
        lines.append(f"{name:<{w}}  {'?':>7}  {'?':<26} ?  -- {extra[name]}")
    lines.append("Costs are rough wall times on a busy 2-core machine. Data: sonar, ionosphere, "
                 "banknote, german ship with inertia; wdbc, diabetes with scikit-learn; pima, "
                 "boston load from $INERTIA_DATA_DIR or download (docs/data.md). "
                 "Packages: pip install -e \".[experiments]\".")
    return "\n".join(lines)
