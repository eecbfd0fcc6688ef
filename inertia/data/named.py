"""A data file of named arrays for a model file: Stan-style JSON, NumPy .npz, Parquet or CSV.

`read_named(path)` returns a `NamedData` dict whose values keep their kinds (docs/user-models.md);
`check_arguments(fn, name, data, model_path)` matches a model's arguments with the file's names.
"""
from __future__ import annotations

import difflib
import inspect
import json
import math
import unicodedata
from pathlib import Path

import numpy as np

from ._cache import DatasetError
from .csv import read_columns

JSON_SUFFIXES = (".json",)
NPZ_SUFFIXES = (".npz",)
PARQUET_SUFFIXES = (".parquet", ".pq")
_SPECIAL = {"nan": math.nan, "inf": math.inf, "+inf": math.inf, "infinity": math.inf,
            "+infinity": math.inf, "-inf": -math.inf, "-infinity": -math.inf}


class NamedData(dict):
    """{name: int, float or ndarray} read from `path`; `kind` is "json", "npz", "parquet" or "csv"."""

    def __init__(self, values, path, kind):
        super().__init__(values)
        self.path = Path(path)
        self.kind = kind

    @property
    def typed(self) -> bool:
        """True when the file keeps integers apart from reals (everything but CSV)."""
        return self.kind != "csv"


def _file(path: Path, what: str) -> Path:
    if not path.exists():
        raise DatasetError(f"no such {what} file: {path}")
    if path.is_dir():
        raise DatasetError(f"{path} is a folder, not a {what} file")
    return path


# --- JSON ---------------------------------------------------------------------------------

def _json_number(v, path, where):
    """A JSON leaf as a Python int or float (special reals from their Stan strings)."""
    if isinstance(v, bool):
        raise DatasetError(f"{path}: {where} is {str(v).lower()}; Stan data has no booleans, "
                           "write 1 or 0")
    if isinstance(v, int) and abs(v) > np.iinfo(np.int64).max:
        raise DatasetError(f"{path}: {where} = {v} is an integer beyond int64's range (at most "
                           f"{np.iinfo(np.int64).max}); write it as a real (e.g. {float(v):.3e}) "
                           "if it is not a count, size or index")
    if isinstance(v, float) and math.isinf(v):  # a literal beyond float64 (bare Infinity: refused)
        raise DatasetError(f"{path}: {where} is a number beyond float64's range (about 1.8e308), "
                           'which would read as infinity; rescale it, or write "Inf" if infinity '
                           "is meant")
    if isinstance(v, (int, float)):
        return v
    if isinstance(v, str) and v.strip().lower() in _SPECIAL:
        return _SPECIAL[v.strip().lower()]
    if v is None:
        raise DatasetError(f"{path}: {where} is null; a missing value has no Stan form "
                           "(write \"NaN\" for a real that is not a number)")
    raise DatasetError(f"{path}: {where} is {json.dumps(v)[:40]}, not a number")


def _json_array(v, path, name):
    """A nested list of numbers as an array (int64 if every leaf is an int, else float64)."""
    shape, leaves = [], []

    def walk(x, depth, where):
        if isinstance(x, list):
            if depth == len(shape):
                shape.append(len(x))
            elif shape[depth] != len(x):
                raise DatasetError(f"{path}: {name!r} is not rectangular: {where} has {len(x)} "
                                   f"entries where its first sibling has {shape[depth]}")
            for i, item in enumerate(x):
                walk(item, depth + 1, f"{where}[{i}]")
            return
        if depth != len(shape):
            raise DatasetError(f"{path}: {name!r} is not rectangular: {where} is a number where "
                               "a list is expected")
        leaves.append(_json_number(x, path, where))

    walk(v, 0, name)
    if len(leaves) != math.prod(shape):  # a list deeper in one branch than another
        raise DatasetError(f"{path}: {name!r} is not rectangular (its lists nest unevenly)")
    integer = bool(leaves) and all(isinstance(x, int) for x in leaves)
    if integer:  # every leaf within int64 (`_json_number`)
        return np.asarray(leaves, dtype=np.int64).reshape(shape)
    return np.asarray(leaves, dtype=np.float64).reshape(shape)


def _json_value(v, path, name):
    if isinstance(v, dict):
        return {k: _json_value(x, path, f"{name}.{k}") for k, x in v.items()}
    if isinstance(v, list):
        return _json_array(v, path, name)
    return _json_number(v, path, repr(name))


def _json_object(pairs):
    """A JSON object's (key, value) pairs as a dict; a key given twice raises (as Stan and CmdStan)."""
    out = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


class _DuplicateKey(ValueError):
    pass


def _json_constant(token):
    """Python's json accepts bare NaN, Infinity and -Infinity; JSON (and Stan) do not."""
    raise _BareConstant(token)


class _BareConstant(ValueError):
    pass


def python_name(key: str) -> str:
    """`key` as Python spells an identifier (NFKC-normalised)."""
    return unicodedata.normalize("NFKC", key)


def _python_names(values: dict, path) -> dict:
    """{python_name(k): v}; two keys that become one name raise DatasetError."""
    out = {}
    for k, v in values.items():
        n = python_name(k)
        if n in out:
            raise DatasetError(f"{path}: entries {k!r} and another spelling of {n!r} name the "
                               "same argument once Unicode-normalised (NFKC, as Python normalises "
                               "identifiers); keep one of them")
        out[n] = v
    return out


def read_json(path) -> NamedData:
    """{name: value} of a Stan data-JSON file; a syntax error names the file, line and column."""
    path = _file(Path(path), "JSON")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise DatasetError(f"{path} is not UTF-8 text (byte offset {err.start})") from None
    try:
        obj = json.loads(text, object_pairs_hook=_json_object, parse_constant=_json_constant)
    except json.JSONDecodeError as err:
        raise DatasetError(f"{path}: not valid JSON at line {err.lineno}, column {err.colno}: "
                           f"{err.msg}") from None
    except _DuplicateKey as err:
        raise DatasetError(f"{path}: the key {err.args[0]!r} appears twice in one object; JSON "
                           "readers differ on which copy counts (Stan refuses it): keep one") from None
    except _BareConstant as err:
        raise DatasetError(f"{path}: a bare {err.args[0]} is not JSON; write it as a string, "
                           f'"{err.args[0]}" (Stan\'s special reals: "NaN", "Inf", "-Inf")') from None
    if not isinstance(obj, dict):
        raise DatasetError(f"{path}: the file holds a JSON {type(obj).__name__}; data is a JSON "
                           'object of named entries, e.g. {"N": 3, "y": [1.5, 2.0, 0.1]}')
    return NamedData(_python_names({k: _json_value(v, path, k) for k, v in obj.items()}, path),
                     path, "json")


# --- npz, Parquet, CSV --------------------------------------------------------------------

def _npz_value(a: np.ndarray, path, name):
    if a.dtype.kind in "iub":
        return a.item() if a.ndim == 0 else np.ascontiguousarray(a)
    if a.dtype.kind == "f":
        return float(a) if a.ndim == 0 else np.ascontiguousarray(a, dtype=np.float64)
    raise DatasetError(f"{path}: array {name!r} has dtype {a.dtype}; store numbers (integers or "
                       "reals)")


def read_npz(path) -> NamedData:
    """{name: value} of a NumPy .npz archive (see the module docstring)."""
    path = _file(Path(path), ".npz")
    try:
        with np.load(path, allow_pickle=False) as z:
            return NamedData(_python_names({k: _npz_value(z[k], path, k) for k in z.files}, path),
                             path, "npz")
    except DatasetError:
        raise
    except ValueError as err:
        if "pickle" in str(err):
            raise DatasetError(f"{path}: holds Python objects (pickled); store numeric arrays "
                               "only") from None
        raise DatasetError(f"{path}: not a readable .npz archive ({err})") from None
    except (OSError, EOFError) as err:
        raise DatasetError(f"{path}: not a readable .npz archive ({err})") from None


def read_parquet(path) -> NamedData:
    """{column: array} of a Parquet file: integer columns int64, numeric others float64."""
    path = _file(Path(path), "Parquet")
    try:
        import pyarrow.parquet as pq
    except ImportError as err:
        raise ImportError("reading Parquet needs pyarrow: pip install 'inertia[large]' (or "
                          "pip install pyarrow)") from err
    try:
        table = pq.read_table(path)
    except Exception as err:  # pyarrow's ArrowInvalid and OS errors
        raise DatasetError(f"{path}: not a readable Parquet file ({err})") from None
    out = {}
    for name, col in zip(table.column_names, table.columns):
        if col.null_count:
            raise DatasetError(f"{path}: column {name!r} has {col.null_count} missing value(s); "
                               "fill them in or drop those rows")
        a = col.to_numpy()
        if a.dtype.kind in "iub":
            out[name] = a.astype(np.int64) if a.dtype.kind != "b" else a
        elif a.dtype.kind == "f":
            out[name] = a.astype(np.float64)
        else:
            raise DatasetError(f"{path}: column {name!r} holds {col.type}, not numbers; encode "
                               "it as numbers first")
    return NamedData(_python_names(out, path), path, "parquet")


def read_named(path, *, drop_missing: bool = False) -> NamedData:
    """The named arrays of a data file, by its suffix: .json, .npz, .parquet/.pq, else CSV."""
    suffix = Path(path).suffix.lower()
    if suffix in JSON_SUFFIXES:
        return read_json(path)
    if suffix in NPZ_SUFFIXES:
        return read_npz(path)
    if suffix in PARQUET_SUFFIXES:
        return read_parquet(path)
    return NamedData(_python_names(read_columns(path, drop_missing=drop_missing), path), path,
                     "csv")


def model_data(data) -> dict:
    """The keyword arguments a model file receives: typed values as read, CSV columns as float64 arrays."""
    if isinstance(data, NamedData) and data.typed:
        return dict(data)
    return {k: np.asarray(v, dtype=np.float64) for k, v in (data or {}).items()}


# --- matching a model's arguments ----------------------------------------------------------

def _near(name, names):
    near = ([n for n in names if n.lower() == name.lower()]
            or difflib.get_close_matches(name, names, n=1))
    return f" (did you mean {near[0]!r}?)" if near else ""


def check_arguments(fn, name: str, data, model_path) -> None:
    """DatasetError naming arguments of `fn` the typed data file lacks and arrays `fn` does not take."""
    if not (isinstance(data, NamedData) and data.typed):
        return
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    kinds = {k: v.kind for k, v in sig.parameters.items()}
    takes_any = inspect.Parameter.VAR_KEYWORD in kinds.values()
    params = [k for k, v in kinds.items() if v in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                   inspect.Parameter.KEYWORD_ONLY)]
    required = [k for k in params if sig.parameters[k].default is inspect.Parameter.empty]
    missing = [k for k in required if k not in data]
    extra = [] if takes_any else [k for k in data if k not in params]
    if not missing and not extra:
        return
    held = list(data)
    parts = []
    if missing:
        parts.append(f"{name} needs {', '.join(repr(k) + _near(k, held) for k in missing)}, which "
                     f"{data.path.name} lacks")
    if extra:
        parts.append(f"{data.path.name} holds {', '.join(repr(k) for k in extra)}, which {name} "
                     "does not take")
    raise DatasetError(f"{model_path}: {'; '.join(parts)} (arguments of {name}: {params}; "
                       f"entries of {data.path}: {held}). The model is called as "
                       f"{name}(**data): every entry is passed by name")


__all__ = ["NamedData", "read_named", "read_json", "read_npz", "read_parquet", "model_data",
           "check_arguments", "python_name"]
