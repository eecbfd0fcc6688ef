"""Method registry: name -> algorithm + estimator + default step rule (one entry per method)."""
from __future__ import annotations

import math
from typing import Callable, NamedTuple, Optional

from .algorithms import apg, bam, bures, ngvi, projected_sym, sqrt_ngvi
from .estimators import ESTIMATORS


class StepRule(NamedTuple):
    eta: float
    s: Optional[float]  # acceleration parameter (rho = (1 - 1/s)/(1 + 1/s)); None: no momentum


class Method(NamedTuple):
    """A registered VI method. `build(target, accelerated, batch_size, eta, s, options) -> Kernel`."""

    name: str
    estimator: str
    algorithm: str  # paper reference, e.g. "Alg. 2 (prox)"
    accelerable: bool
    step_rule: Callable  # (alpha, beta, d, b) -> StepRule
    build: Callable
    baseline: bool = False
    description: str = ""
    feasible: Optional[str] = None  # "norm" | "chol" (K_L) | "sym" (K_C) | "sym-floor" | None
    # natural-gradient step (affine invariant): it contracts by ~(1 - eta) per update whatever the
    # conditioning, so its time scale is 1 / eta updates, not 1 / (eta alpha)
    natural: bool = False
    options: tuple = ()  # keyword options its builder takes (`fit(..., name=value)`)


def momentum(s):
    """rho = (1 - 1/s) / (1 + 1/s)."""
    return (1.0 - 1.0 / s) / (1.0 + 1.0 / s)


def _rule(s_fn):
    def rule(alpha, beta, d, b):
        s = s_fn(beta / alpha)
        return StepRule(1.0 / (alpha * s * s), s)

    return rule


def r_b(d, b):
    """Mean-square Lipschitz factor of the batch energy estimator, r_b = 1 + (d + 2)/b."""
    return 1.0 + (d + 2.0) / b


def _dgg_rule(alpha, beta, d, b):
    return StepRule(alpha / (2.0 * beta**2 * r_b(d, b)), None)


def _set_bounds(target, options):
    """(alpha, beta) of the feasible set (`set_bounds` widens it) and the estimator's options."""
    options = dict(options or {})
    a, b = options.pop("set_bounds", None) or (target.alpha, target.beta)
    return float(a), float(b), options


def _build_apg(update_kind):
    def build(target, estimator, accelerated, batch_size, eta, s, options):
        alpha, beta, options = _set_bounds(target, options)
        radius = math.sqrt(target.dim / alpha)
        if update_kind == "entropy":
            update = apg.entropy_prox_update(eta, estimator.coords)
        elif update_kind == "norm":
            update = apg.norm_prox_update(eta, radius)
        else:
            update = apg.projected_chol_update(eta, radius, 0.5 / math.sqrt(beta))
        rho = momentum(s) if accelerated else 0.0
        kernel = apg.build(target, estimator, update, rho=rho, batch_size=batch_size,
                           options=options)
        return kernel._replace(lookahead=(lambda st: (st.aux_m, st.aux_A)) if accelerated else None)

    return build


def _build_sym(floor_only):
    def build(target, estimator, accelerated, batch_size, eta, s, options):
        alpha, beta, options = _set_bounds(target, options)
        if floor_only:  # DGG-STL: sigma_min(C) >= 1/sqrt(beta), no upper bound
            lower, upper = 1.0 / math.sqrt(beta), math.inf
        else:  # K_C of Algorithm 3
            lower, upper = 0.5 / math.sqrt(beta), 2.0 / math.sqrt(alpha)
        kernel = projected_sym.build(target, estimator, eta=eta, s=s, alpha=target.alpha,
                                     lower=lower, upper=upper, accelerated=accelerated,
                                     batch_size=batch_size, options=options)
        if not accelerated:
            return kernel
        return kernel._replace(lookahead=lambda st: ((s * st.m + st.aux_m) / (s + 1.0),
                                                     (s * st.A + st.aux_A) / (s + 1.0)))

    return build


def _build_bures(control):
    def build(target, estimator, accelerated, batch_size, eta, s, options):
        return bures.build(target, eta=eta, control=control, batch_size=batch_size)

    return build


def _build_ngvi(hessian, square_root):
    def build(target, estimator, accelerated, batch_size, eta, s, options):
        options = dict(options)
        if options.pop("hessian", hessian) != hessian:
            raise ValueError("the Hessian estimator is fixed by the method name (its query cost): "
                             "use 'ngvi' (HVPs) or 'ngvi-reparam' (gradients only)")
        kw = dict(step=eta, batch_size=batch_size, hessian=hessian,
                  control=bool(options.pop("control", True)),
                  schedule_kind=options.pop("schedule", "constant"),
                  decay_steps=float(options.pop("decay_steps", 100.0)))
        if not square_root:
            kw["posdef"] = bool(options.pop("posdef", True))
        if options:
            raise TypeError(f"unknown options {sorted(options)}")
        return (sqrt_ngvi if square_root else ngvi).build(target, **kw)

    return build


def _build_bam(target, estimator, accelerated, batch_size, eta, s, options):
    options = dict(options)
    kind = options.pop("schedule", "decay")
    if options:
        raise TypeError(f"unknown options {sorted(options)}")
    return bam.build(target, lam0=eta, batch_size=batch_size, schedule_kind=kind)


NGVI_OPTIONS = ("hessian", "control", "schedule", "decay_steps")
NGVI_STEP = 0.5  # rho of the natural-gradient methods (ours: the papers leave it to the user)


def _ngvi_rule(alpha, beta, d, b):
    return StepRule(NGVI_STEP, None)


def _bam_rule(alpha, beta, d, b):
    """lambda_0 = b d (Cai et al. 2024, Sec. 5); the kernel divides by k + 1 unless constant."""
    return StepRule(float(b * d), None)


_sp = _rule(lambda k: math.sqrt(max(k, 4.0)))
_se = _rule(lambda k: math.sqrt(max(5.0 * k, 4.0)))
_s15 = _rule(lambda k: math.sqrt(15.0 * k))
_sexact = _rule(lambda k: math.sqrt(k))


def _fixed_eta(eta_fn):
    return lambda alpha, beta, d, b: StepRule(eta_fn(alpha, beta), None)


METHODS = {m.name: m for m in [
    Method("exact-apg", "exact", "Alg. 1 (APG, exact expectations)", True, _sexact,
           _build_apg("entropy"), description="Cholesky; eta = 1/beta"),
    Method("fd-prox", "fd", "Alg. 2 (norm-constrained prox)", True, _sp, _build_apg("norm"),
           feasible="norm", options=("fd_step",)),
    Method("paired-prox", "paired", "Alg. 2 (norm-constrained prox)", True, _sp,
           _build_apg("norm"), feasible="norm"),
    Method("fd-proj", "fd", "Alg. 4 (projected, Cholesky)", True, _se, _build_apg("proj"),
           feasible="chol", options=("fd_step",)),
    Method("paired-proj", "paired", "Alg. 4 (projected, Cholesky)", True, _se, _build_apg("proj"),
           feasible="chol"),
    Method("stl-proj", "stl", "Alg. 3 (projected, symmetric root)", True, _s15,
           _build_sym(False), feasible="sym"),
    Method("price-stl-proj", "price-stl", "Alg. 3 (projected, symmetric root)", True, _s15,
           _build_sym(False), feasible="sym"),
    Method("dgg-prox", "reparam", "prox-SGD (Domke-Gower-Garrigos 2023)", False, _dgg_rule,
           _build_apg("entropy"), baseline=True, description="eta = alpha/(2 beta^2 r_b)"),
    Method("dgg-stl", "stl", "projected SGD, sigma_min(C) >= beta^-1/2 (DGG 2023)", False,
           _dgg_rule, _build_sym(True), baseline=True, description="eta = alpha/(2 beta^2 r_b)",
           feasible="sym-floor"),
    Method("price-spgd", "price", "prox-SGD with Price's gradient (Kim et al. 2026)", False, _sp,
           _build_apg("entropy"), baseline=True, description="eta = 1/(alpha s_p^2)"),
    Method("fb-gvi", "price", "Bures-Wasserstein forward-backward (Diao et al. 2023)", False,
           _fixed_eta(lambda a, b: 1.0 / b), _build_bures(0.0), baseline=True,
           description="eta = 1/beta"),
    Method("svrgvi", "price", "BW forward-backward, score control c = 1 (Luu et al. 2025)", False,
           _fixed_eta(lambda a, b: 1.0 / b), _build_bures(1.0), baseline=True,
           description="eta = 1/beta"),
    Method("ngvi", "price", "NGVI / VON, positive-definite update (Lin, Schmidt & Khan 2020)",
           False, _ngvi_rule, _build_ngvi("price", False), baseline=True,
           description="rho = 1/2 [ours]; Hessian by HVPs (Price); score control [ours]",
           natural=True, options=NGVI_OPTIONS + ("posdef",)),
    Method("ngvi-reparam", "reparam", "NGVI / VON, positive-definite update, Stein Hessian",
           False, _ngvi_rule, _build_ngvi("reparam", False), baseline=True,
           description="rho = 1/2 [ours]; Stein Hessian from gradients; score control [ours]",
           natural=True, options=NGVI_OPTIONS + ("posdef",)),
    Method("sqrt-ngvi", "price", "square-root NGVI on chol(precision) (Tan 2025)", False,
           _ngvi_rule, _build_ngvi("price", True), baseline=True,
           description="rho = 1/2 [ours]; Hessian by HVPs (Price); score control [ours]",
           natural=True, options=NGVI_OPTIONS),
    Method("bam", "reparam", "batch-and-match (Cai et al. 2024, Alg. 1)", False, _bam_rule,
           _build_bam, baseline=True, description="lambda_k = b d/(k + 1) (paper, Sec. 5)",
           options=("schedule",)),
]}

class Family(NamedTuple):
    """A Gaussian family q = N(m, Sigma) that `fit` can fit: the form of Sigma, its memory, coordinates."""

    name: str
    covariance: str
    memory: str
    reference: str


# "full-rank": every method of METHODS; "factor": variational.factor (chosen by its choose_family)
FAMILIES = {f.name: f for f in [
    Family("full-rank", "Sigma = L L^T (Cholesky) or C^2 (symmetric root), d x d", "O(d^2)",
           "the methods of METHODS"),
    Family("factor", "Sigma = B B^T + diag(D^2), B (d, r)", "O(d r)",
           "factor-covariance Gaussian VI (Ong, Nott & Smith 2018), variational.factor"),
]}

# the field's Gaussian VI beyond the paper; PAPER_METHODS: the paper's 6 pairs + 5
FIELD_METHODS = ["ngvi", "ngvi-reparam", "sqrt-ngvi", "bam"]
PAPER_METHODS = [n for n in METHODS if n != "exact-apg" and n not in FIELD_METHODS]


def get_method(name: str) -> Method:
    if name not in METHODS:
        raise KeyError(f"unknown VI method {name!r}; available: {', '.join(METHODS)}")
    return METHODS[name]


def get_estimator(method: Method):
    return ESTIMATORS[method.estimator]
