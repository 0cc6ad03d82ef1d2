"""Reading a JSON-lines event log as the disk, logrotate and other writers left it.

A log is read line by line and every whole event in it is kept. What is not one
is skipped and counted, never a reason to refuse the whole file:

- a torn line (a run killed mid-write, a disk that filled mid-line), anywhere;
- NUL bytes (logrotate's copytruncate under a writer that did not append leaves
  a run of them where the old lines were): dropped, and the line read without them;
- a line another writer glued to a torn one (``{"type":"cros{"type":"count",...}``):
  the torn head is skipped, the whole event after it kept;
- bytes that are not UTF-8, or JSON that is not an event.

The caller says what was skipped (``Skipped.describe``), in one line. A file of
which no line is an event is not a Lookout events file: refused.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from device.files.input_file import DATABASE_MAX, EVENTS_MAX, InputRefused, open_input, size_text
from live.store.file import SQLITE_MAGIC

EVENT_START = b'{"type":'  # how every line Lookout writes begins
SHOWN_LINES = 5  # line numbers named in the one-line warning; the rest are counted


class NotEvents(Exception):
    """The file is not a Lookout events file; the message is one line naming why."""


@dataclass
class Skipped:
    """What a reading skipped: the numbers of the lines that were not whole events, and
    the NUL bytes dropped."""

    lines: list[int] = field(default_factory=list)
    nul_bytes: int = 0

    def __bool__(self) -> bool:
        return bool(self.lines or self.nul_bytes)

    def what(self) -> str:
        """``3 lines`` / ``6,463 NUL bytes`` / both: what was skipped, in a few words."""
        parts = []
        if self.lines:
            parts.append(_plural(len(self.lines), "line"))
        if self.nul_bytes:
            parts.append(f"{self.nul_bytes:,} NUL bytes")
        return " and ".join(parts)

    def describe(self, path: Path) -> str | None:
        """The one line that says it (None when nothing was skipped)."""
        if not self:
            return None
        parts = []
        if self.lines:
            n = len(self.lines)
            numbers = ", ".join(str(number) for number in self.lines[:SHOWN_LINES])
            if n > SHOWN_LINES:
                numbers += f" and {n - SHOWN_LINES:,} more"
            what = "line that is not a whole event" if n == 1 else "lines that are not whole events"
            parts.append(
                f"{n:,} {what} (torn or corrupt: {'line' if n == 1 else 'lines'} {numbers})"
            )
        if self.nul_bytes:
            parts.append(f"{self.nul_bytes:,} NUL bytes")
        return f"{path}: skipped {' and '.join(parts)}; the report is of the rest"


def _plural(n: int, noun: str) -> str:
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def read_log_bytes(path: Path) -> bytes | None:
    """A JSON-lines log's bytes, or None for a SQLite database (read by its own means).
    Raises ``OSError``: a log is read whole, so a named pipe, a device or a file past
    ``EVENTS_MAX`` is refused before it is read (``InputRefused``)."""
    with open_input(path, DATABASE_MAX) as file:
        head = file.read(len(SQLITE_MAGIC))
        if head == SQLITE_MAGIC:
            return None
        size = os.fstat(file.fileno()).st_size
        data = head + file.read(EVENTS_MAX + 1 - len(head)) if size <= EVENTS_MAX else b""
    if size > EVENTS_MAX or len(data) > EVENTS_MAX:
        size = max(size, len(data))
        raise InputRefused(
            path, f"{size_text(size)} of JSON lines, over the limit of {size_text(EVENTS_MAX)}"
        )
    return data


def read_jsonl(data: bytes, path: Path) -> tuple[list[dict[str, Any]], Skipped]:
    """Every whole event of a JSON-lines log, in order, and what was skipped.

    Raises ``NotEvents`` for a file that is not a Lookout events file: its first line
    is JSON but not an event, or no line of it is an event.
    """
    events: list[dict[str, Any]] = []
    skipped = Skipped()
    seen_content = False
    for number, line in enumerate(data.split(b"\n"), 1):
        if b"\0" in line:
            skipped.nul_bytes += line.count(b"\0")
            line = line.replace(b"\0", b"")
        if not line.strip():
            continue
        parsed = _json(line)
        if is_event(parsed):
            events.append(parsed)
        elif not seen_content and parsed is not _INVALID:
            # Whole JSON that is not an event, first thing: someone else's file.
            raise NotEvents(f"{path}:{number}: not a Lookout event (needs a type and a time t)")
        else:
            skipped.lines.append(number)
            glued = _glued(line)
            if glued is not None:
                events.append(glued)
        seen_content = True
    if not events and skipped.lines:
        raise NotEvents(
            f"{path}: not a Lookout events file (neither JSON lines of Lookout events "
            "nor a SQLite database)"
        )
    return events, skipped


_INVALID = object()


def _json(line: bytes) -> Any:
    """The line's JSON value, or ``_INVALID`` (not UTF-8, not JSON)."""
    try:
        return json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return _INVALID


def is_event(data: Any) -> TypeGuard[dict[str, Any]]:
    """A Lookout event: an object with a string ``type`` and a number ``t``."""
    return (
        isinstance(data, dict)
        and isinstance(data.get("type"), str)
        and isinstance(data.get("t"), int | float)
        and not isinstance(data.get("t"), bool)
    )


def _glued(line: bytes) -> dict[str, Any] | None:
    """The whole event another writer appended right after a torn line, if there is one."""
    start = line.find(EVENT_START, 1)
    while start > 0:
        parsed = _json(line[start:])
        if is_event(parsed):
            return parsed
        start = line.find(EVENT_START, start + 1)
    return None


__all__ = ["NotEvents", "Skipped", "is_event", "read_jsonl"]
