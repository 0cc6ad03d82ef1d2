"""The crossings a ``lookout run`` with lines counted into its event log (``--db``, SQLite, or
``--events``, JSON lines: both read the same).

``read_line_runs`` reads, for ``visitors`` (``tools/visitors.py``), each run that had
lines: its run event, its lines and their ``crossing`` events, and where a recording
ended in its own media time.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from live.store.database import SQLiteStore, read_only
from live.store.file import SQLITE_MAGIC
from live.util.walltime import wall_time


class CrossingLogError(Exception):
    """The file is not an event log the crossings can be read from; the message is one line."""


_LINE_EVENTS = (
    "SELECT session, type, data FROM events WHERE type IN ('run', 'crossing', 'clock_step') "
    "ORDER BY id"
)
# A recording's end in its own media time: the newest frame time its perception logged.
# (Over the type index: a long-lived camera log is not read whole for a question.)
_MEDIA_ENDS = (
    "SELECT session, MAX(json_extract(data, '$.t_media')) FROM events "
    "WHERE type IN ('count', 'zone', 'crossing', 'dwell') GROUP BY session"
)


def _is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as file:
            return file.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return True  # said by SQLite's own error, as before


def _jsonl_rows(path: Path) -> tuple[list[tuple[str, str, str]], dict[str, Any]]:
    """What the two queries give of a SQLite log, from JSON lines: the run, crossing and
    clock-step events by run, and each run's newest media time."""
    from device.app.report.data import ReportError, load_events

    try:
        events = load_events(path)
    except ReportError as exc:
        raise CrossingLogError(str(exc)) from None
    rows: list[tuple[str, str, str]] = []
    ends: dict[str, Any] = {}
    session: str | None = None
    for event in events:
        kind = event.get("type")
        if kind == "run":
            session = str(event.get("run_id", ""))
        if session is None:
            continue
        if kind in ("run", "crossing", "clock_step"):
            rows.append((session, str(kind), json.dumps(event)))
        media = event.get("t_media")
        if kind in ("count", "zone", "crossing", "dwell") and isinstance(media, int | float):
            ends[session] = max(float(media), ends.get(session, float(media)))
    return rows, ends


@dataclass
class LineRun:
    """One ``lookout run`` of a ``--db`` log that had lines: its run event and crossings."""

    info: dict[str, Any]
    lines: list[str]
    crossings: list[dict[str, Any]]
    end_media: float | None = None  # the newest media time it logged
    clock_steps: list[dict[str, Any]] = field(default_factory=list)

    @property
    def live(self) -> bool:
        return self.info.get("live") is not False

    @property
    def source(self) -> str:
        return str(self.info.get("source", ""))

    def wall(self, event: dict[str, Any]) -> float | None:
        """Wall-clock time of ``event``: the run's start plus the session time since it,
        on the clock as the run's logged steps of the system clock left it."""
        return wall_time(float(event["t"]), self.info, self.clock_steps)


def read_line_runs(path: Path) -> list[LineRun]:
    """The runs of a SQLite event log that had lines (configured, or crossings logged), oldest
    first. Only ``lookout run`` runs count: an ``ask`` records a run event of its own."""

    def query(conn: sqlite3.Connection) -> tuple[list[tuple[str, str, str]], dict[str, Any]]:
        rows = list(conn.execute(_LINE_EVENTS))
        return rows, dict(conn.execute(_MEDIA_ENDS).fetchall())

    try:
        if _is_sqlite(path):
            store = SQLiteStore.lookup(path)
            rows, ends = store.read(query) if store is not None else read_only(path, query)
        else:
            rows, ends = _jsonl_rows(path)
    except sqlite3.Error as exc:
        raise CrossingLogError(f"{path}: not a Lookout event database ({exc})") from None
    infos: dict[str, dict[str, Any]] = {}
    crossings: dict[str, list[dict[str, Any]]] = {}
    steps: dict[str, list[dict[str, Any]]] = {}
    for session, kind, data in rows:
        event = json.loads(data)
        if kind == "run":
            infos.setdefault(session, event)
        elif not isinstance(event.get("t"), int | float):
            continue
        elif kind == "clock_step":
            steps.setdefault(session, []).append(event)
        else:
            crossings.setdefault(session, []).append(event)
    runs: list[LineRun] = []
    # Crossings of a session without a run event cannot be placed on any clock: left out
    # (logs written before run events existed have no crossings either).
    for session, info in infos.items():
        if info.get("command", "run") != "run":
            continue
        config = info.get("config")
        configured = config.get("lines") if isinstance(config, dict) else None
        names = [str(n) for n in configured] if isinstance(configured, dict) else []
        found = crossings.get(session, [])
        for event in found:
            if str(event.get("line", "")) not in names:
                names.append(str(event.get("line", "")))
        if names:
            end = ends.get(session)
            media_end = float(end) if isinstance(end, int | float) else None
            runs.append(LineRun(info, names, found, media_end, steps.get(session, [])))
    return runs


__all__ = ["CrossingLogError", "LineRun", "read_line_runs"]
