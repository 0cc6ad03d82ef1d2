"""Files the user asked Lookout to write: checked before the run, refused in one line.

An events file or a database that cannot be written is a configuration error
(exit 2 with one line), found before the first frame rather than as a
traceback in the middle of a run.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from device.config.errors import ConfigError

T = TypeVar("T")


def check_writable_file(setting: str, path: Path, what: str = "file") -> None:
    """``path`` is a regular file that can be written, or can be created; an existing
    ``--events`` or ``--db`` file is one of Lookout's (``_check_contents``)."""
    where = f"--{setting} {path}"
    try:
        info = path.stat()
    except FileNotFoundError:
        parent = path.parent if str(path.parent) else Path(".")
        if not parent.is_dir():
            raise ConfigError(f"{where}: the folder {parent} does not exist") from None
        if not os.access(parent, os.W_OK):
            raise ConfigError(f"{where}: the folder {parent} is not writable") from None
        return
    except OSError as exc:
        raise ConfigError(f"{where}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise ConfigError(f"{where}: is a directory, not a {what}")
    if not stat.S_ISREG(info.st_mode):
        # /dev/full, a FIFO, a socket: nothing a log can be read back from.
        raise ConfigError(f"{where}: not a regular file")
    if not os.access(path, os.W_OK):
        raise ConfigError(f"{where}: not writable")
    _check_contents(setting, path)


def _check_contents(setting: str, path: Path) -> None:
    """An event log is written only into a file of its own kind (read only here).

    Swapped arguments (``--events good.sqlite``) or another application's file would
    be damaged by the first line written; said before any output opens its file.
    """
    # Imported here for start-up time (sqlite3, the outputs), not to break a cycle.
    from device.outputs.sinks import check_events_file
    from live.store.file import check_database

    checks: dict[str, Callable[[Path], None]] = {"events": check_events_file, "db": check_database}
    check = checks.get(setting)
    if check is None:
        return
    try:
        check(path)
    except OSError as exc:
        reason = (exc.strerror or str(exc)).removeprefix(f"{path}: ")
        raise ConfigError(f"--{setting} {path}: {reason}") from None


def open_output(setting: str, path: Path, make: Callable[[Path], T]) -> T:
    """``make(path)``, its file problems turned into one line naming the setting."""
    try:
        return make(path)
    except ConfigError:
        raise
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise ConfigError(f"--{setting} {path}: the disk is full") from None
        reason = exc.strerror or str(exc)
        reason = reason.removeprefix(f"{path}: ")  # the store names the file itself
        raise ConfigError(f"--{setting} {path}: {reason}") from None


__all__ = ["check_writable_file", "open_output"]
