"""Row sources for data larger than memory: in-memory arrays, memory-mapped .npy, Parquet and CSV.

A source is N rows of X (N, p) and y (N,), read in blocks (`blocks(chunk)`) and by index (`take(idx)`);
Parquet and CSV are copied once to a memory-mapped .npy scratch file (docs/sgmcmc.md).
"""
from __future__ import annotations

import os
import tempfile
import weakref
from pathlib import Path
from typing import Iterator, Optional, Sequence, Tuple, Union

import numpy as np

Block = Tuple[int, np.ndarray, np.ndarray]


def _take_rows(A: np.ndarray, idx: np.ndarray, out: Optional[np.ndarray] = None) -> np.ndarray:
    """A[idx] for a 2-D array, one record copy per row, into `out` when given."""
    if A.flags.c_contiguous and A.shape[1]:
        rec = np.dtype((np.void, A.shape[1] * A.dtype.itemsize))
        recs = A.reshape(-1).view(rec)
        if out is not None and out.dtype == A.dtype:
            np.take(recs, idx, out=out.reshape(-1).view(rec), mode=_mode(idx, A.shape[0]))
            return out
        rows = np.take(recs, idx).view(A.dtype).reshape(idx.size, A.shape[1])
    else:
        rows = A[idx]
    if out is None:
        return rows
    out[...] = rows
    return out


def _mode(idx: np.ndarray, n: int) -> str:
    """np.take's mode: "clip" when every index is in [0, n) (no buffered copy), else "raise"."""
    return "clip" if idx.size == 0 or (idx.min() >= 0 and idx.max() < n) else "raise"


def _stored(X) -> np.ndarray:
    """X as float32 or float64 without a copy when it already is one of them, else float64."""
    X = np.asarray(X)
    return X if X.dtype in (np.float32, np.float64) else np.asarray(X, np.float64)


def as_rows(X, y):
    """X (N, p) and y (N,) as float64 arrays (no copy when they already are), shapes checked."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64).ravel()
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array (N, p); got shape {X.shape}")
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} entries")
    return X, y


class ArraySource:
    """Rows of in-memory arrays X (N, p) (float32/float64 kept as given) and y (N,) float64."""

    def __init__(self, X, y, names: Optional[Sequence[str]] = None):
        X = _stored(X)
        if X.ndim != 2:
            raise ValueError(f"X must be a 2-D array (N, p); got shape {X.shape}")
        _, self.y = as_rows(np.empty((X.shape[0], 0)), y)  # y as float64, lengths checked
        self.X = X
        self.names = list(names) if names is not None else [f"x{i}" for i in range(X.shape[1])]

    @property
    def num_rows(self) -> int:
        return self.X.shape[0]

    @property
    def num_cols(self) -> int:
        return self.X.shape[1]

    @property
    def nbytes(self) -> int:
        return self.X.nbytes + self.y.nbytes

    def blocks(self, chunk: int, start: int = 0, stop: Optional[int] = None) -> Iterator[Block]:
        """(first row, X block, y block) for consecutive blocks of `chunk` rows in [start, stop)."""
        stop = self.num_rows if stop is None else stop
        for s in range(start, stop, chunk):
            e = min(s + chunk, stop)
            yield s, np.asarray(self.X[s:e], np.float64), np.asarray(self.y[s:e], np.float64)

    def take(self, idx, out=None) -> Tuple[np.ndarray, np.ndarray]:
        """(X[idx], y[idx]) as float64 arrays (idx of any shape), into `out` when given."""
        idx = np.asarray(idx)
        flat = idx.ravel()
        Xo, yo = (None, None) if out is None else (out[0].reshape(flat.size, self.num_cols),
                                                    out[1].reshape(-1))
        X = np.asarray(_take_rows(self.X, flat, Xo), np.float64)
        y = np.take(self.y, flat, out=yo, mode=_mode(flat, self.num_rows))
        return X.reshape(idx.shape + (self.num_cols,)), y.reshape(idx.shape)


class NpySource(ArraySource):
    """A 2-D .npy file memory-mapped read-only; column `response` (name index or int) is y."""

    def __init__(self, path, response: Union[int, str] = -1, names: Optional[Sequence[str]] = None):
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no such .npy file: {path}")
        A = np.load(path, mmap_mode="r")
        if A.ndim != 2 or A.shape[1] < 2:
            raise ValueError(f"{path}: need a 2-D array with a response column and at least one "
                             f"predictor; got shape {A.shape}")
        cols = list(names) if names is not None else [f"x{i}" for i in range(A.shape[1])]
        j = _column_index(response, cols, path)
        self.path, self.A, self.response = path, A, j
        self._pred = [i for i in range(A.shape[1]) if i != j]
        self._contiguous = self._pred == list(range(len(self._pred)))  # y is the last column
        self.names = [cols[i] for i in self._pred]

    @property
    def num_rows(self) -> int:
        return self.A.shape[0]

    @property
    def num_cols(self) -> int:
        return self.A.shape[1] - 1

    @property
    def nbytes(self) -> int:
        return self.A.nbytes

    def _split(self, rows: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        if self._contiguous:
            X = rows[..., :-1]
        else:
            X = rows[..., self._pred]
        return np.asarray(X, np.float64), np.asarray(rows[..., self.response], np.float64)

    def blocks(self, chunk: int, start: int = 0, stop: Optional[int] = None) -> Iterator[Block]:
        stop = self.num_rows if stop is None else stop
        for s in range(start, stop, chunk):
            e = min(s + chunk, stop)
            X, y = self._split(self.A[s:e])
            yield s, X, y

    def take(self, idx, out=None) -> Tuple[np.ndarray, np.ndarray]:
        idx = np.asarray(idx)
        rows = _take_rows(self.A, idx.ravel())
        if out is None:
            X, y = self._split(rows)
        else:  # converted to float64 as they are written
            X, y = out
            X.reshape(rows.shape[0], self.num_cols)[...] = (
                rows[:, :-1] if self._contiguous else rows[:, self._pred])
            y.reshape(-1)[...] = rows[:, self.response]
        return X.reshape(idx.shape + (self.num_cols,)), y.reshape(idx.shape)


def _column_index(response, cols, path) -> int:
    if isinstance(response, (int, np.integer)):
        j = int(response)
        if not -len(cols) <= j < len(cols):
            raise ValueError(f"{path}: response column {j} out of range for {len(cols)} columns")
        return j % len(cols)
    try:
        return int(response)
    except ValueError:
        pass
    if response not in cols:
        raise ValueError(f"{path}: no response column {response!r}; columns are {cols}")
    return cols.index(response)


def _numeric_block(batch, preds, response, path, dtype, row):
    import pyarrow as pa

    cols = []
    for c in preds + [response]:
        col = batch.column(batch.schema.get_field_index(c))
        if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)
                or pa.types.is_boolean(col.type)):
            raise ValueError(f"{path}: column {c!r} is not numeric ({col.type}); encode "
                             "categories as numbers")
        if col.null_count:
            raise ValueError(f"{path}: column {c!r} has missing values")
        cols.append(col.to_numpy(zero_copy_only=False).astype(dtype, copy=False))
    block = np.stack(cols, axis=1)
    if not np.all(np.isfinite(block)):
        raise ValueError(f"{path}: non-finite values (NaN/inf) near row {row}")
    return block


def _columns(names, response, path):
    if response not in names:
        raise ValueError(f"{path}: no response column {response!r}; columns are {list(names)}")
    preds = [c for c in names if c != response]
    if not preds:
        raise ValueError(f"{path}: no predictor columns besides {response!r}")
    return preds


def _scratch(cache_dir) -> Path:
    cache = Path(cache_dir) if cache_dir is not None else Path(tempfile.gettempdir())
    cache.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(suffix=".npy", prefix="inertia-rows-", dir=cache)
    os.close(fd)
    return Path(name)


def _spill_known(batches, names, num_rows, path, response, cache_dir, dtype) -> NpySource:
    """Write record batches of a file with a known row count straight into a memory-mapped .npy."""
    preds = _columns(names, response, path)
    out = _scratch(cache_dir)
    arr = np.lib.format.open_memmap(out, mode="w+", dtype=dtype, shape=(num_rows, len(preds) + 1))
    row = 0
    for batch in batches:
        block = _numeric_block(batch, preds, response, path, dtype, row)
        arr[row:row + block.shape[0]] = block
        row += block.shape[0]
    arr.flush()
    del arr
    return _scratch_source(out, preds + [response])


def _scratch_source(path: Path, names) -> NpySource:
    """A NpySource over a scratch file that is deleted with the source."""
    src = NpySource(path, -1, names=names)
    weakref.finalize(src, _unlink, str(path))
    return src


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _spill_stream(batches, path, response, cache_dir, dtype) -> NpySource:
    """Write record batches of unknown total length to raw rows, then to a memory-mapped .npy."""
    preds, count = None, 0
    raw = _scratch(cache_dir).with_suffix(".rows")
    with open(raw, "wb") as fh:
        for batch in batches:
            if preds is None:
                preds = _columns(batch.schema.names, response, path)
            block = _numeric_block(batch, preds, response, path, dtype, count)
            fh.write(np.ascontiguousarray(block).tobytes())
            count += block.shape[0]
    if not count:
        raw.unlink()
        raise ValueError(f"{path}: no data rows")
    out = raw.with_suffix(".npy")
    width = len(preds) + 1
    arr = np.lib.format.open_memmap(out, mode="w+", dtype=dtype, shape=(count, width))
    step = max(1, (1 << 24) // (width * np.dtype(dtype).itemsize))
    with open(raw, "rb") as fh:
        for s in range(0, count, step):
            e = min(s + step, count)
            arr[s:e] = np.frombuffer(fh.read((e - s) * width * np.dtype(dtype).itemsize),
                                     dtype).reshape(e - s, width)
    arr.flush()
    del arr
    raw.unlink()
    return _scratch_source(out, preds + [response])


def parquet_source(path, response: str, *, cache_dir=None, dtype=np.float64,
                   batch_rows: int = 1 << 16) -> NpySource:
    """A Parquet file read in row groups (pyarrow), spilled to a memory-mapped .npy."""
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    if pf.metadata.num_rows == 0:
        raise ValueError(f"{path}: no data rows")
    return _spill_known(pf.iter_batches(batch_size=batch_rows), pf.schema_arrow.names,
                        pf.metadata.num_rows, Path(path), response, cache_dir, dtype)


def csv_source(path, response: str, *, cache_dir=None, dtype=np.float64,
               block_bytes: int = 1 << 24) -> NpySource:
    """A CSV file with a header row read in blocks (pyarrow's streaming reader), spilled to .npy."""
    import pyarrow.csv as pcsv

    import pyarrow as pa

    try:
        reader = pcsv.open_csv(path, read_options=pcsv.ReadOptions(block_size=block_bytes))
        return _spill_stream(reader, Path(path), response, cache_dir, dtype)
    except pa.ArrowInvalid as err:  # pyarrow's parse errors name neither the file nor the line
        from .csv import first_bad_row

        where = first_bad_row(path)
        raise ValueError(f"{path}: {where or ' '.join(str(err).split())[:300]}") from None


def open_source(path, response=None, *, cache_dir=None, dtype=np.float64):
    """A row source for a .npy (memory-mapped), .parquet / .pq or .csv file."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such data file: {path}")
    suffix = "".join(path.suffixes[-1:]).lower()
    if suffix == ".npy":
        return NpySource(path, -1 if response is None else response)
    if response is None:
        raise ValueError(f"{path}: name the response column")
    if suffix in (".parquet", ".pq"):
        return parquet_source(path, response, cache_dir=cache_dir, dtype=dtype)
    if suffix == ".csv":
        return csv_source(path, response, cache_dir=cache_dir, dtype=dtype)
    raise ValueError(f"{path}: unknown data file type {suffix!r}; use .npy, .parquet or .csv")


def is_source(obj) -> bool:
    """Whether `obj` is a row source (has blocks, take and num_rows)."""
    return all(hasattr(obj, a) for a in ("blocks", "take", "num_rows", "num_cols"))


__all__ = ["ArraySource", "NpySource", "parquet_source", "csv_source", "open_source", "is_source"]
