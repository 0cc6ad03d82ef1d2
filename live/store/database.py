"""One SQLite store per database file: one connection, one writer thread, never silent.

The event log, the job store and the occupancy log of one ``--db`` file are
views over the same ``SQLiteStore``: ``SQLiteStore.open`` hands out one shared,
reference-counted instance per resolved path, so the views never contend for
SQLite's write lock with each other, and a read (which waits for the writes
queued before it) sees what this process wrote earlier.

The work is split by job: ``live.store.file`` checks, opens and writes the
file; ``live.store.writer`` queues writes and commits them on its thread,
retrying with backoff and keeping a bounded backlog; ``live.store.ledger``
counts what was written and dropped (recorded in ``store_gaps``) and notes a
problem once when it starts and once when it ends; ``live.store.health`` is
the snapshot of those counts and tells of a problem (listeners, the log);
``live.store.identity`` tells whether the path still names the open file
(renamed, deleted: the writer opens a new database there). This module is the
facade the views use, and the registry of open stores.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from live.store.file import (
    BUSY,
    BUSY_SLICE_S,
    SCHEMA,
    SQLITE_MAGIC,
    StoreError,
    check_path,
    connect,
    create,
    one_line,
    query_gaps,
    read_only,
    statements,
)
from live.store.health import (
    DATA_DROPPED,
    DATA_LOST,
    PROBLEM_ENDED,
    PROBLEM_STARTED,
    REOPENED,
    ProblemCallback,
    StoreHealth,
)
from live.store.writer import StoreWriter
from live.util.backoff import Backoff

T = TypeVar("T")

DEFAULT_BACKLOG = 100_000

_REGISTRY: dict[Path, SQLiteStore] = {}
_REGISTRY_LOCK = threading.Lock()


class SQLiteStore(StoreWriter):
    """All SQLite access to one database file: one connection, one writer thread.

    Get one with ``SQLiteStore.open(path)`` (shared per file, reference-counted)
    and give it back with ``release()``; the last release flushes and closes.
    """

    def __init__(
        self,
        path: Path,
        *,
        backlog: int = DEFAULT_BACKLOG,
        busy_timeout_s: float = 5.0,
        batch_size: int = 1000,
        retry_initial_s: float = 0.05,
        retry_max_s: float = 5.0,
        read_wait_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        sleep: Callable[[float], object] | None = None,
    ) -> None:
        if backlog < 1 or batch_size < 1:
            raise ValueError("backlog and batch_size must be at least 1")
        backoff = Backoff(retry_initial_s, retry_max_s)
        self._read_wait_s = read_wait_s
        self._refs = 0
        self._busy_slice_s = min(busy_timeout_s, BUSY_SLICE_S)
        self._schemas: list[str] = []  # every view's, made again in a new file
        check_path(path)
        super().__init__(
            path,
            connect(path, self._busy_slice_s),
            reconnect=self._reopen,
            backlog=backlog,
            batch_size=batch_size,
            busy_timeout_s=busy_timeout_s,
            backoff=backoff,
            clock=clock,
            wall=wall,
            sleep=sleep,
        )

    # ------------------------------------------------------------ opening

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        on_problem: ProblemCallback | None = None,
        **options: Any,
    ) -> SQLiteStore:
        """The store of ``path``, opened now or shared with whoever has it open.

        ``options`` (see ``__init__``) apply only when this call opens the file;
        passing them for a file already open is an error rather than ignored.
        Raises ``StoreError`` (one line) when the file cannot be used at all.
        """
        key = Path(path).expanduser().resolve()
        with _REGISTRY_LOCK:
            store = _REGISTRY.get(key)
            if store is not None and options:
                raise ValueError(f"{key}: already open; options apply only to the first open")
            if store is None:
                store = cls(key, **options)
                _REGISTRY[key] = store
            store._refs += 1
        if on_problem is not None:
            store.add_listener(on_problem)
        return store

    @classmethod
    def lookup(cls, path: str | Path) -> SQLiteStore | None:
        """The store of ``path`` if this process has it open, without taking a reference."""
        with _REGISTRY_LOCK:
            return _REGISTRY.get(Path(path).expanduser().resolve())

    @classmethod
    def for_view(
        cls, path: str | Path, schema: str, store: SQLiteStore | None = None
    ) -> SQLiteStore:
        """A reference to the shared store of ``path`` (or ``store``), ``schema`` in place.

        What every view (event log, job store, occupancy log) does first; the reference
        is given back if the schema cannot be made, so nothing leaks.
        """
        shared = store.acquire() if store is not None else cls.open(path)
        try:
            shared.ensure_schema(schema)
        except BaseException:
            shared.release(0)
            raise
        return shared

    def acquire(self) -> SQLiteStore:
        """Another reference to this (open) store, for a view handed an existing store."""
        with _REGISTRY_LOCK:
            if _REGISTRY.get(self.path) is not self:
                raise StoreError(f"{self.path}: the store is closed")
            self._refs += 1
        return self

    def ensure_schema(self, script: str) -> None:
        """Create a view's tables (``CREATE ... IF NOT EXISTS`` statements).

        If another process holds the write lock the statements are queued ahead
        of the view's writes instead of failing; any other problem raises
        ``StoreError``.
        """
        with self._conn_lock:
            if script not in self._schemas:
                self._schemas.append(script)
            if self._conn is None:
                return  # between files: the next one is made with it
            try:
                create(self._conn, script)
                return
            except sqlite3.OperationalError as exc:
                if exc.sqlite_errorname not in BUSY:
                    raise StoreError(f"{self.path}: cannot use it ({one_line(exc)})") from None
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"{self.path}: cannot use it ({one_line(exc)})") from None
        for statement in statements(script):
            self.write(SCHEMA, SCHEMA, statement, ())

    # ------------------------------------------------------------ listeners

    def add_listener(self, callback: ProblemCallback) -> None:
        self._listeners.add(callback)

    def remove_listener(self, callback: ProblemCallback) -> None:
        self._listeners.remove(callback)

    # ------------------------------------------------------------ reading

    def read(self, query: Callable[[sqlite3.Connection], T], *, wait_s: float | None = None) -> T:
        """Run ``query(connection)`` after the writes queued before it have settled.

        While writing fails it runs at once on what is committed (the views keep
        what they have not yet written in memory). ``query`` must not write.
        """
        with self._cond:
            target = self._seq
        self.wait_settled(
            target, self._read_wait_s if wait_s is None else wait_s, unless_failing=True
        )
        with self._conn_lock:
            if self._conn_closed:
                raise StoreError(f"{self.path}: the store is closed")
            if self._conn is None:
                raise StoreError(f"{self.path}: no database open (it left its name)")
            return query(self._conn)

    def _reopen(self) -> sqlite3.Connection:
        """A new database at the path (the old one left it), every view's tables in it."""
        check_path(self.path)
        conn = connect(self.path, self._busy_slice_s)
        try:
            with self._conn_lock:
                schemas = list(self._schemas)
            for script in schemas:
                create(conn, script)
        except BaseException:
            conn.close()
            raise
        return conn

    # ------------------------------------------------------------ health

    def health(self, kind: str | None = None) -> StoreHealth:
        """Counts for the whole store, or for one kind of row ("event", "job", ...)."""
        with self._cond:
            return self._ledger.health(kind, closed=self._finished)

    @property
    def stats(self) -> StoreHealth:
        return self.health()

    # ------------------------------------------------------------ closing

    def release(self, timeout: float = 5.0) -> StoreHealth:
        """Give back one reference: flush (bounded by ``timeout``); the last one closes.

        Never raises for write problems: what could not be written is counted in
        the returned health (``complete`` is False) and said once in the log.
        """
        self.flush(timeout)
        with _REGISTRY_LOCK:
            if self._refs <= 0:
                return self.health()  # released already: a second close is harmless
            self._refs -= 1
            last = self._refs <= 0
            if last and _REGISTRY.get(self.path) is self:
                del _REGISTRY[self.path]
        if last:
            self._shut_down()
        return self.health()

    def close(self, timeout: float = 5.0) -> StoreHealth:
        """``release``: the name views and ``with`` blocks expect."""
        return self.release(timeout)

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def read_gaps(path: str | Path) -> list[dict[str, Any]]:
    """The gap records of a store (what was dropped, when and why), oldest first."""
    store = SQLiteStore.lookup(path)
    if store is not None:
        return store.read(query_gaps)
    return read_only(path, query_gaps)


__all__ = [
    "DATA_DROPPED",
    "DATA_LOST",
    "DEFAULT_BACKLOG",
    "PROBLEM_ENDED",
    "PROBLEM_STARTED",
    "REOPENED",
    "SQLITE_MAGIC",
    "ProblemCallback",
    "SQLiteStore",
    "StoreError",
    "StoreHealth",
    "one_line",
    "read_gaps",
    "read_only",
]
