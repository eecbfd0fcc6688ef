"""The driver loop of `fit`: compiled blocks of scanned updates between checkpoints, and the policies
between blocks (recovery, feasible-set and bound watches, stopping, averaging), each a pure function
of the run state (`inertia.variational.runstate`) that the runner applies.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import time
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.random import threefry_2x32

from .. import _warnings
from .. import _compile
from ..verdict import Verdict
from ..parallel import shard_leading
from . import verdict as verdicts
from .auto import DEFAULT_METHOD
from .averaging import averaging, extension
from .build import make_kernel, resolve_step
from .monitor import StoppingRule
from .recorder import _Recorder
from .recovery import diverged, failure, recovery
from .registry import get_method
from .restart import with_restart
from .runstate import MAX_BLOCKS, RunState, checkpoint_blocks, fixed_blocks, fixed_every
from .widen import reestimation, widening

DIVERGENCE_LIMIT = 1e30  # |mean| or |factor| entries above this count as divergence
def _block_fn(kernel_at):
    """jit(vmap over seeds) of a block: a scan over chunks of steps, (eta, s) as arguments."""
    def block(state, block_keys, params):  # block_keys: (chunks, chunk length, 2) for one seed
        kernel = kernel_at(params)

        def body(st, k):
            st, info = kernel.step(st, k)
            size = jnp.maximum(jnp.max(jnp.abs(st.m)), jnp.max(jnp.abs(st.A)))
            return st, (info.finite & (size < DIVERGENCE_LIMIT), jnp.asarray(info.restarted))

        def outer(st, ck):
            st, (ok, restarted) = jax.lax.scan(body, st, ck)
            return st, (st.m, st.A, ok, jnp.sum(restarted))

        return jax.lax.scan(outer, state, block_keys)

    return _compile.jit(jax.vmap(block, in_axes=(0, 0, None)), hot=True)


# what a kernel builder may raise when the step size it is given is a tracer (a Python-level use of
# the number): such methods compile the step size in as a constant instead
_CONCRETE_ONLY = (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError,
                  jax.errors.TracerIntegerConversionError)


def step_keys(seeds, num_steps, attempt):
    """One key per update and seed, (seeds, steps, 2), on the host; a recovery's `attempt` folds in."""
    return np.asarray(_step_keys(max(num_steps, 1), bool(attempt))(np.asarray(seeds), attempt))


def _key_rows(seeds, num_steps, attempt=None):
    """split(PRNGKey(seed) [folded with attempt], num_steps) per seed, traced."""
    return jax.vmap(lambda sd: jax.random.split(
        jax.random.PRNGKey(sd) if attempt is None else
        jax.random.fold_in(jax.random.PRNGKey(sd), attempt), num_steps))(seeds)


@functools.lru_cache(maxsize=8)
def _step_keys(num_steps, fold):
    return _compile.jit(lambda seeds, attempt: _key_rows(seeds, num_steps, attempt if fold else None))


class KeyRows:
    """The rows of `step_keys(seeds, num_steps, attempt)`, computed when a block needs them."""

    def __init__(self, seeds, num_steps, attempt=0):
        self.seeds = np.asarray(seeds)
        self.attempt = int(attempt or 0)
        self.table = (None if jax.config.jax_threefry_partitionable
                      else step_keys(seeds, num_steps, attempt))

    def rows(self, start: int, count: int) -> np.ndarray:
        """(seeds, count, 2): the keys of updates start .. start + count - 1."""
        if self.table is not None:
            return self.table[:, start:start + count]
        idx = np.arange(start, start + count, dtype=np.uint64)
        hi = (idx >> np.uint64(32)).astype(np.uint32)
        lo = (idx & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        return np.asarray(_key_block(count, bool(self.attempt))(self.seeds, self.attempt, hi, lo))


@functools.lru_cache(maxsize=8)
def _key_block(count, fold):

    def one(sd, attempt, hi, lo):
        key = jax.random.PRNGKey(sd)
        key = jax.random.fold_in(key, attempt) if fold else key
        bits = threefry_2x32((key[0], key[1]), jnp.concatenate([hi, lo]))
        return jnp.stack([bits[:count], bits[count:]], axis=1)

    return _compile.jit(jax.vmap(one, in_axes=(0, None, None, None)))


@dataclasses.dataclass
class Loop:
    """What the driver loop carries from block to block."""

    rec: _Recorder
    state: object
    seeds: list
    num_steps: int
    every: int
    keys: object
    queue: list  # blocks (start, chunks, chunk length) still to run
    rule: Optional[StoppingRule]
    restarts: int = 0  # momentum restarts so far
    elapsed: float = 0.0
    diverged: Optional[dict] = None
    verdict: Optional[Verdict] = None
    counters: dict = dataclasses.field(default_factory=dict)  # the policies' own (RunState)

    def checkpoints(self, start, until):
        """Blocks of one checkpoint each from update `start` to `until` (`checkpoint_blocks`)."""
        return list(checkpoint_blocks(start, until, self.every))

    def restart(self, kernel):
        """The state at the last checkpoint for `kernel`, momentum reset."""
        self.state = self.rec.restart_state(kernel)

    def rekey(self, attempt):
        self.keys = KeyRows(self.seeds, self.num_steps, attempt)


class Runner:
    """Builds and rebuilds the kernel, compiles each block shape once, drives blocks with checkpoints."""

    def __init__(self, target, method, opts, batch_size, step_size, options, num_seeds,
                 dtype="float64"):
        self.dtype = dtype
        self.target, self.opts, self.options = target, opts, dict(options)
        self.batch_size, self.num_seeds = int(batch_size), num_seeds
        self.method, self.accelerated, self.step_size, self.s = (method, opts.accelerated,
                                                                 step_size, opts.s)
        self.set_bounds = (target.alpha, target.beta)
        self.eta_scale = 1.0
        self.compile_seconds = 0.0
        self.events = []
        self.traced = True  # step parameters as arguments of the compiled block (see _compiled)
        self.objective_offset = 0.0  # F_hat of the target = F_hat of the run + this (whitening)
        self.build()

    def build(self):
        """The kernel for the current target, feasible set and step scale (and its block)."""
        opts = dict(self.options)
        if (get_method(self.method).feasible
                and self.set_bounds != (self.target.alpha, self.target.beta)):
            opts["set_bounds"] = self.set_bounds  # only methods with a feasible set take it
        step = None
        s = self.s
        if self.eta_scale != 1.0:
            _, _, _, _, rule = make_kernel(self.target, self.method, accelerated=self.accelerated,
                                           batch_size=self.batch_size, step_size=self.step_size,
                                           s=self.s, **self.options)
            step = rule.eta * self.eta_scale
            s = rule.s / math.sqrt(self.eta_scale) if rule.s else None
            self.base_step = rule.eta
        elif self.step_size is not None:
            step = self.step_size
        target = self.target.astype(self.dtype)
        kernel, self.m_spec, self.est, self.accelerated, self.rule = make_kernel(
            target, self.method, accelerated=self.accelerated, batch_size=self.batch_size,
            step_size=step, s=s, **opts)
        self.kernel = self._wrap(kernel)
        if self.eta_scale == 1.0:  # the step a rescaled kernel starts from (see run_state)
            self.base_step = resolve_step(self.m_spec, self.target, self.batch_size,
                                          self.accelerated, self.step_size, self.s).eta
        self.params = _compile.device([self.rule.eta, self.rule.s or 0.0], self.dtype)
        structure = (target, opts.get("set_bounds"), self.rule.s is None)  # new bounds: new target
        if self.traced and structure == getattr(self, "_structure", None):
            return  # only eta and s changed: the compiled blocks take them as arguments
        self._structure = structure
        if self.traced:
            m, est, acc, b, has_s = (self.m_spec, self.est, self.accelerated, self.batch_size,
                                     self.rule.s is not None)
            self.run_block = _block_fn(lambda p: self._wrap(m.build(
                target, est, acc, b, p[0], p[1] if has_s else None, opts)))
        else:
            self.run_block = _block_fn(lambda p, k=self.kernel: k)
        self.compiled = {}

    def _wrap(self, kernel):
        """The built kernel with float64 starts cast to the run's dtype and momentum restart."""
        if self.dtype != "float64":  # starts and restarts arrive in float64
            init, dt = kernel.init, jnp.dtype(self.dtype)
            kernel = kernel._replace(init=lambda m, A: init(m.astype(dt), A.astype(dt)))
        if self.opts.restart and self.accelerated and kernel.lookahead is not None:
            kernel = with_restart(kernel)
        return kernel

    def checkpoint_every(self, num_steps):
        """`checkpoint_every`, or ~100 checkpoints, or (stopping rule) `auto_every`'s spacing."""
        o = self.opts
        if o.checkpoint_every or o.tol is None:
            return fixed_every(num_steps, o.checkpoint_every)
        return int(min(self.auto_every(o.window, o.monitor_draws), max(1, num_steps // 100)))

    def auto_every(self, window, monitor_draws=None):
        """Checkpoint spacing for the stopping rule: a window spans ~4 s updates (one contraction)."""
        if self.m_spec.natural:
            s = 1.0 / self.rule.eta
            floor = math.ceil(monitor_draws / self.batch_size) if monitor_draws else 1
            return int(min(max(floor, round(4.0 * s / window)), 1000))
        s = self.rule.s if (self.accelerated and self.rule.s) else 1.0 / (
            self.rule.eta * self.target.alpha)
        return int(min(max(1, round(4.0 * s / window)), 1000))

    def _compiled(self, state, n, length):
        if (n, length) not in self.compiled:
            t0 = time.perf_counter()
            dummy = jax.ShapeDtypeStruct((self.num_seeds, n, length, 2), jnp.uint32)
            try:
                lowered = self.run_block.lower(state, dummy, self.params)
            except _CONCRETE_ONLY:  # the method's builder needs concrete numbers
                self.traced = False
                self._structure = None
                self.build()
                lowered = self.run_block.lower(state, dummy, self.params)
            self.compiled[(n, length)] = lowered.compile()
            self.compile_seconds += time.perf_counter() - t0
        return self.compiled[(n, length)]

    def run(self, m0, A0, seeds, num_steps, every, progress=None, curvature=None):
        """Run to num_steps, a stop or a divergence; the FitResult (in the run's coordinates)."""
        loop = self._start(m0, A0, seeds, num_steps, every)
        opts, name = self.opts, self.m_spec.name
        recover = recovery(opts.recover, opts.max_recoveries, name)
        start_averaging = averaging(opts.average, opts.tol, opts.window)
        extend = extension(opts.extend, opts.tol, opts.window)
        watches = (widening(opts.widen, self.m_spec.feasible, name), reestimation(curvature))
        while True:
            if not loop.queue:
                if self.apply(loop, extend):
                    continue
                break
            fail, fresh = self._advance(loop)
            if fail is not None:
                if self.apply(loop, lambda s: recover(s, fail)):
                    continue
                loop.diverged = diverged(name, loop.rec.steps[-1], loop.seeds, fail)
                break
            for watch in watches:
                self.apply(loop, watch)
            if progress:
                _progress(progress, loop.rec, self.objective_offset)
            plateau = self._plateau(loop, fresh)
            if plateau is not None:
                if self.apply(loop, lambda s: start_averaging(s, plateau)):
                    continue
                loop.verdict = verdicts.stopped("objective converged", **plateau)
                break
        self._finish(loop)
        self._judge(loop)
        return loop.rec.result(self, seeds, loop.diverged, loop.verdict, loop.restarts, curvature)

    def run_state(self, loop) -> RunState:
        """The run state the policies act on."""
        rec = loop.rec
        return RunState(rec.steps[-1], len(rec.steps), loop.num_steps, loop.every, rec.last_A,
                        rec.final, rec.host_cov, tuple(loop.queue), loop.rule, rec.avg_start,
                        self.target, self.set_bounds, self.eta_scale, self.base_step,
                        **loop.counters)

    def apply(self, loop, policy) -> bool:
        """Run `policy(state) -> (state, events)`, apply it and record its events; True when it acted."""
        old = self.run_state(loop)
        new, events = policy(old)
        rec = loop.rec
        rec.hvp_offset += new.hvps
        if new.start_average:
            rec.start_averaging()
        loop.rule = new.rule
        if (new.target is not self.target or new.set_bounds != self.set_bounds
                or new.eta_scale != self.eta_scale):
            self.target, self.set_bounds, self.eta_scale = new.target, new.set_bounds, new.eta_scale
            self.build()
        if new.restart:
            loop.restart(self.kernel)
        if new.recoveries != old.recoveries:
            loop.rekey(new.recoveries)
        loop.queue = list(new.queue)
        loop.counters = {k: getattr(new, k) for k in
                         ("widen_low", "widen_high", "recoveries", "extensions", "earlier")}
        for event in events:
            warning = event.pop("warning", None)
            self.events.append(event)
            if warning:
                _warnings.warn(warning, RuntimeWarning)
        return bool(events)

    def _finish(self, loop):
        """Report an earlier average or the best pre-averaging iterate where it beats the last average."""
        rec, earlier = loop.rec, loop.counters.get("earlier", ())
        if earlier and loop.diverged is None:
            kept = rec.keep_lowest(list(earlier))
            if kept:
                self.events.append(kept)
        if rec.avg_start is not None:
            kept = rec.keep_best()
            if kept:
                self.events.append(kept)

    def _start(self, m0, A0, seeds, num_steps, every) -> Loop:
        """The initial state per seed, the recorder with the start's checkpoint, the queue."""
        opts, kernel = self.opts, self.kernel
        steps = max(num_steps, 1)
        # one program for the initial states and the first attempt's keys (those of step_keys)
        # (the start is an argument: as a constant, XLA would evaluate the kernel's start at compile
        # time, O(d^3))
        state = _compile.jit(lambda sd, m, A: jax.vmap(lambda _: kernel.init(m, A))(sd))(
            np.asarray(seeds), m0, A0)
        state = shard_leading(state)
        rec = _Recorder(self.target, kernel, opts.evaluate, opts.monitor, opts.monitor_draws,
                        seeds[0])
        rec.keep_iterates = bool(opts.keep_iterates)
        rule = StoppingRule(opts.tol, opts.window) if opts.tol is not None else None
        rec.add(0, 0.0, np.asarray(state.m, np.float64)[None],
                np.asarray(state.A, np.float64)[None])
        loop = Loop(rec, state, seeds, num_steps, every, KeyRows(seeds, steps), [], rule)
        loop.queue = fixed_blocks(num_steps, every) if rule is None else loop.checkpoints(0, num_steps)
        return loop

    def _advance(self, loop):
        """Run the next block and record its checkpoints: (Failure or None, new checkpoints)."""
        start, n, length = loop.queue.pop(0)
        while n == 0:  # a queue's continuation mark: its next window of checkpoints
            loop.queue[:0] = loop.checkpoints(start, length)
            start, n, length = loop.queue.pop(0)
        fn = self._compiled(loop.state, n, length)
        t = time.perf_counter()
        keys = loop.keys.rows(start, n * length).reshape(len(loop.seeds), n, length, -1)
        new_state, (bm, bA, ok, nr) = fn(loop.state, keys, self.params)
        ok = np.asarray(jax.block_until_ready(ok))
        dt = time.perf_counter() - t
        loop.restarts += int(np.asarray(nr).sum())
        chunk_ok = ok.all(axis=(0, 2))
        good = n if chunk_ok.all() else int(np.argmin(chunk_ok))
        bm = np.swapaxes(np.asarray(bm, np.float64)[:, :good], 0, 1)
        bA = np.swapaxes(np.asarray(bA, np.float64)[:, :good], 0, 1)
        steps = [start + (c + 1) * length for c in range(good)]
        secs = [loop.elapsed + dt * (c + 1) / n for c in range(good)]
        bad_draws = loop.rec.add_block(steps, secs, bm, bA)
        loop.elapsed += dt
        if bad_draws is not None:  # V non-finite on draws of q at checkpoint index bad_draws
            good = bad_draws
        loop.state = new_state
        if good >= n:
            return None, good
        return failure(loop.rec, start + good * length + 1, bad_draws, ok, good, loop.seeds), good

    def _plateau(self, loop, fresh) -> Optional[dict]:
        """The stopping rule fed the `fresh` checkpoints: its verdict when it fires, else None."""
        rule, rec = loop.rule, loop.rec
        if rule is None or not any(rule.update(rec.seed_mean_draws(i)) for i in range(-fresh, 0)):
            return None
        return {"step": rec.steps[-1], "decrease": rule.decrease, "stderr": rule.stderr,
                "window_checkpoints": self.opts.window}

    def _judge(self, loop):
        """The run's verdict where the stopping rule did not give one (`variational.verdict`)."""
        rec, rule, opts = loop.rec, loop.rule, self.opts
        if loop.diverged is not None:
            loop.verdict = verdicts.diverged_verdict(loop.diverged, rec.steps[-1])
        elif loop.verdict is None and rule is None:  # no stopping rule: judged from the trace
            loop.verdict = verdicts.trace_verdict(rec, opts.window)
        if loop.diverged is None and not opts.widen:  # given bounds: is the projection binding?
            wrong = verdicts.boundary_verdict(self.m_spec.feasible, rec.last_A, self.set_bounds,
                                             rec.steps[-1], self.m_spec.name)
            if wrong is not None:
                self.events.append({"event": "bounds look wrong", "step": rec.steps[-1],
                                    "reason": wrong.numbers["stop"]})
                loop.verdict = wrong
        if loop.verdict is None and loop.diverged is None and rule is not None:
            loop.verdict = verdicts.budget_verdict(rec, rule, loop.num_steps)
            if not loop.verdict.converged:
                hint = ("; on a target that is not log-concave, method='ngvi-reparam' may "
                        "converge where stl-proj does not (docs/vi.md)"
                        if self.method == DEFAULT_METHOD else "")
                _warnings.warn(f"{self.m_spec.name}: {loop.verdict.line()} (step "
                              f"{loop.verdict.numbers['step']}); raise num_steps{hint}",
                              RuntimeWarning)


def _progress(bar, rec, offset=0.0):
    """The bar at the last checkpoint, F_hat in the target's coordinates."""
    f = rec.est_value[-1] if rec.est_value else None
    bar.update(max(rec.steps[-1] - bar.done, 0),
               F_hat=None if f is None else float(np.nanmean(f)) + offset)


__all__ = ["Runner", "Loop", "step_keys", "KeyRows", "DIVERGENCE_LIMIT", "MAX_BLOCKS"]
