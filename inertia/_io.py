"""Output files written whole or not at all; a failed write (full disk, a device) raises OSError."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_bytes_atomic(path, data: bytes) -> Path:
    """`_write` with the path named in any OSError ("No space left on device: PATH")."""
    try:
        return _write(Path(path), data)
    except OSError as err:
        if err.filename is not None or err.errno is None:
            raise
        raise OSError(err.errno, err.strerror, str(path)) from None


def _write(path: Path, data: bytes) -> Path:
    """Write `data` to `path`: a regular file through a temporary file in the same folder and a
    rename (readers never see half a file); an existing non-regular file (a device such as
    /dev/stdout, a FIFO) is written in place. Errors, including a short or failed write, raise."""
    if path.exists() and not path.is_file():
        with open(path, "wb") as fh:
            fh.write(data)
            fh.flush()
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_text_atomic(path, text: str) -> Path:
    """`write_bytes_atomic` of UTF-8 text."""
    return write_bytes_atomic(path, text.encode("utf-8"))


def save_figure(fig, path, **kw) -> Path:
    """A matplotlib figure rendered in memory and written by `write_bytes_atomic` (the format
    from the file's suffix, PNG without one)."""
    import io

    buf = io.BytesIO()
    fmt = Path(path).suffix.lstrip(".").lower() or "png"
    fig.savefig(buf, format=fmt, **kw)
    return write_bytes_atomic(path, buf.getvalue())


__all__ = ["write_bytes_atomic", "write_text_atomic", "save_figure"]
