"""Copy what the public suite needs out of a posteriordb checkout: the data sets (gzipped JSON,
data/<data name>.json.gz) and per posterior with reference draws the reference means and sds of
its parameters plus 200 of its reference draws (reference/<posterior>.npz).

posteriordb (github.com/stan-dev/posteriordb) stores reference draws as 10 chains x 1 000 draws
of the constrained parameters (posterior_database/reference_posteriors/draws/draws/*.json.zip) and
their means and mean squares (summary_statistics/mean_value, mean_squared_value); where the draws
are absent from the checkout (mcycle_gp-accel_gp is kept out of git), the means and sds come from
the summary statistics alone and no draws are stored.
Run: `python benchmarks/public/extract.py /path/to/posteriordb` (a checkout, or a bare git
directory read with `git show`).
"""
from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from catalogue import PDB_DATA_ONLY, PDB_REFERENCE  # noqa: E402

KEEP = 200  # reference draws stored per posterior (every 50th of the 10 000)
DB = "posterior_database"


class Source:
    """Files of a posteriordb checkout or bare git directory."""

    def __init__(self, path):
        self.path = Path(path)
        self.bare = not (self.path / DB).exists()

    def read(self, rel):
        if not self.bare:
            p = self.path / DB / rel
            return p.read_bytes() if p.exists() else None
        r = subprocess.run(["git", "--git-dir", str(self.path), "show", f"HEAD:{DB}/{rel}"],
                           capture_output=True)
        return r.stdout if r.returncode == 0 else None


def unzip_json(raw):
    try:
        z = zipfile.ZipFile(io.BytesIO(raw))
    except zipfile.BadZipFile:
        return None
    return json.loads(z.read(z.namelist()[0]))


def write_data(src, data_name):
    d = unzip_json(src.read(f"data/data/{data_name}.json.zip"))
    out = HERE / "data" / f"{data_name}.json.gz"
    with gzip.GzipFile(out, "wb", mtime=0) as f:
        f.write(json.dumps(d, separators=(",", ":")).encode())
    return out


def write_reference(src, posterior):
    stats = "reference_posteriors/summary_statistics"
    mv = json.loads(src.read(f"{stats}/mean_value/mean_value/{posterior}.json"))
    msv = json.loads(src.read(f"{stats}/mean_squared_value/mean_squared_value/{posterior}.json"))
    names = list(mv["names"])
    assert list(msv["names"]) == names
    mean = np.asarray(mv["mean_value"], dtype=np.float64)
    sd = np.sqrt(np.maximum(np.asarray(msv["mean_squared_value"], dtype=np.float64) - mean ** 2, 0.0))
    # posteriordb's MCSE of the mean; that of the sd taken as MCSE mean / sqrt(2) (normal draws)
    mcse = np.asarray(mv["mcse_mean"], dtype=np.float64)
    raw = src.read(f"reference_posteriors/draws/draws/{posterior}.json.zip")
    chains = unzip_json(raw) if raw is not None else None
    arrays = {"names": np.asarray(names), "mean": mean, "sd": sd, "mcse_mean": mcse,
              "mcse_sd": mcse / np.sqrt(2.0), "how": np.asarray("posteriordb reference")}
    if chains is not None:
        x = np.stack([np.stack([np.asarray(c[k], dtype=np.float64) for k in names], axis=1)
                      for c in chains])  # (chain, draw, k)
        flat = x.reshape(-1, len(names))  # every 50th of 10 000 kept
        arrays.update(draws=flat[::flat.shape[0] // KEEP][:KEEP])
    np.savez_compressed(HERE / "reference" / f"{posterior}.npz", **arrays)
    return chains is not None


def main(argv=None):
    src = Source((argv or sys.argv[1:])[0])
    datasets = sorted({p.split("-")[0] for p in PDB_REFERENCE} | set(PDB_DATA_ONLY))
    for name in datasets:
        print(name, write_data(src, name).stat().st_size, "bytes")
    for post in PDB_REFERENCE:
        print(post, "draws" if write_reference(src, post) else "summary statistics only")


if __name__ == "__main__":
    main()
