"""The JSON-lines event log (the console is ``device/outputs/console.py``)."""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
from collections import Counter
from pathlib import Path

from device.bus import EventSink
from live.events import Event
from live.store import ProblemCallback

# Persistence problems, of the SQLite store and of this file alike, are said here.
log = logging.getLogger("lookout.store")
RECOVERED_AFTER = 10  # good writes in a row before a failing events file counts as recovered


__all__ = ["EventSink", "JsonlSink", "repair_torn_tail"]


class JsonlSink:
    """One JSON object per line: ``{"type": ..., "t": seconds since start, ...}``.

    A line is written whole or not at all: a failed write (disk full, EIO) is
    cut back off the file, counted in ``lost`` and said once per kind of
    failure, and the next line is tried as usual. A torn last line left by a
    run that was killed mid-write is cut off when the file is opened.
    """

    def __init__(self, path: Path, *, on_problem: ProblemCallback | None = None) -> None:
        self.path = path
        self.on_problem = on_problem
        self.written = 0
        self.lost = 0
        self.lost_by_reason: Counter[str] = Counter()
        self.last_error: str | None = None
        self.repaired_bytes = repair_torn_tail(path)
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._size = os.fstat(self._fd).st_size  # where the last whole line ends
        self._failing: set[str] = set()  # failure kinds said during the current problem
        self._lost_in_problem = 0
        self._good_in_problem = 0  # writes that worked in a row since the last failure

    @property
    def degraded(self) -> bool:
        """The last write failed."""
        return bool(self._failing)

    @property
    def complete(self) -> bool:
        return self.lost == 0

    def write(self, event: Event) -> None:
        if event.type == "model_audio" or self._fd is None:
            return  # bytes belong to a player, not a log
        line = (json.dumps(event.to_dict(), separators=(",", ":")) + "\n").encode("utf-8")
        try:
            _write_all(self._fd, line)
        except OSError as exc:
            self._failed(exc)
            return
        self._size += len(line)
        self.written += 1
        if self._failing:
            # A nearly full disk takes a short line now and then: only a run of good
            # writes is "writing again", or the console would flap between the two.
            self._good_in_problem += 1
            if self._good_in_problem < RECOVERED_AFTER:
                return
            self._tell(
                "recovered",
                f"events file {self.path}: writing again; "
                f"{self._lost_in_problem:,} lines were lost meanwhile",
            )
            self._failing.clear()
            self._lost_in_problem = 0
            self._good_in_problem = 0

    def _failed(self, exc: OSError) -> None:
        assert self._fd is not None
        # Part of the line may be on disk; cut it off so the file never holds a torn line.
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, self._size)
        kind = errno.errorcode.get(exc.errno or 0, type(exc).__name__)
        reason = exc.strerror or str(exc)
        self.lost += 1
        self._lost_in_problem += 1
        self._good_in_problem = 0
        self.lost_by_reason[reason] += 1
        self.last_error = reason
        if kind not in self._failing:
            self._failing.add(kind)
            self._tell(
                "degraded",
                f"events file {self.path}: {reason}; its lines are lost until writing works again",
            )

    def _tell(self, kind: str, message: str) -> None:
        log.warning("%s", message)
        if self.on_problem is not None:
            try:
                self.on_problem(kind, message)
            except Exception:
                log.exception("on_problem callback failed")

    def close(self) -> None:
        if self._fd is None:
            return
        os.close(self._fd)
        self._fd = None
        if self.lost:
            reasons = ", ".join(f"{n:,} {r}" for r, n in self.lost_by_reason.most_common())
            self._tell("lost", f"events file {self.path}: {self.lost:,} lines lost ({reasons})")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def repair_torn_tail(path: Path) -> int:
    """Cut off a last line without its newline (a run killed mid-write); the bytes cut.

    Said once, as a warning. The line is cut rather than ended: half an event
    is not an event, and the next run's first line must not be glued to it.
    """
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return 0
    if size == 0:
        return 0
    with path.open("r+b") as file:
        file.seek(size - 1)
        if file.read(1) == b"\n":
            return 0
        cut, end = 0, size
        while end > 0:
            start = max(0, end - 65536)
            file.seek(start)
            found = file.read(end - start).rfind(b"\n")
            if found >= 0:
                cut = start + found + 1
                break
            end = start
        file.truncate(cut)
    dropped = size - cut
    log.warning(
        "events file %s: cut off a torn last line (%d bytes) left by a run killed mid-write",
        path,
        dropped,
    )
    return dropped
