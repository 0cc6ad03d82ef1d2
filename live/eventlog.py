"""The event log: every tool call, emission and stream start/stop, persisted.

So that nothing that matters lives only in the model's context, the session
records each event. ``SQLiteEventLog`` hands them to the file's store, whose
writer thread keeps a slow, locked or full disk from stalling the event loop
and says so, once, when it cannot write.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from live.events import Event
from live.store import ProblemCallback, SQLiteStore, StoreHealth, read_only

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
_INSERT = "INSERT INTO events(session, t, type, call_id, data) VALUES (?,?,?,?,?)"
KIND = "event"  # the store counts (and drops) rows by kind


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


class SQLiteEventLog:
    """Append-only SQLite log: a view over the file's ``SQLiteStore``.

    ``record`` never blocks: the store's writer thread commits in batches and,
    while it cannot write, keeps events in memory and retries (see
    ``live.store``). ``close`` never raises for write problems; ``complete`` and
    ``health()`` say whether every event made it.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        session: str = "",
        store: SQLiteStore | None = None,
        on_problem: ProblemCallback | None = None,
    ) -> None:
        self.path = Path(path)
        self.session = session
        self._store = SQLiteStore.for_view(self.path, _SCHEMA, store)
        self._on_problem = on_problem
        if on_problem is not None:
            self._store.add_listener(on_problem)
        self._closed = False

    @property
    def store(self) -> SQLiteStore:
        return self._store

    def record(self, event: Event) -> None:
        if self._closed:
            return
        data = event.to_dict()
        row = (self.session, data["t"], data["type"], event.call_id, json.dumps(data))
        self._store.write(KIND, event.type, _INSERT, row)

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until everything recorded so far is on disk; False if it is not yet."""
        return self._store.flush(timeout)

    def health(self) -> StoreHealth:
        """The events' counts (written, pending, dropped) and the store's state."""
        return self._store.health(KIND)

    @property
    def stats(self) -> StoreHealth:
        return self.health()

    @property
    def written(self) -> int:
        return self.health().written

    @property
    def complete(self) -> bool:
        """No event was dropped (and, once the store has closed, none was left unwritten)."""
        return self.health().complete

    def close(self, timeout: float = 5.0) -> None:
        """Flush for up to ``timeout`` seconds and let go of the store.

        Never raises for write problems: what was lost is said once (the
        ``lookout.store`` log and ``on_problem``) and ``complete`` turns False.
        """
        if self._closed:
            return
        self._closed = True
        self._store.release(timeout)
        if self._on_problem is not None:
            self._store.remove_listener(self._on_problem)


def read_events(path: str | Path, *, kind: str | None = None) -> Iterator[dict[str, Any]]:
    """Every event recorded in a SQLite log, in order, as dicts.

    Through this process's store of the file if it has one open (so it sees
    what was recorded before), else on a read-only connection that waits out
    another process's writes.
    """
    query = "SELECT data FROM events"
    params: tuple[Any, ...] = ()
    if kind is not None:
        query += " WHERE type = ?"
        params = (kind,)

    def rows(conn: sqlite3.Connection) -> list[str]:
        # Read it all at once: a read transaction held while the caller iterates
        # would keep a writing process from checkpointing.
        return [data for (data,) in conn.execute(query + " ORDER BY id", params)]

    store = SQLiteStore.lookup(path)
    found = store.read(rows) if store is not None else read_only(path, rows)
    for data in found:
        yield json.loads(data)
