"""A user's CSV as a regression data set: numeric predictors, a binary response column."""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from .datasets import Dataset, DatasetError, standardize_predictors


def read_columns(path) -> dict:
    """{column name: float array} of a CSV file with a header row; non-numeric cells are named."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"no such CSV file: {path}")
    with path.open(newline="") as fh:
        rows = list(csv.reader(fh))
    if len(rows) < 2:
        raise DatasetError(f"{path}: needs a header row and at least one data row")
    header, body = [h.strip() for h in rows[0]], rows[1:]
    if len(set(header)) != len(header) or any(not h for h in header):
        raise DatasetError(f"{path}: column names must be present and distinct; got {header}")
    cols = {}
    for j, name in enumerate(header):
        vals = []
        for i, row in enumerate(body):
            if len(row) != len(header):
                raise DatasetError(f"{path}: row {i + 2} has {len(row)} cells, the header "
                                   f"{len(header)}")
            try:
                vals.append(float(row[j]))
            except ValueError:
                raise DatasetError(f"{path}: column {name!r} is not numeric (row {i + 2}: "
                                   f"{row[j]!r}); encode it as numbers first") from None
        cols[name] = np.asarray(vals)
    return cols


def load_csv(path, response: str, *, standardize: bool = True) -> Dataset:
    """Dataset from a CSV: predictors = every other column (spec §9.2 standardisation), y in {0, 1}
    from the two values of `response` (the larger value is 1)."""
    cols = read_columns(path)
    if response is None:
        raise DatasetError(f"{path}: name the response column (--response); columns are "
                           f"{list(cols)}")
    if response not in cols:
        raise DatasetError(f"{path}: no column {response!r}; columns are {list(cols)}")
    y_raw = cols.pop(response)
    if not cols:
        raise DatasetError(f"{path}: no predictor columns besides {response!r}")
    values = np.unique(y_raw)
    if values.size != 2:
        raise DatasetError(f"{path}: response {response!r} must take exactly two values for a "
                           f"binary regression; it takes {values.size}")
    y = (y_raw == values[1]).astype(np.float64)
    names = list(cols)
    X = np.column_stack([cols[n] for n in names])
    if X.shape[0] < 2:
        raise DatasetError(f"{path}: needs at least two data rows")
    if standardize:
        X, names = standardize_predictors(X, names)
        if X.shape[1] == 0:
            raise DatasetError(f"{path}: every predictor is constant")
    return Dataset(Path(path).stem, np.ascontiguousarray(X), y, names, response)


__all__ = ["read_columns", "load_csv"]
