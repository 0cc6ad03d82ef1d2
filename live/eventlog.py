"""The event log: every tool call, emission and stream start/stop, persisted.

So that nothing that matters lives only in the model's context, the session
records each event. ``SQLiteEventLog`` writes from its own thread so a slow
disk never stalls the event loop, and ``close()`` flushes everything.
"""

from __future__ import annotations

import json
import queue
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from live.events import Event

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session TEXT NOT NULL,
    t REAL NOT NULL,
    type TEXT NOT NULL,
    call_id TEXT,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_type ON events(type);
CREATE INDEX IF NOT EXISTS events_call ON events(call_id);
"""


class EventLog(Protocol):
    def record(self, event: Event) -> None: ...

    def close(self) -> None: ...


class MemoryEventLog:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def record(self, event: Event) -> None:
        self.events.append(event)

    def close(self) -> None:
        pass

    def of_type(self, kind: str) -> list[Event]:
        return [e for e in self.events if e.type == kind]


_STOP = object()


class SQLiteEventLog:
    """Append-only SQLite log, written by one background thread in batches."""

    def __init__(self, path: str | Path, *, session: str = "") -> None:
        self.path = Path(path)
        self.session = session
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Open once here so a bad path fails the caller now, with a clear error.
        conn = sqlite3.connect(self.path)
        try:
            conn.executescript(_SCHEMA)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.commit()
        finally:
            conn.close()
        self._queue: queue.Queue[Any] = queue.Queue()
        self._closed = False
        self.written = 0
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="lookout-eventlog", daemon=True)
        self._thread.start()

    def record(self, event: Event) -> None:
        if self._closed:
            return
        data = event.to_dict()
        self._queue.put((self.session, data["t"], data["type"], event.call_id, json.dumps(data)))

    def _run(self) -> None:
        conn = sqlite3.connect(self.path)
        try:
            stop = False
            while not stop:
                batch = [self._queue.get()]
                while True:
                    try:
                        batch.append(self._queue.get_nowait())
                    except queue.Empty:
                        break
                rows = [item for item in batch if isinstance(item, tuple)]
                stop = any(item is _STOP for item in batch)
                if rows:
                    conn.executemany(
                        "INSERT INTO events(session, t, type, call_id, data) VALUES (?,?,?,?,?)",
                        rows,
                    )
                    conn.commit()
                    self.written += len(rows)
                for item in batch:
                    if isinstance(item, _FlushMarker):
                        item.done.set()
        except BaseException as exc:  # surfaced by close()
            self._error = exc
        finally:
            conn.close()

    def flush(self, timeout: float = 5.0) -> None:
        """Block until everything recorded so far is on disk."""
        done = threading.Event()
        self._queue.put(_FlushMarker(done))
        done.wait(timeout)

    def close(self, timeout: float = 5.0) -> None:
        if self._closed:
            return
        self._closed = True
        self._queue.put(_STOP)
        self._thread.join(timeout)
        if self._error is not None:
            raise RuntimeError(f"event log {self.path} failed: {self._error}") from self._error


class _FlushMarker:
    def __init__(self, done: threading.Event) -> None:
        self.done = done


def read_events(path: str | Path, *, kind: str | None = None) -> Iterator[dict[str, Any]]:
    """Every event recorded in a SQLite log, in order, as dicts."""
    conn = sqlite3.connect(f"file:{Path(path)}?mode=ro", uri=True)
    try:
        query = "SELECT data FROM events"
        params: tuple[Any, ...] = ()
        if kind is not None:
            query += " WHERE type = ?"
            params = (kind,)
        for (data,) in conn.execute(query + " ORDER BY id", params):
            yield json.loads(data)
    finally:
        conn.close()
