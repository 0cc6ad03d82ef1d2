"""A file the device reads, checked before a byte of it is read: a regular file, not too big.

A flag that names a file can name anything: ``/dev/zero`` (read whole, it fills the
memory in seconds), a named pipe (opening it waits for a writer that never comes, and
a thread stuck there holds up the exit), a directory, a disk image. Every reader of a
file a user names goes through here, so each kind of input has a size cap and none
can block:

- the type is looked at before opening (a device node is never opened: opening some
  has effects), then again on the open descriptor, which was opened without waiting
  (``O_NONBLOCK``), so a file swapped for a pipe in between cannot block either;
- the size is checked before reading, and the read stops one byte past the cap, so a
  file that grows meanwhile is refused too, never read whole.

The errors are ``OSError``\\ s whose ``strerror`` is one short phrase without the path
(``a named pipe, not a regular file``), as the readers already say an ``OSError``:
each names its flag and the path itself.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

KB = 1000
MB = 1000 * KB

# What each kind of input ever holds, with room to spare (docs/security.md).
CONFIG_MAX = 1 * MB  # a TOML configuration: a few KB with lines and zones
TOKEN_MAX = 16 * KB  # a token file: one line, or the JSON `lookout token --json` writes
SMALL_MAX = 4 * KB  # an id: /etc/machine-id, the device id suffix
WAV_MAX = 256 * MB  # a WAV said as the microphone (its samples are checked apart)
IMAGE_MAX = 256 * MB  # an image file of a folder source: a 50-megapixel PNG fits
MODEL_MAX = 1000 * MB  # an ONNX detector (the shipped one is 4 MB)
EVENTS_MAX = 256 * MB  # JSON lines read back whole by report and ask (weeks of a busy scene)
DATABASE_MAX = 2000 * MB  # a SQLite event log report and ask read
CREDENTIALS_MAX = 1 * MB  # a service account's JSON key

_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)


class InputRefused(OSError):
    """A file not read: not a regular file, or bigger than its kind ever is."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(errno.EINVAL, reason, str(path))


def size_text(size: int) -> str:
    """Bytes as people read them: ``512 KB``, ``1.5 GB``."""
    for unit, scale in (("GB", 1000 * MB), ("MB", MB), ("KB", KB)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size} bytes"


def file_kind(mode: int) -> str | None:
    """What a file that is not a regular one is (None: a regular file)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a file"


def _is_devnull(info: os.stat_result) -> bool:
    """``/dev/null``, which reads as empty (``--config /dev/null``: no configuration)."""
    if not stat.S_ISCHR(info.st_mode):
        return False
    try:
        null = os.stat(os.devnull)
    except OSError:
        return False
    return stat.S_ISCHR(null.st_mode) and info.st_rdev == null.st_rdev


def _checked(path: Path, info: os.stat_result, limit: int) -> int:
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, "a directory, not a file", str(path))
    if _is_devnull(info):
        return 0
    kind = file_kind(info.st_mode)
    if kind is not None:
        raise InputRefused(path, f"{kind}, not a regular file")
    if info.st_size > limit:
        raise InputRefused(path, _too_big(info.st_size, limit))
    return info.st_size


def _too_big(size: int, limit: int) -> str:
    return f"{size_text(size)}, over the limit of {size_text(limit)}"


def check_input(path: Path, limit: int) -> int:
    """The size of the regular file at ``path``, which is at most ``limit`` bytes and
    readable; for a file another library opens itself (onnxruntime, OpenCV).
    Raises ``OSError`` (``InputRefused``, ``FileNotFoundError``...)."""
    info = os.stat(path)
    size = _checked(path, info, limit)
    if not os.access(path, os.R_OK):
        raise PermissionError(errno.EACCES, "not readable", str(path))
    return size


def open_input(path: Path, limit: int) -> BinaryIO:
    """The regular file at ``path`` (at most ``limit`` bytes), open for reading; the
    caller closes it. Raises ``OSError`` without having blocked."""
    _checked(path, os.stat(path), limit)  # a device node is never opened
    fd = os.open(path, _OPEN_FLAGS)
    try:
        _checked(path, os.fstat(fd), limit)  # swapped since the stat: the open did not wait
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_input(path: Path, limit: int) -> bytes:
    """The whole of the regular file at ``path``, at most ``limit`` bytes (one growing past
    it is refused, not read whole). Raises ``OSError`` without having blocked."""
    with open_input(path, limit) as file:
        data = file.read(limit + 1)
    if len(data) > limit:
        raise InputRefused(path, f"over the limit of {size_text(limit)}")
    return data


__all__ = [
    "CONFIG_MAX",
    "CREDENTIALS_MAX",
    "DATABASE_MAX",
    "EVENTS_MAX",
    "IMAGE_MAX",
    "KB",
    "MB",
    "MODEL_MAX",
    "SMALL_MAX",
    "TOKEN_MAX",
    "WAV_MAX",
    "InputRefused",
    "check_input",
    "file_kind",
    "open_input",
    "read_input",
    "size_text",
]
