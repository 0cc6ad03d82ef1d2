"""Which file a log writes: still at its name, and not written as another kind of log.

A process that keeps a file open writes into whatever that file has become: a
renamed log keeps growing under its new name, a deleted one into nothing. The
event logs look now and then (``whereabouts``: two system calls) and, when the
name no longer names their file, start a new one there and say what became of
the old.

The logs of one process also claim their files by kind (``claim``): the JSON
lines of ``--events`` and the SQLite database of ``--db`` given the same new
file would write into each other. ``HeldFile`` is both for a SQLite log.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

HERE = "here"  # the path names the open file
MOVED = "moved"  # the open file is elsewhere (renamed, moved); the name is free or another's
DELETED = "deleted"  # the open file has no name left: what is written to it is lost


def whereabouts(path: Path, fd: int) -> str:
    """Where the file open as ``fd`` (opened at ``path``) is now: HERE, MOVED or DELETED."""
    try:
        opened = os.fstat(fd)
    except OSError:
        return HERE  # nothing to compare: keep writing and let the writes tell
    try:
        named = os.stat(path)
    except FileNotFoundError:
        named = None
    except OSError:
        return HERE  # cannot look (permissions, a flaky mount): assume nothing moved
    if named is not None and (named.st_dev, named.st_ino) == (opened.st_dev, opened.st_ino):
        return HERE
    return DELETED if opened.st_nlink == 0 else MOVED


def identity_fd(path: Path) -> int | None:
    """A read-only descriptor of the file at ``path``, to ask ``whereabouts`` later.

    Closing any descriptor of a file drops the process's POSIX locks on it, SQLite's
    included: close this one only after the connection to the file is closed.
    """
    try:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


FileKey = tuple[int, int]  # (st_dev, st_ino)
SQLITE_LOG = "a SQLite event log"  # kinds of log, as ``claim`` names them
JSONL_LOG = "a JSON-lines events file"

_CLAIMS: dict[FileKey, tuple[str, int]] = {}  # file -> (what writes it, how many)
_CLAIMS_LOCK = threading.Lock()


def file_key(info: os.stat_result) -> FileKey:
    return (info.st_dev, info.st_ino)


def claim(key: FileKey, what: str) -> str | None:
    """Note that a log of kind ``what`` writes this file; the other kind if one does.

    Logs of one kind may share a file (two JSON-lines sinks append whole lines);
    logs of two kinds may not: then nothing is noted and the other is returned.
    """
    with _CLAIMS_LOCK:
        holder, count = _CLAIMS.get(key, (what, 0))
        if holder != what:
            return holder
        _CLAIMS[key] = (what, count + 1)
        return None


def claimed_by(key: FileKey) -> str | None:
    """What kind of log of this process writes the file, if any."""
    with _CLAIMS_LOCK:
        held = _CLAIMS.get(key)
        return None if held is None else held[0]


def unclaim(key: FileKey) -> None:
    with _CLAIMS_LOCK:
        holder, count = _CLAIMS.get(key, ("", 0))
        if count <= 1:
            _CLAIMS.pop(key, None)
        else:
            _CLAIMS[key] = (holder, count - 1)


class HeldFile:
    """The database a SQLite log has open, held to ask where it went later, and claimed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._claimed: FileKey | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def hold(self) -> None:
        """Hold and claim the file at the path now, just opened."""
        self._fd = identity_fd(self.path)
        if self._fd is not None:
            self._claimed = file_key(os.fstat(self._fd))
            claim(self._claimed, SQLITE_LOG)

    def where(self) -> str:
        """``whereabouts`` of the held file; HERE when none is held (nothing to compare)."""
        return HERE if self._fd is None else whereabouts(self.path, self._fd)

    def let_go(self) -> None:
        """Close the descriptor and give up the claim; only after the connection is closed."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
        if self._claimed is not None:
            unclaim(self._claimed)
            self._claimed = None


__all__ = [
    "DELETED",
    "HERE",
    "JSONL_LOG",
    "MOVED",
    "SQLITE_LOG",
    "FileKey",
    "HeldFile",
    "claim",
    "claimed_by",
    "file_key",
    "identity_fd",
    "unclaim",
    "whereabouts",
]
