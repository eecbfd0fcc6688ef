"""Local dataset cache: location, sha256 verification and the (optional) download path."""
from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

ENV_DIR = "INERTIA_DATA_DIR"
ENV_OFFLINE = "INERTIA_OFFLINE"
ENV_TIMEOUT = "INERTIA_DOWNLOAD_TIMEOUT"
DEFAULT_TIMEOUT = 10.0  # seconds per request; offline machines fail at DNS long before this


class DatasetError(ValueError):
    """A dataset is unknown, missing from the cache and not downloadable, or fails its checksum."""


def default_cache_dir() -> Path:
    """The user cache dir: $XDG_CACHE_HOME/inertia, else the platform's usual cache folder."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg) / "inertia"
    if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "inertia" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "inertia"
    return Path.home() / ".cache" / "inertia"


def cache_dir(override=None) -> Path:
    """Cache folder in use: the argument, else $INERTIA_DATA_DIR, else `default_cache_dir()`."""
    if override is not None:
        return Path(override).expanduser()
    env = os.environ.get(ENV_DIR)
    return Path(env).expanduser() if env else default_cache_dir()


def cache_dir_origin(override=None) -> str:
    """Where `cache_dir(override)` came from, for error messages."""
    if override is not None:
        return "given as cache_dir"
    if os.environ.get(ENV_DIR):
        return f"from ${ENV_DIR}"
    return f"the default user cache dir; ${ENV_DIR} is not set"


def offline() -> bool:
    """True when $INERTIA_OFFLINE is set to a true value (1, true, yes)."""
    return os.environ.get(ENV_OFFLINE, "").strip().lower() in {"1", "true", "yes", "on"}


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch(url: str, timeout: float | None = None) -> bytes:
    """GET `url` with a timeout; raises OSError (URLError, timeout) on any network failure."""
    if timeout is None:
        timeout = float(os.environ.get(ENV_TIMEOUT, DEFAULT_TIMEOUT))
    req = urllib.request.Request(url, headers={"User-Agent": "inertia-dataset-loader"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return resp.read()


def write_atomic(path: Path, data: bytes) -> None:
    """Write bytes to `path` through a temporary file in the same folder and an atomic rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def fill_hint(filename: str, folder: Path) -> str:
    return (f"To fill the cache by hand, put `{filename}` (format and sha256 in docs/data.md) in a "
            f"folder and point the environment variable {ENV_DIR} at it "
            f"(e.g. `export {ENV_DIR}=/path/to/data`), or copy it into {folder}.")


def network_error_text(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    if isinstance(exc, urllib.error.URLError):
        return f"{type(exc.reason).__name__}: {exc.reason}"
    return f"{type(exc).__name__}: {exc}"
