"""Checkpoint history of a `fit` run: exact gaps, the objective estimate, snapshots, the `FitResult`."""
from __future__ import annotations

import collections

import jax
import jax.numpy as jnp
import numpy as np

from .. import _compile
from . import objective as obj
from .algorithms.base import VIState
from .monitor import ObjectiveMonitor, paired_difference
from .registry import momentum
from .result import FitResult

TAIL = 64  # snapshots kept for restarts and averaging


class _Recorder:
    def __init__(self, target, kernel, evaluate, monitor, monitor_draws, seed):
        self.target, self.kernel = target, kernel
        self.do_eval = evaluate and target.expectations is not None
        self.ref = obj.reference(target) if self.do_eval else None
        self.monitor = ObjectiveMonitor(target, kernel.coords, num_draws=monitor_draws,
                                        seed=seed) if monitor else None
        self.monitor_args = (target, kernel.coords, monitor_draws, seed)
        self.to_cov = _compile.jit(jax.vmap(jax.vmap(
            lambda m, A: kernel.gaussian(VIState(m, A, m, A))[1])))
        self.steps, self.seconds = [], []
        self.gap_rows, self.obj_rows = [], []
        self.est_value, self.est_se, self.est_bad, self.est_draws = [], [], [], []
        self.tail = collections.deque(maxlen=TAIL)
        self.last_A = None
        self.final = None  # the (m, A) the last history row describes
        self.avg_sum, self.avg_count, self.avg_start = None, 0, None
        self.hvp_offset, self.offsets = 0, []  # queries spent outside the updates (re-estimates)
        self.keep_iterates, self.kept = False, []  # (m, Cholesky factor) per checkpoint
        self.phase = []  # per checkpoint: 0 = iterate, 1 = running average of iterates
        self.best = None  # (F_hat, m, A) of the best phase-1 checkpoint (seed mean)

    def host_cov(self, ms, As):
        """Sigma per seed for (m, A) stacked over seeds, on the host."""
        return np.stack([np.asarray(self.kernel.gaussian(VIState(m, A, m, A))[1], np.float64)
                         for m, A in zip(np.asarray(ms), np.asarray(As))])

    def start_averaging(self):
        """From now on each checkpoint reports the running average of the iterates (Polyak-Ruppert)."""
        self.avg_sum = None
        self.avg_count = 0
        self.avg_start = self.steps[-1]
        if self.monitor is not None:  # averaged iterates move less: resolve finer differences
            target, coords, draws, seed = self.monitor_args
            self.monitor = ObjectiveMonitor(target, coords, num_draws=4 * draws, seed=seed)

    def _evaluate(self, ms, As):
        """Gaps (exact) and monitor estimates for stacked checkpoints (k, seeds, ...)."""
        k, ns, d = ms.shape
        gaps = objs = None
        if self.do_eval:
            covs = np.asarray(self.to_cov(jnp.asarray(ms), jnp.asarray(As))).reshape(k * ns, d, d)
            hld = np.asarray(obj.half_logdet(jnp.asarray(As), self.kernel.coords)).reshape(k * ns)
            g, f = obj.gaps(self.target, ms.reshape(k * ns, d), covs, ref=self.ref,
                            half_logdets=hld)
            gaps, objs = g.reshape(k, ns), f.reshape(k, ns)
        est = None
        if self.monitor is not None:
            e = self.monitor(ms.reshape(k * ns, d), As.reshape(k * ns, d, d))
            est = (e.value.reshape(k, ns), e.stderr.reshape(k, ns), e.nonfinite.reshape(k, ns),
                   e.draws.reshape(k, ns, -1))
        return gaps, objs, est

    def add(self, step, second, ms, As):
        self.add_block([step], [second], ms, As)

    def add_block(self, steps, secs, ms, As):
        """Append checkpoints; returns the index of the first whose q-draws meet a non-finite V."""
        if len(steps) == 0:
            return None
        raw_ms, raw_As = ms, As
        if self.avg_start is not None:
            m_list, A_list = [], []
            for i in range(len(steps)):
                if self.avg_sum is None:
                    self.avg_sum = [np.zeros_like(ms[i]), np.zeros_like(As[i])]
                self.avg_sum[0] = self.avg_sum[0] + ms[i]
                self.avg_sum[1] = self.avg_sum[1] + As[i]
                self.avg_count += 1
                m_list.append(self.avg_sum[0] / self.avg_count)
                A_list.append(self.avg_sum[1] / self.avg_count)
            ms, As = np.stack(m_list), np.stack(A_list)
        gaps, objs, est = self._evaluate(ms, As)
        bad = None
        if est is not None and np.any(est[2] > 0):
            bad = int(np.argmax(np.any(est[2] > 0, axis=1)))
            if not self.steps:  # the start itself: keep it so that the result shows where it failed
                bad = None
        keep = len(steps) if bad is None else bad
        for i in range(keep):
            self.steps.append(int(steps[i]))
            self.seconds.append(float(secs[i]))
            self.tail.append((raw_ms[i], raw_As[i]))
            self.final = (ms[i], As[i])
            self.offsets.append(self.hvp_offset)
            if self.keep_iterates:
                self.kept.append((ms[i], As[i]))
            self.phase.append(int(self.avg_start is not None))
            if gaps is not None:
                self.gap_rows.append(gaps[i])
                self.obj_rows.append(objs[i])
            if est is not None and self.avg_start is None and np.all(np.isfinite(est[0][i])):
                f = float(np.mean(est[0][i]))
                if self.best is None or f < self.best[0]:
                    self.best = (f, ms[i], As[i])
            if est is not None:
                self.est_value.append(est[0][i])
                self.est_se.append(est[1][i])
                self.est_bad.append(est[2][i])
                self.est_draws.append(est[3][i])
        if keep:
            self.last_A = raw_As[keep - 1]
        return bad

    def keep_lowest(self, candidates):
        """Report the candidate (m, A) with the lowest F_hat (same draws) if it beats the final answer."""
        if not candidates or self.monitor is None or not self.est_draws:
            return None
        ms = np.stack([c[0] for c in candidates])
        As = np.stack([c[1] for c in candidates])
        _, _, est = self._evaluate(ms, As)
        f = np.mean(est[0], axis=1)
        final = float(np.mean(self.est_value[-1]))
        i = int(np.nanargmin(np.where(np.isfinite(f), f, np.inf)))
        if not (np.isfinite(f[i]) and f[i] < final):
            return None
        start, self.avg_start = self.avg_start, None  # a plain row, not into the average
        self.add_block([self.steps[-1]], [self.seconds[-1]], ms[i][None], As[i][None])
        self.avg_start = start
        return {"event": "earlier average kept", "step": self.steps[-1], "candidate": i,
                "improvement": final - float(f[i])}

    def keep_best(self):
        """After averaging: report the best phase-1 iterate if it beats the answer by two paired s.e."""
        if self.best is None or self.avg_start is None or not self.est_draws:
            return None
        if self.phase[-1] == 1:  # the last row was drawn by the averaging phase's monitor
            _, _, est = self._evaluate(self.best[1][None], self.best[2][None])
            new, old = np.mean(est[3][0], axis=0), np.mean(self.est_draws[-1], axis=0)
        else:  # no checkpoint since averaging began: both on the current monitor's draws
            _, _, est = self._evaluate(np.stack([self.best[1], self.final[0]]),
                                       np.stack([self.best[2], self.final[1]]))
            new, old = np.mean(est[3][0], axis=0), np.mean(est[3][1], axis=0)
        if not np.all(np.isfinite(new)):
            return None
        diff, se = paired_difference(old, new)
        if diff > 2 * se:
            start, self.avg_start = self.avg_start, None  # a plain row, not into the average
            self.add_block([self.steps[-1]], [self.seconds[-1]], self.best[1][None],
                           self.best[2][None])
            self.avg_start = start
            return {"event": "best iterate kept", "step": self.steps[-1], "improvement": diff}
        return None

    def seed_mean_draws(self, i):
        return np.mean(self.est_draws[i], axis=0)

    def restart_state(self, kernel):
        """State at the last snapshot, momentum reset (auxiliary point = iterate)."""
        m, A = self.tail[-1]
        self.kernel = kernel
        A = jnp.asarray(A)
        if kernel.coords == "cov":  # the snapshot holds Sigma; init takes a factor
            A = jnp.linalg.cholesky(A)
        return jax.vmap(kernel.init)(jnp.asarray(m), A)

    def history(self, g_per, h_per):
        steps = np.asarray(self.steps)
        h = {"step": steps, "gap": np.asarray(self.gap_rows) if self.do_eval else None,
             "objective": np.asarray(self.obj_rows) if self.do_eval else None,
             "grad_evals": steps * g_per, "hvp_evals": steps * h_per + np.asarray(self.offsets),
             "seconds": np.asarray(self.seconds), "averaged": np.asarray(self.phase, dtype=bool)}
        if self.keep_iterates and self.kept:
            ms = np.stack([k[0] for k in self.kept])
            As = np.stack([k[1] for k in self.kept])
            covs = np.asarray(self.to_cov(jnp.asarray(ms), jnp.asarray(As)))
            h["mean"], h["factor"] = ms, np.linalg.cholesky(covs)
        if self.monitor is not None:
            h["objective_estimate"] = np.asarray(self.est_value)
            h["objective_stderr"] = np.asarray(self.est_se)
            h["nonfinite_fraction"] = np.asarray(self.est_bad)
        return h

    def result(self, runner, seeds, diverged, verdict, restarts, curvature):
        g_per, h_per = runner.est.cost(self.target.dim, runner.batch_size)
        history = self.history(g_per, h_per)
        if curvature is not None:  # the bound estimation's queries are part of the run's cost
            history["grad_evals"] = history["grad_evals"] + curvature.grad_evals
            history["hvp_evals"] = history["hvp_evals"] + curvature.hvp_evals
        final_m, last_A = self.final
        final_cov = self.host_cov(final_m, last_A)
        coords = self.kernel.coords
        factor = last_A if coords != "cov" else np.linalg.cholesky(final_cov)
        if len(seeds) == 1:
            final_m, final_cov, factor = final_m[0], final_cov[0], factor[0]
        rule = runner.rule
        return FitResult(
            method=runner.m_spec.name, accelerated=runner.accelerated,
            batch_size=runner.batch_size, num_steps=int(history["step"][-1]),
            dim=self.target.dim, seeds=seeds, mean=final_m, cov=final_cov, factor=factor,
            coords=coords, history=history,
            step_rule={"eta": rule.eta, "s": rule.s,
                       "rho": momentum(rule.s) if runner.accelerated and rule.s else 0.0},
            f_star=self.ref.value if self.do_eval else None, cost_per_update=(g_per, h_per),
            compile_seconds=runner.compile_seconds, diverged=diverged,
            target_name=self.target.name,
            curvature=curvature.to_dict() if curvature is not None else None,
            bounds={"alpha": runner.target.alpha, "beta": runner.target.beta,
                    "estimated": curvature is not None,
                    "feasible_set": list(runner.set_bounds)},
            events=list(runner.events), verdict=verdict,
            averaged=None if self.avg_start is None else {
                "from_step": self.avg_start, "checkpoints": self.avg_count},
            restarts=int(restarts), names=self.target.info.get("names"),
            constrain=self.target.info.get("constrain"))
