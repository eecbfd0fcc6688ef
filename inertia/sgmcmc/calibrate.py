"""Algorithm 1 in one call: offline sandwich, tuned Lambda, preconditioned SG(L)D, checks."""
from __future__ import annotations

import dataclasses
import math
import time
from typing import Optional

import jax
import numpy as np

from . import kernels, stream
from .. import _warnings, convergence, diagnostics as shared_diagnostics
from .._scope import entry_point, float64_methods
from ..results.base import Result
from ..verdict import Verdict
from .estimate import NoEstimateError, check_estimate_exists
from .models import Model, from_loss, make_model
from .offline import Curvature, offline
from .predict import IAT, covariance_standard_errors, iat, stationary
from .tuning import Tuning, tune
from ..data import sources
from .large import LargeGLM, large_model, check_estimate_exists_large, offline_large
from .passes import ShardedPasses
from .._random import check_seed


class CalibrationWarning(UserWarning):
    """The empirical covariance of the draws disagrees with the prediction beyond Monte Carlo error."""


@float64_methods  # draws, predictive checks, tables in float64 (inertia._scope)
@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class CalibrationResult(Result):
    """Output of `calibrate`: draws (chain, draw, dim), Lambda, predictions, covariance check."""

    draws: np.ndarray
    Lambda: np.ndarray
    theta_hat: np.ndarray
    sandwich: np.ndarray
    target_cov: np.ndarray
    predicted_cov: np.ndarray
    empirical_cov: np.ndarray
    iat: IAT
    ess_predicted: np.ndarray
    ess_empirical: np.ndarray
    iat_empirical: np.ndarray
    max_z: float
    z_threshold: float
    tuning: Tuning
    curvature: Curvature
    settings: dict
    seconds: dict
    diagnostics: Optional[shared_diagnostics.Diagnostics] = None
    kind = "calibration"

    def to_json(self) -> dict:
        """JSON-ready summary (the `inertia calibrate --json` contract)."""
        return {
            "lambda": self.Lambda, "theta_hat": self.theta_hat, "sandwich": self.sandwich,
            "target_cov": self.target_cov, "predicted_cov": self.predicted_cov,
            "empirical_cov": self.empirical_cov,
            "iat": {"worst": self.iat.worst, "worst_paper": self.iat.worst_paper,
                    "per_coord": self.iat.per_coord, "empirical_per_coord": self.iat_empirical},
            "ess": {"predicted": self.ess_predicted, "empirical": self.ess_empirical},
            "posterior_mean": self.draws.reshape(-1, self.draws.shape[-1]).mean(0),
            "forward_error": self.tuning.forward_error,
            "cov_error_vs_target": rel_fro(self.empirical_cov, self.target_cov),
            "cov_error_vs_predicted": rel_fro(self.empirical_cov, self.predicted_cov),
            "max_z": self.max_z, "z_threshold": self.z_threshold, "settings": self.settings,
            "seconds": self.seconds, "diagnostics": _diagnostics_json(self.diagnostics),
            **self.verdict_dict(),
        }

    @property
    def mean(self) -> np.ndarray:
        """Mean of the draws (chains pooled)."""
        return self.draws.reshape(-1, self.draws.shape[-1]).mean(0)

    @property
    def cov(self) -> np.ndarray:
        """Empirical covariance of the draws."""
        return self.empirical_cov

    @property
    def names(self) -> Optional[list]:
        return list(self.diagnostics.names) if self.diagnostics is not None else None

    @property
    def verdict(self) -> Verdict:
        """The run's `Verdict`: the chains' mixing (R-hat, ESS) and the covariance check."""
        v = (self.diagnostics.verdict if self.diagnostics is not None else
             Verdict(False, ("too few draws to judge the chains' mixing",)))
        v = v.with_numbers(max_z=self.max_z, z_threshold=self.z_threshold)
        return v.with_problem(cov_problem(self.max_z, self.z_threshold)) if (
            self.max_z > self.z_threshold) else v


def cov_problem(max_z: float, bound: float) -> str:
    """The covariance check's problem: the draws' covariance is off the prediction."""
    return (f"empirical covariance differs from the prediction by {max_z:.1f} Monte Carlo "
            f"standard errors (bound {bound:.1f}); the quadratic proxy may be inaccurate for this "
            "model/step size, or the chains have not mixed")


def _diagnostics_json(dg) -> Optional[dict]:
    if dg is None:
        return None
    keep = ("converged", "max_rhat", "min_ess_bulk", "min_ess_tail", "problems", "names", "rhat",
            "ess_bulk", "ess_tail", "mcse_mean")
    return {k: v for k, v in dg.to_dict().items() if k in keep}


def rel_fro(A, B) -> float:
    """||A - B||_F / ||B||_F."""
    return float(np.linalg.norm(np.asarray(A) - B) / np.linalg.norm(B))


def empirical_ess(draws: np.ndarray) -> np.ndarray:
    """Bulk ESS per coordinate of (chain, draw, dim) draws."""
    return convergence.ess_bulk(draws)


def _resolve_model(model, data, loss_kw) -> Model:
    if isinstance(model, Model):
        if data is not None:
            raise ValueError("pass data=None when `model` is a Model (it holds its data)")
        return model
    if isinstance(model, str):
        if data is None or len(data) != 2:
            raise ValueError(f"model {model!r} needs data=(X, y)")
        return make_model(model, data[0], data[1], **loss_kw)
    if callable(model):
        if "dim" not in loss_kw:
            raise ValueError("a loss function model needs dim=")
        return from_loss(model, data, loss_kw.pop("dim"), **loss_kw)
    raise ValueError("model must be a Model, a name ('linear', 'poisson', 'logistic') or a loss")


# in-memory (X, y) with more rows than this take the chunked path (`large`)
LARGE_ROWS = 100_000
DEFAULT_TARGET_ESS = 400.0


def _resolve_large(model, data, loss_kw, large, chunk):
    """A `large.LargeGLM` for a file, a row source or more than LARGE_ROWS rows (or large=True); else None."""
    from pathlib import Path

    if isinstance(model, LargeGLM):
        return model
    if not isinstance(model, str) or large is False:
        return None
    response = loss_kw.pop("response", None)
    if isinstance(data, (str, Path)):
        src = sources.open_source(data, response, cache_dir=loss_kw.pop("cache_dir", None))
    elif sources.is_source(data):
        src = data
    elif data is not None and len(data) == 2 and (large or np.shape(data[0])[0] > LARGE_ROWS):
        src = sources.ArraySource(*data)
    else:
        return None
    return large_model(model, src, chunk=chunk, **loss_kw)


def _sharded(lm, devices, chunk):
    """ShardedPasses of a LargeGLM's rows over `devices` ('all' or a list) on a 1-D mesh."""
    from jax.sharding import Mesh

    devs = jax.devices() if isinstance(devices, str) and devices == "all" else list(devices)
    return ShardedPasses(lm.source, Mesh(np.array(devs), ("data",)), kind=lm.link.kind,
                         params=lm.link.params, intercept=lm.intercept, chunk=chunk)


def _check_args(m, *, num_steps, target_ess, thin, num_chains, momentum, temperature,
                batch_size, subsample) -> None:
    """Clear errors for invalid arguments of `calibrate`."""
    if num_steps is not None and num_steps < 2:
        raise ValueError("num_steps must be at least 2")
    if target_ess is not None and not target_ess > 0:
        raise ValueError(f"target_ess must be positive; got {target_ess!r}")
    if thin is not None and (int(thin) != thin or thin < 1):
        raise ValueError(f"thin must be a whole number >= 1; got {thin}")
    if int(num_chains) != num_chains or num_chains < 1:
        raise ValueError(f"num_chains must be a whole number >= 1; got {num_chains}")
    if not 0 <= momentum < 1:
        raise ValueError(f"momentum must be in [0, 1) (1 means no friction: the iterates never "
                         f"settle); got {momentum}")
    if not (float(temperature) > 0):
        raise ValueError(f"temperature (the inverse temperature beta) must be > 0 (inf for SGD); "
                         f"got {temperature}")
    if int(batch_size) != batch_size or not 1 <= batch_size <= m.num_obs:
        raise ValueError(f"batch_size must be a whole number in [1, N = {m.num_obs}]; "
                         f"got {batch_size}")
    if subsample is not None and not 1 <= subsample:
        raise ValueError(f"subsample must be >= 1; got {subsample}")


def _curvature(m, lm, *, devices, chunk, subsample, seed, quad_rows, t0) -> tuple:
    """Offline stage (theta_hat, J, I, Sigma*): chunked passes for a LargeGLM, else in memory."""
    sharded = None
    if lm is not None:
        if devices is not None:
            sharded = _sharded(lm, devices, chunk)
        check_estimate_exists_large(lm, sharded, seed=seed)
        return offline_large(lm, subsample=subsample, seed=seed, quad_rows=quad_rows,
                             passes=sharded, chunk=chunk), sharded, t0
    check_estimate_exists(m)
    t0 = time.perf_counter()
    return offline(m, subsample=subsample, seed=seed), sharded, t0


def _starts(curv, st, init: str, num_chains: int, key) -> np.ndarray:
    """Chain starts (chain, dim): theta_hat + N(0, predicted Sigma) ("stationary") or theta_hat."""
    starts = np.tile(curv.theta_hat, (num_chains, 1))
    if init == "stationary":
        z = np.asarray(jax.random.normal(key, starts.shape))
        return starts + z @ np.linalg.cholesky(st.cov).T
    if init != "map":
        raise ValueError("init must be 'stationary' or 'map'")
    return starts


def _run_chains(m, lm, sharded, Lambda, tau, starts, key, *, fixed, num_steps, burn_in, thin,
                target_ess, max_steps, num_chains, batch_size, temperature, replacement,
                momentum) -> tuple:
    """SG(L)D draws (chain, draw, dim), fixed length or to ESS; (draws, burn_in, thin, steps)."""
    motion = dict(batch_size=batch_size, temperature=temperature, replacement=replacement,
                  momentum=momentum)
    if fixed and lm is None:
        thin = 1 if thin is None else int(thin)
        if burn_in is None:
            burn_in = min(num_steps // 2, max(num_steps // 10, int(math.ceil(3 * tau.worst))))
        num_draws = (num_steps - burn_in) // thin
        if num_draws < 2:
            raise ValueError("too few draws after burn-in; increase num_steps or lower "
                             "burn_in/thin")
        run = kernels.make_sampler(m, num_draws=num_draws, thin=thin, burn_in=burn_in, **motion)
        return np.asarray(run(key, Lambda, starts)), burn_in, thin, num_steps
    tau_max = max(tau.worst, float(np.max(tau.per_coord)))
    if thin is None:
        thin = 1 if fixed else max(1, int(tau_max // 8))
    if burn_in is None:
        burn_in = (min(num_steps // 2, max(num_steps // 10, int(math.ceil(3 * tau.worst))))
                   if fixed else int(math.ceil(3 * tau.worst)))
    if num_steps is not None:
        first = num_steps - burn_in if fixed else num_steps
    else:
        first = int(math.ceil(1.2 * target_ess * tau_max / num_chains))
    num_draws = max(first // thin, 4)
    if fixed and first // thin < 2:
        raise ValueError("too few draws after burn-in; increase num_steps or lower "
                         "burn_in/thin")
    max_draws = (None if max_steps is None else max(num_draws, int(max_steps) // thin))
    if max_draws is None and not fixed:
        max_draws = 10 * num_draws
    if sharded is not None:
        runner = stream.DeviceRunner(lm, sharded, Lambda=Lambda, **motion)
    elif lm is not None:
        runner = stream.SourceRunner(lm, Lambda=Lambda, **motion)
    else:
        runner = stream.ModelRunner(m, Lambda=Lambda, **motion)
    draws, kept = stream.run_to_ess(runner, key, starts, burn_in=burn_in, num_draws=num_draws,
                                    thin=thin, target_ess=None if fixed else target_ess,
                                    max_draws=max_draws)
    return draws, burn_in, thin, burn_in + kept * thin


@entry_point()  # float64, one BLAS thread, fewer GC passes (inertia._scope)
def calibrate(model, data=None, *, batch_size: int, tuning: str = "dq-exact",
              num_steps: Optional[int] = None, seed: int = 0, temperature=math.inf,
              momentum: float = 0.0, subsample: Optional[int] = None, replacement: bool = True,
              num_chains: int = 4, burn_in: Optional[int] = None, thin: Optional[int] = None,
              init: str = "stationary", level: float = 0.01, names=None,
              target_ess: Optional[float] = None, max_steps: Optional[int] = None,
              large: Optional[bool] = None, devices=None, quad_rows="auto",
              chunk: int = 1 << 15, **model_kw) -> CalibrationResult:
    """Algorithm 1: estimate theta_hat, J, I, Sigma* = S / N, tune Lambda, run SG(L)D chains, check draws.

    `init`: "stationary" or "map". `num_steps` alone runs exactly that; `target_ess` runs to ESS and R-hat
    within `max_steps`. Data: arrays, a file path or a row source (`response=`); `large`, `devices`,
    `quad_rows` for chunked passes; `level` for the covariance check; `names` label the parameters.
    """
    seed = check_seed(seed)
    motion = dict(batch_size=batch_size, temperature=temperature, replacement=replacement,
                  momentum=momentum)
    m, lm, fixed, target_ess, settings = _validate(
        model, data, dict(model_kw), large=large, devices=devices, chunk=chunk,
        num_steps=num_steps, target_ess=target_ess, tuning=tuning, seed=seed, thin=thin,
        init=init, num_chains=num_chains, subsample=subsample, **motion)
    t0 = time.perf_counter()
    curv, sharded, t0 = _curvature(m, lm, devices=devices, chunk=chunk, subsample=subsample,
                                   seed=seed, quad_rows=quad_rows, t0=t0)
    t1 = time.perf_counter()
    tun = tune(curv, method=tuning, **motion)  # the warm-up: Lambda, and the law it predicts
    st = stationary(curv, tun.Lambda, **motion)
    tau = iat(st)
    t2 = time.perf_counter()
    k_init, k_run = jax.random.split(jax.random.key(seed))
    starts = _starts(curv, st, init, num_chains, k_init)
    draws, burn_in, thin, num_steps = _run_chains(
        m, lm, sharded, tun.Lambda, tau, starts, k_run, fixed=fixed, num_steps=num_steps,
        burn_in=burn_in, thin=thin, target_ess=target_ess, max_steps=max_steps,
        num_chains=num_chains, **motion)
    settings.update(burn_in=int(burn_in), thin=int(thin), num_steps=int(num_steps))
    t3 = time.perf_counter()
    check = _covariance_check(draws, st, tau, thin, level)
    diag = (shared_diagnostics.diagnose(draws, names) if draws.shape[1] >= 4 else None)
    if diag is not None and not diag.converged:
        _warnings.warn("SG(L)D chains: " + diag.line(), RuntimeWarning)
    seconds = {"offline": t1 - t0, "lambda": tun.seconds, "predict": t2 - t1,
               "sampling": t3 - t2}
    return CalibrationResult(draws=draws, Lambda=tun.Lambda, theta_hat=curv.theta_hat,
                             sandwich=curv.sandwich, target_cov=tun.target_cov,
                             predicted_cov=st.cov, iat=tau, tuning=tun, curvature=curv,
                             settings=settings, seconds=seconds, diagnostics=diag, **check)


def _validate(model, data, kw, *, large, devices, chunk, num_steps, target_ess, tuning, seed,
              thin, init, num_chains, subsample, batch_size, temperature, replacement,
              momentum) -> tuple:
    """Clear errors for invalid arguments; (model, LargeGLM or None, fixed?, target_ess, settings)."""
    lm = _resolve_large(model, data, kw, large if devices is None else True, chunk)
    if lm is None and devices is not None:
        raise ValueError("devices= needs a GLM given by name with (X, y), a file or a row source")
    m = lm if lm is not None else _resolve_model(model, data, kw)
    fixed = num_steps is not None and target_ess is None
    if num_steps is None and target_ess is None:
        target_ess = DEFAULT_TARGET_ESS
    settings = dict(batch_size=int(batch_size), tuning=tuning,
                    num_steps=None if num_steps is None else int(num_steps),
                    seed=int(seed), temperature=float(temperature), momentum=float(momentum),
                    subsample=subsample, replacement=bool(replacement),
                    num_chains=int(num_chains), thin=None if thin is None else int(thin),
                    init=init, model=m.name, num_obs=m.num_obs, dim=m.dim,
                    target_ess=None if target_ess is None else float(target_ess),
                    engine="chunked" if lm is not None else "in-memory",
                    devices=None if devices is None else len(
                        jax.devices() if devices == "all" else list(devices)))
    _check_args(m, num_steps=num_steps, target_ess=target_ess, thin=thin, num_chains=num_chains,
                momentum=momentum, temperature=temperature, batch_size=batch_size,
                subsample=subsample)
    return m, lm, fixed, target_ess, settings


def _covariance_check(draws, st, tau, thin, level) -> dict:
    """Empirical against predicted covariance (Bonferroni z at `level`) and ESS: the result's fields."""
    if not np.all(np.isfinite(draws)):
        raise FloatingPointError("SG(L)D diverged (non-finite iterates); the proxy is not valid "
                                 "for this model at this step size")
    dim = draws.shape[-1]
    flat = draws.reshape(-1, dim)
    emp = np.cov(flat.T)
    emp = np.atleast_2d(emp)
    n_total = flat.shape[0]
    # thinning: iterates `thin` apart; the autocovariances below are per iteration
    se = covariance_standard_errors(st._replace(transition=np.linalg.matrix_power(
        st.transition, thin)), n_total)
    iu = np.triu_indices(dim)
    z = np.abs(emp - st.cov)[iu] / se[iu]
    max_z = float(z.max())
    import scipy.stats  # noqa: PLC0415 (lazy: scipy.stats costs ~1 s at import)
    thr = float(scipy.stats.norm.isf(level / (2 * iu[0].size)))
    ess_emp = empirical_ess(draws) if draws.shape[1] >= 4 else np.full(dim, np.nan)
    ess_pred = n_total * thin / tau.per_coord
    iat_emp = n_total / ess_emp * thin
    if max_z > thr:
        _warnings.warn(cov_problem(max_z, thr), CalibrationWarning)  # at the user's line
    return dict(empirical_cov=emp, ess_predicted=ess_pred, ess_empirical=ess_emp,
                iat_empirical=iat_emp, max_z=max_z, z_threshold=thr)


__all__ = ["calibrate", "CalibrationResult", "CalibrationWarning", "NoEstimateError",
           "check_estimate_exists", "empirical_ess", "rel_fro", "LARGE_ROWS",
           "DEFAULT_TARGET_ESS"]
