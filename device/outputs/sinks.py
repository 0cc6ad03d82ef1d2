"""The JSON-lines event log (the console is ``device/outputs/console.py``)."""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import stat
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from device.bus import EventSink
from live.events import Event
from live.store.database import DATA_DROPPED, REOPENED, SQLITE_MAGIC, ProblemCallback
from live.store.identity import (
    DELETED,
    HERE,
    JSONL_LOG,
    FileKey,
    claim,
    file_key,
    unclaim,
    whereabouts,
)

# Persistence problems, of the SQLite store and of this file alike, are said here.
log = logging.getLogger("lookout.store")
RECOVERED_AFTER = 10  # good writes in a row before a failing events file counts as recovered
CHECK_EVERY_S = 1.0  # how often the name is looked at: is it still the file being written?
FIRST_LINE_MAX = 1 << 20  # a first line longer than this is nobody's event
TORN_SCAN_MAX = 1 << 20  # how far back a torn last line is looked for
DELETED_WHILE_OPEN = "deleted while open"
LINE_START = b'{"type":"'  # how every line this sink writes begins


__all__ = ["EventSink", "JsonlSink", "NotAnEventsFile", "check_events_file"]


class NotAnEventsFile(OSError):
    """The path names a file that is not a Lookout JSON-lines log: it is never written.

    An ``OSError`` so that ``device.config.paths.open_output`` makes it the one-line
    usage error of the setting (exit 2). The message names the path.
    """


class JsonlSink:
    """One JSON object per line: ``{"type": ..., "t": seconds since start, ...}``.

    Other processes may append to the same file (a second Lookout, ``tee``), and
    logrotate may truncate it (copytruncate) or rename it (create) at any moment,
    so the file is never cut: each line goes in one ``O_APPEND`` write, whole. A
    write the disk cuts short (full, EIO) is finished if it can be, else the line
    is lost (counted, said once per kind of failure) and what reached the disk is
    ended by the next write, so no later line is glued to it; ``lookout report``
    skips such a line and says so. A torn last line left by a killed run is ended
    the same way, never cut off.

    At most every ``check_every_s`` (``clock`` time) the path is looked at: if it no
    longer names the open file, the lines go to a new file at the name (a renamed
    file keeps its lines; the lines of a deleted one are counted lost).

    A file that is not a Lookout events file (another application's, a SQLite
    database) is refused at open (``NotAnEventsFile``) before a byte is written.
    """

    def __init__(
        self,
        path: Path,
        *,
        on_problem: ProblemCallback | None = None,
        clock: Callable[[], float] = time.monotonic,
        check_every_s: float = CHECK_EVERY_S,
    ) -> None:
        self.path = path
        self.on_problem = on_problem
        self.written = 0
        self.lost = 0
        self.lost_by_reason: Counter[str] = Counter()
        self.last_error: str | None = None
        self._clock = clock
        self._check_every_s = check_every_s
        self._fd: int | None = None
        self._fd, self._key, self.torn_bytes = _open_ours(path)
        # A line that is not ended (torn, or cut short by the disk) is ended first.
        self._end_line_first = self.torn_bytes > 0
        self._written_here = 0  # lines in the file open now: lost with it if it is deleted
        self._next_check = clock() + check_every_s
        self._reopen_error: OSError | None = None
        self._closed = False
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
        if event.type == "model_audio" or self._closed:
            return  # bytes belong to a player, not a log
        line = (json.dumps(event.to_dict(), separators=(",", ":")) + "\n").encode("utf-8")
        if self._clock() >= self._next_check:
            self._follow_name()
        if self._fd is None:
            assert self._reopen_error is not None
            self._failed(self._reopen_error)
            return
        try:
            self._append(self._fd, line)
        except OSError as exc:
            self._failed(exc)
            return
        self.written += 1
        self._written_here += 1
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

    def _append(self, fd: int, line: bytes) -> None:
        """``line`` in one write, appended whole; raises if it could not be.

        Never cuts the file: another process may have appended since, or logrotate
        may have truncated it, so no size known here says where a cut is safe.
        """
        data = b"\n" + line if self._end_line_first else line
        written = os.write(fd, data)
        if written >= len(data):
            self._end_line_first = False
            return
        if written > 0:
            self._end_line_first = False  # what was torn before is ended now
        try:
            # Cut short (the disk filled mid-line): the rest, if the disk takes it now.
            _write_all(fd, data[written:])
        except OSError:
            # What is on disk is half a line: end it now if possible, else first thing
            # at the next write, so that no later line is glued to it.
            self._end_line_first = True
            with contextlib.suppress(OSError):
                self._end_line_first = os.write(fd, b"\n") != 1
            raise

    def follow_name(self) -> None:
        """Check now that the path still names the open file (SIGHUP after a rotation)."""
        if not self._closed:
            self._follow_name()

    def _follow_name(self, *, reopen: bool = True) -> None:
        """The path should still name the open file; if not, say so and write a new one."""
        self._next_check = self._clock() + self._check_every_s
        if self._fd is None:
            if reopen:
                self._reopen()  # a new file could not be made at the name last time
            return
        where = whereabouts(self.path, self._fd)
        if where == HERE:
            return
        lost, self._written_here = (self._written_here if where == DELETED else 0), 0
        if lost:
            # Its lines went with it; this run's share of them is what is lost.
            self.written -= lost
            self.lost += lost
            self.lost_by_reason[DELETED_WHILE_OPEN] += lost
            self.last_error = DELETED_WHILE_OPEN
            then = "; writing a new file at its name" if reopen else ""
            self._tell(
                DATA_DROPPED,
                f"events file {self.path}: deleted while open: the {lost:,} lines this run "
                f"had written to it went with it{then}",
            )
        if not reopen or not self._reopen():
            return
        if where == DELETED and not lost:
            what = "deleted while open (none of this run's lines were in it)"
        elif where != DELETED:
            what = "renamed or moved while open (its lines stay in it)"
        else:
            return  # said above
        self._tell(REOPENED, f"events file {self.path}: {what}; writing a new file at its name")

    def _reopen(self) -> bool:
        """A new file at the name, in place of the open one; False (said) if it cannot be."""
        try:
            fd, key, torn = _open_ours(self.path)
        except OSError as exc:
            self._close_fd()
            self._reopen_error = exc
            self._failed(exc, line_lost=False)  # its lines are lost (counted) until it can
            return False
        self._close_fd()
        self._fd, self._key, self._reopen_error = fd, key, None
        self._written_here = 0
        self._end_line_first = torn > 0
        return True

    def _failed(self, exc: OSError, *, line_lost: bool = True) -> None:
        kind = errno.errorcode.get(exc.errno or 0, type(exc).__name__)
        reason = (exc.strerror or str(exc)).removeprefix(f"{self.path}: ")
        if line_lost:
            self.lost += 1
            self._lost_in_problem += 1
            self.lost_by_reason[reason] += 1
        self._good_in_problem = 0
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

    def _close_fd(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
            unclaim(self._key)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        # Deleted since the last look: its lines are lost, and that must be said.
        self._follow_name(reopen=False)
        self._close_fd()
        if self.lost:
            reasons = ", ".join(f"{n:,} {r}" for r, n in self.lost_by_reason.most_common())
            self._tell("lost", f"events file {self.path}: {self.lost:,} lines lost ({reasons})")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _open_ours(path: Path) -> tuple[int, FileKey, int]:
    """The file at ``path`` opened for appending, its key, and the bytes of its torn last
    line.

    Refuses (``NotAnEventsFile``) a file that is not a Lookout events file, having
    written nothing to it: the check reads the file that was opened, so a file put
    at the name meanwhile is not the one checked.
    """
    append = os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
    readable = True
    try:
        fd = os.open(path, os.O_RDWR | append, 0o644)
    except PermissionError:
        fd = os.open(path, os.O_WRONLY | append, 0o644)  # write-only: fine while empty
        readable = False
    try:
        info = os.fstat(fd)
        torn = 0
        if stat.S_ISREG(info.st_mode) and info.st_size > 0:  # not /dev/full, a new file
            if not readable:
                raise NotAnEventsFile(
                    f"{path}: cannot read it to check that it is a Lookout events file"
                )
            problem = _not_ours(fd, info.st_size)
            if problem is not None:
                raise NotAnEventsFile(f"{path}: {problem}; not writing to it")
            torn = _torn_tail(fd, info.st_size)
        key = file_key(info)
        other = claim(key, JSONL_LOG)
        if other is not None:
            raise NotAnEventsFile(f"{path}: this process writes {other} to it; not writing to it")
    except BaseException:
        os.close(fd)
        raise
    if torn:
        log.warning(
            "events file %s: its last line is torn (%d bytes, left by a run killed mid-write "
            "or a full disk); it stays, and the next line starts on a line of its own",
            path,
            torn,
        )
    return fd, key, torn


def check_events_file(path: Path) -> None:
    """Raise ``NotAnEventsFile`` if ``path`` names a file that is not a Lookout events
    file (read only; a missing or empty file is fine)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return  # missing, or not readable: opening it says so, or it is write-only
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size == 0:
            return
        problem = _not_ours(fd, info.st_size)
    finally:
        os.close(fd)
    if problem is not None:
        raise NotAnEventsFile(f"{path}: {problem}; not writing to it")


def _not_ours(fd: int, size: int) -> str | None:
    """Why the file is not a Lookout events file (None: it is, as far as its start says)."""
    head = os.pread(fd, min(size, FIRST_LINE_MAX), 0)
    if head.startswith(SQLITE_MAGIC):
        return "a SQLite database, not a JSON-lines events file (is it the --db file?)"
    # NUL bytes where copytruncate cut the file under a writer that was not appending.
    body = head.lstrip(b"\0 \t\r\n")
    if not body:
        return None
    line, newline, _ = body.partition(b"\n")
    if line.startswith(LINE_START):
        return None  # as every line of ours begins, torn ones (a run killed mid-write) too
    if not newline and len(head) < size:
        return "not a Lookout events file (its first line is longer than any event)"
    try:
        first = json.loads(line)
    except ValueError:
        return "not a Lookout events file (its first line is not a JSON event)"
    if not isinstance(first, dict) or not isinstance(first.get("type"), str):
        return 'not a Lookout events file (its first line is not a JSON event with a "type")'
    return None


def _torn_tail(fd: int, size: int) -> int:
    """Bytes after the last newline: a line a killed run or a full disk left unended."""
    if os.pread(fd, 1, size - 1) == b"\n":
        return 0
    end = size
    floor = max(0, size - TORN_SCAN_MAX)
    while end > floor:
        start = max(floor, end - 65536)
        found = os.pread(fd, end - start, start).rfind(b"\n")
        if found >= 0:
            return size - (start + found + 1)
        end = start
    return size - floor
