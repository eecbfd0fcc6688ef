"""Dataset registry and loaders: sklearn-shipped sets, or cache files verified by sha256."""
from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path
from typing import Callable, NamedTuple, Optional

import numpy as np

from . import _cache
from ._cache import DatasetError

UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases"
OPENML_JSON = "https://www.openml.org/api/v1/json/data/{id}"


class Dataset(NamedTuple):
    """A loaded data set: predictors X (n, p) float64, response y (n,), and column names."""

    name: str
    X: np.ndarray
    y: np.ndarray
    feature_names: list
    target_name: str


@dataclasses.dataclass(frozen=True)
class DatasetSpec:
    """Where a data set lives, how to parse it, and what it must look like."""

    name: str
    task: str                      # "classification" (y in {0,1}) or "regression"
    n: int
    p: int                         # raw predictors (before dropping zero-variance columns)
    labels: str                    # how y is coded
    filename: Optional[str] = None  # cache file; None for sets shipped in an installed package
    sha256: Optional[str] = None    # of the cache file's bytes
    content_sha256: Optional[str] = None  # of the parsed table, format- and row-order-free
    sources: tuple = ()            # (url or "openml:<id>", converter) tried in order
    parser: Optional[Callable] = None  # path -> (X, y, feature_names, target_name)
    package_loader: Optional[Callable] = None
    origin: str = ""
    packaged: bool = False          # a gzip copy ships in inertia/data/files (CC BY 4.0 sets)
    citation: str = ""


# ---------------------------------------------------------------------------------------------
# Parsers of the cache formats (see docs/data.md).

class _Blob(NamedTuple):
    """In-memory file contents (a packaged data file) that the parsers read like a path."""

    name: str
    data: bytes

    def read_bytes(self) -> bytes:
        return self.data


def _name(path) -> str:
    return path.name if isinstance(path, _Blob) else Path(path).name


def _read_lines(path) -> list[str]:
    raw = path.read_bytes() if isinstance(path, _Blob) else Path(path).read_bytes()
    text = raw.decode("utf-8")
    return [ln.strip() for ln in text.splitlines() if ln.strip()]


def _headerless(label_map: Optional[dict], names: list[str], target: str):
    """Parser for comma-separated files without header, label in the last column."""

    def parse(path):
        rows = [ln.split(",") for ln in _read_lines(path)]
        X = np.array([[float(v) for v in r[:-1]] for r in rows], dtype=np.float64)
        raw = [r[-1].strip() for r in rows]
        if label_map is None:
            y = np.array([int(float(v)) for v in raw], dtype=np.int64)
        else:
            bad = sorted(set(raw) - set(label_map))
            if bad:
                raise DatasetError(f"{_name(path)}: unexpected labels {bad[:5]}")
            y = np.array([label_map[v] for v in raw], dtype=np.int64)
        return X, y, list(names), target

    return parse


def _with_header(sep: str, target: str, dtype=np.float64):
    """Parser for files with a header line; `target` names the response column."""

    def parse(path):
        lines = _read_lines(path)
        header = [h.strip() for h in lines[0].split(sep)]
        if target not in header:
            raise DatasetError(f"{_name(path)}: no column {target!r} in header {header}")
        table = np.array([[float(v) for v in ln.split(sep)] for ln in lines[1:]], dtype=np.float64)
        j = header.index(target)
        keep = [i for i in range(len(header)) if i != j]
        return table[:, keep], table[:, j].astype(dtype), [header[i] for i in keep], target

    return parse


def content_checksum(X, y) -> str:
    """sha256 of the parsed table [X, y] as float64 with rows sorted (independent of formatting and order)."""
    T = np.column_stack([np.asarray(X, np.float64), np.asarray(y, np.float64)])
    T = T[np.lexsort(T.T[::-1])]
    return hashlib.sha256(np.ascontiguousarray(T, dtype="<f8").tobytes()).hexdigest()


# ---------------------------------------------------------------------------------------------
# Converters: upstream bytes -> bytes in the cache format.

def _lines(raw: bytes) -> list[str]:
    return [ln.strip() for ln in raw.decode("utf-8", "replace").splitlines() if ln.strip()]


def _csv_as_is(raw: bytes) -> bytes:
    return ("\n".join(_lines(raw)) + "\n").encode()


def _arff_rows(raw: bytes) -> list[list[str]]:
    out, in_data = [], False
    for ln in _lines(raw):
        if ln.startswith("%"):
            continue
        if not in_data:
            in_data = ln.lower().startswith("@data")
            continue
        out.append([v.strip().strip("'\"") for v in ln.split(",")])
    return out


def _arff_to_csv(label_map: Optional[dict] = None):
    def convert(raw: bytes) -> bytes:
        rows = _arff_rows(raw)
        if label_map is not None:
            rows = [r[:-1] + [label_map[r[-1]]] for r in rows]
        return ("\n".join(",".join(r) for r in rows) + "\n").encode()

    return convert


def _german_from_uci(raw: bytes) -> bytes:
    """UCI german.data (symbolic codes) -> integer-coded `;`-separated table, `Creditability` first."""
    out = [";".join(GERMAN_COLUMNS)]
    for ln in _lines(raw):
        toks = ln.split()
        vals = [t[len(f"A{k + 1}"):] if t.startswith(f"A{k + 1}") else t
                for k, t in enumerate(toks[:-1])]
        out.append(";".join(["1" if toks[-1] == "1" else "0"] + vals))
    return ("\r\n".join(out) + "\r\n").encode()


def _boston_from_uci(raw: bytes) -> bytes:
    rows = [ln.split() for ln in _lines(raw)]
    return ("\n".join([",".join(BOSTON_COLUMNS)] + [",".join(r) for r in rows]) + "\n").encode()


GERMAN_COLUMNS = [
    "Creditability", "Account_Balance", "Duration_of_Credit_monthly",
    "Payment_Status_of_Previous_Credit", "Purpose", "Credit_Amount", "Value_Savings_Stocks",
    "Length_of_current_employment", "Instalment_per_cent", "Sex_Marital_Status", "Guarantors",
    "Duration_in_Current_address", "Most_valuable_available_asset", "Age_years",
    "Concurrent_Credits", "Type_of_apartment", "No_of_Credits_at_this_Bank", "Occupation",
    "No_of_dependents", "Telephone", "Foreign_Worker",
]
BOSTON_COLUMNS = ["CRIM", "ZN", "INDUS", "CHAS", "NOX", "RM", "AGE", "DIS", "RAD", "TAX",
                  "PTRATIO", "B", "LSTAT", "MEDV"]


# ---------------------------------------------------------------------------------------------
# Package-shipped sets.

def _sklearn_wdbc():
    from sklearn.datasets import load_breast_cancer

    b = load_breast_cancer()
    return (np.asarray(b.data, np.float64), np.asarray(b.target, np.int64),
            [str(f) for f in b.feature_names], "benign")


def _sklearn_diabetes():
    from sklearn.datasets import load_diabetes

    b = load_diabetes(scaled=False)
    return (np.asarray(b.data, np.float64), np.asarray(b.target, np.float64),
            [str(f) for f in b.feature_names], "progression")


DATASETS: dict[str, DatasetSpec] = {s.name: s for s in [
    DatasetSpec(
        "sonar", "classification", 208, 60, "Mine (M) = 1, Rock (R) = 0",
        filename="sonar.csv",
        sha256="3079c09b5d2789a0f96aff82c28e5164fafe2495c5f8da96c6c256c1bd25763f",
        content_sha256="e36b77ab10456f2650575dd4390945d3859edd4273f3533649f074eb7a72196c",
        sources=((f"{UCI}/undocumented/connectionist-bench/sonar/sonar.all-data", _csv_as_is),
                 ("openml:40", _arff_to_csv({"Mine": "M", "Rock": "R"}))),
        parser=_headerless({"M": 1, "R": 0}, [f"attribute_{i}" for i in range(1, 61)], "mine"),
        origin="Gorman & Sejnowski; UCI / OpenML 40; CC BY 4.0",
        packaged=True,
        citation=("Gorman, R. P. & Sejnowski, T. J. (1988). Analysis of hidden units in a "
                  "layered network trained to classify sonar targets. Neural Networks 1, 75-89."
                  " Connectionist Bench (Sonar, Mines vs. Rocks), UCI Machine Learning "
                  "Repository, doi:10.24432/C5T01Q")),
    DatasetSpec(
        "ionosphere", "classification", 351, 34, "good (g) = 1, bad (b) = 0",
        filename="ionosphere.csv",
        sha256="fd6dd7864b55d56dac0a1e6e24af9ccc35bf2555ac79af8ab9f3d1daa065ab83",
        content_sha256="9b4a10ba3a90af0fa63679d1d8fa7910f14686f7e36176c6f7359535e0d4dbf9",
        sources=((f"{UCI}/ionosphere/ionosphere.data", _csv_as_is),
                 ("openml:59", _arff_to_csv())),
        parser=_headerless({"g": 1, "b": 0}, [f"a{i:02d}" for i in range(1, 35)], "good"),
        origin="Sigillito et al.; UCI / OpenML 59; CC BY 4.0",
        packaged=True,
        citation=("Sigillito, V. G., Wing, S. P., Hutton, L. V. & Baker, K. B. (1989). "
                  "Classification of radar returns from the ionosphere using neural networks. "
                  "Johns Hopkins APL Technical Digest 10, 262-266. Ionosphere, UCI Machine "
                  "Learning Repository, doi:10.24432/C5W01B")),
    DatasetSpec(
        "wdbc", "classification", 569, 30, "benign = 1, malignant = 0 (scikit-learn's coding)",
        package_loader=_sklearn_wdbc,
        origin="Wolberg et al.; sklearn.datasets.load_breast_cancer (= OpenML 1510)"),
    DatasetSpec(
        "pima", "classification", 768, 8, "tested positive = 1, negative = 0",
        filename="pima-indians-diabetes.csv",
        sha256="6bfe5d0f379d17a0e0819b996407e3c09bf80febd4287f2ed212190dfff154af",
        content_sha256="cb04f3d84c73c1878193bcfdef6351eb3a2c6218db7d605988bbc676a84f0357",
        sources=(("openml:37", _arff_to_csv({"tested_positive": "1", "tested_negative": "0"})),),
        parser=_headerless(None, ["preg", "plas", "pres", "skin", "insu", "mass", "pedi", "age"],
                           "diabetes"),
        origin="NIDDK via UCI / OpenML 37 (zeros kept as recorded)"),
    DatasetSpec(
        "banknote", "classification", 1372, 4, "class 1 = 1, class 0 = 0 (UCI coding)",
        filename="banknote_authentication.csv",
        sha256="d0539aaed2139ba7a587b3e34fb345ce503ff7d5d33dbf9912d8e195ce425cb9",
        content_sha256="f0f047f2559dac6be48e6d243bd5abbc9f79c913dbb9cebee013766dcc0dbbda",
        sources=((f"{UCI}/00267/data_banknote_authentication.txt", _csv_as_is),
                 ("openml:1462", _arff_to_csv({"1": "0", "2": "1"}))),
        parser=_headerless(None, ["variance", "skewness", "curtosis", "entropy"], "class"),
        origin="Lohweg; UCI / OpenML 1462; CC BY 4.0",
        packaged=True,
        citation=("Lohweg, V. (2012). Banknote Authentication, UCI Machine Learning Repository,"
                  " doi:10.24432/C55P57")),
    DatasetSpec(
        "german", "classification", 1000, 20, "Creditability: good = 1 (700), bad = 0",
        filename="german.csv",
        sha256="648cc082268f9e580400eb1c0d0fd47dd420e0f541a23431e0ace013760e0d3a",
        content_sha256="17911f00ca141d0c49ac10cb5c8fdec9307e31865d0e31d9d2ea95b113f99978",
        sources=((f"{UCI}/statlog/german/german.data", _german_from_uci),),
        parser=_with_header(";", "Creditability", np.int64),
        origin="Hofmann (1994), Statlog German credit, integer-coded; UCI; CC BY 4.0",
        packaged=True,
        citation=("Hofmann, H. (1994). Statlog (German Credit Data), UCI Machine Learning "
                  "Repository, doi:10.24432/C5NC77")),
    DatasetSpec(
        "boston", "regression", 506, 13, "MEDV (median home value, $1000s)",
        filename="boston.csv",
        sha256="ebf8b4a9ceaf375f9591be7b862b3eafc6efc952251e77f09dd6c2df9e216ba0",
        content_sha256="fd87e47646e384f7ff6c76ebe85c988b5690f797e804708235d3fecdfcb9ceb9",
        sources=((f"{UCI}/housing/housing.data", _boston_from_uci),),
        parser=_with_header(",", "MEDV"),
        origin="Harrison & Rubinfeld (1978); UCI housing; no formal licence"),
    DatasetSpec(
        "diabetes", "regression", 442, 10, "disease progression after one year",
        package_loader=_sklearn_diabetes,
        origin="Efron et al. (2004); sklearn.datasets.load_diabetes"),
]}


# ---------------------------------------------------------------------------------------------
# Cache resolution, verification and download.

def _spec(name: str) -> DatasetSpec:
    key = str(name).lower()
    if key not in DATASETS:
        raise DatasetError(f"unknown dataset {name!r}; choose from {sorted(DATASETS)}")
    return DATASETS[key]


def _parse_verified(spec: DatasetSpec, path: Path, *, downloaded: bool = False):
    """Parse a cache file and check it: file sha256, or else the content checksum."""
    digest = _cache.sha256_file(path)
    try:
        parsed = spec.parser(path)
    except (ValueError, IndexError, UnicodeDecodeError) as exc:
        if digest == spec.sha256:
            raise
        raise DatasetError(
            f"cache file {path} for dataset {spec.name!r} could not be parsed ({exc}); its sha256 "
            f"is {digest}, expected {spec.sha256}. Delete it and fill the cache again. "
            + _cache.fill_hint(spec.filename, path.parent)) from None
    if digest == spec.sha256:
        return parsed
    content = content_checksum(parsed[0], parsed[1])
    if spec.content_sha256 and content == spec.content_sha256:
        return parsed
    what = "downloaded data" if downloaded else f"cache file {path}"
    raise DatasetError(
        f"checksum mismatch for dataset {spec.name!r}: {what} has sha256 {digest} "
        f"(content checksum {content}); expected file sha256 {spec.sha256} or content checksum "
        f"{spec.content_sha256 or '(none registered)'}. The file is corrupt or another version; "
        f"delete it and fill the cache again. " + _cache.fill_hint(spec.filename, path.parent))


def _source_url(src: str) -> str:
    if not src.startswith("openml:"):
        return src
    import json

    meta = json.loads(_cache.fetch(OPENML_JSON.format(id=src.split(":", 1)[1])))
    return meta["data_set_description"]["url"]


def _download(spec: DatasetSpec, folder: Path, origin: str):
    """Fetch each source in turn, convert to the cache format, verify, and store atomically."""
    errors = []
    target = folder / spec.filename
    for src, convert in spec.sources:
        try:
            raw = _cache.fetch(_source_url(src))
        except (OSError, KeyError, ValueError) as exc:
            errors.append(f"{src}: {_cache.network_error_text(exc)}")
            continue
        try:
            folder.mkdir(parents=True, exist_ok=True)
            tmp = folder / f".{spec.filename}.download"
            _cache.write_atomic(tmp, convert(raw))
        except OSError as exc:
            raise DatasetError(f"could not write the downloaded {spec.filename} into {folder}: "
                               f"{exc}. " + _cache.fill_hint(spec.filename, folder)) from None
        except (KeyError, IndexError, ValueError) as exc:
            errors.append(f"{src}: unexpected upstream format ({exc!r})")
            continue
        try:
            parsed = _parse_verified(spec, tmp, downloaded=True)
        except (DatasetError, ValueError) as exc:
            tmp.unlink(missing_ok=True)
            errors.append(f"{src}: {exc}")
            continue
        tmp.replace(target)
        return parsed
    raise DatasetError(
        f"dataset {spec.name!r}: file {spec.filename} is not in the cache folder {folder} "
        f"({origin}) and the download failed ({'; '.join(errors)}). "
        + _cache.fill_hint(spec.filename, folder))


def packaged_file(name: str):
    """The gzip copy of a data set shipped inside the package (a Traversable), or None."""
    from importlib import resources

    spec = _spec(name)
    if not spec.packaged:
        return None
    res = resources.files(__package__) / "files" / f"{spec.filename}.gz"
    return res if res.is_file() else None


def _packaged_table(spec: DatasetSpec):
    """Parse the shipped gzip copy after checking its decompressed bytes against `spec.sha256`."""
    import gzip

    res = packaged_file(spec.name)
    data = gzip.decompress(res.read_bytes())
    digest = _cache.sha256_bytes(data)
    if digest != spec.sha256:
        raise DatasetError(
            f"the packaged copy of {spec.name!r} ({res}) has sha256 {digest}, expected "
            f"{spec.sha256}: the installation is damaged; reinstall inertia, or put "
            f"{spec.filename} in the cache folder (${_cache.ENV_DIR}).")
    return spec.parser(_Blob(spec.filename, data))


def available(name: str, cache_dir=None) -> bool:
    """True when `load_dataset(name)` needs no download (shipped, or in the cache folder)."""
    spec = _spec(name)
    if spec.package_loader is not None or packaged_file(name) is not None:
        return True
    return (_cache.cache_dir(cache_dir) / spec.filename).is_file()


def _raw_table(spec: DatasetSpec, cache_dir, download):
    if spec.package_loader is not None:
        return spec.package_loader()
    folder = _cache.cache_dir(cache_dir)
    path = folder / spec.filename
    if path.is_file():
        return _parse_verified(spec, path)
    if packaged_file(spec.name) is not None:
        return _packaged_table(spec)
    allowed = (not _cache.offline()) if download is None else bool(download)
    if not allowed:
        why = (f"{_cache.ENV_OFFLINE}={os.environ.get(_cache.ENV_OFFLINE)} is set in the "
               "environment" if download is None else "download=False")
        raise DatasetError(
            f"dataset {spec.name!r}: file {spec.filename} is not in the cache folder {folder} "
            f"({_cache.cache_dir_origin(cache_dir)}) and downloading is off ({why}). "
            + _cache.fill_hint(spec.filename, folder)
            + " With a network, allow the download ("
            + (f"unset {_cache.ENV_OFFLINE}" if download is None else "download=True or None")
            + ") to fetch it from "
            f"{', '.join(s for s, _ in spec.sources)}.")
    return _download(spec, folder, _cache.cache_dir_origin(cache_dir))


# ---------------------------------------------------------------------------------------------
# Public helpers.

def standardize_predictors(X, feature_names=None):
    """Drop zero-variance columns, centre, divide by the population std; (Z, kept_feature_names)."""
    X = np.asarray(X, dtype=np.float64)
    names = list(feature_names) if feature_names is not None else list(range(X.shape[1]))
    bad = ~np.all(np.isfinite(X), axis=0)
    if bad.any():  # a NaN would otherwise make its column look constant and drop it
        raise DatasetError(f"non-finite values (NaN or inf) in columns "
                           f"{[names[j] for j in np.flatnonzero(bad)]}; fill or drop those rows")
    keep = np.ptp(X, axis=0) > 0
    Z = X[:, keep]
    Z = (Z - Z.mean(axis=0)) / Z.std(axis=0, ddof=0)
    return Z, [n for n, k in zip(names, keep) if k]


def to_pm1(y) -> np.ndarray:
    """Labels {0,1} (or already {-1,+1}) as float64 -1/+1: ytilde = 2 y - 1."""
    y = np.asarray(y)
    vals = set(np.unique(y).tolist())
    if vals <= {0, 1}:
        return 2.0 * y.astype(np.float64) - 1.0
    if vals <= {-1, 1}:
        return y.astype(np.float64)
    raise DatasetError(f"labels must be in {{0,1}} or {{-1,+1}}; got values {sorted(vals)[:6]}")


def load_dataset(name: str, *, standardize: bool = True, cache_dir=None, download=None,
                 include_b: bool = False, drop=()) -> Dataset:
    """Load a registered data set (see `DATASETS`) as `Dataset(name, X, y, feature_names, target)`.

    `download`, `cache_dir`, `standardize`, `drop` and `include_b` as in docs/data.md.
    """
    spec = _spec(name)
    X, y, names, target = _raw_table(spec, cache_dir, download)
    if X.shape != (spec.n, spec.p):
        raise DatasetError(
            f"dataset {spec.name!r} has shape {X.shape}, expected ({spec.n}, {spec.p})")
    drop = (drop,) if isinstance(drop, str) else tuple(drop)
    if include_b and spec.name != "boston":
        raise DatasetError("include_b only applies to the 'boston' dataset")
    if spec.name == "boston" and not include_b:
        drop = drop + ("B",)
    unknown = sorted(set(drop) - set(names))
    if unknown:
        raise DatasetError(f"cannot drop {unknown} from {spec.name!r}: columns are {names}")
    keep = [i for i, n in enumerate(names) if n not in drop]
    X, names = X[:, keep], [names[i] for i in keep]
    if standardize:
        X, names = standardize_predictors(X, names)
    return Dataset(spec.name, np.ascontiguousarray(X, dtype=np.float64), y, names, target)
