"""Output files written whole or not at all; a failed write (full disk, a device) raises OSError."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def output_path(path, option: str = "the output", regular: bool = False) -> Path:
    """Where writing `path` lands (links followed); with `regular`, a non-regular file raises ValueError."""
    path = Path(path)
    real = Path(os.path.realpath(path)) if path.is_symlink() else path
    if real.is_dir():
        raise ValueError(f"{option} {path} is a folder; give a file name")
    if regular and real.exists() and not real.is_file():
        kind = _kind(real)
        raise ValueError(f"{option} {path} is {kind}, not a regular file; inertia replaces the "
                         "file it writes, so give the name of a regular file (or of a new one)")
    return real


def _kind(path: Path) -> str:
    """"a character device", "a FIFO", ... for a non-regular file."""
    import stat

    mode = path.stat().st_mode
    for test, name in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def name_max(folder) -> int:
    """The longest file name (bytes) the file system of `folder` takes (255 where unknown)."""
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):
        return 255


def check_name_length(path, option: str = "the output") -> None:
    """ValueError when the file name of `path` is longer than its file system takes."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    limit = name_max(folder if folder.exists() else ".")
    n = len(os.fsencode(path.name))
    if n > limit:
        raise ValueError(f"{option}: the file name {path.name[:40]}... is {n} bytes, longer than "
                         f"this file system takes ({limit}); give a shorter name")


def _temp_prefix(path: Path, suffix: str) -> str:
    """The prefix "." + name of a temporary file beside `path`, shortened to the name limit."""
    room = name_max(path.parent) - 1 - 8 - len(os.fsencode(suffix)) - 1
    name = os.fsencode(path.name)[:max(room, 1)].decode("utf-8", "ignore")
    return f".{name}."


def same_file(a, b) -> bool:
    """True when paths `a` and `b` name one file (through symbolic links and relative paths)."""
    return os.path.realpath(a) == os.path.realpath(b)


def replace_with(path, write, suffix: str = ".tmp") -> Path:
    """Call `write(tmp)` on a temporary file beside `path` and rename it onto the file (umask's mode)."""
    path = output_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=_temp_prefix(path, suffix), suffix=suffix)
    os.close(fd)
    try:
        write(tmp)
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_bytes_atomic(path, data: bytes) -> Path:
    """`_write` with the path named in any OSError ("No space left on device: PATH")."""
    try:
        return _write(Path(path), data)
    except OSError as err:
        if err.filename is not None or err.errno is None:
            raise
        raise OSError(err.errno, err.strerror, str(path)) from None


def _write(path: Path, data: bytes) -> Path:
    """Write `data` to `path` atomically (a non-regular file such as /dev/stdout in place); errors raise."""
    path = Path(os.path.realpath(path)) if path.is_symlink() else path
    if path.exists() and not path.is_file():
        with open(path, "wb") as fh:
            fh.write(data)
            fh.flush()
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=_temp_prefix(path, ".tmp"), suffix=".tmp")
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
    """A matplotlib figure rendered in memory and written atomically (format from the suffix, PNG default)."""
    import io

    buf = io.BytesIO()
    fmt = Path(path).suffix.lstrip(".").lower() or "png"
    fig.savefig(buf, format=fmt, **kw)
    return write_bytes_atomic(path, buf.getvalue())


__all__ = ["output_path", "check_name_length", "name_max", "same_file", "replace_with",
           "write_bytes_atomic", "write_text_atomic", "save_figure"]
