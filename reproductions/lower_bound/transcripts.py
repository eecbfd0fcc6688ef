"""Part 2 of the lower-bound experiment: GVI methods on V_v, V_B and a tripwire copy of V_B with the
same keys, as one compiled program; transcripts, queries until the first hidden one, final gaps."""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import scipy.stats

from ..hard import halfspace_energy, hard_pair, project_ball
from .probability import _cp

DEFAULT_RULE = "unit-energy"  # initial gap 1 + o(1), as the paper states (docs/lower-bound.md)

SAMPLE_POINTS = {"paired": 2}  # random query points per batch sample (paired: X and Y); others 1


def switch_target(tv, cap, poison):
    """One oracle for the three runs: V_B + cap * (V_v - V_B), answering `poison` added at hidden
    query points. (cap, poison) = (1, 0): V_v; (0, 0): V_B; (0, NaN): tripwire copy of V_B whose
    iterates turn NaN from the first update with a hidden query. cap and poison may be traced, so the
    three runs share one compiled program (and V_v, V_B agree bitwise until a hidden query)."""
    a, c = tv.info["a"], tv.info["kappa"] - 1.0
    proj, hidden = tv.info["projection"], tv.info["in_hidden_region"]

    def core(x):
        pb = project_ball(x, a)
        return x + c * (x - pb) + jnp.where(hidden(x), cap * c * (pb - proj(x)), 0.0)

    def potential(x):
        rb, rk = x - project_ball(x, a), x - proj(x)
        return 0.5 * (x @ x) + 0.5 * c * (rb @ rb + cap * (rk @ rk - rb @ rb))

    def grad(x):
        return core(x) + jnp.where(hidden(x), poison, 0.0)

    def hvp(x, u):
        return jax.jvp(core, (x,), (u,))[1] + jnp.where(hidden(x), poison, 0.0)

    return tv.replace(potential=potential, grad=grad, hvp=hvp, name=tv.name + "-switch")


def _record(st, coords, v, z):
    """(m, A z, finite, [v^T m, v^T Sigma v, Q]) with Q = (|m|^2 + tr Sigma)/2 - log det A."""
    m, A = np.asarray(st.m), np.asarray(st.A)
    fin = all(bool(np.all(np.isfinite(np.asarray(x)))) for x in st)
    Av = A.T @ v if coords == "chol" else A @ v
    if not fin:
        logdet = np.nan
    elif coords == "chol":
        logdet = np.log(np.abs(np.diag(A))).sum()
    else:
        logdet = np.linalg.slogdet(A)[1]
    Q = 0.5 * (m @ m + np.sum(A * A)) - logdet
    return m, A @ z, fin, np.array([m @ v, Av @ Av, Q])


def lockstep(kappa, method, *, R=DEFAULT_RULE, dim=None, v_seed=0, seeds=(0,), num_steps=100,
             batch_size=8):
    """Run `method` on V_v, V_B and the tripwire copy of V_B with identical keys (those of `fit`).

    Returns per-seed arrays over steps 0..num_steps: `diff` (max |V_v - V_B| over the mean and a
    fixed random projection of the factor), `same` (diff == 0), `clean` (no hidden query so far),
    and for both runs v^T m, v^T Sigma v and Q = (|m|^2 + tr Sigma)/2 - log det Sigma / 2, plus the
    final (mean, cov) of both runs.
    """
    from inertia.vi import make_kernel

    tv, _ = hard_pair(kappa, R=R, dim=dim, seed=v_seed)
    _, m_spec, est, _, rule = make_kernel(tv, method, batch_size=batch_size)
    d = tv.dim
    v = np.asarray(tv.info["v"])
    z = np.random.default_rng(12345).standard_normal(d)
    m0, A0 = jnp.zeros(d), jnp.eye(d)

    keys = np.stack([np.asarray(jax.random.split(jax.random.PRNGKey(sd), num_steps))
                     for sd in seeds])  # as in `fit`

    def run(target):
        # one compiled single-seed step driven from Python: a vmapped (over seeds) step or scan of
        # these kernels deadlocked the XLA CPU runtime on 2 cores for d >= 65 (docs/lower-bound.md)
        kern = make_kernel(target, method, batch_size=batch_size)[0]
        step = jax.jit(lambda st, k: kern.step(st, k)[0])
        recs, finals = [], []
        for i in range(len(seeds)):
            st = kern.init(m0, A0)
            rec = [_record(st, kern.coords, v, z)]
            for k in range(num_steps):
                st = step(st, keys[i, k])
                rec.append(_record(st, kern.coords, v, z))
            recs.append(tuple(np.stack(x) for x in zip(*rec)))
            m, cov = kern.gaussian(st)
            finals.append((np.asarray(m), np.asarray(cov)))
        recs = tuple(np.stack(x) for x in zip(*recs))  # (seeds, steps + 1, ...)
        return recs, (np.stack([f[0] for f in finals]), np.stack([f[1] for f in finals]))

    (mv, zv, _, st_v), final_v = run(switch_target(tv, 1.0, 0.0))
    (mb, zb, _, st_b), final_b = run(switch_target(tv, 0.0, 0.0))
    (_, _, fin, _), _ = run(switch_target(tv, 0.0, np.nan))
    dif = np.maximum(np.abs(mv - mb).max(-1), np.abs(zv - zb).max(-1))
    clean = np.logical_and.accumulate(fin, axis=1)
    g, h = est.cost(d, batch_size)
    return {"same": dif == 0, "diff": dif, "clean": clean, "stats_v": st_v, "stats_b": st_b,
            "final_v": final_v, "final_b": final_b,
            "queries_per_update": g + h,
            "points_per_update": SAMPLE_POINTS.get(est.name, 1) * batch_size,
            "eta": rule.eta, "targets": (tv, None)}


def _tail_mc(target, num):
    """jit (key, m, L) -> ((kappa-1)[e_{K_v} - e_{H_v}](X), hidden(X)) for num draws X ~ N(m, L L^T)."""
    kappa, R, d = target.info["kappa"], target.info["R"], target.dim
    proj, hidden = target.info["projection"], target.info["in_hidden_region"]
    vj = jnp.asarray(target.info["v"])

    @jax.jit
    def mc(key, m, L):
        X = m + jax.random.normal(key, (num, d)) @ L.T
        r = jax.vmap(lambda x: x - proj(x))(X)
        t = X @ vj
        corr = (kappa - 1.0) * 0.5 * (jnp.sum(r * r, 1) - jnp.maximum(t - R, 0.0) ** 2)
        return corr, jnp.sum(jax.vmap(hidden)(X))

    return mc


def objective_v(target, m, S, *, num, seed, mc=None):
    """F_v(q) = Q(q) + (kappa-1) E e_{H_v} (closed form) + (kappa-1) E[e_{K_v} - e_{H_v}] (MC) and the
    MC hit frequency of the hidden region; returns (F, se, hits, n)."""
    kappa, R, v = target.info["kappa"], target.info["R"], target.info["v"]
    mc = mc or _tail_mc(target, num)
    try:
        L = np.linalg.cholesky(S)
    except np.linalg.LinAlgError:  # a run that diverged (non-finite or non-PD final covariance)
        return math.nan, math.nan, -1, num
    corr, hits = mc(jax.random.PRNGKey(seed), jnp.asarray(m), jnp.asarray(L))
    corr = np.asarray(corr)
    Q = 0.5 * (m @ m + np.trace(S)) - 0.5 * np.linalg.slogdet(S)[1]
    F = Q + float(halfspace_energy(kappa, R, v @ m, v @ S @ v)) + corr.mean()
    return float(F), float(corr.std(ddof=1) / math.sqrt(num)), int(hits), num


def transcript_cell(kappa, method, *, dim, seeds, num_steps, batch_size, mc_samples, ref,
                    rule=DEFAULT_RULE):
    out = lockstep(kappa, method, R=rule, dim=dim, v_seed=0, seeds=seeds, num_steps=num_steps,
                   batch_size=batch_size)
    tv, _ = out["targets"]
    R = tv.info["R"]
    qpu, ppu = out["queries_per_update"], out["points_per_update"]
    mc = _tail_mc(tv, mc_samples)
    rows = []
    for i, seed in enumerate(seeds):
        same, clean = out["same"][i], out["clean"][i]
        hit = int(np.argmin(clean)) if not clean.all() else None  # update holding the first hit
        div = int(np.argmin(same)) if not same.all() else None
        agree = bool(same[:hit].all()) if hit is not None else bool(same.all())
        mu_t, s2_t, Q_b = out["stats_b"][i].T
        p_k = scipy.stats.norm.sf((R - mu_t) / np.sqrt(s2_t))  # reference-run iterates (indep. of v)
        mu_v, s2_v, Q_v = out["stats_v"][i].T
        gap_path_v = (Q_v + halfspace_energy(kappa, R, mu_v, s2_v)) - ref["F_star"]
        gap_path_b = (Q_b + halfspace_energy(kappa, R, mu_t, s2_t)) - ref["F_star"]
        mv, Sv = out["final_v"][0][i], out["final_v"][1][i]
        Fv, Fv_se, hv, n = objective_v(tv, mv, Sv, num=mc_samples, seed=100 + seed, mc=mc)
        mb, Sb = out["final_b"][0][i], out["final_b"][1][i]
        Fb, Fb_se, hb, _ = objective_v(tv, mb, Sb, num=mc_samples, seed=100 + seed, mc=mc)
        rows.append({
            "seed": seed, "first_hit_update": hit, "first_divergence_update": div,
            "agree_until_hit": agree, "diverge_at_hit": (div == hit),
            "queries_through_first_hit": None if hit is None else hit * qpu,
            "points_through_first_hit": None if hit is None else hit * ppu,
            "expected_hidden_points": float(ppu * p_k[:-1].sum()),
            "p_iterates": p_k.tolist(), "gap_path_v": gap_path_v.tolist(),
            "gap_path_b_on_v": gap_path_b.tolist(),
            "final_gap_v": Fv - ref["F_star"], "final_gap_v_se": math.hypot(Fv_se, ref["quad_err"]),
            "final_gap_b_on_v": Fb - ref["F_star"], "final_gap_b_on_v_se": Fb_se,
            "final_hidden_mc": [hb, n, *_cp(hb, n)]})
    return {"kappa": kappa, "method": method, "d": tv.dim, "R": R, "batch_size": batch_size,
            "num_steps": num_steps, "queries_per_update": qpu, "points_per_update": ppu,
            "total_queries": num_steps * qpu, "eta": out["eta"], "gap_gamma": ref["gap"],
            "seeds": rows}
