"""Checkpoint history of a `fit` run: exact gaps where available, the objective estimate always
when monitoring, the last snapshots (for restarts and tail averaging), and the final `FitResult`."""
from __future__ import annotations

import collections

import jax
import jax.numpy as jnp
import numpy as np

from . import objective as obj
from .algorithms.base import VIState
from .monitor import ObjectiveMonitor

TAIL = 64  # snapshots kept for restarts and averaging


class _Recorder:
    def __init__(self, target, kernel, evaluate, monitor, monitor_draws, seed):
        self.target, self.kernel = target, kernel
        self.do_eval = evaluate and target.expectations is not None
        self.ref = obj.reference(target) if self.do_eval else None
        self.monitor = ObjectiveMonitor(target, kernel.coords, num_draws=monitor_draws,
                                        seed=seed) if monitor else None
        self.to_cov = jax.jit(jax.vmap(jax.vmap(
            lambda m, A: kernel.gaussian(VIState(m, A, m, A))[1])))
        self.steps, self.seconds, self.snap_m = [], [], []
        self.gap_rows, self.obj_rows = [], []
        self.est_value, self.est_se, self.est_bad, self.est_draws = [], [], [], []
        self.tail = collections.deque(maxlen=TAIL)
        self.last_A = None

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
            self.snap_m.append(ms[i])
            self.tail.append((ms[i], As[i]))
            if gaps is not None:
                self.gap_rows.append(gaps[i])
                self.obj_rows.append(objs[i])
            if est is not None:
                self.est_value.append(est[0][i])
                self.est_se.append(est[1][i])
                self.est_bad.append(est[2][i])
                self.est_draws.append(est[3][i])
        if keep:
            self.last_A = As[keep - 1]
        return bad

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

    def average_tail(self, count):
        """Average the last `count` snapshots' (m, A); keep it when F_hat says it is better."""
        if self.monitor is None or len(self.tail) < 2:
            return None
        snaps = list(self.tail)[-count:]
        m_avg = np.mean([s[0] for s in snaps], axis=0)
        A_avg = np.mean([s[1] for s in snaps], axis=0)
        _, _, est = self._evaluate(m_avg[None], A_avg[None])
        f_avg = float(np.nanmean(est[0][0])) if np.all(np.isfinite(est[0][0])) else np.inf
        f_last = float(np.nanmean(self.est_value[-1]))
        info = {"checkpoints": len(snaps), "objective_last": f_last, "objective_average": f_avg,
                "used": bool(f_avg < f_last)}
        if info["used"]:
            self.add_block([self.steps[-1]], [self.seconds[-1]], m_avg[None], A_avg[None])
        return info

    def history(self, g_per, h_per):
        steps = np.asarray(self.steps)
        h = {"step": steps, "gap": np.asarray(self.gap_rows) if self.do_eval else None,
             "objective": np.asarray(self.obj_rows) if self.do_eval else None,
             "grad_evals": steps * g_per, "hvp_evals": steps * h_per,
             "seconds": np.asarray(self.seconds)}
        if self.monitor is not None:
            h["objective_estimate"] = np.asarray(self.est_value)
            h["objective_stderr"] = np.asarray(self.est_se)
            h["nonfinite_fraction"] = np.asarray(self.est_bad)
        return h

    def result(self, runner, seeds, diverged, stopped, averaged, restarts, curvature):
        from .fit import FitResult
        from .registry import momentum

        g_per, h_per = runner.est.cost(self.target.dim, runner.batch_size)
        history = self.history(g_per, h_per)
        if curvature is not None:  # the bound estimation's queries are part of the run's cost
            history["grad_evals"] = history["grad_evals"] + curvature.grad_evals
            history["hvp_evals"] = history["hvp_evals"] + curvature.hvp_evals
        final_m, last_A = self.tail[-1]
        final_cov = np.asarray(self.to_cov(jnp.asarray(final_m)[None],
                                           jnp.asarray(last_A)[None]))[0]
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
            bounds={"alpha": self.target.alpha, "beta": self.target.beta,
                    "estimated": curvature is not None,
                    "feasible_set": list(runner.set_bounds)},
            events=list(runner.events), stopped=stopped, averaged=averaged,
            restarts=int(restarts), names=self.target.info.get("names"),
            constrain=self.target.info.get("constrain"))
