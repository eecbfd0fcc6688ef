"""Factor-covariance Gaussian VI (Ong, Nott & Smith 2018): q = N(m, B B^T + D^2), B (d, r), D diagonal.

The family for d where the full-rank one does not fit (`choose_family`): O(d r) memory and
O(b (gradient + d r) + d r^2) per update, against O(d^2) memory and O(d^3) per update for the
full-rank (Cholesky or symmetric-root) methods. The run happens in the coordinates x = x0 + s u of
the diagonal Laplace start (x0 the MAP, s = diag(hess V(x0))^-1/2; `targets.curvature`), where q
starts as N(0, I): mu = 0, D = 1, B = B_START_SCALE x N(0, 1) entries (B = 0 is a stationary
point of the expected gradient). Each update draws b pairs (z, eps) ~ N(0, I_r) x N(0, I_d), takes
the reparameterisation gradient of F(q) = E_q V - H(q) at x = mu + B z + D eps (Ong et al. 2018,
Sec. 3.1-3.2: grad_mu = E g, grad_B = E g z^T - Sigma^-1 B, grad_D = E g * eps - diag(Sigma^-1) D
with g = grad V; the entropy terms by automatic differentiation of
log det Sigma = 2 sum log D + log det(I_r + B^T D^-2 B), the matrix determinant lemma) and makes one
Adam step (optax; Ong et al. use ADADELTA) on (mu, B, log D). Stopping and averaging are those of
the full-rank runs: F_hat on common random numbers every `every` updates (`monitor.StoppingRule`,
tol in nats over `window` checkpoints), then Polyak averaging of the iterates at a quarter of the
step (`variational.averaging`'s AVERAGING_STEP_DECAY) until the same rule, applied to F_hat of the average,
sees the average's objective plateau, and for at least FACTOR_AVERAGING times the updates the
plateau took. The first phase stops on the constant-step iterates' noise floor, whose height above
the optimum grows with d (on a latent field at d = 1024 it sat 60 nats above the average's F_hat);
the average is the answer, so its own plateau ends the run.
"""
from __future__ import annotations

import math
import time
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from .. import _compile
from . import verdict as verdicts
from .averaging import AVERAGING_STEP_DECAY
from ..factor_cov import FactorCovariance
from .monitor import StoppingRule
from .runner import step_keys
from .. import resources
from ..resources import estimate_fit_bytes
from ..targets import mode as _mode
from .registry import FAMILIES
from .result import FitResult
from ..results.build import model_info
from .auto import prepare
from .._random import host_normal, key_of
from ..targets.base import batched_potential, on_rows

RANK = 16  # columns of B by default (at most d - 1)
# Adam's step in the start's coordinates (u = (x - x0) / s, q starting at N(0, I)); on the
# hierarchical logistic at d = 1003: 0.02 took 9,100 updates to the end of averaging, 0.05 4,600
# (F_hat 0.05 nats higher), 0.1 2,800 (0.15 nats higher)
STEP = 0.05
B_START_SCALE = 1e-2  # B's entries at the start
MONITOR_DRAWS = 256  # common random numbers of F_hat (the full-rank runs' FitOptions default)
MAX_CHECKPOINTS = 200  # the checkpoint spacing is at least num_steps / this
# averaging runs at least as many updates as the plateau took, then until the average's F_hat
# plateaus (the stopping rule on the average): on the hierarchical logistic at d = 1003 F_hat of the
# average moved 0.03 nats between 1x and 3.4x
FACTOR_AVERAGING = 1


def half_logdet(B, logD):
    """(1/2) log det(B B^T + diag(exp(2 logD))), traced (matrix determinant lemma)."""
    W = B * jnp.exp(-2.0 * logD)[:, None]
    small = jnp.eye(B.shape[1], dtype=B.dtype) + B.T @ W
    return jnp.sum(logD) + jnp.sum(jnp.log(jnp.diag(jnp.linalg.cholesky(small))))


def _u_grad(target, x0, s):
    """grad_u V(x0 + s u) = s * grad V(x0 + s u), batched over rows."""
    grad = target.grad

    def g(x0, s, U):
        return jax.vmap(lambda u: s * grad(x0 + s * u))(U)

    return g


def _gradient(grad_u, params, x0, s, key, batch):
    """The reparameterisation gradient of F at (mu, B, logD) from `batch` draws (Ong et al. 2018)."""
    mu, B, logD = params
    d, r = B.shape
    kz, ke = jax.random.split(key)
    Z = jax.random.normal(kz, (batch, r), dtype=B.dtype)
    E = jax.random.normal(ke, (batch, d), dtype=B.dtype)
    D = jnp.exp(logD)
    U = mu + Z @ B.T + E * D
    G = grad_u(x0, s, U)  # (b, d)
    finite = jnp.all(jnp.isfinite(G))
    gB_ent, glogD_ent = jax.grad(half_logdet, argnums=(0, 1))(B, logD)
    g_mu = jnp.mean(G, axis=0)
    g_B = G.T @ Z / batch - gB_ent
    g_logD = jnp.mean(G * E, axis=0) * D - glogD_ent
    return (g_mu, g_B, g_logD), finite


def _block_fn(grad_u, optimizer, batch):
    """jit of `n` Adam updates (a scan) and the running sums of the iterates (for averaging)."""
    def block(state, keys, x0, s, scale):
        def body(carry, key):
            params, opt_state, ok, sums = carry
            grads, finite = _gradient(grad_u, params, x0, s, key, batch)
            updates, opt_state = optimizer.update(grads, opt_state, params)
            updates = jax.tree_util.tree_map(lambda u: scale * u, updates)
            new = jax.tree_util.tree_map(lambda p, u: p + u, params, updates)
            sums = jax.tree_util.tree_map(jnp.add, sums, new)
            return (new, opt_state, ok & finite, sums), None

        zero = jax.tree_util.tree_map(jnp.zeros_like, state[0])
        (params, opt_state, ok, sums), _ = jax.lax.scan(body, (*state, True, zero), keys)
        return (params, opt_state), ok, sums

    return _compile.jit(block, hot=True)


class _Objective:
    """F_hat(q) in the start's coordinates on fixed common normals (z, eps), and its per-draw values."""

    def __init__(self, target, x0, s, rank, num_draws, seed):
        d = target.dim
        xi = np.asarray(host_normal(key_of(seed + 7919), (num_draws, rank + d)), np.float64)
        self.Z, self.E = xi[:, :rank], xi[:, rank:]
        self.x0, self.s = np.asarray(x0), np.asarray(s)
        self.fn = batched_potential(target.potential)
        self.const = 0.5 * d * math.log(2 * math.pi * math.e) + float(np.sum(np.log(self.s)))

    def draws(self, params):
        """Per-draw V(x) - H(q) terms (their mean is F_hat, in nats; the user's coordinates)."""
        mu, B, logD = (np.asarray(p, np.float64) for p in params)
        X = self.x0 + self.s * (mu + self.Z @ B.T + self.E * np.exp(logD))
        V = on_rows(self.fn, X).astype(np.float64)
        D2 = np.exp(2.0 * logD)
        small = np.eye(B.shape[1]) + B.T @ (B / D2[:, None])  # on the host: no eager programs
        ent = self.const + float(np.sum(logD)) + 0.5 * np.linalg.slogdet(small)[1]
        return V - ent


def fit_factor(target, x0, s, *, rank: Optional[int] = None, num_steps: int = 20000,
               batch_size: int = 16, step_size: Optional[float] = None, tol: float = 1e-4,
               window: int = 10, every: Optional[int] = None, seed: int = 0,
               monitor_draws: int = MONITOR_DRAWS, dtype: str = "float64",
               average: bool = True) -> dict:
    """Run factor-covariance VI from N(x0, diag(s^2)); a dict with the mean, FactorCovariance, the
    checkpoint history, the verdict (a `Verdict`), the averaging and the compile seconds.
    `dtype="float32"`: the updates (draws, gradients of `target.astype("float32")`, Adam) run in
    float32; the start, the objective monitor, the averaging sums and the result stay float64.
    `average=False`: the run ends at the stopping rule's first plateau, without the averaging."""
    import optax

    if dtype not in ("float32", "float64"):
        raise ValueError(f"dtype must be 'float32' or 'float64', got {dtype!r}")
    d = target.dim
    r = int(min(RANK if rank is None else rank, max(d - 1, 1)))
    if r < 1:
        raise ValueError(f"rank must be a positive integer, got {rank!r}")
    eta = float(STEP if step_size is None else step_size)
    every = int(every or max(10, -(-num_steps // MAX_CHECKPOINTS) if tol is None else 50))
    x0 = np.asarray(x0, np.float64)
    s = np.asarray(s, np.float64)
    rng = np.random.default_rng(seed)
    params = tuple(np.asarray(p, dtype) for p in (
        np.zeros(d), B_START_SCALE * rng.standard_normal((d, r)), np.zeros(d)))
    optimizer = optax.adam(eta)
    state = _compile.jit(lambda p: (p, optimizer.init(p)))(params)  # one program, not eager ops
    block = _block_fn(_u_grad(target.astype(dtype), x0, s), optimizer, int(batch_size))
    all_keys = step_keys([seed], num_steps, 0)[0]  # (num_steps, 2): one program for every key
    objective = _Objective(target, x0, s, r, monitor_draws, seed)
    rule = StoppingRule(tol, window) if tol is not None else None
    dev = lambda a: _compile.device(np.asarray(a, dtype))  # noqa: E731
    xs, ss = dev(x0), dev(s)
    steps, secs, values, stderrs = [0], [0.0], [], []
    first = objective.draws(params)
    values.append(float(np.mean(first)))
    stderrs.append(float(np.std(first, ddof=1) / math.sqrt(first.size)))
    compiled, compile_seconds, elapsed = {}, 0.0, 0.0
    scale, avg_start, avg_sum, avg_count, avg_rule, averaged_out = 1.0, None, None, 0, None, False
    verdict, last_draws, step = None, first, 0
    while step < num_steps:
        n = min(every, num_steps - step)
        keys = all_keys[step:step + n]
        if n not in compiled:
            t0 = time.perf_counter()
            compiled[n] = block.lower(state, keys, xs, ss, dev(1.0)).compile()
            compile_seconds += time.perf_counter() - t0
        t0 = time.perf_counter()
        new, ok, sums = compiled[n](state, keys, xs, ss, dev(scale))
        ok = bool(jax.block_until_ready(ok))
        elapsed += time.perf_counter() - t0
        if not ok:
            verdict = verdicts.not_converged(
                f"a gradient was not finite at a draw of q within updates {step + 1}-{step + n} "
                "(diverged); the result is the state before them", step)
            break
        state = new
        step += n
        current = state[0]
        if avg_start is not None:
            sums = [np.asarray(a, np.float64) for a in sums]
            avg_sum = sums if avg_sum is None else [a + b for a, b in zip(avg_sum, sums)]
            avg_count += n
            current = tuple(a / avg_count for a in avg_sum)
        vals = objective.draws(current)
        steps.append(step)
        secs.append(elapsed)
        values.append(float(np.mean(vals)))
        stderrs.append(float(np.std(vals, ddof=1) / math.sqrt(vals.size)))
        last_draws = vals
        if avg_rule is not None and avg_rule.update(vals) and \
                step - avg_start >= avg_start * FACTOR_AVERAGING:
            averaged_out = True  # the average's objective plateaued: the answer is final
            verdict = verdict.with_numbers(averaging_steps=step - avg_start)
            break
        if rule is not None and avg_start is None and rule.update(vals):
            verdict = verdicts.stopped("objective converged", step, decrease=rule.decrease,
                                       stderr=rule.stderr)
            if not average:
                break
            avg_start, scale = step, 1.0 / AVERAGING_STEP_DECAY
            avg_rule = StoppingRule(tol, window)
    answer = state[0] if avg_count == 0 else tuple(a / avg_count for a in avg_sum)
    if verdict is None:
        verdict = verdicts.not_converged(
            "num_steps reached before the objective was seen to plateau" if rule is not None else
            f"not judged (tol=None: the {num_steps} updates given, without the stopping rule)", step)
    elif verdict.converged and avg_start is not None and not averaged_out:
        n = verdict.numbers
        verdict = verdicts.not_converged(
            "num_steps ended the averaging phase before the average's objective was seen to "
            "plateau", n["step"], decrease=n["decrease"], stderr=n["stderr"],
            averaging_from=avg_start)
    mu, B, logD = (np.asarray(p, np.float64) for p in answer)
    cov = FactorCovariance(s[:, None] * B, s * np.exp(logD))
    return {"mean": x0 + s * mu, "cov": cov, "rank": r, "steps": np.asarray(steps),
            "seconds": np.asarray(secs), "objective_estimate": np.asarray(values)[:, None],
            "objective_stderr": np.asarray(stderrs)[:, None], "verdict": verdict,
            "averaged": None if avg_start is None else {"from_step": avg_start,
                                                        "checkpoints": len(steps) - 1 -
                                                        steps.index(avg_start)},
            "compile_seconds": compile_seconds, "step_size": eta, "batch_size": int(batch_size),
            "final_draws": last_draws, "programs": list(compiled.values())}


__all__ = ["FactorCovariance", "fit_factor", "RANK", "STEP", "half_logdet"]


# ------------------------------------------------------------------ the family's place in `fit`
BATCH = 16  # draws per update by default


def choose_family(d: int, method: Optional[str], family: Optional[str], batch_size: int,
                  num_seeds: int) -> tuple[str, str]:
    """(family, why): `family` when given; "full-rank" when a (full-rank) method is named; else
    "factor" when d > MATRIX_FREE_DIM (`targets.mode`; the full-rank methods form and factorise
    d x d matrices at every update) or the full-rank run's d x d arrays
    (`resources.estimate_fit_bytes`) exceed free memory, and "full-rank" otherwise."""
    if family is not None:
        if family not in FAMILIES:
            raise ValueError(f"family must be one of {', '.join(map(repr, FAMILIES))}; got "
                             f"{family!r}")
        return family, "family given"
    if method is not None:
        return "full-rank", f"method {method!r} given (a full-rank method)"
    need = estimate_fit_bytes("sym", d, batch_size, num_seeds)
    have = resources.available_bytes()
    mb = 8 * d * d / 2**20
    if d > _mode.MATRIX_FREE_DIM:
        return "factor", (f"d = {d} > {_mode.MATRIX_FREE_DIM}: the full-rank family holds d x d "
                          "matrices "
                          f"({mb:,.0f} MB each) and factorises one at every update (O(d^3))")
    if need > have:
        return "factor", (f"the full-rank run needs about {need / 2**30:.1f} GiB and "
                          f"{have / 2**30:.1f} GiB is free")
    return "full-rank", (f"d = {d} <= {_mode.MATRIX_FREE_DIM} and the full-rank run's d x d arrays "
                         f"(about {need / 2**20:,.0f} MB) fit in free memory")


def family_message(family: dict) -> str:
    """The plain-words line saying which Gaussian family was fitted and why."""
    if family["name"] == "factor":
        return (f"Gaussian family: factor covariance B B^T + diag(D^2), rank {family['rank']} "
                f"(Ong, Nott & Smith 2018), because {family['reason']}; correlations beyond "
                f"{family['rank']} directions are not represented")
    return f"Gaussian family: full rank, because {family['reason']}"


def _result_class():
    import dataclasses

    @dataclasses.dataclass(repr=False)
    class FactorFitResult(FitResult):
        """`FitResult` of the factor family: `cov` and `factor` are one `FactorCovariance` (the d x d
        matrix only by `cov.dense()`), draws are m + B z + D eps."""

        family: Optional[dict] = None
        programs: list = dataclasses.field(default_factory=list, repr=False)

        def pop_programs(self) -> list:
            """The run's compiled programs (for `cost`), released from the result."""
            out, self.programs = self.programs, []
            return out

        def sample(self, key, num: int) -> np.ndarray:
            """(num, d) draws m + B z + D eps of q ((z, eps) standard normals of length r + d)."""
            xi = np.asarray(host_normal(key, (num, self.dim + self.cov.rank)), np.float64)
            return self.cov.draws(np.asarray(self.mean), xi)

        def to_dict(self) -> dict:
            cov, self.cov = self.cov, None
            try:
                out = super().to_dict()
            finally:
                self.cov = cov
            out["cov"] = cov.to_dict()
            out["family"] = self.family
            return out

        def verdict_lines(self) -> list:
            return [family_message(self.family)] + super().verdict_lines()

    return FactorFitResult


FactorFitResult = _result_class()


def fit_family(target, *, seeds, num_steps, batch_size, step_size, init, opts, progress, why,
               dtype="float64"):
    """`fit` with the factor family: bounds and start (`auto.prepare`, matrix-free above
    MATRIX_FREE_DIM), the run (`fit_factor`), then the quality check as for every fit."""
    if len(seeds) != 1:
        raise ValueError("the factor family runs one seed at a time; pass one seed")
    source = target
    prep = prepare(target, init, seed=seeds[0], verbose=progress, family="factor")
    if prep.init is None:  # bounds given: the family takes none, but starts at the MAP all the same
        prep = prepare(target.replace(alpha=None, beta=None), init, seed=seeds[0],
                       verbose=progress, family="factor")
    m0, F0 = prep.init
    F0 = np.asarray(F0, np.float64)
    s = F0 if F0.ndim == 1 else np.sqrt(np.sum(F0 * F0, axis=1))  # sd of the start's marginals
    b = int(batch_size or BATCH)
    out = fit_factor(prep.target, m0, s, rank=opts.rank, num_steps=num_steps, batch_size=b,
                     step_size=step_size, tol=opts.tol, window=opts.window,
                     every=opts.checkpoint_every, seed=seeds[0], monitor_draws=opts.monitor_draws,
                     dtype=dtype)
    curv = prep.curvature
    steps = out["steps"]
    history = {"step": steps, "gap": None, "objective": None,
               "grad_evals": steps * b + (curv.grad_evals if curv is not None else 0),
               "hvp_evals": np.zeros_like(steps) + (curv.hvp_evals if curv is not None else 0),
               "seconds": out["seconds"],
               "averaged": np.asarray([out["averaged"] is not None and st > out["averaged"]
                                       ["from_step"] for st in steps], dtype=bool),
               "objective_estimate": out["objective_estimate"],
               "objective_stderr": out["objective_stderr"],
               "nonfinite_fraction": np.zeros((len(steps), 1))}
    t = prep.target
    res = FactorFitResult(
        method="factor-gvi", accelerated=False, batch_size=b, num_steps=int(steps[-1]),
        dim=target.dim, seeds=list(seeds), mean=out["mean"], cov=out["cov"], factor=out["cov"],
        coords="factor", history=history,
        step_rule={"eta": out["step_size"], "s": None, "rho": 0.0}, f_star=None,
        cost_per_update=(b, 0), compile_seconds=out["compile_seconds"],
        target_name=target.name, curvature=curv.to_dict() if curv is not None else None,
        bounds={"alpha": t.alpha, "beta": t.beta, "estimated": curv is not None},
        events=[{"event": "family chosen", "step": 0, "family": "factor", "rank": out["rank"],
                 "reason": why}],
        verdict=out["verdict"], averaged=out["averaged"], names=target.info.get("names"),
        constrain=target.info.get("constrain"),
        family={"name": "factor", "rank": out["rank"], "reason": why}, programs=out["programs"])
    if prep.improper is not None:
        res.verdict = verdicts.improper_verdict(prep.improper, int(steps[-1]))
    res.model_info = model_info(source)
    return res


__all__ += ["FactorFitResult", "choose_family", "fit_family", "family_message", "BATCH"]
