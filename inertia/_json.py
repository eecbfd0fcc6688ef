"""JSON output shared by the command line and the experiments: NumPy values as lists, NaN as null."""
from __future__ import annotations

import json
import math
from pathlib import Path
from ._io import write_text_atomic


def to_jsonable(obj):
    """obj with arrays as lists, NaN as None and infinities as "inf" / "-inf"."""
    import numpy as np

    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if hasattr(obj, "tolist") and not isinstance(obj, (str, bytes)):
        return to_jsonable(np.asarray(obj).tolist())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    return obj


def dump_json(obj, path) -> Path:
    """Write obj as JSON atomically (numpy arrays become lists, NaN becomes null); a failed
    write raises OSError."""
    return write_text_atomic(path, json.dumps(to_jsonable(obj), indent=1))


__all__ = ["to_jsonable", "dump_json"]
