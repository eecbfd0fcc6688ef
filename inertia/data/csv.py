"""A user's CSV file as numeric columns, one reader for `inertia fit`, `sample` and `calibrate`.

`read_table` parses and checks the file (encodings, separators, missing cells: docs/guide.md);
`read_csv` adds a response column and scale checks; `load_csv` is the GLMs' binary regression data set.
"""
from __future__ import annotations

import csv
import difflib
import io
import math
import warnings
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .datasets import Dataset, DatasetError

DELIMITERS = (",", ";", "\t")
MISSING = frozenset({"", "na", "n/a", "nan", "-nan", "null", "none", "?", "#n/a", "missing"})
_SNIFF_LINES = 50


class Table(NamedTuple):
    """Parsed CSV: names, values (rows, columns) float64, each kept row's file line, rows dropped."""

    names: list
    values: np.ndarray
    lines: np.ndarray
    dropped: int


def _text(path: Path) -> str:
    if not path.exists():
        raise DatasetError(f"no such CSV file: {path}")
    if path.is_dir():
        raise DatasetError(f"{path} is a folder, not a CSV file")
    raw = path.read_bytes()
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return raw.decode("utf-16")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise DatasetError(f"{path} is not UTF-8 text (byte 0x{raw[err.start]:02x} at offset "
                           f"{err.start}); save it as 'CSV UTF-8'") from None


def _delimiter(lines: list) -> str:
    """The separator that splits the header into most alike sniffed rows (then most columns; `,` `;` tab)."""
    best, best_key = ",", None
    for rank, d in enumerate(DELIMITERS):
        try:
            rows = [r for r in csv.reader(lines, delimiter=d, skipinitialspace=True) if r]
        except csv.Error:  # a field over the csv module's limit: not this separator
            continue
        if not rows:
            continue
        width = len(rows[0])
        alike = sum(len(r) == width for r in rows) / len(rows)
        key = (width > 1, alike, width, -rank)
        if best_key is None or key > best_key:
            best, best_key = d, key
    return best


def _number(cell: str, decimal_comma: bool):
    """float(cell), or None when it is not a number."""
    try:
        return float(cell)
    except ValueError:
        if decimal_comma and cell.count(",") == 1:
            try:
                return float(cell.replace(",", "."))
            except ValueError:
                return None
        return None


def read_table(path, *, drop_missing: bool = False) -> Table:
    """Every column of a CSV file with a header row, as float64 (see the module docstring)."""
    path = Path(path)
    text = _text(path)
    lines = text.splitlines()
    if not any(ln.strip() for ln in lines):
        raise DatasetError(f"{path}: the file is empty")
    delim = _delimiter([ln for ln in lines if ln.strip()][:_SNIFF_LINES])
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delim, skipinitialspace=True)
    header, rows, where = None, [], []
    try:
        for row in reader:
            if not any(c.strip() for c in row):
                continue
            if header is None:
                header = [c.strip() for c in row]
                first_line = reader.line_num
                continue
            rows.append([c.strip() for c in row])
            where.append(reader.line_num)
    except csv.Error as err:  # e.g. a cell longer than the csv module's limit
        raise DatasetError(f"{path}: line {reader.line_num + 1} cannot be read as CSV ({err}; "
                           f"separator {_shown(delim)}); check the separator and the quotes")\
            from None
    _check_header(path, header, first_line)
    if not rows:
        raise DatasetError(f"{path}: no data rows after the header")
    p = len(header)
    values = np.empty((len(rows), p))
    missing = np.zeros((len(rows), p), dtype=bool)
    for i, (row, line) in enumerate(zip(rows, where)):
        if len(row) != p:
            raise DatasetError(f"{path}: line {line} has {len(row)} cells, the header {p} "
                               f"(separator {_shown(delim)})")
        for j, cell in enumerate(row):
            if cell.lower() in MISSING:
                missing[i, j] = True
                values[i, j] = np.nan
                continue
            v = _number(cell, delim == ";")
            if v is None:
                raise DatasetError(f"{path}: line {line}, column {header[j]!r}: {cell!r} is not a "
                                   "number; encode categories and labels as numbers first")
            values[i, j] = v
    bad = missing | ~np.isfinite(values)
    lines_arr = np.asarray(where)
    dropped = 0
    if bad.any():
        i, j = np.argwhere(bad)[0]
        rows_bad = np.flatnonzero(bad.any(axis=1))
        if not drop_missing:
            cell = rows[i][j]
            what = ("an empty cell" if not cell else f"{cell!r} (a missing value)" if missing[i, j]
                    else f"{cell!r} (not finite)")
            raise DatasetError(
                f"{path}: line {lines_arr[i]}, column {header[j]!r}: {what}; {int(bad.sum())} "
                f"cell(s) in {rows_bad.size} row(s) are missing or not finite (columns "
                f"{[header[k] for k in np.flatnonzero(bad.any(axis=0))]}). Fill them in, or drop "
                "those rows with --drop-missing (drop_missing=True)")
        keep = ~bad.any(axis=1)
        if not keep.any():
            raise DatasetError(f"{path}: every data row has a missing or non-finite cell; "
                               "nothing is left after dropping them")
        dropped = int(rows_bad.size)
        shown = ", ".join(str(v) for v in lines_arr[rows_bad[:5]]) + (", ..." if dropped > 5
                                                                      else "")
        warnings.warn(f"{path}: dropped {dropped} of {len(rows)} data rows with missing or "
                      f"non-finite cells (lines {shown}); {int(keep.sum())} rows remain",
                      UserWarning, stacklevel=2)
        values, lines_arr = values[keep], lines_arr[keep]
    return Table(header, values, lines_arr, dropped)


def first_bad_row(path):
    """"line N has k cells, the header m" for the first ragged row of a comma-separated file, or None."""
    with open(path, newline="", encoding="utf-8-sig", errors="replace") as fh:
        reader = csv.reader(fh)
        width = None
        try:
            for row in reader:
                if not any(c.strip() for c in row):
                    continue
                if width is None:
                    width = len(row)
                elif len(row) != width:
                    return f"line {reader.line_num} has {len(row)} cells, the header {width}"
        except csv.Error as err:
            return f"line {reader.line_num}: {err}"
    return None


def _shown(delim: str) -> str:
    return "tab" if delim == "\t" else repr(delim)


def _check_header(path, header, line):
    if header is None:
        raise DatasetError(f"{path}: the file is empty")
    for j, name in enumerate(header):
        if not name:
            raise DatasetError(f"{path}: column {j + 1} of the header (line {line}) has no name; "
                               "every column needs a name")
    seen = {}
    for j, name in enumerate(header):
        if name in seen:
            raise DatasetError(f"{path}: column name {name!r} appears twice in the header "
                               f"(columns {seen[name] + 1} and {j + 1}); rename one")
        seen[name] = j
    if all(_number(h, False) is not None for h in header):
        raise DatasetError(f"{path}: the first line ({', '.join(header[:4])}"
                           f"{', ...' if len(header) > 4 else ''}) holds numbers, not column "
                           "names; add a header row")


def read_columns(path, *, drop_missing: bool = False) -> dict:
    """{column name: float64 array} of a CSV file (the data of a model file)."""
    t = read_table(path, drop_missing=drop_missing)
    return {n: np.ascontiguousarray(t.values[:, j]) for j, n in enumerate(t.names)}


def check_scale(x, name: str, path) -> None:
    """DatasetError when a column's centred squares overflow or underflow float64."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        c = x - np.mean(x)
        ss = float(np.sum(c * c))
    big = float(np.max(np.abs(x)))
    if not math.isfinite(ss) or not math.isfinite(float(np.mean(x))):
        k = int(math.floor(math.log10(big)))
        raise DatasetError(f"{path}: column {name!r} has values as large as {big:.3g}, whose "
                           f"squares overflow float64; rescale it (e.g. divide by 1e{k})")
    if ss < np.finfo(np.float64).tiny and np.ptp(x) > 0:
        k = -int(math.floor(math.log10(float(np.max(np.abs(c))))))
        raise DatasetError(f"{path}: column {name!r} varies only by about {np.ptp(x):.3g}, whose "
                           f"squares underflow float64; rescale it (e.g. multiply by 1e{k})")


def _response_column(path, names, response):
    if response is None:
        raise DatasetError(f"{path}: name the response column (--response); columns are {names}")
    if response in names:
        return names.index(response)
    near = [n for n in names if n.lower() == str(response).lower()] or difflib.get_close_matches(
        str(response), names, n=1)
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    raise DatasetError(f"{path}: no column {response!r}{hint}; columns are {names}")


def read_csv(path, *, response=None, drop_missing: bool = False):
    """(X (n, p), y (n,), predictor names) from a CSV; constant or out-of-scale predictors refused."""
    t = read_table(path, drop_missing=drop_missing)
    j = _response_column(path, t.names, response)
    names = [n for k, n in enumerate(t.names) if k != j]
    if not names:
        raise DatasetError(f"{path}: no predictor columns besides {response!r}")
    X, y = np.delete(t.values, j, axis=1), t.values[:, j]
    if X.shape[0] > 1 and X.shape[1]:  # whole-array tests: fast for any number of columns
        flat = np.flatnonzero(np.ptp(X, axis=0) == 0)
        if flat.size:
            k = int(flat[0])
            raise DatasetError(f"{path}: predictor column {names[k]!r} is constant ({X[0, k]:g} "
                               "in every row): it adds nothing to the intercept; remove it")
    with np.errstate(all="ignore"):
        c = t.values - t.values.mean(axis=0)
        ss = np.sum(c * c, axis=0)
        suspect = ~np.isfinite(ss) | (ss < np.finfo(np.float64).tiny)
    for k in np.flatnonzero(suspect):  # the per-column test names the column and the scale
        check_scale(t.values[:, k], t.names[k], path)
    return np.ascontiguousarray(X), np.ascontiguousarray(y), names


def binary_response(y, response: str, path) -> np.ndarray:
    """y as 0/1 (the larger of its two values is 1); DatasetError unless it takes exactly two."""
    values = np.unique(y)
    if values.size == 1:
        raise DatasetError(f"{path}: response {response!r} is {values[0]:g} in every row; a "
                           "binary regression needs rows of both classes")
    if values.size != 2:
        shown = ", ".join(f"{v:g}" for v in values[:5]) + (", ..." if values.size > 5 else "")
        raise DatasetError(f"{path}: response {response!r} must take exactly two values for a "
                           f"binary regression; it takes {values.size} ({shown})")
    return (np.asarray(y) == values[1]).astype(np.float64)


def load_csv(path, response: str, *, standardize: bool = True,
             drop_missing: bool = False) -> Dataset:
    """Dataset from a CSV: standardised predictors, y in {0, 1} from `response`'s two values (larger is 1)."""
    X, y_raw, names = read_csv(path, response=response, drop_missing=drop_missing)
    y = binary_response(y_raw, response, path)
    if X.shape[0] < 2:
        raise DatasetError(f"{path}: needs at least two data rows")
    if standardize:
        X = (X - X.mean(axis=0)) / X.std(axis=0, ddof=0)
    return Dataset(Path(path).stem, np.ascontiguousarray(X), y, names, response)


__all__ = ["Table", "read_table", "first_bad_row", "read_columns", "read_csv", "load_csv", "binary_response",
           "check_scale"]
