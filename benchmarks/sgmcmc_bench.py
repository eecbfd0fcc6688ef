"""Speed ratios for inertia.sgmcmc, measured in one run (python benchmarks/sgmcmc_bench.py).

1. Lambda time / sampling time (paper Tables D.1-D.2: 1e-5 .. 1e-3), N = 1000, B = 64, 10 epochs.
2. Closed-form dq-exact (one Lyapunov solve) vs scipy.optimize.root (Powell hybrid, the paper's
   solver) on eq. 15-16 over the D(D+1)/2 entries of a symmetric Lambda, D = 50 (target >= 100x).
3. SGLD step time vs BlackJAX `sgld` at equal batch size and dimension (target <= 1.2x): both
   run the same number of steps inside one jitted lax.scan, Gaussian linear regression.
"""
from __future__ import annotations

import argparse
import json
import math
import time

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize

import inertia.config

inertia.config.enable_x64()  # this script's own JAX arrays (and peers') in float64

import inertia  # noqa: F401
from reproductions.sgmcmc import sim_linear, sim_poisson
from inertia.sgmcmc import kernels, linear_regression, poisson_regression, tune
from inertia.sgmcmc._linalg import unvech, vech
from inertia.sgmcmc.offline import offline
from inertia.sgmcmc.tuning import lambda_dq_exact


def _best(fn, repeats):
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts)


def lambda_vs_sampling(Ds=(5, 10, 20, 50), N=1000, B=64, epochs=10, repeats=5):
    rows = []
    for kind in ("linear", "poisson"):
        for D in Ds:
            if kind == "linear":
                X, y, _ = sim_linear(0, D, N)
                model = linear_regression(X, y)
            else:
                X, y, _ = sim_poisson(0, D, N, theta_scale=1 / math.sqrt(D))
                model = poisson_regression(X, y)
            curv = offline(model)
            t_lam = _best(lambda: tune(curv, batch_size=B, check=False), repeats)
            Lam = tune(curv, batch_size=B, check=False).Lambda
            run = kernels.make_sampler(model, batch_size=B, num_draws=int(epochs * N / B))
            start = curv.theta_hat[None]
            jax.block_until_ready(run(jax.random.key(0), Lam, start))
            t_s = _best(lambda: jax.block_until_ready(run(jax.random.key(1), Lam, start)),
                        repeats)
            rows.append(dict(model=kind, D=D, lambda_s=t_lam, sampling_s=t_s,
                             ratio=t_lam / t_s))
    return rows


def closed_form_vs_root(D=50, N=2000, B=64):
    X, y, _ = sim_linear(0, D, N)
    curv = offline(linear_regression(X, y))
    S, H = curv.target_cov, curv.H
    C = curv.noise_cov(S, B)
    M = C + H @ S @ H
    scale = np.abs(S).max()

    def F(x):
        L = unvech(x, D)
        return vech(L @ H @ S + S @ H @ L - L @ M @ L) / scale

    t_cf = _best(lambda: lambda_dq_exact(curv, S, batch_size=B), 5)
    x0 = vech(2 * B / N * np.linalg.inv(H))
    t0 = time.perf_counter()
    sol = scipy.optimize.root(F, x0, method="hybr", tol=1e-12)
    t_root = time.perf_counter() - t0
    L_cf = lambda_dq_exact(curv, S, batch_size=B)
    diff = float(np.abs(unvech(sol.x, D) - L_cf).max() / np.abs(L_cf).max())
    return dict(D=D, closed_form_s=t_cf, root_s=t_root, speedup=t_root / t_cf,
                root_success=bool(sol.success), nfev=int(sol.nfev), max_rel_diff=diff)


def sgld_vs_blackjax(D=50, N=5000, B=64, steps=20_000, repeats=5):
    import blackjax

    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, D))
    y = X @ rng.normal(size=D) + rng.normal(size=N)
    Xj, yj = jnp.asarray(X), jnp.asarray(y)
    model = linear_regression(X, y, sigma=1.0)
    step_size = 1e-4
    temperature = float(N)

    # inertia: Lambda = step_size I, inverse temperature beta = N (posterior-scale SGLD)
    # our G is a per-observation average, so Lambda G = h grad U with Lambda = h N
    run = kernels.make_sampler(model, batch_size=B, num_draws=steps, temperature=temperature)
    start = np.zeros((1, D))
    lams = {"full": step_size * N * np.eye(D), "diagonal": np.full(D, step_size * N)}

    def loglik(theta, batch):
        xb, yb = batch
        return -0.5 * (yb - xb @ theta) ** 2

    ge = blackjax.sgmcmc.gradients.grad_estimator(lambda t: 0.0, loglik, N)
    sgld = blackjax.sgld(ge)

    @jax.jit
    def run_bj(key, x0):
        def one(x, key):
            k1, k2 = jax.random.split(key)
            idx = jax.random.randint(k1, (B,), 0, N)
            return sgld.step(k2, x, (Xj[idx], yj[idx]), step_size), None

        x, _ = jax.lax.scan(one, x0, jax.random.split(key, steps))
        return x

    fns = {name: (lambda L=L: jax.block_until_ready(run(jax.random.key(1), L, start)))
           for name, L in lams.items()}
    fns["blackjax"] = lambda: jax.block_until_ready(run_bj(jax.random.key(1), jnp.zeros(D)))
    for f in fns.values():
        f()  # compile
    times = {k: [] for k in fns}
    for _ in range(repeats):  # interleaved, so all three see the same machine load
        for k, f in fns.items():
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    times = {k: min(v) for k, v in times.items()}
    t_bj = times["blackjax"]
    return dict(D=D, B=B, steps=steps, inertia_full_s=times["full"],
                inertia_diag_s=times["diagonal"], blackjax_s=t_bj,
                ratio_full=times["full"] / t_bj, ratio_diag=times["diagonal"] / t_bj,
                note="inertia stores every draw; full = dense DxD Lambda (two DxD matvecs per "
                     "step), diagonal = 1-D Lambda; BlackJAX: scalar step size")


def main(argv=None):
    """Run all three; BLAS is limited to one thread (threadpoolctl) so that a shared, loaded
    machine does not turn 50 x 1000 matrix products into thread-contention noise."""
    import threadpoolctl

    threadpoolctl.threadpool_limits(1)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", default=None)
    p.add_argument("--quick", action="store_true")
    a = p.parse_args(argv)
    out = {}
    out["lambda_vs_sampling"] = lambda_vs_sampling(Ds=(5, 10) if a.quick else (5, 10, 20, 50))
    for r in out["lambda_vs_sampling"]:
        print(f"Lambda/sampling {r['model']:8s} D={r['D']:3d}: {r['lambda_s']:.2e} s / "
              f"{r['sampling_s']:.2e} s = {r['ratio']:.2e}")
    out["closed_form_vs_root"] = closed_form_vs_root(D=10 if a.quick else 50)
    r = out["closed_form_vs_root"]
    print(f"closed form vs scipy.optimize.root, D={r['D']}: {r['closed_form_s']:.2e} s vs "
          f"{r['root_s']:.2e} s -> {r['speedup']:.0f}x faster (agree to {r['max_rel_diff']:.1e}, "
          f"root success={r['root_success']}, nfev={r['nfev']})")
    out["sgld_vs_blackjax"] = sgld_vs_blackjax(steps=2000 if a.quick else 20_000)
    r = out["sgld_vs_blackjax"]
    print(f"SGLD step time inertia / BlackJAX (D={r['D']}, B={r['B']}): full Lambda "
          f"{r['inertia_full_s']:.3f} s, diagonal {r['inertia_diag_s']:.3f} s, BlackJAX "
          f"{r['blackjax_s']:.3f} s -> ratios {r['ratio_full']:.2f} (full), "
          f"{r['ratio_diag']:.2f} (diagonal)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return out


if __name__ == "__main__":
    main()
