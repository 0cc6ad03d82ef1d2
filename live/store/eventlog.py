"""The event log: every tool call, emission and stream start/stop, persisted.

So that nothing that matters lives only in the model's context, the session
records each event. ``SQLiteEventLog`` hands them to the file's store, whose
writer thread keeps a slow, locked or full disk from stalling the event loop
and says so, once, when it cannot write.

Each row's ``camera`` column is the camera of a camera's event (its ``camera``
field) and NULL for the device's own (the run, the session's calls, the model's
words). A log from before the column had one camera: the column is added to it
in place when it is opened for writing, with ``main`` as its value in the rows
already there (a default, so no row is rewritten); one opened only to read is
read as it is, every row of it the main camera's.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any, Protocol, TypeVar

from live.events import Event
from live.store.database import ProblemCallback, SQLiteStore, StoreHealth, read_only
from live.store.file import has_column

# The camera of a row written without one: Lookout before cameras had names had one.
OLDER_CAMERA = "main"
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session TEXT NOT NULL,
    t REAL NOT NULL,
    type TEXT NOT NULL,
    call_id TEXT,
    data TEXT NOT NULL,
    camera TEXT DEFAULT '{OLDER_CAMERA}'
);
ALTER TABLE events ADD COLUMN camera TEXT DEFAULT '{OLDER_CAMERA}';
CREATE INDEX IF NOT EXISTS events_type ON events(type);
CREATE INDEX IF NOT EXISTS events_call ON events(call_id);
CREATE INDEX IF NOT EXISTS events_camera ON events(camera, type, t);
"""
_INSERT = "INSERT INTO events(session, t, type, call_id, data, camera) VALUES (?,?,?,?,?,?)"
KIND = "event"  # the store counts (and drops) rows by kind
T = TypeVar("T")


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
    ``live.store.database``). ``close`` never raises for write problems; ``complete`` and
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
        camera = data.get("camera")
        row = (
            self.session,
            data["t"],
            data["type"],
            event.call_id,
            json.dumps(data),
            camera if isinstance(camera, str) else None,
        )
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


def _read(path: str | Path, query: Callable[[sqlite3.Connection], T]) -> T:
    """``query`` through this process's store of the file if it has one open (so it sees
    what was recorded before), else on a read-only connection that waits out another
    process's writes."""
    store = SQLiteStore.lookup(path)
    return store.read(query) if store is not None else read_only(path, query)


def read_events(
    path: str | Path, *, kind: str | None = None, camera: str | None = None
) -> Iterator[dict[str, Any]]:
    """Every event recorded in a SQLite log, in order, as dicts; ``kind``: of that type
    only; ``camera``: that camera's events only (none of the device's own)."""

    def rows(conn: sqlite3.Connection) -> list[str]:
        where, params = (["type = ?"], [kind]) if kind is not None else ([], [])
        if camera is not None and has_column(conn, "events", "camera"):
            where.append("camera = ?")
            params.append(camera)
        elif camera is not None and camera != OLDER_CAMERA:
            return []  # a log from before cameras were named: every row is main's
        query = "SELECT data FROM events" + (f" WHERE {' AND '.join(where)}" if where else "")
        # Read it all at once: a read transaction held while the caller iterates
        # would keep a writing process from checkpointing.
        return [data for (data,) in conn.execute(query + " ORDER BY id", params)]

    for data in _read(path, rows):
        yield json.loads(data)


# The distinct cameras, over the camera index: one lookup per camera, however long the
# log (SQLite has no skip-scan for DISTINCT on its own).
_CAMERAS = """
WITH RECURSIVE seen(name) AS (
    SELECT MIN(camera) FROM events
    UNION ALL
    SELECT (SELECT MIN(camera) FROM events WHERE camera > seen.name) FROM seen
    WHERE seen.name IS NOT NULL
)
SELECT name FROM seen WHERE name IS NOT NULL
"""


def log_cameras(path: str | Path, types: Collection[str]) -> list[str]:
    """The cameras a SQLite log has events of (of one of ``types``, a camera's kinds of
    event: rows from before the column read ``main`` whatever they are), by name."""
    kinds = sorted(types)
    of_types = f"type IN ({','.join('?' * len(kinds))})"

    def query(conn: sqlite3.Connection) -> list[str]:
        if not has_column(conn, "events", "camera"):
            found = conn.execute(f"SELECT 1 FROM events WHERE {of_types} LIMIT 1", kinds)
            return [OLDER_CAMERA] if found.fetchone() else []
        names = [name for (name,) in conn.execute(_CAMERAS)]
        check = f"SELECT 1 FROM events WHERE camera = ? AND {of_types} LIMIT 1"
        return [n for n in names if conn.execute(check, [n, *kinds]).fetchone() is not None]

    return _read(path, query)
