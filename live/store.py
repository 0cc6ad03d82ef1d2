"""One SQLite store per database file: one connection, one writer thread, never silent.

The event log, the job store and the occupancy log of one ``--db`` file are
views over the same ``SQLiteStore``: ``SQLiteStore.open`` hands out one shared,
reference-counted instance per resolved path, so the views never contend for
SQLite's write lock with each other, and a read (which waits for the writes
queued before it) sees what this process wrote earlier.

Writes never block the caller: they queue for the writer thread, which commits
them in batched transactions. When it cannot write (another process holds the
lock, the disk is full, an I/O error) it keeps them in a bounded backlog,
retries with backoff and, once it can write again, catches up in order. What
the backlog cannot hold is dropped oldest first, counted per kind, and recorded
in the ``store_gaps`` table as soon as writing works again. A problem is told
once when it starts and once when it ends (``on_problem`` listeners and the
``lookout.store`` logger), never once per write.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

log = logging.getLogger("lookout.store")

T = TypeVar("T")
ProblemCallback = Callable[[str, str], None]
"""``on_problem(kind, message)``; kind is one of the ``PROBLEM_*`` constants."""

PROBLEM_STARTED = "degraded"  # writing fails; what is queued is kept in memory
PROBLEM_ENDED = "recovered"  # writing works again and the backlog has caught up
DATA_DROPPED = "dropped"  # the backlog overflowed: the oldest writes are being dropped
DATA_LOST = "lost"  # the store closed with writes it could not make

SQLITE_MAGIC = b"SQLite format 3\x00"
_BUSY_SLICE_S = 0.1
_BUSY = frozenset({"SQLITE_BUSY", "SQLITE_LOCKED"})
DEFAULT_BACKLOG = 100_000

_GAPS_SCHEMA = """
CREATE TABLE IF NOT EXISTS store_gaps (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    t REAL NOT NULL,
    since REAL NOT NULL,
    kind TEXT NOT NULL,
    dropped INTEGER NOT NULL,
    reason TEXT NOT NULL,
    detail TEXT NOT NULL
)
"""
_INSERT_GAP = "INSERT INTO store_gaps(t, since, kind, dropped, reason, detail) VALUES (?,?,?,?,?,?)"


class StoreError(OSError):
    """The database file cannot be used at all; the message is one line naming the path.

    An ``OSError`` so that callers that already turn file problems into a usage
    error (``lookout run --db``) do so for this too.
    """


@dataclass(frozen=True)
class StoreHealth:
    """A snapshot of a store (or of one kind of write in it) for consoles and probes."""

    path: str
    written: int  # rows committed since the store opened
    pending: int  # rows waiting in memory to be written
    dropped: int  # rows lost: backlog overflow, unwritable rows, closed while failing
    dropped_by_kind: Mapping[str, int]
    retries: int  # failed write attempts that were retried
    errors: int  # unexpected exceptions in the writer (each counted, reported, retried)
    last_error: str | None  # one line, no traceback
    degraded: bool  # writing is failing right now
    closed: bool
    problem_since: float | None = None  # on the store's clock: when the current problem began

    @property
    def complete(self) -> bool:
        """Nothing was dropped (and, once closed, nothing was left unwritten)."""
        return self.dropped == 0 and not (self.closed and self.pending)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "written": self.written,
            "pending": self.pending,
            "dropped": self.dropped,
            "dropped_by_kind": dict(self.dropped_by_kind),
            "retries": self.retries,
            "errors": self.errors,
            "last_error": self.last_error,
            "degraded": self.degraded,
            "closed": self.closed,
            "problem_since": self.problem_since,
            "complete": self.complete,
        }


@dataclass(slots=True)
class _Write:
    seq: int
    kind: str  # what the row is, singular: "event", "job", "occupancy period"
    label: str  # finer detail kept in a gap record (an event's type)
    sql: str
    params: tuple[Any, ...]


_GapKey = tuple[str, str]  # (kind, why)
_GapSnapshot = Mapping[_GapKey, tuple[int, "Counter[str]", float]]  # count, by label, since
_OVERFLOW = "backlog full"


@dataclass
class _Gap:
    since: float  # wall-clock time of the first drop
    count: int = 0
    by_label: Counter[str] = field(default_factory=Counter)


@dataclass
class _Episode:
    """One problem, from its first failure until the backlog has caught up."""

    started: float  # on the store's clock
    written_before: Counter[str]
    dropped_before: Counter[str]
    started_notice: bool = False
    dropped_notice: bool = False
    caught_up_at: int | None = None  # seq to reach once writing works again
    error: str | None = None  # the first error, why the backlog filled


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if isinstance(exc, sqlite3.Error | OSError) else f"{type(exc).__name__}: {text}"


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"


def _describe(counts: Mapping[str, int]) -> str:
    parts = [_plural(n, kind) for kind, n in sorted(counts.items()) if n > 0]
    return ", ".join(parts) if parts else "nothing"


def _is_row_fault(exc: BaseException) -> bool:
    """SQLite refuses this row (a constraint, a value it cannot bind): retrying cannot help.

    Anything else (locked, busy, full, I/O, a malformed file, even a bug here) is
    retried with backoff: the row itself may be fine.
    """
    row_faults = (
        sqlite3.IntegrityError,
        sqlite3.ProgrammingError,
        sqlite3.DataError,
        sqlite3.InterfaceError,
        sqlite3.NotSupportedError,
        TypeError,
        ValueError,
        OverflowError,
    )
    return isinstance(exc, row_faults)


def _rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        # SQLite may have rolled back already (SQLITE_FULL does).
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


def _statements(script: str) -> list[str]:
    # The schemas here hold no semicolons inside literals, so splitting is exact.
    return [s.strip() for s in script.split(";") if s.strip()]


def _check_path(path: Path) -> None:
    """Fail now, in one line, for what no retrying would fix."""
    if path.is_dir():
        raise StoreError(f"{path}: is a directory, not a database file")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"{path}: cannot create its folder ({exc.strerror or exc})") from None
    if path.exists():
        try:
            with path.open("rb") as file:
                head = file.read(len(SQLITE_MAGIC))
        except OSError as exc:
            raise StoreError(f"{path}: cannot read it ({exc.strerror or exc})") from None
        if head and head != SQLITE_MAGIC:
            raise StoreError(f"{path}: not a SQLite database")
        if not os.access(path, os.W_OK):
            raise StoreError(f"{path}: not writable")
    # WAL mode creates -wal and -shm files beside the database.
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise StoreError(f"{path}: its folder {path.parent} is not writable")


_REGISTRY: dict[Path, SQLiteStore] = {}
_REGISTRY_LOCK = threading.Lock()


class SQLiteStore:
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
        self.path = path
        self.max_backlog = backlog
        self._batch_size = min(batch_size, backlog)
        self._retry_initial_s = retry_initial_s
        self._retry_max_s = retry_max_s
        self._read_wait_s = read_wait_s
        self._clock = clock
        self._wall = wall
        self._sleep = sleep
        _check_path(path)
        self._busy_timeout_s = busy_timeout_s
        # SQLite's own busy wait cannot be cut short, so it waits in short slices
        # and the writer retries them until busy_timeout_s: closing never waits long.
        self._conn = self._connect(min(busy_timeout_s, _BUSY_SLICE_S))
        self._busy_since: float | None = None
        self._conn_lock = threading.Lock()  # held for each transaction and each read
        self._conn_closed = False
        self._cond = threading.Condition()  # guards everything below
        self._pending: deque[_Write] = deque()
        self._inflight: list[_Write] = []
        self._seq = 0
        self._written: Counter[str] = Counter()
        self._waiting: Counter[str] = Counter()  # pending + in flight, per kind
        self._dropped: Counter[str] = Counter()
        self._gaps: dict[_GapKey, _Gap] = {}
        self._retries = 0
        self._errors = 0
        self._last_error: str | None = None
        self._degraded = False
        self._episode: _Episode | None = None
        self._isolate_until = 0  # seq up to which rows are tried one at a time
        self._delay = 0.0
        self._poison_seen: set[str] = set()
        self._refs = 0
        self._stopping = False
        self._give_up = False
        self._finished = False  # the writer thread has ended
        self._listeners: list[ProblemCallback] = []
        self._wake = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"lookout-store:{path.name}", daemon=True
        )
        self._thread.start()

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

    def acquire(self) -> SQLiteStore:
        """Another reference to this (open) store, for a view handed an existing store."""
        with _REGISTRY_LOCK:
            if _REGISTRY.get(self.path) is not self:
                raise StoreError(f"{self.path}: the store is closed")
            self._refs += 1
        return self

    def _connect(self, busy_timeout_s: float) -> sqlite3.Connection:
        try:
            # Autocommit: the writer brackets its batches with BEGIN IMMEDIATE/COMMIT.
            conn = sqlite3.connect(
                self.path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot open ({one_line(exc)})") from None
        try:
            try:
                conn.execute("PRAGMA journal_mode=WAL")
            except sqlite3.OperationalError as exc:
                # Another process writing now; a file it writes is in WAL mode already.
                if exc.sqlite_errorname not in _BUSY:
                    raise
            self._create(conn, _GAPS_SCHEMA)
        except sqlite3.OperationalError as exc:
            conn.close()
            raise StoreError(f"{self.path}: cannot use it ({one_line(exc)})") from None
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise StoreError(f"{self.path}: not a SQLite database ({one_line(exc)})") from None
        return conn

    @staticmethod
    def _create(conn: sqlite3.Connection, script: str) -> None:
        # CREATE ... IF NOT EXISTS of what exists takes no write lock, so an existing
        # file opens even while another process holds it.
        for statement in _statements(script):
            conn.execute(statement)

    def ensure_schema(self, script: str) -> None:
        """Create a view's tables (``CREATE ... IF NOT EXISTS`` statements).

        If another process holds the write lock the statements are queued ahead
        of the view's writes instead of failing; any other problem raises
        ``StoreError``.
        """
        with self._conn_lock:
            try:
                self._create(self._conn, script)
                return
            except sqlite3.OperationalError as exc:
                if exc.sqlite_errorname not in _BUSY:
                    raise StoreError(f"{self.path}: cannot use it ({one_line(exc)})") from None
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"{self.path}: cannot use it ({one_line(exc)})") from None
        for statement in _statements(script):
            self.write("schema", "schema", statement, ())

    # ------------------------------------------------------------ listeners

    def add_listener(self, callback: ProblemCallback) -> None:
        with self._cond:
            self._listeners.append(callback)

    def remove_listener(self, callback: ProblemCallback) -> None:
        with self._cond:
            if callback in self._listeners:
                self._listeners.remove(callback)

    def _tell(self, notices: Iterable[tuple[str, str]]) -> None:
        """Log and call the listeners; never under a lock (a listener may read stats)."""
        for kind, message in notices:
            # A warning for the end too: whoever saw the start should see it end.
            log.warning("%s", message)
            with self._cond:
                listeners = list(self._listeners)
            for callback in listeners:
                try:
                    callback(kind, message)
                except Exception:
                    log.exception("on_problem callback failed")

    # ------------------------------------------------------------ writing

    def write(self, kind: str, label: str, sql: str, params: tuple[Any, ...]) -> int:
        """Queue one statement for the writer thread; returns its sequence number at once."""
        with self._cond:
            self._seq += 1
            op = _Write(self._seq, kind, label, sql, params)
            if self._stopping:
                # Nobody will write it; counted, so the loss is not silent.
                self._drop(op, "written after the store was closed")
                return op.seq
            self._pending.append(op)
            self._waiting[kind] += 1
            self._enforce_backlog()
            self._cond.notify_all()
            return op.seq

    def _enforce_backlog(self) -> None:
        """Drop the oldest rows waiting while more than the backlog wait."""
        # Rows in flight are not counted: if their commit fails they come back
        # to the front and are the oldest, so they go first.
        excess = len(self._pending) - self.max_backlog
        if excess <= 0:
            return
        for _ in range(min(excess, len(self._pending))):
            old = self._pending.popleft()
            self._waiting[old.kind] -= 1
            self._drop(old, _OVERFLOW)

    def _drop(self, op: _Write, reason: str) -> None:
        self._dropped[op.kind] += 1
        gap = self._gaps.get((op.kind, reason))
        if gap is None:
            gap = self._gaps[(op.kind, reason)] = _Gap(since=self._wall())
        gap.count += 1
        gap.by_label[op.label] += 1

    def _settled_seq(self) -> int:
        """Every write up to this sequence number is committed or counted as dropped."""
        if self._inflight:
            return self._inflight[0].seq - 1
        if self._pending:
            return self._pending[0].seq - 1
        return self._seq

    def settled(self, seq: int) -> bool:
        with self._cond:
            return self._settled_seq() >= seq

    def wait_settled(
        self, seq: int, timeout: float, *, unless_failing: bool = False, gaps: bool = False
    ) -> bool:
        """Wait (real time) until write ``seq`` is committed or dropped; True if it is.

        With ``unless_failing`` return at once while writing fails, so a worker
        thread never waits on a retry loop it cannot shorten; with ``gaps`` wait
        for the records of dropped writes to be written too.
        """

        def done() -> bool:
            return self._settled_seq() >= seq and not (gaps and self._gaps)

        if threading.current_thread() is self._thread:
            with self._cond:  # a listener waiting on its own writer would hang
                return done()
        deadline = time.monotonic() + timeout
        with self._cond:
            while not done():
                if self._finished or (unless_failing and self._degraded):
                    return False
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
            return True

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until everything queued so far is written (or dropped); False on timeout."""
        with self._cond:
            target = self._seq
        return self.wait_settled(target, timeout, gaps=True)

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
            return query(self._conn)

    # ------------------------------------------------------------ health

    def health(self, kind: str | None = None) -> StoreHealth:
        """Counts for the whole store, or for one kind of row ("event", "job", ...)."""
        with self._cond:
            kinds = [kind] if kind is not None else None

            def total(counter: Counter[str]) -> int:
                if kinds is None:
                    return sum(n for k, n in counter.items() if k != "schema")
                return sum(counter[k] for k in kinds)

            dropped = {
                k: n for k, n in self._dropped.items() if n and (kinds is None or k in kinds)
            }
            return StoreHealth(
                path=str(self.path),
                written=total(self._written),
                pending=total(self._waiting),
                dropped=sum(dropped.values()),
                dropped_by_kind=dropped,
                retries=self._retries,
                errors=self._errors,
                last_error=self._last_error,
                degraded=self._degraded,
                closed=self._finished,
                problem_since=self._episode.started if self._episode is not None else None,
            )

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

    def _shut_down(self) -> None:
        with self._cond:
            self._stopping = True
            # Whatever is still queued after the flush cannot be written in time.
            self._give_up = bool(self._pending or self._inflight or self._gaps)
            self._cond.notify_all()
        self._wake.set()
        self._thread.join(2.0)
        if self._thread.is_alive():
            log.warning("%s: the writer did not stop in time; closing without it", self.path)

    # ------------------------------------------------------------ the writer

    def _run(self) -> None:
        try:
            while True:
                try:
                    if not self._cycle():
                        return
                except Exception as exc:  # the writer never dies; what it holds is requeued
                    if not self._unexpected(exc):
                        return
        finally:
            with self._conn_lock:
                self._conn.close()
                self._conn_closed = True
            with self._cond:
                self._finished = True
                self._cond.notify_all()

    def _cycle(self) -> bool:
        """One batch: take, write, account, report; False when the store is done."""
        with self._cond:
            while not (self._pending or self._gaps_due()):
                if self._stopping:
                    return False
                self._cond.wait()
            if self._give_up:
                lost = self._lose_everything()
                batch = None
            else:
                limit = 1 if self._pending and self._pending[0].seq <= self._isolate_until else 0
                limit = limit or self._batch_size
                batch = [self._pending.popleft() for _ in range(min(limit, len(self._pending)))]
                self._inflight = batch
                lost = []
                # Rows dropped while the writer was busy or backing off: say so first.
                self._notice_drops(lost)
                gaps = {k: (g.count, Counter(g.by_label), g.since) for k, g in self._gaps.items()}
                reasons = {k: self._gap_reason(k[1]) for k in gaps}
        self._tell(lost)
        if batch is None:
            return False
        error = self._commit(batch, gaps, reasons)
        notices: list[tuple[str, str]] = []
        pause = 0.0
        with self._cond:
            if error is None:
                self._succeeded(batch, gaps, notices)
            elif self._give_up:
                self._last_error = one_line(error)
                self._requeue(batch)
                notices.extend(self._lose_everything())
            elif _is_row_fault(error):
                self._poisoned(batch, error, notices)
                pause = 0.0 if batch else self._delay
            elif self._still_busy(error):
                self._requeue(batch)  # another slice of SQLite's busy wait, at once
            else:
                self._requeue(batch)
                self._failed(error, notices)
                pause = self._delay
            self._notice_drops(notices)
            self._cond.notify_all()
            stop = self._give_up and not (self._pending or self._inflight)
        self._tell(notices)
        if pause:
            self._pause(pause)
        return not stop

    def _still_busy(self, error: BaseException) -> bool:
        """Locked, but not yet for busy_timeout_s: not a problem yet."""
        if self._degraded or not (
            isinstance(error, sqlite3.OperationalError) and error.sqlite_errorname in _BUSY
        ):
            return False
        now = time.monotonic()  # real time: SQLite waits in real time
        if self._busy_since is None:
            self._busy_since = now
        return now - self._busy_since < self._busy_timeout_s

    def _gaps_due(self) -> bool:
        # Gap records go with the next batch, or alone if no batch comes.
        return bool(self._gaps)

    def _gap_reason(self, why: str) -> str:
        if why != _OVERFLOW:
            return why
        error = self._episode.error if self._episode is not None else None
        why = error or "writing could not keep up"
        return f"more than {self.max_backlog:,} writes waiting ({why})"

    def _commit(
        self, batch: list[_Write], gaps: _GapSnapshot, reasons: Mapping[_GapKey, str]
    ) -> BaseException | None:
        with self._conn_lock:
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE")
                now = self._wall()
                for key, (count, labels, since) in gaps.items():
                    detail = json.dumps(dict(labels), sort_keys=True)
                    row = (now, since, key[0], count, reasons[key], detail)
                    conn.execute(_INSERT_GAP, row)
                start = 0
                while start < len(batch):
                    end = start + 1
                    while end < len(batch) and batch[end].sql == batch[start].sql:
                        end += 1
                    conn.executemany(batch[start].sql, [op.params for op in batch[start:end]])
                    start = end
                conn.execute("COMMIT")
                return None
            except Exception as exc:
                _rollback(conn)
                return exc

    def _requeue(self, batch: list[_Write]) -> None:
        self._pending.extendleft(reversed(batch))
        self._inflight = []
        self._enforce_backlog()

    def _succeeded(
        self,
        batch: list[_Write],
        gaps: _GapSnapshot,
        notices: list[tuple[str, str]],
    ) -> None:
        self._inflight = []
        for op in batch:
            self._written[op.kind] += 1
            self._waiting[op.kind] -= 1
        for key, (count, labels, _) in gaps.items():
            gap = self._gaps.get(key)
            if gap is None:
                continue
            gap.count -= count
            gap.by_label.subtract(labels)
            if gap.count <= 0:
                del self._gaps[key]
            else:
                gap.by_label = +gap.by_label
                gap.since = self._wall()
        if batch and batch[-1].seq >= self._isolate_until:
            self._isolate_until = 0
        self._degraded = False
        self._delay = 0.0
        self._busy_since = None
        episode = self._episode
        if episode is None:
            return
        if episode.caught_up_at is None:
            episode.caught_up_at = self._seq
        if self._settled_seq() >= episode.caught_up_at and not self._gaps:
            self._episode = None
            caught_up = self._written - episode.written_before
            caught_up.pop("schema", None)
            dropped = self._dropped - episode.dropped_before
            text = f"event log: writing again; {_describe(caught_up)} caught up"
            if dropped:
                text += f", {_describe(dropped)} dropped (recorded in store_gaps)"
            notices.append((PROBLEM_ENDED, text))

    def _current_episode(self) -> _Episode:
        if self._episode is None:
            # Drops not yet in store_gaps belong to this problem, even if they came first.
            unrecorded: Counter[str] = Counter()
            for (kind, _), gap in self._gaps.items():
                unrecorded[kind] += gap.count
            self._episode = _Episode(
                self._clock(), Counter(self._written), self._dropped - unrecorded
            )
        return self._episode

    def _failed(self, error: BaseException, notices: list[tuple[str, str]]) -> None:
        self._retries += 1
        if not isinstance(error, sqlite3.Error | OSError):
            self._errors += 1  # not the disk or the database: a surprise, counted as such
        self._last_error = one_line(error)
        self._degraded = True
        self._delay = min(self._retry_max_s, max(self._retry_initial_s, self._delay * 2))
        episode = self._current_episode()
        episode.caught_up_at = None  # a failure while catching up: the same problem goes on
        episode.error = episode.error or self._last_error
        if not episode.started_notice:
            episode.started_notice = True
            waiting = {k: n for k, n in self._waiting.items() if k != "schema"}
            notices.append(
                (
                    PROBLEM_STARTED,
                    f"event log: {self._last_error} (writing {self.path.name}); keeping "
                    f"{_describe(waiting)} in memory and retrying",
                )
            )

    def _poisoned(
        self, batch: list[_Write], error: BaseException, notices: list[tuple[str, str]]
    ) -> None:
        """A row SQLite refuses: find it (one row at a time) and drop it, counted."""
        self._errors += 1
        self._last_error = one_line(error)
        if len(batch) > 1:
            self._requeue(batch)
            self._isolate_until = batch[-1].seq
            return
        self._inflight = []
        for op in batch:
            self._waiting[op.kind] -= 1
            self._drop(op, f"refused by SQLite: {self._last_error}")
        if not batch:
            # Only gap records were written and they failed: keep them, but do not spin.
            self._delay = min(self._retry_max_s, max(self._retry_initial_s, self._delay * 2))
        if self._last_error not in self._poison_seen:
            self._poison_seen.add(self._last_error)
            what = _describe(Counter(op.kind for op in batch)) if batch else "a gap record"
            notices.append(
                (DATA_DROPPED, f"event log: could not write {what} ({self._last_error}); dropped")
            )

    def _notice_drops(self, notices: list[tuple[str, str]]) -> None:
        """Once per problem, say that the backlog overflowed (the drops happen elsewhere)."""
        overflowed = {k[0]: g.count for k, g in self._gaps.items() if k[1] == _OVERFLOW}
        if not overflowed:
            return
        episode = self._current_episode()
        if not self._degraded and episode.caught_up_at is None:
            episode.caught_up_at = self._seq  # falling behind, not failing: over once caught up
        if episode.dropped_notice:
            return
        episode.dropped_notice = True
        notices.append(
            (
                DATA_DROPPED,
                f"event log: more than {self.max_backlog:,} writes waiting for "
                f"{self.path.name}; dropping the oldest ({_describe(overflowed)} so far)",
            )
        )

    def _lose_everything(self) -> list[tuple[str, str]]:
        """Closing while writing fails: count what is left as lost and say so once."""
        left = list(self._inflight) + list(self._pending)
        self._inflight = []
        self._pending.clear()
        reason = f"closed before it could be written ({self._last_error or 'no answer yet'})"
        for op in left:
            self._waiting[op.kind] -= 1
            self._drop(op, reason)
        unrecorded: Counter[str] = Counter()
        for (kind, _), gap in self._gaps.items():
            if kind != "schema":
                unrecorded[kind] += gap.count
        self._gaps.clear()  # nowhere left to record them; the stats keep the counts
        self._cond.notify_all()
        if not unrecorded:
            return []
        return [
            (
                DATA_LOST,
                f"event log: {_describe(unrecorded)} could not be written to {self.path.name} "
                f"before closing ({self._last_error or 'still waiting for the database'}); "
                "they are lost",
            )
        ]

    def _unexpected(self, exc: Exception) -> bool:
        """A bug or surprise in the writer: count it, say it once, retry; False to stop."""
        log.debug("store writer error", exc_info=exc)
        notices: list[tuple[str, str]] = []
        with self._cond:
            self._requeue(self._inflight)
            if self._give_up:
                notices.extend(self._lose_everything())
            else:
                self._failed(exc, notices)
            pause = self._delay
            stop = self._give_up
        self._tell(notices)
        if stop:
            return False
        self._pause(pause)
        return True

    def _pause(self, seconds: float) -> None:
        if self._give_up:
            return
        if self._sleep is not None:
            self._sleep(seconds)
            return
        # Closing sets the event: a backoff never delays shutdown.
        self._wake.wait(seconds)
        self._wake.clear()


def read_gaps(path: str | Path) -> list[dict[str, Any]]:
    """The gap records of a store (what was dropped, when and why), oldest first."""

    def query(conn: sqlite3.Connection) -> list[dict[str, Any]]:
        rows = conn.execute(
            "SELECT t, since, kind, dropped, reason, detail FROM store_gaps ORDER BY id"
        ).fetchall()
        keys = ("t", "since", "kind", "dropped", "reason")
        return [dict(zip(keys, r[:5], strict=True), detail=json.loads(r[5])) for r in rows]

    store = SQLiteStore.lookup(path)
    if store is not None:
        return store.read(query)
    return read_only(path, query)


def read_only(
    path: str | Path,
    query: Callable[[sqlite3.Connection], T],
    *,
    attempts: int = 5,
    busy_timeout_s: float = 5.0,
    sleep: Callable[[float], object] = time.sleep,
) -> T:
    """Run ``query`` on a read-only connection, retrying while another process has it busy."""
    delay = 0.05
    for attempt in range(attempts):
        uri = f"{Path(path).resolve().as_uri()}?mode=ro"  # as_uri escapes "?" and "#"
        conn = sqlite3.connect(uri, uri=True, timeout=busy_timeout_s)
        try:
            return query(conn)
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorname not in _BUSY:
                raise
            if attempt == attempts - 1:
                raise
        finally:
            conn.close()
        sleep(delay)
        delay *= 2
    raise AssertionError("unreachable")


__all__ = [
    "DATA_DROPPED",
    "DATA_LOST",
    "DEFAULT_BACKLOG",
    "PROBLEM_ENDED",
    "PROBLEM_STARTED",
    "ProblemCallback",
    "SQLiteStore",
    "StoreError",
    "StoreHealth",
    "read_gaps",
    "read_only",
]
