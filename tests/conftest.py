"""Test-wide setup: float64 via `import inertia`, and the dataset cache beside the repository."""
import os
import tempfile
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads: BLAS spin slows XLA

import inertia  # noqa: E402,F401  (enables float64)

_CACHE = Path(__file__).resolve().parents[1].parent / "shared" / "data"
if _CACHE.is_dir():
    os.environ.setdefault("INERTIA_DATA_DIR", str(_CACHE))
os.environ.setdefault("INERTIA_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
# CLI runs inside tests keep XLA's persistent cache out of the user's home
os.environ.setdefault("INERTIA_JAX_CACHE", os.path.join(tempfile.gettempdir(), "inertia-test-jax"))
