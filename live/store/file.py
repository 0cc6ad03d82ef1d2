"""The database file itself: checked, opened, written in one transaction, read from outside.

Everything here is plain SQLite on a connection the caller holds; which
thread runs it, when it is retried and who hears of a failure is the
writer's business (``live.store.writer``).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import sqlite3
import stat
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from live.store.identity import SQLITE_LOG, claimed_by, file_key
from live.util.backoff import Backoff

T = TypeVar("T")

SQLITE_MAGIC = b"SQLite format 3\x00"
BUSY = frozenset({"SQLITE_BUSY", "SQLITE_LOCKED"})
BUSY_SLICE_S = 0.1

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
# The tables of Lookout's databases from before every one of them had store_gaps.
LOOKOUT_TABLES = frozenset({"events", "jobs", "occupancy_jobs", "occupancy_periods"})
_INSERT_GAP = "INSERT INTO store_gaps(t, since, kind, dropped, reason, detail) VALUES (?,?,?,?,?,?)"
# No cap: ``attempts`` bounds the waits.
_READ_BACKOFF = Backoff(initial_s=0.05, max_s=math.inf)
SCHEMA = "schema"  # the kind of the writes that make a view's tables (queued when busy)
# SQLite has no ADD COLUMN IF NOT EXISTS: a schema's column added to an older table is
# looked for first (``run_schema``), so a schema can be made again on any file.
_ADD_COLUMN = re.compile(r"\s*ALTER\s+TABLE\s+(\w+)\s+ADD\s+COLUMN\s+(\w+)\b", re.I)


class StoreError(OSError):
    """The database file cannot be used at all; the message is one line naming the path.

    An ``OSError`` so that callers that already turn file problems into a usage
    error (``lookout run --db``) do so for this too.
    """


@dataclass(slots=True)
class Write:
    """One statement queued for the writer."""

    seq: int
    kind: str  # what the row is, singular: "event", "job", "occupancy period"
    label: str  # finer detail kept in a gap record (an event's type)
    sql: str
    params: tuple[Any, ...]


@dataclass(frozen=True)
class GapRow:
    """One ``store_gaps`` record: how many writes of a kind were dropped, since when, why."""

    since: float
    kind: str
    dropped: int
    reason: str
    by_label: Mapping[str, int]


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if isinstance(exc, sqlite3.Error | OSError) else f"{type(exc).__name__}: {text}"


def is_row_fault(exc: BaseException) -> bool:
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


def is_busy(exc: BaseException) -> bool:
    """Another connection holds the lock: waiting can help."""
    return isinstance(exc, sqlite3.OperationalError) and exc.sqlite_errorname in BUSY


def check_path(path: Path) -> None:
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
        if claimed_by(file_key(path.stat())) not in (None, SQLITE_LOG):
            # An empty file the JSON-lines log of this process has just made.
            raise StoreError(f"{path}: this process writes JSON lines to it, not a database")
        if not os.access(path, os.W_OK):
            raise StoreError(f"{path}: not writable")
    # WAL mode creates -wal and -shm files beside the database.
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise StoreError(f"{path}: its folder {path.parent} is not writable")


def connect(path: Path, busy_timeout_s: float) -> sqlite3.Connection:
    """The store's one connection, in WAL mode, with the gap table in place.

    Refuses (``StoreError``) another application's database before anything is
    written to it: not its journal mode, not a table.
    """
    try:
        # Autocommit: the writer brackets its batches with BEGIN IMMEDIATE/COMMIT.
        conn = sqlite3.connect(
            path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
        )
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot open ({one_line(exc)})") from None
    try:
        check_ours(conn, path)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
        except sqlite3.OperationalError as exc:
            # Another process writing now; a file it writes is in WAL mode already.
            if exc.sqlite_errorname not in BUSY:
                raise
        create(conn, _GAPS_SCHEMA)
    except sqlite3.OperationalError as exc:
        conn.close()
        raise StoreError(f"{path}: cannot use it ({one_line(exc)})") from None
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StoreError(f"{path}: not a SQLite database ({one_line(exc)})") from None
    except BaseException:
        conn.close()
        raise
    return conn


def check_database(path: Path) -> None:
    """Raise ``StoreError`` if ``path`` names a file that is not a Lookout event database.

    Reads only (a missing or empty file is fine): what ``connect`` refuses, found
    before anything else of a run opens its files.
    """
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode) or info.st_size == 0:
            return
        with path.open("rb") as file:
            if file.read(len(SQLITE_MAGIC)) != SQLITE_MAGIC:
                raise StoreError(f"{path}: not a SQLite database")
    except FileNotFoundError:
        return
    except StoreError:
        raise
    except OSError as exc:
        raise StoreError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    try:
        conn = sqlite3.connect(path, timeout=BUSY_SLICE_S)
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot open ({one_line(exc)})") from None
    try:
        check_ours(conn, path)
    except sqlite3.OperationalError as exc:
        raise StoreError(f"{path}: cannot use it ({one_line(exc)})") from None
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: not a SQLite database ({one_line(exc)})") from None
    finally:
        conn.close()


def check_ours(conn: sqlite3.Connection, path: Path) -> None:
    """Raise ``StoreError`` unless the database is empty or Lookout's; reads only.

    Lookout's: it has the gap table every store makes when it opens, or (a log from
    before there was one) nothing but tables Lookout made. A table of another name
    is another application's, whose file is never written to.
    """
    tables = {
        name
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        if not name.startswith("sqlite_")
    }
    if not tables or "store_gaps" in tables or tables <= LOOKOUT_TABLES:
        return
    named = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
    raise StoreError(
        f"{path}: a SQLite database of another application (tables: {named}), "
        "not a Lookout event log; not writing to it"
    )


def statements(script: str) -> list[str]:
    # The schemas here hold no semicolons inside literals, so splitting is exact.
    return [s.strip() for s in script.split(";") if s.strip()]


def create(conn: sqlite3.Connection, script: str) -> None:
    # CREATE ... IF NOT EXISTS of what exists takes no write lock (nor does a column
    # found there already), so an existing file opens even while another process holds it.
    for statement in statements(script):
        run_schema(conn, statement)


def has_column(conn: sqlite3.Connection, table: str, column: str) -> bool:
    return any(row[1] == column for row in conn.execute(f"PRAGMA table_info({table})"))


def run_schema(conn: sqlite3.Connection, statement: str) -> None:
    """One statement of a schema; an ``ALTER TABLE ... ADD COLUMN`` of a column the table
    has already is done (another process, or this one before, migrated the file)."""
    added = _ADD_COLUMN.match(statement)
    if added is not None and has_column(conn, added.group(1), added.group(2)):
        return
    conn.execute(statement)


def commit_batch(
    conn: sqlite3.Connection,
    wall: Callable[[], float],
    gaps: Iterable[GapRow],
    batch: Sequence[Write],
) -> BaseException | None:
    """Write the gap records and then the batch in one transaction; the error, if any."""
    try:
        conn.execute("BEGIN IMMEDIATE")
        now = wall()
        for gap in gaps:
            detail = json.dumps(dict(gap.by_label), sort_keys=True)
            conn.execute(_INSERT_GAP, (now, gap.since, gap.kind, gap.dropped, gap.reason, detail))
        start = 0
        while start < len(batch):
            if batch[start].kind == SCHEMA:
                # Queued while another process held the file: it may have migrated it since.
                run_schema(conn, batch[start].sql)
                start += 1
                continue
            # Runs of the same statement go in one executemany.
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


def _rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        # SQLite may have rolled back already (SQLITE_FULL does).
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


def query_gaps(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """The gap records (what was dropped, when and why), oldest first."""
    rows = conn.execute(
        "SELECT t, since, kind, dropped, reason, detail FROM store_gaps ORDER BY id"
    ).fetchall()
    keys = ("t", "since", "kind", "dropped", "reason")
    return [dict(zip(keys, r[:5], strict=True), detail=json.loads(r[5])) for r in rows]


def _stamp(file: Path) -> tuple[int, int, int] | None:
    """What changes when a file is written (None: not there)."""
    try:
        stat = file.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size, stat.st_ino


def read_only(
    path: str | Path,
    query: Callable[[sqlite3.Connection], T],
    *,
    attempts: int = 5,
    busy_timeout_s: float = 5.0,
    sleep: Callable[[float], object] = time.sleep,
) -> T:
    """Run ``query`` on a read-only connection, retrying while another process has it busy.

    Nothing is left beside the file: a ``mode=ro`` connection to a WAL database makes
    its ``-wal`` and ``-shm`` files when they are not there and, read-only, cannot
    remove them. A database with no ``-wal`` beside it has no writer, so it is read as
    ``immutable`` (no locks, no side files); if the file changed meanwhile (a writer
    started), it is read again on an ordinary read-only connection, whose side files
    are then that writer's.
    """
    file = Path(path).resolve()
    base = file.as_uri()  # as_uri escapes "?" and "#"
    before = _stamp(file)
    if before is not None and not Path(f"{file}-wal").exists():
        conn = sqlite3.connect(f"{base}?mode=ro&immutable=1", uri=True)
        try:
            result = query(conn)
        finally:
            conn.close()
        if _stamp(file) == before and not Path(f"{file}-wal").exists():
            return result
    for attempt in range(attempts):
        conn = sqlite3.connect(f"{base}?mode=ro", uri=True, timeout=busy_timeout_s)
        try:
            return query(conn)
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorname not in BUSY:
                raise
            if attempt == attempts - 1:
                raise
        finally:
            conn.close()
        sleep(_READ_BACKOFF.delay(attempt + 1))
    raise AssertionError("unreachable")


__all__ = [
    "BUSY",
    "BUSY_SLICE_S",
    "SCHEMA",
    "SQLITE_MAGIC",
    "GapRow",
    "StoreError",
    "Write",
    "check_database",
    "check_ours",
    "check_path",
    "commit_batch",
    "connect",
    "create",
    "has_column",
    "is_busy",
    "is_row_fault",
    "one_line",
    "query_gaps",
    "read_only",
    "run_schema",
    "statements",
]
