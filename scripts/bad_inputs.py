"""Run every bad-input case (CLI and API) and write the table of docs/reliability.md.

    python scripts/bad_inputs.py [--jobs 2] [--only SUBSTRING] [--out docs/reliability.md]

Each case runs in its own process (no variable set but PATH, HOME, PYTHONPATH and
OPENBLAS_NUM_THREADS=1; HOME is an empty temporary folder, so no data cache), with a timeout. Kinds:
`cli` (inertia ARGS), `py` (Python code judged like a command: exit status and stderr), `api`
(Python code; an error case must raise the named exception), `interrupt` (SIGINT after 25 s, must
exit 130 with one line). Verdicts (see `judge`): an `error` case is a *clear error* when it exits
non-zero with an error line containing the case's `words`, *unclear* when the line lacks them,
a *silent wrong answer* on exit 0; `write-error` cases are a *lost result* on exit 0; `ok` cases
are *correct* on exit 0 with the `words` in the output. Cases run `--jobs` at a time (default 2,
light on a shared machine); docs/reliability.md lists every case and the unclear ones with why.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 480.0  # seconds per case (--timeout)
MEMORY_LIMIT = 6 << 30  # bytes of data segment per case (RLIMIT_DATA): a runaway run fails, the
#                         shared machine survives

# ------------------------------------------------------------------------------------ fixtures

def make_fixtures(tmp: Path) -> dict:
    """CSV files, model files and paths the cases refer to as {name}."""
    import numpy as np

    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 2))

    def csv(name, header, rows):
        p = tmp / name
        p.write_text(header + "\n" + "".join(",".join(map(str, r)) + "\n" for r in rows))
        return str(p)

    lin = X @ [1.0, -0.5] + rng.normal(size=80)
    f = {
        "tmp": str(tmp),
        "good": csv("good.csv", "x1,x2,y", [[*x, v] for x, v in zip(X, lin)]),
        "sep": csv("sep.csv", "x1,x2,y", [[*x, int(x[1] > 0)] for x in X]),
        "quasi": csv("quasi.csv", "x1,x2,y", [[*x, int(x[0] >= 0)] for x in X]
                     + [[0.0, 1.0, 0], [0.0, -1.0, 1]]),
        "labels": csv("labels.csv", "x1,x2,y", [[*x, 2] for x in X]),
        "counts0": csv("zeros.csv", "x1,x2,y", [[*x, 0] for x in X]),
        "negcount": csv("neg.csv", "x1,x2,y", [[*x, -1] for x in X]),
        "onerow": csv("one.csv", "x1,x2,y", [[1.0, 2.0, 3.0]]),
        "tworow": csv("two.csv", "x1,x2,y", [[1.0, 2.0, 3.0], [2.0, 1.0, 0.5]]),
        "collinear": csv("col.csv", "x1,x2,y", [[x[0], 2 * x[0], v] for x, v in zip(X, lin)]),
        "constant": csv("const.csv", "x1,x2,y", [[x[0], 1.0, v] for x, v in zip(X, lin)]),
        "nan": csv("nan.csv", "x1,x2,y", [[*x, v] for x, v in zip(X, lin)] + [[1, "nan", 2]]),
        "text": csv("text.csv", "x1,x2,y", [[*x, v] for x, v in zip(X, lin)] + [[1, "abc", 2]]),
        "ragged": csv("ragged.csv", "x1,x2,y", [[*x, v] for x, v in zip(X, lin)] + [[1, 2]]),
        "headeronly": csv("header.csv", "x1,x2,y", []),
        "huge": csv("huge.csv", "x1,x2,y", [[*x, v * 1e300] for x, v in zip(X, lin)]),
    }
    (tmp / "empty.csv").write_text("")
    f["empty"] = str(tmp / "empty.csv")
    (tmp / "blocker").write_text("a file, not a folder\n")
    f["blocker"] = str(tmp / "blocker")
    (tmp / "adir").mkdir()
    f["adir"] = str(tmp / "adir")
    f["missing"] = str(tmp / "no-such.csv")
    f.update(_binary_csvs(tmp, rng))
    f.update(_model_files(tmp))
    f.update(_round4_fixtures(tmp, rng))
    f.update(_data_file_fixtures(tmp, rng))
    return f


def _round4_fixtures(tmp: Path, rng) -> dict:
    """Files of the fourth round: saved results and look-alikes for inertia.load, links and
    special files for --save, wide and long CSVs, and model files with a wrong gradient, a
    data-dependent shape, a -inf wall, sys.exit and duplicate display names."""
    import gzip
    import json

    import numpy as np

    out = {}
    X = rng.normal(size=(120, 2))
    (tmp / "xonly.csv").write_text("x1,x2\n" + "".join(f"{a},{b}\n" for a, b in X))
    out["xonly"] = str(tmp / "xonly.csv")
    g = rng.integers(0, 3, size=40)
    (tmp / "groups.csv").write_text("g,y\n" + "".join(f"{a},{b}\n" for a, b in
                                                       zip(g, rng.normal(size=40))))
    out["groups"] = str(tmp / "groups.csv")
    n = 1_000_001  # a header of a million and one columns
    (tmp / "wide.csv").write_text(",".join(f"x{i}" for i in range(n - 1)) + ",y\n"
                                  + ",".join("0.5" for _ in range(n)) + "\n"
                                  + ",".join("1" for _ in range(n)) + "\n")
    out["wide"] = str(tmp / "wide.csv")
    W = rng.normal(size=(5, 20000))
    (tmp / "w20k.csv").write_text(",".join(f"x{i}" for i in range(20000)) + ",y\n" + "".join(
        ",".join(f"{v:.4f}" for v in r) + f",{t}\n" for r, t in zip(W, [0, 1, 0, 1, 1])))
    out["w20k"] = str(tmp / "w20k.csv")
    B = rng.normal(size=(200000, 3))
    lines = ["x1,x2,x3,y"] + [f"{a:.5f},{b:.5f},{c:.5f},{int(a > 0)}" for a, b, c in B]
    lines[199001] = ",".join(lines[199001].split(",")[:3])  # line 199,002: a short row
    (tmp / "long.csv").write_text("\n".join(lines) + "\n")
    out["long"] = str(tmp / "long.csv")
    L = rng.normal(size=(200000, 2))
    np.save(tmp / "rows.npy", np.column_stack([L, L @ [1.0, -0.5] + rng.normal(size=200000)]))
    out["rows"] = str(tmp / "rows.npy")
    # inertia.load look-alikes (the saved file itself is made by the case that needs it)
    (tmp / "empty.nc").write_bytes(b"")
    (tmp / "result.json").write_text(json.dumps({"mean": [0.1]}))
    (tmp / "text.nc").write_text("chain,draw,x\n0,0,1.0\n")
    (tmp / "gz.nc.gz").write_bytes(gzip.compress(b"\x89HDF\r\n\x1a\n" + bytes(200)))
    (tmp / "trunc.nc").write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(100))
    out.update(emptync=str(tmp / "empty.nc"), jsonfile=str(tmp / "result.json"),
               textnc=str(tmp / "text.nc"), gznc=str(tmp / "gz.nc.gz"),
               truncnc=str(tmp / "trunc.nc"))
    models = {
        "m_oob": "import jax.numpy as jnp\nG = jnp.array([1, 2, 3, 1, 2, 3])\n"
                 "Y = jnp.array([0.5, 1.0, -0.3, 0.2, 0.9, -0.1])\ndef logp(p, data):\n"
                 "    return -0.5 * jnp.sum(p ** 2) - 0.5 * jnp.sum((Y - p[G]) ** 2)\n"
                 "logp_init = jnp.zeros(3)\n",
        "m_stopgrad": "import jax, jax.numpy as jnp\ndef logp(p, data):\n"
                      "    return -0.5 * jnp.sum(p ** 2) - 0.5 * jax.lax.stop_gradient(p[0]) ** 2\n"
                      "logp_init = jnp.zeros(3)\n",
        "m_ddshape": "import jax.numpy as jnp\nimport numpyro, numpyro.distributions as dist\n"
                     "def model(g, y):\n    G = int(jnp.max(g)) + 1\n"
                     "    mu = numpyro.sample('mu', dist.Normal(0, 1).expand([G]))\n"
                     "    numpyro.sample('y', dist.Normal(mu[g.astype(int)], 1.0), obs=y)\n",
        "m_halfwall": "import jax.numpy as jnp\ndef logp(p, data):\n"
                      "    return jnp.where(p[0] < 0, -jnp.inf, -0.5 * p[0] ** 2)\n"
                      "logp_init = jnp.ones(1)\n",
        "m_exit": "import sys\nimport jax.numpy as jnp\ndef logp(p, data):\n    sys.exit(3)\n"
                  "logp_init = jnp.zeros(2)\n",
        "m_exit_import": "import sys\nsys.exit(3)\n",
        "m_dupnames": "import numpyro, numpyro.distributions as dist\ndef model():\n"
                      "    numpyro.sample('b[0]', dist.Normal(0, 1))\n"
                      "    numpyro.sample('b', dist.Normal(0, 1).expand([2]))\n",
        "m_noy": "import numpyro, numpyro.distributions as dist\ndef model(x1, x2, y=None):\n"
                 "    b = numpyro.sample('b', dist.Normal(0, 1).expand([2]))\n"
                 "    numpyro.sample('y', dist.Normal(b[0] * x1 + b[1] * x2, 1.0), obs=y)\n",
    }
    for name, text in models.items():
        (tmp / f"{name}.py").write_text(text)
        out[name] = str(tmp / f"{name}.py")
    return out


def _data_file_fixtures(tmp: Path, rng) -> dict:
    """Files of the fifth round: Stan-style JSON data with a key twice, a "NaN", a bare NaN token,
    1e400, a negative count, a shape of 1e20, an index of 2**63 and a key in NFD; NumPyro, PyMC
    and log-density files for them; a flat-prior logistic model on separable data, a symmetric
    bimodal density, a density NaN for x < 0 and a centred hierarchy under a flat prior."""
    import json
    import unicodedata

    y = [-1.2, 0.3, 2.1, -0.5, 1.7, 0.2, -2.0, 0.9, 1.1, -0.4]
    counts = [3, 1, 0, 2, 5, 1, 0, 2, 1, 4]

    def cells(v, entry):
        out = [json.dumps(x) for x in v]
        out[7] = entry
        return "[" + ", ".join(out) + "]"

    texts = {
        "j_dup": '{"N": 10, "y": %s, "y": %s}' % (json.dumps(y), json.dumps([v + 30 for v in y])),
        "j_nanstr": '{"N": 10, "y": %s}' % cells(y, '"NaN"'),
        "j_nantok": '{"N": 10, "y": %s}' % cells(y, "NaN"),
        "j_big": '{"N": 10, "y": %s}' % cells(y, "1e400"),
        "j_negcount": '{"N": 10, "y": %s}' % cells(counts, "-1"),
        "j_counts": json.dumps({"N": 10, "y": counts}),
        "j_shape": '{"K": 1e20, "y": 0.5}',
        "j_index": '{"g": [0, 1, 2, %d], "y": [0.1, 0.2, 0.3, 0.4]}' % 2 ** 63,
        "j_y": json.dumps({"y": y}),
        "j_ycounts": json.dumps({"y": counts[:7] + [-1] + counts[8:]}),
        "j_nfd": json.dumps({unicodedata.normalize("NFD", "\u00e9"): y}, ensure_ascii=False),
        "j_eight": json.dumps({"y": [28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0]}),
    }
    out = {}
    for name, text in texts.items():
        (tmp / f"{name}.json").write_text(text, encoding="utf-8")
        out[name] = str(tmp / f"{name}.json")
    X = rng.normal(size=40)
    (tmp / "sep1.csv").write_text("x,y\n" + "".join(f"{a:.6f},{int(a > 0)}\n" for a in X))
    out["sep1"] = str(tmp / "sep1.csv")
    nfc = unicodedata.normalize("NFC", "\u00e9")
    models = {
        "n_normal": "import numpyro, numpyro.distributions as dist\ndef model(N, y):\n"
                    "    mu = numpyro.sample('mu', dist.Normal(0, 10))\n"
                    "    numpyro.sample('y', dist.Normal(mu, 1.0), obs=y)\n",
        "n_poisson": "import jax.numpy as jnp, numpyro, numpyro.distributions as dist\n"
                     "def model(N, y):\n    mu = numpyro.sample('mu', dist.Normal(0, 10))\n"
                     "    numpyro.sample('y', dist.Poisson(jnp.exp(mu)), obs=y)\n",
        "n_shape": "import numpyro, numpyro.distributions as dist\ndef model(K, y):\n"
                   "    mu = numpyro.sample('mu', dist.Normal(0, 1).expand([K]))\n"
                   "    numpyro.sample('y', dist.Normal(mu[0], 1.0), obs=y)\n",
        "n_index": "import numpyro, numpyro.distributions as dist\ndef model(g, y):\n"
                   "    mu = numpyro.sample('mu', dist.Normal(0, 1).expand([3]))\n"
                   "    numpyro.sample('y', dist.Normal(mu[g], 1.0), obs=y)\n",
        "n_nfc": f"import numpyro, numpyro.distributions as dist\ndef model({nfc}):\n"
                 "    mu = numpyro.sample('mu', dist.Normal(0, 10))\n"
                 f"    numpyro.sample('y', dist.Normal(mu, 1.0), obs={nfc})\n",
        "p_from": "from pymc import Model, Normal\ndef model(y):\n    with Model() as m:\n"
                  "        mu = Normal('mu', 0, 1)\n        Normal('y', mu, 1, observed=y)\n"
                  "    return m\n",
        "p_both": "import pymc as pm\nimport numpyro\ndef model(y):\n    with pm.Model() as m:\n"
                  "        mu = pm.Normal('mu', 0, 1)\n        pm.Normal('y', mu, 1, observed=y)\n"
                  "    return m\n",
        "p_poisson": "import pymc as pm\ndef model(y):\n    with pm.Model() as m:\n"
                     "        mu = pm.Normal('mu', 0, 1)\n"
                     "        pm.Poisson('y', pm.math.exp(mu), observed=y)\n    return m\n",
        "n_flatlogit": "import numpyro, numpyro.distributions as dist\ndef model(x, y):\n"
                       "    w = numpyro.sample('w', dist.ImproperUniform(dist.constraints.real, "
                       "(), ()))\n    numpyro.sample('y', dist.Bernoulli(logits=w * x), obs=y)\n",
        "l_bimodal": "import jax.numpy as jnp\ndef logp(p, data):\n"
                     "    return jnp.logaddexp(-0.5 * ((p[0] - 3.0) / 0.5) ** 2, "
                     "-0.5 * ((p[0] + 3.0) / 0.5) ** 2)\nlogp_init = jnp.zeros(1)\n",
        "l_nanneg": "import jax.numpy as jnp\ndef logp(p, data):\n"
                    "    return jnp.sum(jnp.where(p < 0, jnp.nan, -p))\nlogp_init = jnp.ones(1)\n",
        "n_eight_flat": "import numpyro, numpyro.distributions as dist\ndef model(y):\n"
                        "    mu = numpyro.sample('mu', dist.ImproperUniform("
                        "dist.constraints.real, (), ()))\n"
                        "    tau = numpyro.sample('tau', dist.HalfCauchy(5.0))\n"
                        "    theta = numpyro.sample('theta', dist.Normal(mu, tau).expand([8]))\n"
                        "    numpyro.sample('y', dist.Normal(theta, 10.0), obs=y)\n",
    }
    for name, text in models.items():
        (tmp / f"{name}.py").write_text(text, encoding="utf-8")
        out[name] = str(tmp / f"{name}.py")
    return out


def _binary_csvs(tmp: Path, rng) -> dict:
    """Variants of one binary-response CSV (x1 the strong predictor), as a spreadsheet writes them."""
    X = rng.normal(size=(80, 2))
    y = (2.0 * X[:, 0] + 0.3 * X[:, 1] + rng.normal(size=80) > 0).astype(int)
    rows = [[f"{a:.6g}", f"{b:.6g}", str(c)] for (a, b), c in zip(X, y)]

    def put(name, header, body, sep=",", encoding="utf-8", newline="\n", prefix=""):
        text = prefix + newline.join([sep.join(header)] + [sep.join(r) for r in body]) + newline
        (tmp / name).write_bytes(text.encode(encoding))
        return str(tmp / name)

    def cell(i, j, value):
        body = [list(r) for r in rows]
        body[i][j] = value
        return body

    H = ["x1", "x2", "y"]
    out = {
        "b_good": put("b_good.csv", H, rows),
        "b_nan": put("b_nan.csv", H, cell(10, 0, "nan")),
        "b_empty": put("b_empty.csv", H, cell(10, 0, "")),
        "b_na": put("b_na.csv", H, cell(10, 0, "NA")),
        "b_excelna": put("b_excelna.csv", H, cell(10, 0, "#N/A")),
        "b_inf": put("b_inf.csv", H, cell(10, 0, "inf")),
        "b_ninf": put("b_ninf.csv", H, cell(10, 1, "-inf")),
        "b_text": put("b_text.csv", H, cell(10, 1, "abc")),
        "b_bool": put("b_bool.csv", H, cell(3, 1, "TRUE")),
        "b_bom": put("b_bom.csv", ["y", "x1", "x2"], [[r[2], r[0], r[1]] for r in rows],
                     prefix="\ufeff"),
        "b_semi": put("b_semi.csv", H, rows, sep=";"),
        "b_semicomma": put("b_semicomma.csv", H, [[a.replace(".", ","), b.replace(".", ","), c]
                                                  for a, b, c in rows], sep=";"),
        "b_tab": put("b_tab.tsv", H, rows, sep="\t"),
        "b_txt": put("b_tab.txt", H, rows, sep="\t"),
        "b_quoted": put("b_quoted.csv", [f'"{h}"' for h in H], [[f'"{v}"' for v in r]
                                                               for r in rows]),
        "b_crlf": put("b_crlf.csv", H, rows, newline="\r\n"),
        "b_blank": put("b_blank.csv", H, rows[:40] + [["", "", ""]] + rows[40:]),
        "b_utf16": put("b_utf16.csv", H, rows, encoding="utf-16"),
        "b_latin1": put("b_latin1.csv", ["größe", "x2", "y"], rows, encoding="latin-1"),
        "b_dup": put("b_dup.csv", ["x1", "x1", "y"], rows),
        "b_noname": put("b_noname.csv", ["x1", "", "y"], rows),
        "b_trailing": put("b_trailing.csv", H + [""], [r + [""] for r in rows]),
        "b_noheader": put("b_noheader.csv", rows[0], rows[1:]),
        "b_ragged": put("b_ragged.csv", H, rows[:30] + [rows[30][:2]] + rows[31:]),
        "b_headeronly": put("b_headeronly.csv", H, []),
        "b_huge": put("b_huge.csv", H, [[f"{float(a) * 1e300:.6g}", b, c] for a, b, c in rows]),
        "b_tiny": put("b_tiny.csv", H, [[f"{float(a) * 1e-200:.6g}", b, c] for a, b, c in rows]),
        "b_const": put("b_const.csv", H, [[a, "1", c] for a, b, c in rows]),
        "b_oneclass": put("b_oneclass.csv", H, [[a, b, "1"] for a, b, c in rows]),
        "b_three": put("b_three.csv", H, [[a, b, str(i % 3)] for i, (a, b, c) in
                                          enumerate(rows)]),
        "b_ytext": put("b_ytext.csv", H, [[a, b, "yes" if c == "1" else "no"]
                                          for a, b, c in rows]),
        "b_allmissing": put("b_allmissing.csv", H, [[a, "", c] for a, b, c in rows]),
        "b_commaname": put("b_commaname.csv", ['"x,1"', "x2", "y"], rows),
        "b_spaces": put("b_spaces.csv", [" x1 ", " x2", "y "], [[f" {v} " for v in r]
                                                              for r in rows]),
    }
    return out


def _model_files(tmp: Path) -> dict:
    """Model files (FILE.py:NAME) of each convention, and ones that follow none."""
    files = {
        "m_initfn": "import jax.numpy as jnp\ndef logp(p, data):\n    return -0.5 * jnp.sum(p ** 2)\n"
                    "def logp_init():\n    return jnp.zeros(2)\n",
        "m_initval": "import jax.numpy as jnp\ndef logp(p, data):\n    return -0.5 * jnp.sum(p ** 2)\n"
                     "logp_init = [0.0, 0.0]\n",
        "m_initdict": "import jax.numpy as jnp\ndef logp(p, data):\n"
                      "    return -0.5 * (p['a'] ** 2 + jnp.sum(p['b'] ** 2))\n"
                      "logp_init = {'a': 0.0, 'b': [0.0, 0.0]}\n",
        "m_initargs": "import jax.numpy as jnp\ndef logp(p, data):\n    return -0.5 * jnp.sum(p ** 2)\n"
                      "def logp_init(d):\n    return jnp.zeros(d)\n",
        "m_initstr": "def logp(p, data):\n    return -0.5 * (p ** 2).sum()\nlogp_init = 'zeros'\n",
        "m_noinit": "import jax.numpy as jnp\ndef logp(params, data):\n"
                    "    return -0.5 * jnp.sum(params ** 2)\n",
        "m_vector": "import jax.numpy as jnp\ndef logp(p, data):\n    return -0.5 * p ** 2\n"
                    "logp_init = jnp.zeros(3)\n",
        "m_raises": "def logp(p, data):\n    return p.nonexistent\nlogp_init = [0.0, 0.0]\n",
        "m_notmodel": "def f():\n    return 3.0\n",
        "m_syntax": "def logp(p, data)\n    return 0\n",
        "m_discrete": "import numpyro, numpyro.distributions as dist\ndef model():\n"
                      "    z = numpyro.sample('z', dist.Bernoulli(0.3))\n"
                      "    numpyro.sample('x', dist.Normal(z, 1.0))\n",
        "m_laplace": "import jax.numpy as jnp\ndef logp(p, data):\n    return -jnp.sum(jnp.abs(p))\n"
                     "logp_init = jnp.zeros(2)\n",
        "m_improper": "import jax.numpy as jnp\ndef logp(p, data):\n    return -0.5 * p[0] ** 2\n"
                      "logp_init = jnp.zeros(2)\n",
        "m_flat": "import jax.numpy as jnp\ndef logp(p, data):\n    return 0.0 * jnp.sum(p)\n"
                  "logp_init = jnp.zeros(2)\n",
        "m_improper_np": "import numpyro, numpyro.distributions as dist\ndef model():\n"
                         "    mu = numpyro.sample('mu', dist.ImproperUniform(dist.constraints.real,"
                         " (), ()))\n    numpyro.sample('x', dist.Normal(0.0, 1.0))\n",
        "m_numpyro": "import numpyro, numpyro.distributions as dist\ndef model(x1, x2, y):\n"
                     "    b = numpyro.sample('b', dist.Normal(0, 1).expand([2]))\n"
                     "    numpyro.sample('y', dist.Bernoulli(logits=b[0] * x1 + b[1] * x2), obs=y)\n",
        "m_numpyro_args": "import numpyro, numpyro.distributions as dist\ndef model(a, b):\n"
                          "    s = numpyro.sample('s', dist.Normal(0, 1))\n"
                          "    numpyro.sample('a', dist.Normal(s, 1), obs=a)\n",
    }
    out = {}
    for name, text in files.items():
        (tmp / f"{name}.py").write_text(text)
        out[name] = str(tmp / f"{name}.py")
    return out


# ---------------------------------------------------------------------------------------- cases
# (id, kind, argv or code, expect, note). kind: "cli" (inertia ARGS), "api" (python code),
# "interrupt" (inertia ARGS, SIGINT after `delay` seconds). Placeholders {name} are fixtures.

FIT = "fit --model gaussian-kappa --method stl-proj --quiet"
CAL = "calibrate --response y --batch-size 8 --steps 200"
SAMPLE = "sample --dim 3 --kappa 10 --steps 20 --quiet"

CASES = [
    # top level
    ("no command", "cli", "", "error", ""),
    ("unknown command", "cli", "frobnicate", "error", ""),
    ("version", "cli", "--version", "ok", ""),
    ("unknown top-level option", "cli", "--bogus fit", "error", ""),
    # fit: arguments
    ("fit without --model", "cli", "fit --method stl-proj", "error", ""),
    ("fit without --method (automatic)", "cli",
     "fit --model gaussian-kappa --dim 3 --kappa 10 --steps 300 --quiet", "ok", ""),
    ("fit --tol 0", "cli", f"{FIT} --tol 0", "error", ""),
    ("fit --model file that does not exist", "cli",
     "fit --model nofile.py:model --method stl-proj --quiet", "error", ""),
    ("fit unknown model", "cli", "fit --model gauss --method stl-proj", "error", ""),
    ("fit unknown method", "cli", "fit --model gaussian-kappa --method sgd", "error", ""),
    ("fit unknown data set", "cli", "fit --model logistic --data iris --method stl-proj",
     "error", ""),
    ("fit --batch-size 0", "cli", f"{FIT} --batch-size 0", "error", ""),
    ("fit --batch-size -1", "cli", f"{FIT} --batch-size -1", "error", ""),
    ("fit --batch-size 1.5", "cli", f"{FIT} --batch-size 1.5", "error", ""),
    ("fit --batch-size abc", "cli", f"{FIT} --batch-size abc", "error", ""),
    ("fit --steps 0", "cli", f"{FIT} --steps 0", "error", ""),
    ("fit --steps -5", "cli", f"{FIT} --steps -5", "error", ""),
    ("fit --seed abc", "cli", f"{FIT} --seed abc", "error", ""),
    ("fit --checkpoint-every 0", "cli", f"{FIT} --checkpoint-every 0", "error", ""),
    ("fit --checkpoint-every -3", "cli", f"{FIT} --checkpoint-every -3", "error", ""),
    ("fit --dim 0", "cli", f"{FIT} --dim 0", "error", ""),
    ("fit --dim 1", "cli", f"{FIT} --dim 1 --steps 5", "error", ""),
    ("fit --kappa 0", "cli", f"{FIT} --kappa 0", "error", ""),
    ("fit --kappa -5", "cli", f"{FIT} --kappa -5", "error", ""),
    ("fit --kappa nan", "cli", f"{FIT} --kappa nan", "error", ""),
    ("fit --kappa inf", "cli", f"{FIT} --kappa inf", "error", ""),
    ("fit --kappa 0.5 (< 1)", "cli", f"{FIT} --kappa 0.5 --steps 5", "error", ""),
    ("fit --prior-scale 0", "cli", f"{FIT} --prior-scale 0", "error", ""),
    ("fit --step-size 0", "cli", f"{FIT} --step-size 0", "error", ""),
    ("fit --step-size -1", "cli", f"{FIT} --step-size -1", "error", ""),
    ("fit --step-size nan", "cli", f"{FIT} --step-size nan", "error", ""),
    ("fit --json into a file's 'folder'", "cli", f"{FIT} --steps 5 --json {{blocker}}/r.json",
     "error", "checked before the run"),
    ("fit --json is a folder", "cli", f"{FIT} --steps 5 --json {{adir}}", "error",
     "checked before the run"),
    ("fit --plot into a file's 'folder'", "cli", f"{FIT} --steps 5 --plot {{blocker}}/r.png",
     "error", "checked before the run"),
    ("fit --plot unwritable (/proc)", "cli", f"{FIT} --steps 5 --plot /proc/r.png", "error",
     "checked before the run"),
    ("fit logistic on Pima without cache", "cli",
     "fit --model logistic --data pima --method stl-proj --steps 5 --quiet", "error",
     "names INERTIA_DATA_DIR"),
    ("fit graph-probit on shipped Sonar", "cli",
     "fit --model graph-probit --data sonar --method stl-proj --steps 3 --batch-size 2 --quiet "
     "--allow-unconverged",
     "ok", "data ship with the package"),
    ("fit --step-size 1e6 diverges", "cli", f"{FIT} --dim 3 --kappa 10 --steps 20 --step-size 1e6",
     "warn", "divergence reported, exit 3 (not converged)"),
    ("fit exact-apg without --batch-size", "cli",
     "fit --model gaussian-kappa --method exact-apg --steps 20 --quiet --allow-unconverged", "ok",
     "20 updates do not converge: exit 3 without the flag"),
    ("fit default batch, steps, seed", "cli",
     "fit --model gaussian-kappa --dim 3 --kappa 10 --method stl-proj --quiet", "ok", ""),
    ("fit --dim 20000 stl-proj (memory)", "cli",
     "fit --model gaussian-kappa --dim 20000 --method stl-proj --batch-size 8 --steps 10",
     "error", "memory checked before the run"),
    ("fit interrupted (SIGINT)", "interrupt",
     "fit --model gaussian-kappa --dim 40 --method price-stl-proj --steps 200000", "interrupt",
     ""),
    # sample
    ("sample unknown method", "cli", "sample --method nuts", "error", ""),
    ("sample unknown model", "cli", "sample --model nope", "error", ""),
    ("sample --chains 0", "cli", f"{SAMPLE} --chains 0", "error", ""),
    ("sample --chains -2", "cli", f"{SAMPLE} --chains -2", "error", ""),
    ("sample --steps 0", "cli", f"{SAMPLE} --steps 0", "error", ""),
    ("sample --thinning 0", "cli", f"{SAMPLE} --thinning 0", "error", ""),
    ("sample --burn-in 1.5", "cli", f"{SAMPLE} --burn-in 1.5", "error", ""),
    ("sample --burn-in -0.1", "cli", f"{SAMPLE} --burn-in -0.1", "error", ""),
    ("sample --step-size 0", "cli", f"{SAMPLE} --step-size 0", "error", ""),
    ("sample --gamma 0", "cli", f"{SAMPLE} --gamma 0", "error", ""),
    ("sample --alpha -1", "cli", f"{SAMPLE} --alpha -1", "error", ""),
    ("sample --alpha 100 (unstable)", "cli", f"{SAMPLE} --step-size 0.1 --alpha 100", "error", ""),
    ("sample --dim 0", "cli", f"{SAMPLE} --dim 0", "error", ""),
    ("sample --kappa 0", "cli", f"{SAMPLE} --kappa 0", "error", ""),
    ("sample logistic without --data", "cli", "sample --model logistic --steps 10 --quiet",
     "error", ""),
    ("sample logistic on Boston", "cli", "sample --model logistic --data boston", "error",
     "not a classification set"),
    ("sample logistic on Pima without cache", "cli",
     "sample --model logistic --data pima --steps 10 --quiet", "error", ""),
    ("sample --json into a file's 'folder'", "cli", f"{SAMPLE} --json {{blocker}}/s.json",
     "error", "checked before the run"),
    ("sample --step-size 50 diverges", "cli", f"{SAMPLE} --step-size 50", "error", ""),
    # calibrate
    ("calibrate without --csv", "cli", f"{CAL} --model linear", "error", ""),
    ("calibrate missing file", "cli", f"{CAL} --model linear --csv {{missing}}", "error", ""),
    ("calibrate --csv is a folder", "cli", f"{CAL} --model linear --csv {{adir}}", "error", ""),
    ("calibrate empty CSV", "cli", f"{CAL} --model linear --csv {{empty}}", "error", ""),
    ("calibrate header only", "cli", f"{CAL} --model linear --csv {{headeronly}}", "error", ""),
    ("calibrate 1-row CSV", "cli", f"calibrate --response y --batch-size 1 --steps 200 "
     f"--model linear --csv {{onerow}}", "error", ""),
    ("calibrate 2-row CSV, 3 parameters", "cli", f"calibrate --response y --batch-size 1 "
     f"--steps 200 --model linear --csv {{tworow}}", "error", ""),
    ("calibrate non-numeric cell", "cli", f"{CAL} --model linear --csv {{text}}", "error", ""),
    ("calibrate NaN cell", "cli", f"{CAL} --model linear --csv {{nan}}", "error", ""),
    ("calibrate ragged row", "cli", f"{CAL} --model linear --csv {{ragged}}", "error", ""),
    ("calibrate unknown response", "cli", f"calibrate --response z --batch-size 8 --steps 200 "
     f"--model linear --csv {{good}}", "error", ""),
    ("calibrate separable logistic", "cli", f"{CAL} --model logistic --csv {{sep}}", "error",
     ""),
    ("calibrate quasi-separable logistic", "cli", f"{CAL} --model logistic --csv {{quasi}}",
     "error", ""),
    ("calibrate logistic labels not 0/1", "cli", f"{CAL} --model logistic --csv {{labels}}",
     "error", ""),
    ("calibrate Poisson all counts 0", "cli", f"{CAL} --model poisson --csv {{counts0}}",
     "error", "MLE does not exist"),
    ("calibrate Poisson negative counts", "cli", f"{CAL} --model poisson --csv {{negcount}}",
     "error", ""),
    ("calibrate collinear predictors", "cli", f"{CAL} --model linear --csv {{collinear}}",
     "error", ""),
    ("calibrate constant predictor", "cli", f"{CAL} --model linear --csv {{constant}}", "error",
     "collinear with the intercept"),
    ("calibrate --chains 0", "cli", f"{CAL} --model linear --csv {{good}} --chains 0", "error",
     ""),
    ("calibrate --chains -2", "cli", f"{CAL} --model linear --csv {{good}} --chains -2", "error",
     ""),
    ("calibrate --momentum 1.0", "cli", f"{CAL} --model linear --csv {{good}} --momentum 1.0",
     "error", ""),
    ("calibrate --momentum -0.1", "cli", f"{CAL} --model linear --csv {{good}} --momentum -0.1",
     "error", ""),
    ("calibrate --temperature 0", "cli", f"{CAL} --model linear --csv {{good}} --temperature 0",
     "error", ""),
    ("calibrate --temperature -1", "cli", f"{CAL} --model linear --csv {{good}} --temperature -1",
     "error", ""),
    ("calibrate --temperature abc", "cli",
     f"{CAL} --model linear --csv {{good}} --temperature abc", "error", ""),
    ("calibrate --beta-div 1", "cli",
     f"{CAL} --model linear --loss beta --beta-div 1 --csv {{good}}", "error", ""),
    ("calibrate --loss beta with poisson", "cli",
     f"{CAL} --model poisson --loss beta --csv {{counts0}}", "error", ""),
    ("calibrate --batch-size 0", "cli", f"calibrate --response y --batch-size 0 --steps 200 "
     f"--model linear --csv {{good}}", "error", ""),
    ("calibrate --batch-size > rows", "cli", f"calibrate --response y --batch-size 500 "
     f"--steps 200 --model linear --csv {{good}}", "error", ""),
    ("calibrate --steps 1", "cli", f"calibrate --response y --batch-size 8 --steps 1 "
     f"--model linear --csv {{good}}", "error", ""),
    ("calibrate --subsample 0", "cli", f"{CAL} --model linear --csv {{good}} --subsample 0",
     "error", ""),
    ("calibrate --tuning ct with SGLD", "cli",
     f"{CAL} --model linear --csv {{good}} --tuning ct --temperature 80", "error", ""),
    ("calibrate --tuning bogus", "cli", f"{CAL} --model linear --csv {{good}} --tuning x",
     "error", ""),
    ("calibrate --json into a file's 'folder'", "cli",
     f"{CAL} --model linear --csv {{good}} --json {{blocker}}/c.json", "error",
     "checked before the run"),
    ("calibrate responses of 1e300", "cli", f"{CAL} --model linear --csv {{huge}}", "error", ""),
    ("calibrate good CSV", "cli", f"{CAL} --model linear --csv {{good}} --allow-unconverged", "ok",
     ""),
    # reproduce
    ("reproduce unknown experiment", "cli", "reproduce nope", "error", ""),
    ("reproduce --out is a file", "cli", "reproduce lower-bound --quick --out {blocker}",
     "error", ""),
    ("reproduce --out under a file", "cli", "reproduce lower-bound --quick --out {blocker}/x",
     "error", ""),
    ("reproduce --out unwritable (/proc)", "cli", "reproduce lower-bound --quick --out /proc/x",
     "error", ""),
    ("reproduce --backend bogus", "cli", "reproduce lower-bound --backend dask", "error", ""),
    ("reproduce --address without ray", "cli",
     "reproduce lower-bound --quick --address 1.2.3.4 --out {tmp}/addr", "error", ""),
    ("reproduce --list", "cli", "reproduce --list", "ok", ""),
    ("reproduce sgmcmc-boston without cache", "cli",
     "reproduce sgmcmc-boston --quick --out {tmp}/boston", "error", "names INERTIA_DATA_DIR"),
    ("reproduce interrupted (SIGINT)", "interrupt",
     "reproduce gaussian-methods --out {tmp}/gm", "interrupt", "says what was saved"),
    # API: data
    ("load_dataset unknown", "api", "from inertia.data import load_dataset as L; L('iris')",
     "DatasetError", ""),
    ("load_dataset Pima, download=False", "api",
     "from inertia.data import load_dataset as L; L('pima', download=False)", "DatasetError", ""),
    ("load_dataset Pima offline", "api", "import os; os.environ['INERTIA_OFFLINE'] = '1'\n"
     "from inertia.data import load_dataset as L; L('pima')", "DatasetError", ""),
    ("load_dataset drop unknown column", "api",
     "from inertia.data import load_dataset as L; L('german', drop=('NOPE',))", "DatasetError",
     ""),
    ("load_dataset include_b on Sonar", "api",
     "from inertia.data import load_dataset as L; L('sonar', include_b=True)", "DatasetError",
     ""),
    ("load_dataset corrupt cache file", "api",
     "import os, pathlib; p = pathlib.Path(os.environ['HOME'], 'c'); p.mkdir()\n"
     "(p / 'sonar.csv').write_text('1,2,M\\n')\n"
     "from inertia.data import load_dataset as L; L('sonar', cache_dir=p)", "DatasetError", ""),
    ("to_pm1 labels {0, 2}", "api", "from inertia.data import to_pm1; to_pm1([0, 2])",
     "DatasetError", ""),
    # API: targets
    ("kappa_family dim 1", "api", "from inertia.targets import kappa_family as K; K(1, 10.0)",
     "TargetError", ""),
    ("kappa_family kappa 0.5", "api", "from inertia.targets import kappa_family as K; K(4, 0.5)",
     "TargetError", ""),
    ("logistic_regression NaN predictor", "api",
     "import numpy as np; from inertia.targets import logistic_regression as LR\n"
     "X = np.ones((5, 2)); X[0, 0] = np.nan; LR(X, np.array([0, 1, 0, 1, 1]))", "TargetError", ""),
    ("logistic_regression labels {0, 2}", "api",
     "import numpy as np; from inertia.targets import logistic_regression as LR\n"
     "LR(np.eye(3), np.array([0, 2, 0]))", "TargetError", ""),
    ("logistic_regression row mismatch", "api",
     "import numpy as np; from inertia.targets import logistic_regression as LR\n"
     "LR(np.eye(3), np.array([0, 1]))", "TargetError", ""),
    ("from_logdensity non-scalar output, fitted", "api",
     "import jax.numpy as jnp; from inertia.targets import from_logdensity as F\n"
     "from inertia.vi import fit\n"
     "fit(F(lambda x: -x, jnp.zeros(3), alpha=1.0, beta=1.0), 'stl-proj', num_steps=5)",
     "TypeError", ""),
    # API: vi.fit
    ("vi.fit unknown method", "api", "from inertia.targets import kappa_family as K\n"
     "from inertia.vi import fit; fit(K(4, 10.0), 'sgd')", "KeyError", ""),
    ("fit num_steps -1", "api", "from inertia.targets import kappa_family as K\n"
     "from inertia.vi import fit; fit(K(4, 10.0), 'stl-proj', num_steps=-1)", "ValueError", ""),
    ("fit batch_size 0", "api", "from inertia.targets import kappa_family as K\n"
     "from inertia.vi import fit; fit(K(4, 10.0), 'stl-proj', batch_size=0, num_steps=5)",
     "ValueError", ""),
    ("fit seed []", "api", "from inertia.targets import kappa_family as K\n"
     "from inertia.vi import fit; fit(K(4, 10.0), 'stl-proj', seed=[], num_steps=5)",
     "ValueError", ""),
    ("fit checkpoint_every -3", "api", "from inertia.targets import kappa_family as K\n"
     "from inertia.vi import fit; fit(K(4, 10.0), 'stl-proj', checkpoint_every=-3, num_steps=5)",
     "ValueError", ""),
    ("fit checkpoint_every 0", "api", "from inertia.targets import kappa_family as K\n"
     "from inertia.vi import fit; fit(K(4, 10.0), 'stl-proj', checkpoint_every=0, num_steps=5)",
     "ValueError", ""),
    ("fit stl-proj, NaN potential region", "api",
     "import jax.numpy as jnp; from inertia.targets import from_logdensity as F\n"
     "from inertia.vi import fit\n"
     "t = F(lambda x: -jnp.where(x[0] > 0.5, jnp.nan, 0.5 * x @ x), jnp.zeros(2), alpha=1.0, "
     "beta=1.0)\nr = fit(t, 'stl-proj', batch_size=8, num_steps=300)\n"
     "assert r.diverged, (r.mean, r.cov)", "warn-or-error",
     "divergence reported"),
    ("fit stl-proj, +inf hard wall", "api",
     "import jax.numpy as jnp; from inertia.targets import from_logdensity as F\n"
     "from inertia.vi import fit\n"
     "t = F(lambda x: -jnp.where(x[0] > 0.5, jnp.inf, 0.5 * x @ x), jnp.zeros(2), alpha=1.0, "
     "beta=1.0)\nr = fit(t, 'stl-proj', batch_size=8, num_steps=300)\n"
     "assert r.diverged, (r.mean, r.cov)", "warn-or-error", "divergence reported"),
    ("fit price-stl-proj, non-smooth potential", "api",
     "import jax.numpy as jnp, warnings; from inertia.targets import from_logdensity as F\n"
     "from inertia.vi import fit; warnings.simplefilter('error')\n"
     "t = F(lambda x: jnp.abs(x).sum() * -1 - 0.5 * x @ x, jnp.zeros(2), alpha=1.0, beta=1.0)\n"
     "r = fit(t, 'price-stl-proj', batch_size=8, num_steps=300)\n"
     "import numpy as np; c = np.asarray(r.cov).reshape(-1, 2, 2)[0]\n"
     "assert abs(c[0, 0] - 0.459) < 0.1, c", "warn-or-error",
     "must warn: HVPs miss the kink"),
    # API: mcmc
    ("mcmc.sample unknown method", "api", "from inertia.targets import kappa_family as K\n"
     "from inertia.mcmc import sample; sample(K(3, 10.0), 'nuts')", "ValueError", ""),
    ("mcmc.sample num_chains 0", "api", "from inertia.targets import kappa_family as K\n"
     "from inertia.mcmc import sample; sample(K(3, 10.0), num_chains=0, num_steps=5)",
     "ValueError", ""),
    ("mcmc.sample step_size -1", "api", "from inertia.targets import kappa_family as K\n"
     "from inertia.mcmc import sample; sample(K(3, 10.0), step_size=-1.0, num_steps=5)",
     "ValueError", ""),
    ("mcmc.sample NaN gradient model", "api",
     "import jax.numpy as jnp; from inertia.targets import from_logdensity as F\n"
     "from inertia.mcmc import sample\n"
     "t = F(lambda x: -jnp.sqrt(x @ x - 1.0), jnp.zeros(2) + 2.0, alpha=1.0, beta=1.0)\n"
     "sample(t, num_steps=50)", "TargetError",
     "names the model, not the step size"),
    # API: sgmcmc
    ("calibrate num_chains 0", "api", "import numpy as np; from inertia.sgmcmc import calibrate\n"
     "X = np.random.default_rng(0).normal(size=(50, 2)); y = X[:, 0]\n"
     "calibrate('linear', (X, y + X[:, 1] ** 2), batch_size=5, num_steps=50, num_chains=0)",
     "ValueError", ""),
    ("calibrate momentum 1", "api", "import numpy as np; from inertia.sgmcmc import calibrate\n"
     "X = np.random.default_rng(0).normal(size=(50, 2))\n"
     "calibrate('linear', (X, X[:, 1] ** 2), batch_size=5, num_steps=50, momentum=1.0)",
     "ValueError", ""),
    ("calibrate temperature 0", "api", "import numpy as np; from inertia.sgmcmc import calibrate\n"
     "X = np.random.default_rng(0).normal(size=(50, 2))\n"
     "calibrate('linear', (X, X[:, 1] ** 2), batch_size=5, num_steps=50, temperature=0.0)",
     "ValueError", ""),
    ("calibrate batch_size > N", "api", "import numpy as np; from inertia.sgmcmc import calibrate\n"
     "X = np.random.default_rng(0).normal(size=(50, 2))\n"
     "calibrate('linear', (X, X[:, 1] ** 2), batch_size=51, num_steps=50)", "ValueError", ""),
    ("sgmcmc.calibrate separable logistic", "api",
     "import numpy as np; from inertia.sgmcmc import calibrate\n"
     "X = np.random.default_rng(0).normal(size=(50, 2))\n"
     "calibrate('logistic', (X, (X[:, 0] > 0) * 1.0), batch_size=5, num_steps=50)",
     "NoEstimateError", ""),
    ("calibrate unknown model name", "api", "import numpy as np; from inertia.sgmcmc import "
     "calibrate\ncalibrate('probit', (np.eye(3), np.ones(3)), batch_size=1, num_steps=50)",
     "ValueError", ""),
    ("calibrate unknown tuning", "api", "import numpy as np; from inertia.sgmcmc import calibrate\n"
     "X = np.random.default_rng(0).normal(size=(50, 2))\n"
     "calibrate('linear', (X, X[:, 1] ** 2), batch_size=5, num_steps=50, tuning='x')",
     "ValueError", ""),
    # API: experiments runner
    ("truncated cell file", "api", "import os, pathlib; from reproductions._runner import "
     "CellStore\ns = CellStore(pathlib.Path(os.environ['HOME'], 'cells')); s.save('k', [1, 2])\n"
     "s.path('k').write_text('[1,'); s.get_or_compute('k', lambda: 0)", "ValueError",
     "names the file"),
    ("experiments.run unknown name", "api",
     "import reproductions as experiments; experiments.run('nope', '/tmp/x')", "KeyError", ""),
]


# Each case: (id, kind, argv or code, expect, note[, words]). `words`: text the message must
# contain for the answer to count as clear (an error naming its cause, or an "ok" run saying
# what it did); "|" separates alternatives.

FITB = ("fit --model logistic --method stl-proj --steps 5 --quiet --allow-unconverged "
        "--response y --data")
SAMPLEB = "sample --model logistic --steps 20 --quiet --allow-unconverged --response y --data"
CALB = ("calibrate --model logistic --batch-size 8 --steps 200 --allow-unconverged "
        "--response y --csv")
CSV_COMMANDS = (("fit", FITB), ("sample", SAMPLEB), ("calibrate", CALB))

# (fixture, expect, words, what) for every command
CSV_VARIANTS = [
    ("b_good", "ok", "", "plain CSV"),
    ("b_nan", "error", "line 12|x1|drop-missing", "one NaN cell in the strongest predictor"),
    ("b_empty", "error", "line 12|empty cell", "one empty cell"),
    ("b_na", "error", "line 12|'NA'", "an NA cell"),
    ("b_excelna", "error", "line 12|'#N/A'", "Excel's #N/A"),
    ("b_inf", "error", "line 12|not finite", "an inf cell"),
    ("b_ninf", "error", "line 12|not finite", "a -inf cell"),
    ("b_text", "error", "line 12|'abc' is not a number", "a text cell"),
    ("b_bool", "error", "'TRUE' is not a number", "a TRUE cell"),
    ("b_bom", "ok", "", "UTF-8 with byte-order mark (Excel 'CSV UTF-8')"),
    ("b_semi", "ok", "", "';' separators"),
    ("b_semicomma", "ok", "", "';' separators with decimal commas"),
    ("b_tab", "ok", "", "tab separators (.tsv)"),
    ("b_txt", "ok", "", "tab separators (.txt)"),
    ("b_quoted", "ok", "", "every value quoted"),
    ("b_crlf", "ok", "", "CRLF line ends"),
    ("b_blank", "ok", "", "a blank line inside"),
    ("b_utf16", "ok", "", "UTF-16 (Excel 'Unicode text')"),
    ("b_spaces", "ok", "", "spaces around names and values"),
    ("b_commaname", "ok", "", "a quoted column name with a comma"),
    ("b_latin1", "error", "UTF-8", "Latin-1 bytes"),
    ("b_dup", "error", "'x1' appears twice", "duplicate column names"),
    ("b_noname", "error", "column 2|no name", "an unnamed column"),
    ("b_trailing", "error", "column 4|no name", "a trailing separator on every line"),
    ("b_noheader", "error", "add a header row", "no header row"),
    ("b_ragged", "error", "line 32 has 2 cells", "a short row"),
    ("b_headeronly", "error", "no data rows", "header only"),
    ("b_huge", "error", "'x1'|overflow", "predictor values of order 1e300"),
    ("b_tiny", "error", "'x1'|underflow", "predictor values of order 1e-200"),
    ("b_const", "error", "'x2' is constant", "a constant predictor"),
    ("b_oneclass", "error", "'y' is 1 in every row", "a one-class response"),
    ("b_ytext", "error", "is not a number; encode categories", "yes/no labels"),
    ("b_allmissing", "error", "missing", "a column with every cell empty"),
]


def csv_cases() -> list:
    out = []
    for cmd, base in CSV_COMMANDS:
        for fix, expect, words, what in CSV_VARIANTS:
            out.append((f"{cmd}: CSV with {what}", "cli", f"{base} {{{fix}}}", expect, "", words))
        out += [
            (f"{cmd}: NaN cell with --drop-missing", "cli", f"{base} {{b_nan}} --drop-missing",
             "ok", "says how many rows went", "dropped 1 of 80 data rows"),
            (f"{cmd}: text cell with --drop-missing", "cli", f"{base} {{b_text}} --drop-missing",
             "error", "non-numeric is never 'missing'", "'abc' is not a number"),
            (f"{cmd}: every row missing, --drop-missing", "cli",
             f"{base} {{b_allmissing}} --drop-missing", "error", "", "nothing is left"),
            (f"{cmd}: response named in the wrong case", "cli",
             base.replace("--response y", "--response Y") + " {b_good}", "error", "",
             "did you mean 'y'"),
            (f"{cmd}: response not a column", "cli",
             base.replace("--response y", "--response outcome") + " {b_good}", "error", "",
             "no column 'outcome'"),
            (f"{cmd}: CSV file missing", "cli", f"{base} {{tmp}}/nothing.csv", "error", "",
             "no such CSV file"),
            (f"{cmd}: CSV is a folder", "cli", f"{base} {{adir}}/", "error", "", "folder"),
            (f"{cmd}: empty CSV file", "cli", f"{base} {{empty}}", "error", "", "empty"),
        ]
    out += [
        ("fit: 3-valued response", "cli", f"{FITB} {{b_three}}", "error", "",
         "exactly two values"),
        ("sample: 3-valued response", "cli", f"{SAMPLEB} {{b_three}}", "error", "",
         "exactly two values"),
        ("calibrate logistic: 3-valued response", "cli", f"{CALB} {{b_three}}", "error", "",
         "labels in"),
        ("fit: CSV without --response", "cli",
         "fit --model logistic --method stl-proj --steps 5 --quiet --data {b_good}", "error", "",
         "name the response column"),
        ("sample: CSV without --response", "cli",
         "sample --model logistic --steps 20 --quiet --data {b_good}", "error", "",
         "name the response column"),
        ("fit: NaN row dropped keeps x1", "cli",
         "fit --model logistic --method stl-proj --steps 5 --allow-unconverged --response y "
         "--drop-missing --data "
         "{b_nan}", "ok", "the strongest predictor stays in the model", "x1"),
        ("fit: --response with a built-in data set", "cli",
         "fit --model logistic --data sonar --response y --method stl-proj --steps 5 --quiet",
         "error", "", "--response applies to a CSV"),
        ("fit: --data with gaussian-kappa", "cli",
         "fit --model gaussian-kappa --data {b_good} --method stl-proj --steps 5 --quiet",
         "error", "", "--data and --response apply"),
        ("sample: --data with gaussian-kappa", "cli",
         "sample --data {b_good} --steps 20 --quiet", "error", "", "--data and --response apply"),
        ("model file on a CSV with a NaN", "cli",
         "fit --model {m_numpyro}:model --data {b_nan} --steps 5 --method stl-proj --quiet",
         "error", "", "line 12|x1"),
        ("model file on a CSV, --drop-missing", "cli",
         "fit --model {m_numpyro}:model --data {b_nan} --drop-missing --steps 5 --method "
         "stl-proj --quiet --allow-unconverged", "ok", "", ""),
        ("model file on a BOM CSV", "cli",
         "fit --model {m_numpyro}:model --data {b_bom} --steps 5 --method stl-proj --quiet "
         "--allow-unconverged",
         "ok", "", ""),
    ]
    return out


MODEL_CASES = [
    ("model file: NAME_init a function", "cli", "fit --model {m_initfn}:logp --steps 50 "
     "--method stl-proj --allow-unconverged", "ok", "names the convention", "log density, logp_init a function"),
    ("model file: NAME_init a list", "cli", "fit --model {m_initval}:logp --steps 50 --method "
     "stl-proj --allow-unconverged", "ok", "", "log density, logp_init a value"),
    ("model file: NAME_init a dict", "cli", "fit --model {m_initdict}:logp --steps 50 "
     "--method stl-proj --allow-unconverged", "ok", "", "log density"),
    ("model file: NAME_init needs arguments", "cli", "fit --model {m_initargs}:logp --quiet",
     "error", "", "logp_init is a function|make it take none"),
    ("model file: NAME_init a string", "cli", "fit --model {m_initstr}:logp --quiet", "error",
     "", "logp_init must be an example point"),
    ("model file: log density without NAME_init", "cli", "fit --model {m_noinit}:logp --quiet",
     "error", "", "looks like a log density|logp_init"),
    ("sample model file: log density without NAME_init", "cli",
     "sample --model {m_noinit}:logp --quiet", "error", "", "looks like a log density"),
    ("model file: log density returns a vector", "cli", "fit --model {m_vector}:logp --quiet",
     "error", "", "must return a scalar"),
    ("model file: log density raises", "cli", "fit --model {m_raises}:logp --quiet", "error", "",
     "calling logp(logp_init, data) failed"),
    ("model file: neither model nor log density", "cli", "fit --model {m_notmodel}:f --quiet",
     "error", "", "neither a NumPyro model"),
    ("model file: syntax error", "cli", "fit --model {m_syntax}:logp --quiet", "error", "",
     "SyntaxError"),
    ("model file: no such function", "cli", "fit --model {m_initfn}:nope --quiet", "error", "",
     "defines no function 'nope'"),
    ("model file without :NAME", "cli", "fit --model {m_initfn} --quiet", "error", "",
     "FILE.py:NAME"),
    ("model file: NumPyro model, arguments not in the CSV", "cli",
     "fit --model {m_numpyro_args}:model --data {b_good} --quiet", "error", "",
     "are not columns of the CSV"),
    ("model file: NumPyro model without its data", "cli",
     "fit --model {m_numpyro}:model --quiet", "error", "", "pass --data"),
    ("model file: NumPyro model on its CSV", "cli",
     "sample --model {m_numpyro}:model --data {b_good} --steps 20 --quiet --allow-unconverged",
     "ok", "", "NumPyro model"),
    ("sample discrete latent site", "cli", "sample --model {m_discrete}:model --quiet", "error",
     "", "inertia needs continuous latent sites"),
    ("fit discrete latent site", "cli", "fit --model {m_discrete}:model --quiet", "error", "",
     "inertia needs continuous latent sites"),
    ("sample exp(-|x|)", "cli", "sample --model {m_laplace}:logp --quiet", "error", "",
     "non-smooth|twice-differentiable"),
    ("fit exp(-|x|)", "cli", "fit --model {m_laplace}:logp --quiet", "error", "",
     "non-smooth|twice-differentiable"),
    ("sample exp(-|x|) with fixed parameters", "cli",
     "sample --model {m_laplace}:logp --step-size 0.1 --gamma 1 --alpha 0.1 --steps 2000 "
     "--quiet --allow-unconverged", "ok", "the advice given for non-smooth densities works", ""),
    ("sample improper (flat direction)", "cli", "sample --model {m_improper}:logp --quiet",
     "error", "not the step size", "improper"),
    ("fit improper (flat direction)", "cli", "fit --model {m_improper}:logp --quiet", "error",
     "", "improper"),
    ("sample flat log density", "cli", "sample --model {m_flat}:logp --quiet", "error", "",
     "improper"),
    ("sample NumPyro ImproperUniform site", "cli", "sample --model {m_improper_np}:model "
     "--quiet", "error", "", "improper|mu"),
]

OTHER_CASES = [
    # sample: defaults and chains
    ("sample --chains 1", "cli", "sample --dim 3 --kappa 10 --chains 1 --quiet", "ok",
     "ESS rule alone", "R-hat needs two or more chains"),
    ("sample --chains 1 --steps 400", "cli",
     "sample --dim 3 --kappa 10 --chains 1 --steps 400 --quiet --allow-unconverged", "ok", "",
     "1 chain x 400 draws"),
    ("sample --steps 60 runs exactly 60", "cli",
     "sample --dim 3 --kappa 10 --steps 60 --quiet --allow-unconverged", "ok",
     "as sample(num_steps=60)", "x 60 draws"),
    ("sample --steps 100 --target-ess 50", "cli",
     "sample --dim 3 --kappa 10 --steps 100 --target-ess 50 --quiet --allow-unconverged", "ok",
     "", "draws"),
    ("sample --max-steps with --steps alone", "cli",
     "sample --dim 3 --kappa 10 --steps 100 --max-steps 500 --quiet", "error", "",
     "--max-steps caps the ESS rule"),
    ("sample --target-ess -5", "cli", "sample --dim 3 --kappa 10 --target-ess -5 --quiet",
     "error", "", "target_ess must be positive"),
    ("sample --target-ess 0 (exactly 1000 steps)", "cli",
     "sample --dim 3 --kappa 10 --target-ess 0 --quiet --allow-unconverged", "ok", "",
     "x 1000 draws"),
    ("sample --seed -1", "cli", "sample --dim 3 --kappa 10 --steps 20 --seed -1 --quiet",
     "error", "", "seed must be"),
    ("fit --seed -1", "cli", f"{FIT} --steps 5 --seed -1", "error", "", "seed must be"),
    ("calibrate --seed -1", "cli", f"{CAL} --model linear --csv {{good}} --seed -1", "error", "",
     "seed must be"),
    ("sample --seed 1.5", "cli", "sample --dim 3 --seed 1.5", "error", "", "--seed"),
    ("sample --thinning 3 (default steps)", "cli", "sample --dim 3 --thinning 3 --quiet",
     "error", "", "multiple of thinning"),
    ("sample --max-rows 0", "cli", "sample --dim 3 --max-rows 0", "error", "", "--max-rows"),
    # failed writes
    ("fit --json /dev/full", "cli", f"{FIT} --steps 5 --json /dev/full", "write-error", "",
     "No space left on device"),
    ("fit --plot /dev/full", "cli", f"{FIT} --steps 5 --plot /dev/full", "write-error", "",
     "No space left on device"),
    ("sample --json /dev/full", "cli", "sample --dim 3 --steps 20 --quiet --allow-unconverged "
     "--json /dev/full", "write-error", "", "No space left on device"),
    ("calibrate --json /dev/full", "cli", f"{CAL} --model linear --csv {{good}} --json "
     "/dev/full", "write-error", "", "No space left on device"),
    ("reproduce --out /dev/full", "cli", "reproduce lower-bound --quick --out /dev/full",
     "error", "", "is a file, not a folder"),
    ("calibrate --json to a folder", "cli", f"{CAL} --model linear --csv {{good}} --json "
     "{adir}", "error", "", "is a folder"),
    # reproduce
    ("reproduce sgmcmc-linear --reps 0", "cli", "reproduce sgmcmc-linear --quick --reps 0",
     "error", "", "--reps: must be >= 1"),
    ("reproduce sgmcmc-linear --reps -2", "cli", "reproduce sgmcmc-linear --quick --reps -2",
     "error", "", "--reps: must be >= 1"),
    ("reproduce --reps 1.5", "cli", "reproduce sgmcmc-linear --quick --reps 1.5", "error", "",
     "--reps"),
    ("reproduce --reps on an experiment without", "cli",
     "reproduce lower-bound --quick --reps 3 --out {tmp}/lbreps", "error", "",
     "--reps applies to"),
    ("resume after a saved cell was edited", "py",
     "import json, pathlib, sys; from inertia.cli import main\n"
     "out = pathlib.Path('{tmp}/tamper'); argv = ['reproduce', 'sgmcmc-linear', '--quick', "
     "'--reps', '1', '--out', str(out)]\n"
     "assert main(argv) == 0\n"
     "cell = sorted((out / 'cells').glob('*.json'))[0]; text = cell.read_text()\n"
     "import re; m = re.search(r'\\d\\.\\d{{4,}}', text)\n"
     "cell.write_text(text[:m.start()] + str(round(float(m.group()) * 1.07, 4)) + text[m.end():])\n"
     "sys.exit(main(argv))", "error", "a plausible wrong number", "delete it to recompute"),
    # API: seeds alike
    ("vi.fit seed 1.5", "api", "from inertia.targets import kappa_family as K\n"
     "from inertia.vi import fit; fit(K(4, 10.0), 'stl-proj', seed=1.5, num_steps=5)",
     "ValueError", "", "seed must be a whole number"),
    ("mcmc.sample seed 1.5", "api", "from inertia.targets import kappa_family as K\n"
     "from inertia.mcmc import sample; sample(K(3, 10.0), seed=1.5, num_steps=20)",
     "ValueError", "", "seed must be a whole number"),
    ("sgmcmc.calibrate seed 1.5", "api", "import numpy as np; from inertia.sgmcmc import "
     "calibrate\nX = np.random.default_rng(0).normal(size=(50, 2))\n"
     "calibrate('linear', (X, X[:, 1] ** 2), batch_size=5, num_steps=50, seed=1.5)",
     "ValueError", "", "seed must be a whole number"),
    ("mcmc.sample seed True", "api", "from inertia.targets import kappa_family as K\n"
     "from inertia.mcmc import sample; sample(K(3, 10.0), seed=True, num_steps=20)",
     "ValueError", "", "seed must be a whole number"),
    ("mcmc.sample seed 2**64", "api", "from inertia.targets import kappa_family as K\n"
     "from inertia.mcmc import sample; sample(K(3, 10.0), seed=2 ** 64, num_steps=20)",
     "ValueError", "", "seed must be a whole number"),
    ("vi.fit seed -3", "api", "from inertia.targets import kappa_family as K\n"
     "from inertia.vi import fit; fit(K(4, 10.0), 'stl-proj', seed=-3, num_steps=5)",
     "ValueError", "", "seed must be a whole number"),
    ("mcmc.sample one chain", "api", "from inertia.targets import kappa_family as K\n"
     "from inertia.mcmc import sample\n"
     "r = sample(K(3, 10.0), num_chains=1, max_steps=20000)\n"
     "assert r.diagnostics.converged and r.num_steps < 20000, r.diagnostics.line()\n"
     "print(r.diagnostics.line())", "ok", "", ""),
    # API: the CSV reader
    ("read_csv NaN cell", "api", "from inertia.data.csv import read_csv\n"
     "read_csv('{b_nan}', response='y')", "DatasetError", "", "line 12, column 'x1'"),
    ("read_csv BOM header", "api", "from inertia.data.csv import read_csv\n"
     "X, y, n = read_csv('{b_bom}', response='y'); assert n == ['x1', 'x2'], n", "ok", "", ""),
    ("read_csv duplicate header", "api", "from inertia.data.csv import read_csv\n"
     "read_csv('{b_dup}', response='y')", "DatasetError", "", "appears twice"),
    ("read_csv drop_missing", "api", "import warnings; from inertia.data.csv import read_csv\n"
     "with warnings.catch_warnings(record=True) as w:\n    warnings.simplefilter('always')\n"
     "    X, y, n = read_csv('{b_nan}', response='y', drop_missing=True)\n"
     "assert X.shape == (79, 2) and 'dropped 1 of 80' in str(w[0].message)", "ok", "", ""),
    ("load_csv one-class response", "api", "from inertia.data.csv import load_csv\n"
     "load_csv('{b_oneclass}', 'y')", "DatasetError", "", "every row"),
    ("load_csv values of 1e300", "api", "from inertia.data.csv import load_csv\n"
     "load_csv('{b_huge}', 'y')", "DatasetError", "", "overflow"),
    ("read_columns semicolons + decimal comma", "api", "from inertia.data.csv import "
     "read_columns\nc = read_columns('{b_semicomma}'); assert list(c) == ['x1', 'x2', 'y']\n"
     "assert abs(c['x1']).max() > 0.1", "ok", "", ""),
    ("standardize_predictors NaN column", "api", "import numpy as np; from inertia.data import "
     "standardize_predictors as S\nX = np.ones((4, 2)); X[:, 0] = [1, 2, 3, np.nan]; S(X)",
     "DatasetError", "a NaN must not drop its column", "non-finite values"),
    ("make_target logistic on a NaN CSV", "api", "from inertia.targets.zoo import make_target\n"
     "make_target('logistic', data='{b_nan}', response='y')", "DatasetError", "", "line 12"),
    # API: reproduction cells
    ("edited cell", "api", "import os, pathlib, json; from reproductions._runner import "
     "CellStore\ns = CellStore(pathlib.Path(os.environ['HOME'], 'cells'))\n"
     "s.save('k', {{'mean': 0.74, 'sd': 0.19}})\np = s.path('k')\n"
     "p.write_text(p.read_text().replace('0.74', '0.75')); s.get_or_compute('k', lambda: 0)",
     "ValueError", "", "delete it to recompute"),
    ("cell renamed to another key", "api", "import os, pathlib; from "
     "reproductions._runner import CellStore\ns = CellStore(pathlib.Path(os.environ['HOME'],"
     " 'cells')); s.save('a', [1.0])\ns.path('a').rename(s.path('b'))\n"
     "s.get_or_compute('b', lambda: 0)", "ValueError", "", "delete it to recompute"),
    ("cell without checksum", "api", "import os, pathlib; from reproductions._runner "
     "import CellStore\ns = CellStore(pathlib.Path(os.environ['HOME'], 'cells'))\n"
     "s.path('k').write_text('[1.0, 2.0]'); s.get_or_compute('k', lambda: 0)", "ValueError", "",
     "no checksum"),
    ("cell round trip", "api", "import os, pathlib; from reproductions._runner import "
     "CellStore\ns = CellStore(pathlib.Path(os.environ['HOME'], 'cells'))\n"
     "s.save('k', {{'x': [0.1, float('nan')]}})\n"
     "assert s.get_or_compute('k', lambda: 0) == {{'x': [0.1, None]}}", "ok", "", ""),
    ("sgmcmc-linear reps=0 (API)", "api", "import reproductions as experiments\n"
     "import os; experiments.run('sgmcmc-linear', os.environ['HOME'] + '/r', quick=True, reps=0)", "ValueError", "",
     "reps"),
    ("dump_json to /dev/full", "api", "from reproductions._runner import dump_json\n"
     "dump_json({{'a': 1}}, '/dev/full')", "OSError", "", "No space left"),
]

# ------------------------------------------------------------------------- fourth round (issue)
SAVE = "fit --model gaussian-kappa --method stl-proj --steps 5 --quiet --allow-unconverged"
_MAIN = "import os, sys, pathlib; from inertia.cli import main; d = pathlib.Path(os.environ['HOME'])\n"
_SAVE_ARGS = ("['fit', '--model', 'gaussian-kappa', '--method', 'stl-proj', '--steps', '5', "
              "'--quiet', '--allow-unconverged', '--save', ")
_SAVED = ("import arviz as az, numpy as np, os, json; from inertia.results.store import save\n"
          "from inertia.results.idata import ATTR_PREFIX as A; p = os.environ['HOME'] + '/r.nc'\n"
          "o = az.from_dict(posterior={{'x': np.zeros((2, 5))}})\n"
          "o.posterior.attrs[A + 'kind'] = json.dumps('sample'); save(o, p)\n")

ROUND4_CASES = [
    # save rules
    ("save through a symbolic link", "py", _MAIN +
     "(d / 'real.nc').write_text('old'); (d / 'link.nc').symlink_to('real.nc')\n"
     f"rc = main({_SAVE_ARGS}str(d / 'link.nc')])\n"
     "assert rc == 0 and (d / 'link.nc').is_symlink(), rc\n"
     "assert (d / 'real.nc').read_bytes()[:4] == b'\\x89HDF'\n"
     "print('the link stays a link; its target holds the result')", "ok",
     "a link is followed to its target", "the link stays a link"),
    ("save onto a device file (private copy of /dev/full)", "py", _MAIN +
     "node = d / 'full'; os.mknod(node, 0o666 | 0o020000, os.makedev(1, 7))\n"
     f"sys.exit(main({_SAVE_ARGS}str(node)]))", "error", "refused before the run",
     "character device"),
    ("save onto a FIFO", "py", _MAIN + "os.mkfifo(d / 'pipe.nc')\n"
     f"sys.exit(main({_SAVE_ARGS}str(d / 'pipe.nc')]))", "error", "", "FIFO"),
    ("saved .nc keeps the umask's mode", "py", _MAIN + "import stat; os.umask(0o022)\n"
     f"assert main({_SAVE_ARGS}str(d / 'm.nc')]) == 0\n"
     "mode = stat.S_IMODE(os.stat(d / 'm.nc').st_mode); assert mode == 0o644, oct(mode)\n"
     "print('mode 644, as the JSON beside it')", "ok", "", "mode 644"),
    ("fit --save and --json on one file", "cli",
     f"{SAVE} --save {{tmp}}/same.nc --json {{tmp}}/same.nc", "error", "checked before the run",
     "are the same file"),
    ("fit --save and --json on one file, spelt differently", "cli",
     f"{SAVE} --save {{tmp}}/same2.nc --json {{adir}}/../same2.nc", "error", "", "are the same file"),
    ("sample --save and --json on one file", "cli",
     "sample --dim 3 --steps 20 --quiet --save {tmp}/s.nc --json {tmp}/s.nc", "error", "",
     "are the same file"),
    ("site 'b[0]' beside a vector site b", "cli", "fit --model {m_dupnames}:model --quiet",
     "error", "one table row for two quantities", "both give a coordinate named 'b[0]'"),
    # inertia.load
    ("load a plain netCDF4 file", "api", "import xarray as xr, numpy as np, os\n"
     "p = os.environ['HOME'] + '/plain.nc'\n"
     "xr.Dataset({{'a': ('x', np.arange(3.0))}}).to_netcdf(p, engine='h5netcdf'); inertia.load(p)",
     "ValueError", "", "not a result saved by inertia"),
    ("load a netCDF-3 file", "api", "import xarray as xr, numpy as np, os\n"
     "p = os.environ['HOME'] + '/nc3.nc'\nxr.Dataset({{'a': ('x', np.arange(3.0))}}).to_netcdf("
     "p, engine='scipy', format='NETCDF3_64BIT'); inertia.load(p)", "ValueError", "",
     "netCDF-3"),
    ("load a saved file whose attribute was edited", "api", _SAVED +
     "o = az.from_netcdf(p); o.posterior.attrs[A + 'kind'] = '{{\"sample'\n"
     "o.to_netcdf(p + '2'); inertia.load(p + '2')", "ValueError", "", "attributes were edited"),
    ("load an empty file", "api", "inertia.load('{emptync}')", "ValueError", "", "is empty"),
    ("load a gzip file", "api", "inertia.load('{gznc}')", "ValueError", "", "gzip-compressed"),
    ("load a JSON file", "api", "inertia.load('{jsonfile}')", "ValueError", "", "is a JSON file"),
    ("load a text file", "api", "inertia.load('{textnc}')", "ValueError", "",
     "is not a netCDF file"),
    ("load a damaged file", "api", "inertia.load('{truncnc}')", "ValueError", "",
     "damaged or truncated"),
    ("load a folder", "api", "inertia.load('{adir}')", "IsADirectoryError", "", "is a folder"),
    # models and data
    ("model with a data-dependent shape", "cli",
     "sample --model {m_ddshape}:model --data {groups} --quiet", "error",
     "the model's own JAX error, with its line", "raised ConcretizationTypeError at line 4"),
    ("CSV header of 1,000,001 columns", "cli",
     "fit --model logistic --method stl-proj --steps 5 --quiet --response y --data {wide}",
     "error", "", "select fewer predictor columns"),
    ("5-row CSV with 20,000 predictors", "cli",
     "sample --model logistic --steps 20 --quiet --response y --data {w20k}", "error",
     "refused in seconds, before building the target", "select fewer predictor columns"),
    ("half-normal written as -inf for x < 0", "cli", "sample --model {m_halfwall}:logp --quiet",
     "error", "", "step size adapted down to 0"),
    ("fit init naming another site", "api",
     "import jax.numpy as jnp; from inertia.targets import from_logdensity as F\n"
     "from inertia.vi import fit\nt = F(lambda p: -0.5 * jnp.sum(p['a'] ** 2), "
     "{{'a': jnp.ones(2)}})\nfit(t, init={{'b': jnp.zeros(2)}}, num_steps=20)", "ValueError", "",
     "init must be a pair"),
    ("JAX_PLATFORMS=cuda on a CPU-only machine", "py",
     "import os, subprocess, sys; env = dict(os.environ, JAX_PLATFORMS='cuda')\n"
     "r = subprocess.run([sys.executable, '-m', 'inertia', 'sample', '--dim', '3', '--steps', "
     "'20', '--quiet'], env=env, capture_output=True, text=True)\n"
     "sys.stderr.write(r.stderr); sys.exit(r.returncode)", "error", "", "JAX could not start"),
    ("two Ctrl-Cs 0.3 s apart", "interrupt2",
     "fit --model gaussian-kappa --dim 40 --method price-stl-proj --steps 200000", "interrupt",
     "one line, no traceback", ""),
    ("model file calling sys.exit(3) in its log density", "cli",
     "sample --model {m_exit}:logp --quiet", "error", "not exit 3 (not converged)",
     "called sys.exit(3)"),
    ("model file calling sys.exit(3) when imported", "cli",
     "fit --model {m_exit_import}:model --quiet", "error", "", "called sys.exit(3)"),
    ("mcmc.sample num_chains=True", "api", "from inertia.targets import kappa_family as K\n"
     "from inertia.mcmc import sample; sample(K(3, 10.0), num_chains=True, num_steps=20)",
     "ValueError", "", "num_chains must be a positive integer"),
    ("CSV without the model's response column", "cli",
     "sample --model {m_noy}:model --data {xonly} --quiet", "error",
     "y would become 120 latent sites", "is not a column of the CSV"),
    ("short row at line 199,002 of 200k rows (--data)", "cli",
     "calibrate --model logistic --batch-size 8 --steps 200 --response y --data {long}",
     "error", "", "line 199002 has 3 cells"),
    ("short row at line 199,002 of 200k rows (--csv)", "cli",
     "calibrate --model logistic --batch-size 8 --steps 200 --response y --csv {long}",
     "error", "", "line 199002 has 3 cells"),
    ("out-of-range index (1-based group labels)", "cli", "sample --model {m_oob}:logp --quiet",
     "error", "was a 700 s hang", "gradient disagrees with its log density"),
    ("stop_gradient in the log density", "cli", "sample --model {m_stopgrad}:logp --quiet",
     "error", "", "gradient disagrees with its log density"),
    ("sample --steps 10**12", "cli", "sample --dim 3 --steps 1000000000000 --quiet", "error", "",
     "at most about num_steps"),
    ("mcmc.sample num_steps=10**12", "api", "from inertia.targets import kappa_family as K\n"
     "from inertia.mcmc import sample; sample(K(3, 10.0), num_steps=10 ** 12)", "MemoryError",
     "", "keeps 4,000,000,000,000 draws"),
    ("vi.fit num_steps=10**12 without a stopping rule", "api",
     "from inertia.targets import kappa_family as K\nfrom inertia.vi import fit\n"
     "fit(K(4, 10.0), 'stl-proj', num_steps=10 ** 12)", "MemoryError",
     "refused before the run (was announced, then a MemoryError allocating its first block)",
     "without a stopping rule"),
    ("vi.fit num_steps=10**9 announced", "api", "import warnings; warnings.simplefilter('error')"
     "\nfrom inertia.targets import kappa_family as K\nfrom inertia.vi import fit\n"
     "fit(K(4, 10.0), 'stl-proj', num_steps=10 ** 9)", "RuntimeWarning",
     "warned before the run (an error here, by the warnings filter)", "takes at least"),
    ("calibrate on 200,000 rows says what it does", "cli",
     "calibrate --model linear --batch-size 32 --steps 200 --data {rows} --allow-unconverged", "ok",
     "a line before the passes over the data", "200,000 rows"),
]

# ------------------------------------------------------------------------- fifth round (issue)
FITQ = "fit --method stl-proj --steps 20 --quiet --allow-unconverged --model"
LONG_NAME = "s" * 247  # + ".nc": 250 characters, the temporary file's name beyond NAME_MAX before
_RO_HOME = ("import os, subprocess, sys, json\n"
            "r = subprocess.run([sys.executable, '-m', 'inertia', 'fit', '--model', 'gaussian-kappa', "
            "'--dim', '3', '--kappa', '10', '--method', 'stl-proj', '--steps', '50', '--quiet', "
            "'--allow-unconverged', '--json', 'out.json'], env=dict(os.environ, HOME='/proc'), "
            "capture_output=True, text=True)\n"
            "sys.stderr.write(r.stderr); assert r.returncode == 0, r.returncode\n"
            "assert json.load(open('out.json'))['mean']; print('result written')")

DATA_FILE_CASES = [
    # outputs and caches
    ("fit --save with a 250-character name", "py", _MAIN +
     f"p = d / ('{LONG_NAME}' + '.nc')\nrc = main({_SAVE_ARGS}str(p)])\n"
     "assert rc == 0 and p.read_bytes()[:4] == b'\\x89HDF', rc; print('saved, 250 characters')",
     "ok", "was lost: the temporary name exceeded NAME_MAX", "saved, 250 characters"),
    ("fit --save with a 300-character name", "cli",
     f"{SAVE} --save {{tmp}}/{'s' * 297}.nc", "error", "refused before the run",
     "longer than this file system takes"),
    ("read-only HOME, no cache folder (HOME=/proc)", "py", _RO_HOME, "ok",
     "was lost: ArviZ's import made ~/.cache", "cannot create cache folders|result written"),
    # Stan-style JSON data
    ("JSON data with a key twice", "cli", f"{FITQ} {{n_normal}}:model --data {{j_dup}}", "error",
     "was a silent wrong answer (the last copy won)", "'y' appears twice"),
    ('JSON data with "NaN" in y', "cli", f"{FITQ} {{n_normal}}:model --data {{j_nanstr}}", "error",
     "named before the model is traced", "y[7] = nan"),
    ("JSON data with a bare NaN token", "cli", f"{FITQ} {{n_normal}}:model --data {{j_nantok}}",
     "error", "not JSON", "bare NaN is not JSON"),
    ("JSON data with 1e400 in y", "cli", f"{FITQ} {{n_normal}}:model --data {{j_big}}", "error",
     "", "y[7] is a number beyond float64"),
    ("JSON count data with a -1 (Poisson)", "cli",
     f"{FITQ} {{n_poisson}}:model --data {{j_negcount}}", "error", "", "y[7] = -1"),
    ("JSON shape K = 1e20", "cli", f"{FITQ} {{n_shape}}:model --data {{j_shape}}", "error",
     "was a raw MLIR error", "K = 1e+20: beyond int64"),
    ("JSON index entry 2**63", "cli", f"{FITQ} {{n_index}}:model --data {{j_index}}", "error",
     "was float64 silently", "g[3] = 9223372036854775808"),
    ("JSON key in NFD, argument in NFC", "cli", f"{FITQ} {{n_nfc}}:model --data {{j_y}}".replace(
        "{j_y}", "{j_nfd}"), "ok", "normalised as Python normalises names", "mu"),
    # PyMC files
    ("PyMC file written `from pymc import Model, Normal`", "cli",
     f"{FITQ} {{p_from}}:model --data {{j_y}}", "ok", "recognised by what it returns",
     "mu  "),
    ("PyMC file that also imports numpyro", "cli", f"{FITQ} {{p_both}}:model --data {{j_y}}",
     "ok", "", "mu  "),
    ("PyMC model, a count of -1", "cli", f"{FITQ} {{p_poisson}}:model --data {{j_ycounts}}",
     "error", "was reported as NumPyro's", "PyMC: the log likelihood of observed 'y'"),
    ("PyMC model with --dtype float32", "cli",
     f"{FITQ} {{p_from}}:model --data {{j_y}} --dtype float32", "error", "",
     "leave out --dtype float32"),
    # run length, model faults
    ("vi.fit num_steps=10**12 under the stopping rule", "api",
     "import jax.numpy as jnp; from inertia.targets import from_logdensity as F\n"
     "from inertia.vi import fit\nt = F(lambda x: -0.5 * jnp.sum(x ** 2 * jnp.arange(1.0, 4.0)), "
     "jnp.zeros(3))\nr = fit(t, 'stl-proj', num_steps=10 ** 12)\n"
     "assert r.converged and r.num_steps < 10 ** 5, r.verdict\n"
     "print('stopped by its rule at', r.num_steps)", "ok", "was a hang (a key per step)", ""),
    ("fit flat prior, separable logistic data (1 coefficient)", "cli",
     "fit --model {n_flatlogit}:model --data {sep1} --quiet", "error", "", "improper"),
    ("sample flat prior, separable logistic data (1 coefficient)", "cli",
     "sample --model {n_flatlogit}:model --data {sep1} --quiet", "error",
     "was NOT CONVERGED only", "improper"),
    ("fit symmetric bimodal density", "cli", "fit --model {l_bimodal}:logp --quiet", "ok",
     "warned: a saddle between two modes", "saddle point"),
    ("sample symmetric bimodal density", "cli", "sample --model {l_bimodal}:logp --quiet", "warn",
     "the chains start at both modes and disagree: NOT CONVERGED (was converged on one mode)",
     "saddle point"),
    ("sample log density NaN for x < 0", "cli", "sample --model {l_nanneg}:logp --quiet", "error",
     "was 'piecewise-linear'", "is NaN at x[0]"),
    ("fit log density NaN for x < 0", "cli", "fit --model {l_nanneg}:logp --quiet", "error", "",
     "is NaN at x[0]"),
    ("centred hierarchy under a flat prior: the rewrite's sites", "api",
     "import json; from inertia.targets.zoo import make_target\n"
     "from inertia.targets.reparam import find_sites\n"
     "t = make_target('{n_eight_flat}:model', data='{j_eight}'); s = t.info['numpyro']\n"
     "sites = find_sites(s['model'], s['args'], s['kwargs'])\n"
     "assert list(sites) == ['theta'], sites; print('theta is rewritten')", "ok",
     "was NotImplementedError, swallowed", "theta is rewritten"),
    ("one wording for compile times", "cli",
     "fit --model gaussian-kappa --dim 3 --kappa 10 --method stl-proj --steps 50 "
     "--allow-unconverged", "ok", "was 'compile 5.09s' then 'compile 19.4 s'",
     "their compile|compile of all programs"),
]

CASES += csv_cases() + MODEL_CASES + OTHER_CASES + ROUND4_CASES + DATA_FILE_CASES

# ----------------------------------------------------------------------------------------- runner

def _env(home: Path) -> dict:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
            "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1", "MPLBACKEND": "Agg"}


def _scrub(text: str, home: Path, tmp: str) -> str:
    """Output without this machine's paths: the case's HOME as ~, the fixtures' folder as {tmp},
    the repository as ., installed packages from site-packages/."""
    import re

    text = (text or "").replace(str(home), "~").replace(tmp, "{tmp}").replace(str(ROOT), ".")
    return re.sub(r"/[^\s'\"]*/(site|dist)-packages/", r"\1-packages/", text)


def run_case(case, fixtures, workdir: Path) -> dict:
    cid, kind, spec, expect, note, *rest = case
    words = rest[0] if rest else ""
    home = Path(tempfile.mkdtemp(dir=workdir))
    text = spec.format(**fixtures)
    if kind in ("api", "py"):
        code = textwrap.dedent(text)
        argv = [sys.executable, "-c", "import inertia\n" + code]
        shown = spec.replace("\n", "; ")
    else:
        argv = [sys.executable, "-m", "inertia", *text.split()]
        shown = "inertia " + spec
    t0 = time.perf_counter()

    def limit():
        import resource

        resource.setrlimit(resource.RLIMIT_DATA, (MEMORY_LIMIT, MEMORY_LIMIT))
        # a shell's background job ignores SIGINT, and children inherit that: restore it
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    proc = subprocess.Popen(argv, cwd=home, env=_env(home), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=limit)
    try:
        if kind in ("interrupt", "interrupt2"):
            time.sleep(25.0)
            proc.send_signal(signal.SIGINT)
            if kind == "interrupt2":  # a second Ctrl-C while the first unwinds
                time.sleep(0.3)
                if proc.poll() is None:
                    proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=TIMEOUT)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        rc = None
    secs = time.perf_counter() - t0
    out, err = (_scrub(t, home, fixtures["tmp"]) for t in (out, err))
    return dict(id=cid, kind=kind, command=shown, expect=expect, note=note, words=words, rc=rc,
                out=out, err=err, seconds=secs)


# verdicts: the first two are right; the others are failures
CLEAR, CORRECT = "clear error", "correct"
UNCLEAR, SILENT, LOST = "unclear", "silent wrong answer", "lost result"
TRACEBACK, HANG, REFUSED = "traceback", "hang", "refused valid input"
VERDICTS = (CLEAR, CORRECT, UNCLEAR, SILENT, LOST, TRACEBACK, HANG, REFUSED)

# unclear messages that stay, with the reason (case id -> why)
KEPT_UNCLEAR = {}


def _has(text: str, words: str) -> bool:
    return all(w in text for w in words.split("|")) if words else True


def judge(r: dict) -> tuple[str, str]:
    """(verdict, message shown) for a finished case."""
    err_lines = [ln for ln in r["err"].splitlines() if ln.strip()]
    out_lines = [ln for ln in r["out"].splitlines() if ln.strip()]
    both = r["out"] + "\n" + r["err"]
    if r["rc"] is None:
        return HANG, f"no answer in {TIMEOUT:.0f} s"
    expect, kind, words = r["expect"], r["kind"], r["words"]
    if kind == "api":
        import re

        raised = [ln for ln in err_lines
                  if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)(:|$)", ln)]
        last = raised[-1] if raised else (err_lines[-1] if err_lines else "")
        warns = [ln.strip() for ln in err_lines if "Warning:" in ln]
        shown = warns[0] if warns else (out_lines[-1] if out_lines else "(no output)")
        if r["rc"] == 0:  # warn-or-error cases assert in their code that the run was flagged
            if expect in ("ok", "warn-or-error"):
                return (CORRECT if _has(both, words) else UNCLEAR), shown
            return SILENT, shown
        name = last.split(":", 1)[0].rsplit(".", 1)[-1]
        if name == "AssertionError":
            return SILENT, last
        if expect == "ok":
            return REFUSED, last
        bug = name in ("AttributeError", "NameError", "IndexError", "UnboundLocalError",
                       "UnexpectedTracerError", "TracerIntegerConversionError")
        if expect == "warn-or-error":
            return (TRACEBACK if bug else CLEAR), last
        ok = name == expect and _has(last, words)
        return (CLEAR if ok else UNCLEAR), last
    tb = "Traceback (most recent call last)" in r["err"]
    msg_lines = [ln for ln in err_lines if not ln.lstrip().startswith(("step ", "[", "usage:"))
                 and not ln.startswith(" ")]
    first = (msg_lines[0] if msg_lines else (err_lines or out_lines or ["(no output)"])[0])
    if tb:
        return TRACEBACK, first
    if expect == "ok":
        if r["rc"] != 0:
            return REFUSED, first
        return (CORRECT if _has(both, words) else UNCLEAR), (out_lines[-1] if out_lines
                                                               else first)
    if expect == "interrupt":
        lines = [ln for ln in err_lines if "interrupted" in ln]
        ok = r["rc"] == 130 and len(lines) == 1
        return (CORRECT if ok else LOST), (lines[0] if lines else first)
    if expect == "warn":
        w = [ln for ln in err_lines if "warning" in ln.lower()]
        ok = r["rc"] in (0, 3) and w and _has(both, words)
        return (CORRECT if ok else (SILENT if not w else UNCLEAR)), (w[0] if w else first)
    if r["rc"] == 0:
        return (LOST if expect == "write-error" else SILENT), (out_lines[-1] if out_lines
                                                               else first)
    errs = [ln for ln in err_lines if "error" in ln.lower()]
    shown = errs[-1] if errs else first
    internal = "internal error" in shown
    return (CLEAR if errs and not internal and _has(shown, words) else UNCLEAR), shown


def _cell(text: str, width: int = 200) -> str:
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text if len(text) <= width else text[:width - 1] + "…"


def write_table(results: list[dict], path: Path, seconds: float, jobs: int = 2) -> None:
    rows, counts, unclear = [], dict.fromkeys(VERDICTS, 0), []
    for i, r in enumerate(results, 1):
        verdict, msg = (r["verdict"], r["message"]) if "verdict" in r else judge(r)
        counts[verdict] += 1
        if verdict == UNCLEAR:
            unclear.append((i, r, msg))
        rc = "timeout" if r["rc"] is None else r["rc"]
        command = r["command"].replace("{{", "{").replace("}}", "}")
        rows.append(f"| {i} | {_cell(r['id'])} | `{_cell(command, 160)}` | {rc} | "
                    f"{r['seconds']:.1f} | {_cell(msg)} | {verdict} | {_cell(r['note'])} |")
    kinds = {k: sum(r["kind"] == k for r in results) for k in ("cli", "py", "api", "interrupt",
                                                               "interrupt2")}
    kinds["interrupt"] += kinds["interrupt2"]
    reused = sum("verdict" in r for r in results)
    case_seconds = sum(float(r["seconds"]) for r in results)
    rerun = (f" The first {reused} cases are the outcomes of the previous full run (taken from "
             f"the table, `--reuse-table`); the other {len(results) - reused} ran now."
             if reused else "")
    summary = "\n".join(f"| {v} | {counts[v]} |" for v in VERDICTS)
    if unclear:
        kept = "\n".join(f"- #{i} {r['id']}: {_cell(msg, 160)}. Why it stays: "
                         f"{KEPT_UNCLEAR.get(r['id'], 'not yet fixed')}" for i, r, msg in unclear)
    else:
        kept = "None."
    head = textwrap.dedent(f"""\
        # Reliability: bad inputs

        Generated by `python scripts/bad_inputs.py` (do not edit by hand): {len(results)} cases
        ({kinds['cli'] + kinds['py'] + kinds['interrupt']} through the command line, {kinds['api']}
        through the Python API); the cases took {case_seconds:,.0f} s in all, {jobs} at a time on a
        shared 2-core machine (its load, from other work, sets these times). Each
        case runs in a fresh process with only PATH, HOME (an empty folder: no data cache),
        PYTHONPATH and OPENBLAS_NUM_THREADS set.{{rerun}}

        *Expected*: a command-line error exits 2 with one line `inertia CMD: error: ...` that
        names the cause (argument errors come from argparse before JAX is imported, usually in
        under a second); an interrupt exits 130 with one line saying what was saved and how to
        resume; a divergence exits 3 (not converged) with a warning; API errors raise the named exception with a
        message naming the cause. Valid but unusual input (a byte-order mark, `;` or tab
        separators, one chain) runs and says what it did.

        Verdicts: *clear error* (refused, with a message naming the cause), *correct* (ran, or
        warned, as it should), *unclear* (refused, but the message does not name the cause),
        *silent wrong answer* (exit 0, or an unflagged result, where an error or warning was
        due), *lost result* (a failed write or an interrupt not reported), *traceback*, *hang*
        (no answer in {TIMEOUT:.0f} s), *refused valid input*. "Message" is the CLI's error line
        (or the last line of an API exception; the last output line for successful runs).

        | verdict | cases |
        |---|---|
        {{summary}}

        ## Classes of input and fault

        - Arguments: every option's type and range, checked by argparse before JAX is imported.
        - CSV files: encodings, separators, missing and non-numeric cells, ragged rows (named by
          file and line, also from the row-group reader of `--data`), headers too wide for
          memory (refused with the number of coefficients before the target is built).
        - Model files: each convention, errors raised inside the model (reported as the
          model's, with its file, line and code, including JAX's traced-value errors and
          `sys.exit`), a CSV lacking a column the model takes, discrete, improper and non-smooth
          models, duplicate display names (a site `b[0]` beside a vector `b`).
        - Data files of named arrays (Stan-style JSON): a key given twice, a bare NaN token,
          numbers beyond float64 or int64, and keys in another Unicode normal form are named
          when the file is read; observed values that are not finite or lie outside the
          likelihood's support are named by entry (`y[7] = -1`) before anything is compiled,
          for NumPyro and PyMC models alike; PyMC files are recognised by what their function
          returns, and PyMC's errors are reported as PyMC's.
        - Model faults named as what they are, by `fit` and `sample` alike: an improper
          posterior, a saddle point between two modes, a log density that is NaN near the mode.
        - Gradients: before the chains run, the sampler compares grad V . u with a
          Richardson central difference of V at the first chains' warm-up positions; an index
          out of range, a `stop_gradient` or a wrong custom JVP is refused by name.
        - Outputs: written whole or not at all; a symbolic link is followed to its target; a
          device, FIFO or folder at a `--save` path, and two options naming one file, are
          refused before the run; a saved file gets the umask's mode.
        - Saved results: `inertia.load` names the file and what it is (a folder, an empty,
          damaged, compressed, netCDF-3, JSON or text file, a netCDF file inertia did not
          write, an edited attribute).
        - Size and time: kept draws beyond free memory refused with the largest `num_steps`
          that fits; fixed runs of more than 10^8 steps announced; a budget of 10^12 updates
          under the stopping rule builds no key table up front; ETAs from measured steps.
        - Outputs and caches: a 250-character file name is written (its temporary file's name
          is shortened), a longer one refused before the run; a read-only HOME costs JAX's,
          ArviZ's and matplotlib's caches (one warning line), never the result.
        - The platform and the process: `JAX_PLATFORMS` naming a missing platform, interrupts
          (one or two Ctrl-Cs), full disks, unwritable folders.

        ## Unclear messages

        {{kept}}

        ## Cases

        | # | case | command | exit | s | message | verdict | note |
        |---|---|---|---|---|---|---|---|
        """).format(summary=summary, kept=kept, rerun=rerun)
    path.write_text(head + "\n".join(rows) + "\n")


def read_table(path: Path) -> dict:
    """{case id: outcome} from the cases table of a written docs/reliability.md (command, exit,
    seconds, message, verdict), for `--reuse-table`."""
    rows = {}
    in_cases = False
    for line in path.read_text().splitlines():
        if line.startswith("## Cases"):
            in_cases = True
            continue
        if not in_cases or not line.startswith("| ") or line.startswith(("| # ", "|---")):
            continue
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        if len(cells) < 7 or not cells[0].isdigit():
            continue
        _, cid, command, rc, secs, message, verdict = cells[:7]
        cid = cid.replace("\\|", "|")
        rows[cid] = dict(id=cid, command=command.strip("`"), rc=None if rc == "timeout" else rc,
                         seconds=float(secs), message=message.replace("\\|", "|"),
                         verdict=verdict, expect="", words="", out="", err="")
    return rows


_LOG_LOCK = __import__("threading").Lock()


def _run_logged(case, fixtures, work, log):
    """`run_case`, its outcome appended to the JSON-lines file `log` (when given) as it ends."""
    r = run_case(case, fixtures, work)
    if log is not None:
        import json

        with _LOG_LOCK, open(log, "a") as fh:
            fh.write(json.dumps(r) + "\n")
    return r


def _read_log(log: Path) -> dict:
    """{case id: outcome} of a run's JSON-lines log (`--log`): an interrupted run goes on there."""
    import json

    if not log.exists():
        return {}
    out = {}
    for line in log.read_text().splitlines():
        try:
            r = json.loads(line)
        except ValueError:  # a line cut by the interruption
            continue
        out[r["id"]] = r
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2, help="cases run at a time")
    ap.add_argument("--only", default=None, help="run the cases whose id contains this")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "reliability.md",
                    help="where to write the table (nothing is written with --only, unless "
                         "--results holds the other cases)")
    ap.add_argument("--results", type=Path, default=None,
                    help="JSON file of every case's outcome: written after a run; with --only, "
                         "the cases not rerun are taken from it and the table is rewritten")
    ap.add_argument("--reuse-table", type=Path, default=None, metavar="MD",
                    help="take the outcome of every case listed in this table (a previous "
                         "run's docs/reliability.md) from it and run only the others (and those "
                         "matching --only); the table is rewritten")
    ap.add_argument("--log", type=Path, default=None, metavar="JSONL",
                    help="append each case's outcome to this file as it ends; a rerun with the "
                         "same file runs only the cases it lacks (an interrupted run goes on)")
    ap.add_argument("--timeout", type=float, default=TIMEOUT,
                    help="seconds a case may take before it counts as a hang (raise it on a "
                         "loaded machine: a case's wall time grows with the load)")
    args = ap.parse_args(argv)
    globals()["TIMEOUT"] = args.timeout
    old_rows = read_table(args.reuse_table) if args.reuse_table else {}
    cases = [c for c in CASES if (args.only is None or args.only in c[0])
             and (c[0] not in old_rows or args.only is not None)]
    ids = [c[0] for c in CASES]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise SystemExit(f"duplicate case ids: {dup}")
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="inertia-bad-") as tmp:
        tmp = Path(tmp)
        fixtures = make_fixtures(tmp)
        work = tmp / "homes"
        work.mkdir()
        # slow cases first, so the fast argument errors fill the gaps
        done = _read_log(args.log) if args.log is not None else {}
        # the newest cases first, then the slow ones, so the fast argument errors fill the gaps
        newest = {c[0] for c in DATA_FILE_CASES}
        order = sorted((i for i in range(len(cases)) if cases[i][0] not in done),
                       key=lambda i: (cases[i][0] not in newest,
                                      cases[i][1] not in ("interrupt", "py")))
        with cf.ThreadPoolExecutor(args.jobs) as pool:
            futs = {i: pool.submit(_run_logged, cases[i], fixtures, work, args.log) for i in order}
            results = []
            for i in range(len(cases)):
                r = done[cases[i][0]] if cases[i][0] in done else futs[i].result()
                c = cases[i]  # judged by the case as it stands (a logged outcome, too)
                r = dict(r, expect=c[3], note=c[4], words=c[5] if len(c) > 5 else "")
                results.append(r)
                verdict, msg = judge(r)
                print(f"{verdict:>20}  {r['seconds']:5.1f}s  {r['id']}: {msg[:110]}", flush=True)
    seconds = time.perf_counter() - t0
    merged = args.only is not None and args.results is not None and args.results.exists()
    if merged:
        import json

        saved = json.loads(args.results.read_text())
        new = {r["id"]: r for r in results}
        old = {r["id"]: r for r in saved["results"]}
        results = [dict(new.get(c[0]) or old[c[0]], expect=c[3], note=c[4],
                        words=c[5] if len(c) > 5 else "") for c in CASES]
        seconds = saved["seconds"]
    if old_rows:
        new = {r["id"]: r for r in results}
        results = [new.get(c[0]) or dict(old_rows[c[0]], kind=c[1], note=c[4]) for c in CASES]
        results.sort(key=lambda r: "verdict" not in r)  # the previous run's cases first
        seconds = time.perf_counter() - t0
    if args.results is not None:
        import json

        args.results.write_text(json.dumps({"seconds": seconds, "results": results}))
    if args.only is None or merged or old_rows:
        write_table(results, args.out, seconds, args.jobs)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
