"""First-run latency of a user's model: inertia's CLI and Python API against NumPyro, fresh processes.

Each model is a NumPyro model in a file plus a CSV (written to a temp folder), run as a user does:
  inertia fit    --model model.py:model --data data.csv      (automatic VI, prints the table)
  inertia sample --model model.py:model --data data.csv      (automatic HFHR, diagnostics)
  API fit        inertia.vi.fit(inertia.targets.from_numpyro(model, **columns)) in a script
  API sample     inertia.mcmc.sample(inertia.targets.from_numpyro(model, **columns)) in a script
  NumPyro SVI    AutoMultivariateNormal + Adam(0.01), 5,000 steps (a script)
  NumPyro NUTS   4 chains (vectorized), 1,000 warm-up + 1,000 draws each (a script)
Every command of every model gets its own empty compilation cache (INERTIA_JAX_CACHE): its first
run is a new model's first run; the `--repeats` re-runs (same cache) are what a user re-running
sees (best of them reported). Runs are interleaved over models and commands, each pinned to one
core (`--cpu`). A probe inside each process splits its wall time into interpreter start/exit,
imports, JAX tracing, lowering to MLIR and XLA compilation (jax.monitoring events; nested spans
merged) and the rest ("run"), and counts the XLA compilations and persistent-cache hits.
Ratios are inertia / NumPyro in the same run, per model and their median over models.
Run: python benchmarks/user_run.py [--models a,b] [--repeats 2] [--quick] [--cpu 0|none]
     [--commands cli_fit,...] [--logs DIR] [--json benchmarks/results/user_run.json]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

# --- the user models: (d, model file, data(rng) -> (column names, rows x columns)) -------------

_LINREG = '''import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def model(x1, x2, y=None):
    a = numpyro.sample("a", dist.Normal(0, 5))
    b = numpyro.sample("b", dist.Normal(0, 5).expand([2]).to_event(1))
    sigma = numpyro.sample("sigma", dist.HalfNormal(2.0))
    numpyro.sample("y", dist.Normal(a + b[0] * x1 + b[1] * x2, sigma), obs=y)
'''

_LOGISTIC = '''import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def model(y=None, **x):
    X = jnp.stack(list(x.values()), axis=-1)  # one CSV column per feature, in the file's order
    a = numpyro.sample("a", dist.Normal(0, 2))
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    numpyro.sample("y", dist.Bernoulli(logits=a + X @ w), obs=y)
'''

_HIER8 = '''import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

G = 8


def model(g, x, y=None):
    g = jnp.asarray(g, dtype=jnp.int32)  # CSV columns arrive as floats
    mu = numpyro.sample("mu", dist.Normal(0, 5))
    tau = numpyro.sample("tau", dist.HalfNormal(2.0))
    with numpyro.plate("groups", G):
        z = numpyro.sample("z", dist.Normal(0, 1))
    b = numpyro.sample("b", dist.Normal(0, 5))
    sigma = numpyro.sample("sigma", dist.HalfNormal(2.0))
    numpyro.sample("y", dist.Normal(mu + tau * z[g] + b * x, sigma), obs=y)
'''

_POISSON = '''import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def model(x1, x2, x3, x4, x5, y=None):
    X = jnp.stack([x1, x2, x3, x4, x5], axis=-1)
    a = numpyro.sample("a", dist.Normal(0, 2))
    w = numpyro.sample("w", dist.Normal(0, 1).expand([5]).to_event(1))
    numpyro.sample("y", dist.Poisson(jnp.exp(a + X @ w)), obs=y)
'''

_STUDENT = '''import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def model(x1, x2, y=None):
    a = numpyro.sample("a", dist.Normal(0, 10))
    b = numpyro.sample("b", dist.Normal(0, 10).expand([2]).to_event(1))
    sigma = numpyro.sample("sigma", dist.HalfCauchy(2.0))
    nu = numpyro.sample("nu", dist.Gamma(2.0, 0.1))
    numpyro.sample("y", dist.StudentT(nu, a + b[0] * x1 + b[1] * x2, sigma), obs=y)
'''

_HIERLOGIT = '''import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

G = 40


def model(g, x1, x2, y=None):
    g = jnp.asarray(g, dtype=jnp.int32)  # CSV columns arrive as floats
    mu = numpyro.sample("mu", dist.Normal(0, 2))
    tau = numpyro.sample("tau", dist.HalfNormal(1.0))
    with numpyro.plate("groups", G):
        z = numpyro.sample("z", dist.Normal(0, 1))
    b = numpyro.sample("b", dist.Normal(0, 2).expand([2]).to_event(1))
    numpyro.sample("y", dist.Bernoulli(logits=mu + tau * z[g] + b[0] * x1 + b[1] * x2), obs=y)
'''

_WIDE = '''import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def model(y=None, **x):
    X = jnp.stack(list(x.values()), axis=-1)  # one CSV column per feature, in the file's order
    a = numpyro.sample("a", dist.Normal(0, 5))
    w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
    sigma = numpyro.sample("sigma", dist.HalfNormal(2.0))
    numpyro.sample("y", dist.Normal(a + X @ w, sigma), obs=y)
'''


def _linreg(rng):
    x = rng.normal(size=(200, 2))
    return ["x1", "x2", "y"], np.c_[x, 1 + x @ [2.0, -1.0] + 0.5 * rng.normal(size=200)]


def _logistic(rng, n=500, p=10):
    x = rng.normal(size=(n, p))
    y = rng.uniform(size=n) < 1 / (1 + np.exp(-(0.3 + x @ rng.normal(scale=0.7, size=p))))
    return [f"x{j}" for j in range(p)] + ["y"], np.c_[x, y.astype(float)]


def _hier8(rng, n=160, groups=8):
    g = np.arange(n) % groups
    x = rng.normal(size=n)
    y = 1 + rng.normal(scale=1.5, size=groups)[g] + 0.7 * x + rng.normal(size=n)
    return ["g", "x", "y"], np.c_[g, x, y]


def _poisson(rng, n=300):
    x = 0.5 * rng.normal(size=(n, 5))
    y = rng.poisson(np.exp(0.5 + x @ [0.5, -0.3, 1.0, 0.0, 0.2]))
    return [f"x{j}" for j in range(1, 6)] + ["y"], np.c_[x, y]


def _student(rng, n=150):
    x = rng.normal(size=(n, 2))
    return ["x1", "x2", "y"], np.c_[x, 1 + x @ [2.0, -0.5] + rng.standard_t(3, size=n)]


def _hierlogit(rng, n=800, groups=40):
    g = np.arange(n) % groups
    x = rng.normal(size=(n, 2))
    eta = 0.3 + 0.8 * rng.normal(size=groups)[g] + x @ [0.5, -0.4]
    return ["g", "x1", "x2", "y"], np.c_[g, x, (rng.uniform(size=n) < 1 / (1 + np.exp(-eta)))]


def _wide(rng, n=300, p=98):
    x = rng.normal(size=(n, p))
    w = rng.normal(scale=0.3, size=p) * (rng.uniform(size=p) < 0.3)
    return [f"x{j}" for j in range(p)] + ["y"], np.c_[x, 0.5 + x @ w + rng.normal(size=n)]


MODELS = {  # name: (d, model file, data)
    "linreg": (4, _LINREG, _linreg),
    "student_t": (5, _STUDENT, _student),
    "poisson": (6, _POISSON, _poisson),
    "logistic": (11, _LOGISTIC, _logistic),
    "hier8": (12, _HIER8, _hier8),
    "hier_logistic": (44, _HIERLOGIT, _hierlogit),
    "wide": (100, _WIDE, _wide),
}
QUICK = ("linreg", "hier8")

# --- the scripts a user writes, and the probe every timed process runs under -------------------

_READ = '''import sys
import numpy as np
sys.path.insert(0, {folder!r})
from model import model
names = open({csv!r}).readline().strip().split(",")
table = np.loadtxt({csv!r}, delimiter=",", skiprows=1, ndmin=2)
data = {{name: table[:, j] for j, name in enumerate(names)}}
'''

SCRIPTS = {
    "api_fit": '''import inertia.targets
import inertia.vi
target = inertia.targets.from_numpyro(model, **data)
print("d =", target.dim)
res = inertia.vi.fit(target)
print(res.table())
sys.exit(0 if res.converged else 3)  # as `inertia fit`
''',
    "api_sample": '''import inertia.targets
import inertia.mcmc
target = inertia.targets.from_numpyro(model, **data)
print("d =", target.dim)
res = inertia.mcmc.sample(target)
print(res.report())
sys.exit(0 if res.converged else 3)  # as `inertia sample`
''',
    "numpyro_svi": '''import jax
jax.config.update("jax_enable_x64", True)
import optax
from numpyro.infer import SVI, Trace_ELBO
from numpyro.infer.autoguide import AutoMultivariateNormal
guide = AutoMultivariateNormal(model)
svi = SVI(model, guide, optax.adam(0.01), Trace_ELBO())
res = svi.run(jax.random.PRNGKey(0), 5000, progress_bar=False, **data)
print(guide.median(res.params))
''',
    "numpyro_nuts": '''import jax
jax.config.update("jax_enable_x64", True)
from numpyro.infer import MCMC, NUTS
mcmc = MCMC(NUTS(model), num_warmup=1000, num_samples=1000, num_chains=4,
            chain_method="vectorized", progress_bar=False)
mcmc.run(jax.random.PRNGKey(0), **data)
mcmc.print_summary()
''',
}

PROBE = '''"""Run `inertia ARGS...` (inertia.cli.main) or a script (`--script FILE`), and write to
$USER_RUN_PROBE the seconds spent in imports and in JAX's tracing, lowering and XLA compilation
(jax.monitoring spans, nested spans merged) and the number of compilations."""
import builtins, json, os, sys, threading, time
T0 = time.time()
spans = {"import": [], "trace": [], "lower": [], "compile": []}
counts = {}
durations = {}
_real_import, _main, _depth = builtins.__import__, threading.get_ident(), [0]


def _timed_import(*a, **k):
    if _depth[0] or threading.get_ident() != _main:
        return _real_import(*a, **k)
    _depth[0] = 1
    t = time.time()
    try:
        return _real_import(*a, **k)
    finally:
        _depth[0] = 0
        if time.time() - t > 1e-4:
            spans["import"].append((t, time.time()))


builtins.__import__ = _timed_import
import jax.monitoring as monitoring  # noqa: E402  (timed as an import)

KIND = {"/jax/core/compile/jaxpr_trace_duration": "trace",
        "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
        "/jax/core/compile/backend_compile_duration": "compile"}


def _span(event, start, end, **kw):
    if event in KIND:
        spans[KIND[event]].append((start, end))
        counts[KIND[event]] = counts.get(KIND[event], 0) + 1


def _event(event, **kw):
    counts[event] = counts.get(event, 0) + 1


def _duration(event, secs, **kw):
    if event not in KIND:
        durations[event] = durations.get(event, 0.0) + secs


monitoring.register_event_time_span_listener(_span)
monitoring.register_event_listener(_event)
monitoring.register_event_duration_secs_listener(_duration)


def _union(intervals):
    total, end = 0.0, -1e300
    for a, b in sorted(intervals):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


rc = 1
try:
    if sys.argv[1] == "--script":
        import runpy
        sys.argv = sys.argv[2:]
        runpy.run_path(sys.argv[0], run_name="__main__")
        rc = 0
    else:
        t = time.time()
        import inertia.cli
        spans["import"].append((t, time.time()))
        sys.argv = ["inertia"] + sys.argv[1:]
        rc = inertia.cli.main()  # as the `inertia` console script calls it
except SystemExit as err:
    rc = err.code if isinstance(err.code, int) else 1
finally:
    builtins.__import__ = _real_import
    inside = time.time() - T0
    out = {k + "_s": _union(v) for k, v in spans.items()}
    out["overhead_s"] = _union([s for v in spans.values() for s in v])
    out.update(inside_s=inside, rc=rc,
               compiles=counts.get("compile", 0), traces=counts.get("trace", 0),
               lowerings=counts.get("lower", 0),
               cache_hits=counts.get("/jax/compilation_cache/cache_hits", 0),
               cache_writes=counts.get("/jax/compilation_cache/cache_misses", 0),
               cache_retrieval_s=durations.get("/jax/compilation_cache/cache_retrieval_time_sec", 0.0))
    with open(os.environ["USER_RUN_PROBE"], "w") as fh:
        json.dump(out, fh)
sys.exit(rc)
'''

COMMANDS = {  # name: (label, NumPyro peer)
    "cli_fit": ("inertia fit", "numpyro_svi"),
    "cli_sample": ("inertia sample", "numpyro_nuts"),
    "api_fit": ("API fit(target)", "numpyro_svi"),
    "api_sample": ("API sample(target)", "numpyro_nuts"),
    "numpyro_svi": ("NumPyro SVI, 5,000 steps", None),
    "numpyro_nuts": ("NumPyro NUTS, 4 x (1,000 + 1,000)", None),
}
INERTIA = ("cli_fit", "cli_sample", "api_fit", "api_sample")


def _write_model(root, name):
    """Folder with model.py, data.csv, the four scripts; returns it."""
    d, source, make = MODELS[name]
    folder = os.path.join(root, name)
    os.makedirs(folder)
    with open(os.path.join(folder, "model.py"), "w") as fh:
        fh.write(source)
    names, rows = make(np.random.default_rng(0))
    csv = os.path.join(folder, "data.csv")
    np.savetxt(csv, rows, delimiter=",", header=",".join(names), comments="", fmt="%.10g")
    for script, body in SCRIPTS.items():
        with open(os.path.join(folder, script + ".py"), "w") as fh:
            fh.write(_READ.format(folder=folder, csv=csv) + body)
    return folder


def _argv(command, folder, probe):
    if command.startswith("cli_"):
        sub = command[4:]
        return [sys.executable, probe, sub, "--model", os.path.join(folder, "model.py") + ":model",
                "--data", os.path.join(folder, "data.csv")]
    return [sys.executable, probe, "--script", os.path.join(folder, command + ".py")]


VERDICT_RC = (3, 4)  # ran to the end, verdict not met: not converged (3), unreliable fit (4)


def _run_one(argv, env, log):
    """Wall seconds of one process and its probe record (rc 0; 3 = ran to the end, not converged;
    4 = `inertia fit` ran to the end, the Gaussian an unreliable approximation)."""
    probe_json = log + ".probe.json"
    env = dict(env, USER_RUN_PROBE=probe_json)
    with open(log + ".out", "w") as out, open(log + ".err", "w") as err:
        t0 = time.perf_counter()
        rc = subprocess.run(argv, env=env, stdout=out, stderr=err).returncode
        wall = time.perf_counter() - t0
    rec = {"wall_s": wall, "rc": rc}
    try:
        with open(probe_json) as fh:
            rec.update(json.load(fh))
    except (OSError, ValueError):
        pass
    rec["rc"] = rc
    rec["startup_s"] = wall - rec.get("inside_s", wall)
    rec["run_s"] = rec.get("inside_s", wall) - rec.get("overhead_s", 0.0)
    if rc in VERDICT_RC:  # ran to the end, the verdict not met: its reason, for the JSON
        with open(log + ".out") as fh, open(log + ".err") as fe:
            rec["not_converged"] = [ln.strip() for ln in fh.read().splitlines() + fe.read()
                                    .splitlines() if "converge" in ln.lower()
                                    or "unreliable" in ln.lower()][-4:]
    elif rc != 0:
        with open(log + ".err") as fh:
            rec["error"] = fh.read()[-2000:]
        print(f"  {os.path.basename(log)}: exit status {rc}:\n{rec['error'][-600:]}",
              file=sys.stderr)
    with open(log + ".out") as fh:
        for line in fh:
            if line.startswith("d = "):
                rec["d"] = int(line.split()[2])
    return rec


def base_env() -> dict:
    """The environment of every timed process: this one's, without the variables that change
    threads, XLA flags or caches, with the working copy this script sits in first on PYTHONPATH."""
    base = {k: v for k, v in os.environ.items()
            if k not in ("OPENBLAS_NUM_THREADS", "XLA_FLAGS", "JAX_COMPILATION_CACHE_DIR",
                         "INERTIA_JAX_CACHE", "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS")}
    base["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
        + ([base["PYTHONPATH"]] if base.get("PYTHONPATH") else []))
    return base


def _ratio(a, b):
    return a / b if a and b else None


def _flag(rec):
    return "*" if rec and rec["rc"] in VERDICT_RC else ""


def _fmt(x, spec=".1f"):
    return "—" if x is None else format(x, spec)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=None,
                    help=f"comma-separated subset of {','.join(MODELS)} (default: all)")
    ap.add_argument("--repeats", type=int, default=2,
                    help="re-runs per command after the first run (same cache; best is reported)")
    ap.add_argument("--quick", action="store_true",
                    help=f"smoke check: {','.join(QUICK)}, one re-run")
    ap.add_argument("--cpu", default="0",
                    help="pin every process to this CPU with taskset (default 0; 'none': no pinning)")
    ap.add_argument("--commands", default=",".join(COMMANDS),
                    help=f"comma-separated subset of {','.join(COMMANDS)}")
    ap.add_argument("--json", default=None, help="write the results to this file")
    ap.add_argument("--logs", default=None,
                    help="keep every process's stdout and stderr in this folder (default: none)")
    args = ap.parse_args(argv)
    models = list(QUICK) if args.quick else (args.models.split(",") if args.models else list(MODELS))
    repeats = 1 if args.quick else args.repeats
    commands = args.commands.split(",")
    for m in models:
        if m not in MODELS:
            ap.error(f"unknown model {m!r}; models: {', '.join(MODELS)}")
    for c in commands:
        if c not in COMMANDS:
            ap.error(f"unknown command {c!r}; commands: {', '.join(COMMANDS)}")
    pin = []
    if args.cpu.lower() != "none":
        if shutil.which("taskset"):
            pin = ["taskset", "-c", args.cpu]
        else:
            print("taskset not found: processes are not pinned", file=sys.stderr)
    base = base_env()
    runs = {m: {c: [] for c in commands} for m in models}
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="inertia-user-run-") as root:
        probe = os.path.join(root, "probe.py")
        with open(probe, "w") as fh:
            fh.write(PROBE)
        folders = {m: _write_model(root, m) for m in models}
        for r in range(1 + repeats):  # interleaved, so drifting load hits every command
            for m in models:
                for c in commands:
                    env = dict(base)
                    if c in INERTIA:  # its own cache: empty at r = 0
                        env["INERTIA_JAX_CACHE"] = os.path.join(root, "cache", m, c)
                    else:
                        env["INERTIA_JAX_CACHE"] = "off"
                    log = os.path.join(args.logs or os.path.join(root, "logs"), f"{m}.{c}.{r}")
                    os.makedirs(os.path.dirname(log), exist_ok=True)
                    rec = _run_one(pin + _argv(c, folders[m], probe), env, log)
                    runs[m][c].append(rec)
                    print(f"  [{r}] {m:14s} {c:13s} {rec['wall_s']:6.1f} s  rc {rec['rc']}  "
                          f"{rec.get('compiles', '?')} compilations", file=sys.stderr, flush=True)
    return report(models, commands, runs, repeats, pin, load0, args.json)


def _summary(recs):
    """{"first": record, "rerun": best re-run record (least wall), "all_wall_s": [...]}."""
    ok = [r for r in recs[1:] if r["rc"] in (0, *VERDICT_RC)]
    first = recs[0] if recs[0]["rc"] in (0, *VERDICT_RC) else None
    return {"first": first, "rerun": min(ok, key=lambda r: r["wall_s"]) if ok else None,
            "all_wall_s": [r["wall_s"] for r in recs], "exit_status": [r["rc"] for r in recs]}


def report(models, commands, runs, repeats, pin, load0, json_path):
    results = {}
    for m in models:
        rows = {c: _summary(runs[m][c]) for c in commands}
        ratios = {}
        for c in INERTIA:
            peer = COMMANDS[c][1]
            if c in rows and peer in rows:
                for when in ("first", "rerun"):
                    a, b = rows[c][when], rows[peer][when]
                    ratios[f"{c}/{peer} {when}"] = _ratio(a and a["wall_s"], b and b["wall_s"])
        d_seen = {r.get("d") for c in commands for r in runs[m][c] if r.get("d")}
        results[m] = {"d": MODELS[m][0], "d_reported": sorted(d_seen), "commands": rows,
                      "ratios": ratios}
    keys = sorted({k for m in models for k in results[m]["ratios"]},
                  key=lambda k: (INERTIA.index(k.split("/")[0]), k.endswith("rerun")))
    medians = {}
    for k in keys:
        vals = [results[m]["ratios"][k] for m in models if results[m]["ratios"].get(k)]
        medians[k] = statistics.median(vals) if vals else None

    print(f"\nwall seconds per process (first run: empty cache; re-run: best of {repeats}; "
          "*: ran to the end, verdict not converged or the fit unreliable)")
    print(f"{'model':14s} {'d':>4s} " + " ".join(f"{c:>17s}" for c in commands))
    for m in models:
        cells = []
        for c in commands:
            row = results[m]["commands"][c]
            f, r = row["first"], row["rerun"]
            cells.append(f"{_fmt(f and f['wall_s']) + _flag(f):>7s} / "
                         f"{_fmt(r and r['wall_s']) + _flag(r):>7s}")
        print(f"{m:14s} {results[m]['d']:4d} " + " ".join(f"{x:>17s}" for x in cells))

    print("\nratios inertia / NumPyro (wall seconds; < 1: inertia faster), first run / re-run")
    pairs = [c for c in INERTIA if any(k.startswith(c + "/") for k in keys)]
    print(f"{'model':14s} " + " ".join(f"{c + '/' + COMMANDS[c][1][8:]:>17s}" for c in pairs))
    for m in models:
        rr = results[m]["ratios"]
        print(f"{m:14s} " + " ".join(
            f"{_fmt(rr.get(f'{c}/{COMMANDS[c][1]} first'), '.2f'):>7s} / "
            f"{_fmt(rr.get(f'{c}/{COMMANDS[c][1]} rerun'), '.2f'):>7s}" for c in pairs))
    print(f"{'median':14s} " + " ".join(
        f"{_fmt(medians.get(f'{c}/{COMMANDS[c][1]} first'), '.2f'):>7s} / "
        f"{_fmt(medians.get(f'{c}/{COMMANDS[c][1]} rerun'), '.2f'):>7s}" for c in pairs))

    print("\nwhere the seconds go (start = interpreter start and exit; run = the rest), "
          "compilations (persistent-cache hits)")
    print(f"{'model':14s} {'command':14s} {'':6s} {'wall':>6s} {'start':>6s} {'import':>6s} "
          f"{'trace':>6s} {'lower':>6s} {'XLA':>6s} {'run':>6s} {'compilations':>13s}")
    for m in models:
        for c in commands:
            for when in ("first", "rerun"):
                r = results[m]["commands"][c][when]
                if r is None:
                    continue
                print(f"{m:14s} {c:14s} {when:6s} {r['wall_s']:6.1f} {r['startup_s']:6.1f} "
                      f"{r.get('import_s', 0):6.1f} {r.get('trace_s', 0):6.1f} "
                      f"{r.get('lower_s', 0):6.1f} {r.get('compile_s', 0):6.1f} "
                      f"{r['run_s']:6.1f} {r.get('compiles', 0):6d} ({r.get('cache_hits', 0)})"
                      f"{_flag(r)}")
    load1 = os.getloadavg()[0]
    print(f"\nload average {load0:.1f} at the start, {load1:.1f} at the end; "
          f"{'pinned: ' + ' '.join(pin) if pin else 'not pinned'}")
    out = {"models": results, "median_ratios": medians, "repeats": repeats,
           "pinned": " ".join(pin) or None, "loadavg": [load0, load1],
           "commands": {c: COMMANDS[c][0] for c in commands}}
    if json_path:
        os.makedirs(os.path.dirname(os.path.abspath(json_path)), exist_ok=True)
        with open(json_path, "w") as fh:
            json.dump(out, fh, indent=1)
        print(f"wrote {json_path}")
    return out


if __name__ == "__main__":
    main()
