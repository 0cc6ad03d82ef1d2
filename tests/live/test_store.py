"""The SQLite store under the event log, the job store and the occupancy log.

Real SQLite on real files: another connection holds the write lock, the
database is capped (``PRAGMA max_page_count``) to fill up, a path cannot be
used. Backoff runs on an injected sleep, so no test waits for a retry timer.
"""

from __future__ import annotations

import logging
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from live.events import ModelText
from live.jobs.records import Job, JobState, SQLiteJobStore
from live.store.database import (
    DATA_DROPPED,
    DATA_LOST,
    PROBLEM_ENDED,
    PROBLEM_STARTED,
    SQLiteStore,
    StoreError,
    read_gaps,
)
from live.store.eventlog import SQLiteEventLog, read_events
from tools.occupancy import SQLiteOccupancyLog


def text(i: int, size: int = 0) -> ModelText:
    return ModelText(t=float(i), text=f"{i}" + "x" * size)


def numbers(db: Path) -> list[int]:
    return [int(e["text"].rstrip("x")) for e in read_events(db)]


class Problems:
    """An ``on_problem`` listener that tests can wait on."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []
        self._cond = threading.Condition()

    def __call__(self, kind: str, message: str) -> None:
        with self._cond:
            self.seen.append((kind, message))
            self._cond.notify_all()

    def wait_for(self, kind: str, timeout: float = 10.0) -> str:
        with self._cond:
            assert self._cond.wait_for(lambda: kind in self.kinds, timeout), self.seen
            return next(m for k, m in self.seen if k == kind)

    @property
    def kinds(self) -> list[str]:
        return [k for k, _ in self.seen]


class Gate:
    """An injected sleep that holds the writer until the test opens the gate."""

    def __init__(self) -> None:
        self.delays: list[float] = []
        self.opened = threading.Event()

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        assert self.opened.wait(10), "the test never opened the gate"


@pytest.fixture
def locker() -> Iterator[Callable[[Path], sqlite3.Connection]]:
    """Another connection (another process, as SQLite sees it) to hold write locks."""
    conns: list[sqlite3.Connection] = []

    def lock(db: Path) -> sqlite3.Connection:
        conn = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
        conn.execute("BEGIN EXCLUSIVE")
        conns.append(conn)
        return conn

    yield lock
    for conn in conns:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        conn.close()


def store_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("lookout-store")]


def test_events_recorded_while_another_process_holds_the_lock_are_all_written_in_order(
    tmp_path: Path,
    locker: Callable[[Path], sqlite3.Connection],
    caplog: pytest.LogCaptureFixture,
) -> None:
    db, gate, problems = tmp_path / "lookout.db", Gate(), Problems()
    store = SQLiteStore.open(db, busy_timeout_s=0.01, sleep=gate)
    log = SQLiteEventLog(db, store=store, on_problem=problems)
    store.release()  # the log holds its own reference
    log.record(text(0))
    assert log.flush()
    other = locker(db)
    with caplog.at_level(logging.WARNING, logger="lookout.store"):
        started = time.monotonic()
        for i in range(1, 200):
            log.record(text(i))
        # record() never waits on the lock (a wait would hold it at the gate, 10 s).
        assert time.monotonic() - started < 5
        message = problems.wait_for(PROBLEM_STARTED)
        assert message.startswith("event log: database is locked")
        assert "in memory and retrying" in message
        health = log.health()
        assert health.degraded and health.pending > 0 and health.complete
        assert health.last_error == "database is locked"
        for i in range(200, 300):  # still locked: these wait in memory too
            log.record(text(i))
        other.execute("COMMIT")
        gate.opened.set()
        assert log.flush()
        assert "299 events caught up" in problems.wait_for(PROBLEM_ENDED)
        log.close()
    assert numbers(db) == list(range(300))
    assert problems.kinds == [PROBLEM_STARTED, PROBLEM_ENDED]
    assert [r.getMessage() for r in caplog.records] == [m for _, m in problems.seen]
    health = log.health()
    assert health.written == 300 and health.pending == 0 and health.dropped == 0
    assert health.complete and not health.degraded and health.retries >= 1
    assert read_gaps(db) == []


def test_retries_back_off_on_the_injected_sleep(
    tmp_path: Path, locker: Callable[[Path], sqlite3.Connection]
) -> None:
    db = tmp_path / "lookout.db"
    delays: list[float] = []
    other: list[sqlite3.Connection] = []

    def sleep(seconds: float) -> None:
        delays.append(seconds)
        if len(delays) == 6:
            other[0].execute("COMMIT")  # the other process is done

    store = SQLiteStore.open(
        db, busy_timeout_s=0.005, retry_initial_s=0.5, retry_max_s=4, sleep=sleep
    )
    log = SQLiteEventLog(db, store=store)
    store.release()
    other.append(locker(db))
    log.record(text(1))
    assert log.flush()
    log.close()
    assert delays == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert log.health().retries == 6 and numbers(db) == [1]


def test_a_full_disk_drops_the_oldest_and_records_exactly_what_was_dropped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db, gate, problems = tmp_path / "lookout.db", Gate(), Problems()
    store = SQLiteStore.open(db, backlog=50, sleep=gate, on_problem=problems)
    log = SQLiteEventLog(db, store=store)
    log.record(text(0))
    assert log.flush()
    # The database may not grow: SQLite says SQLITE_FULL, as on a full disk.
    pages = store.read(lambda conn: conn.execute("PRAGMA page_count").fetchone()[0])
    store.read(lambda conn: conn.execute(f"PRAGMA max_page_count = {pages}"))
    with caplog.at_level(logging.WARNING, logger="lookout.store"):
        for i in range(1, 121):
            log.record(text(i, size=5000))  # each needs new pages
        assert "database or disk is full" in problems.wait_for(PROBLEM_STARTED)
        health = log.health()
        assert health.pending == 50 and health.dropped == 70 and not health.complete
        assert health.dropped_by_kind == {"event": 70}
        # Space again, while the writer backs off; then let it retry.
        store.read(lambda conn: conn.execute("PRAGMA max_page_count = 1000000"))
        gate.opened.set()
        assert log.flush()
        ended = problems.wait_for(PROBLEM_ENDED)
    assert "50 events caught up, 70 events dropped (recorded in store_gaps)" in ended
    # The drops may come before the writer's first failure: in either order, once each.
    assert sorted(problems.kinds[:2]) == sorted([DATA_DROPPED, PROBLEM_STARTED])
    assert problems.kinds[2:] == [PROBLEM_ENDED]
    assert re.search(
        r"dropping the oldest \(\d+ events so far\)", dict(problems.seen)[DATA_DROPPED]
    )
    assert len(caplog.records) == 3
    assert numbers(db) == [0, *range(71, 121)]  # the oldest went, the rest in order
    (gap,) = read_gaps(db)
    assert gap["kind"] == "event" and gap["dropped"] == 70
    assert gap["detail"] == {"model_text": 70}
    assert "more than 50 writes waiting (database or disk is full)" in gap["reason"]
    log.close()
    store.release()
    health = log.health()
    assert health.written == 51 and health.dropped == 70 and health.closed
    assert not log.complete


def test_event_log_job_store_and_occupancy_log_on_one_file_share_one_writer(
    tmp_path: Path,
) -> None:
    db = tmp_path / "lookout.db"
    before = len(store_threads())
    log = SQLiteEventLog(db, session="ask")
    (tmp_path / "sub").mkdir()
    jobs = SQLiteJobStore(tmp_path / "sub" / ".." / "lookout.db")  # the same file
    occupancy = SQLiteOccupancyLog(str(db))
    assert log.store is jobs.store is occupancy.store
    assert len(store_threads()) == before + 1
    job = Job("job-1", "call-1", "start_occupancy_report", {"minutes": 1.0})
    jobs.put(job)
    assert jobs.get("job-1") == job
    job.state, job.result = JobState.SUCCEEDED, {"max": 3}
    jobs.put(job)
    assert jobs.get("job-1") == job and jobs.jobs() == [job]
    bucket = {"period": 0, "start_s": 0.0, "end_s": 60.0, "samples": 3, "min": 1, "max": 2}
    occupancy.put_bucket("job-1", {**bucket, "mean": 1.5})
    assert occupancy.buckets("job-1") == ([{**bucket, "mean": 1.5}], False)
    log.record(text(1))
    assert numbers(db) == [1]  # a read through the store sees the write before it
    log.close()
    jobs.close()
    assert len(store_threads()) == before + 1  # the occupancy log still has it
    occupancy.close()
    assert len(store_threads()) == before and SQLiteStore.lookup(db) is None
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT state FROM jobs").fetchall() == [("succeeded",)]
        assert conn.execute("SELECT session FROM events").fetchall() == [("ask",)]


def test_a_job_put_while_the_database_is_locked_returns_and_is_seen(
    tmp_path: Path, locker: Callable[[Path], sqlite3.Connection]
) -> None:
    db, gate = tmp_path / "lookout.db", Gate()
    store = SQLiteStore.open(db, busy_timeout_s=0.01, sleep=gate)
    jobs = SQLiteJobStore(db, store=store)
    occupancy = SQLiteOccupancyLog(db, store=store)
    store.release()
    other = locker(db)
    job = Job("job-1", "call-1", "start_occupancy_report", {"minutes": 1.0})
    done = threading.Event()
    threading.Thread(target=lambda: (jobs.put(job), done.set()), daemon=True).start()
    assert done.wait(5), "put waited on a writer that is retrying"
    assert jobs.get("job-1") == job and [j.job_id for j in jobs.jobs()] == ["job-1"]
    bucket = {"period": 0, "start_s": 0.0, "end_s": 60.0, "samples": 1, "min": 2, "max": 2}
    occupancy.put_bucket("job-1", {**bucket, "mean": 2.0})
    occupancy.finish("job-1")
    assert occupancy.buckets("job-1") == ([{**bucket, "mean": 2.0}], True)
    assert occupancy.job_ids() == ["job-1"]
    other.execute("COMMIT")
    gate.opened.set()
    assert store.flush()
    jobs.close()
    occupancy.close()
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT job_id FROM jobs").fetchall() == [("job-1",)]
        assert conn.execute("SELECT finished FROM occupancy_jobs").fetchall() == [(1,)]


def test_closing_while_the_lock_is_still_held_says_what_was_lost_and_does_not_raise(
    tmp_path: Path,
    locker: Callable[[Path], sqlite3.Connection],
    caplog: pytest.LogCaptureFixture,
) -> None:
    db, problems = tmp_path / "lookout.db", Problems()
    log = SQLiteEventLog(db, on_problem=problems)  # the real busy timeout (5 s) and sleep
    log.record(text(0))
    assert log.flush()
    locker(db)
    with caplog.at_level(logging.WARNING, logger="lookout.store"):
        for i in range(1, 13):
            log.record(text(i))
        started = time.monotonic()
        log.close(timeout=0.2)
        # The busy wait (5 s) is cut short; the rest of the bound is for a busy CPU.
        assert time.monotonic() - started < 4.5
    assert not log.complete
    health = log.health()
    assert health.closed and health.written == 1 and health.dropped == 12
    lost = [m for k, m in problems.seen if k == DATA_LOST]
    assert lost == [
        "event log: 12 events could not be written to lookout.db before closing "
        "(database is locked); they are lost"
    ]
    assert all("Traceback" not in r.getMessage() for r in caplog.records)


def test_the_writer_survives_an_unexpected_error_and_retries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, problems = tmp_path / "lookout.db", Problems()
    store = SQLiteStore.open(db, sleep=lambda s: None, on_problem=problems)
    log = SQLiteEventLog(db, store=store)
    real = store._commit
    calls: list[int] = []

    def flaky(*args: object, **kw: object) -> BaseException | None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("boom")
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "_commit", flaky)
    for i in range(5):
        log.record(text(i))
    assert log.flush()
    problems.wait_for(PROBLEM_ENDED)
    health = store.health()
    assert health.errors == 1 and health.last_error == "RuntimeError: boom"
    assert problems.kinds == [PROBLEM_STARTED, PROBLEM_ENDED]
    assert numbers(db) == list(range(5)) and health.complete
    log.close()
    store.release()


def test_a_row_sqlite_refuses_is_dropped_alone_and_recorded(tmp_path: Path) -> None:
    db = tmp_path / "lookout.db"
    store = SQLiteStore.open(db)
    log = SQLiteEventLog(db, store=store)
    for i in range(3):
        log.record(text(i))
    # A row with no time: NOT NULL constraint failed.
    bad = "INSERT INTO events(session, t, type, call_id, data) VALUES (?,?,?,?,?)"
    store.write("event", "broken", bad, ("", None, "broken", None, "{}"))
    for i in range(3, 6):
        log.record(text(i))
    assert log.flush()
    assert numbers(db) == list(range(6))
    (gap,) = read_gaps(db)
    assert gap["dropped"] == 1 and gap["detail"] == {"broken": 1}
    assert "NOT NULL constraint failed: events.t" in gap["reason"]
    assert log.health().dropped == 1
    log.close()
    store.release()


def test_read_events_reads_a_database_another_process_is_writing(
    tmp_path: Path, locker: Callable[[Path], sqlite3.Connection]
) -> None:
    db = tmp_path / "lookout.db"
    log = SQLiteEventLog(db)
    for i in range(3):
        log.record(text(i))
    log.close()
    other = locker(db)
    other.execute("INSERT INTO events(session, t, type, data) VALUES ('x', 9, 'model_text', '{}')")
    assert numbers(db) == [0, 1, 2]  # what is committed, without waiting for the lock


@pytest.mark.parametrize("case", ["directory", "not sqlite", "under a file", "read-only"])
def test_a_path_that_cannot_be_a_database_fails_at_once_in_one_line(
    tmp_path: Path, case: str
) -> None:
    path = tmp_path / "lookout.db"
    expected = {
        "directory": "is a directory",
        "not sqlite": "not a SQLite database",
        "under a file": "cannot create its folder",
        "read-only": "not writable",
    }[case]
    if case == "directory":
        path.mkdir()
    elif case == "not sqlite":
        path.write_text('{"type": "count", "t": 1}\n')
    elif case == "under a file":
        (tmp_path / "file").write_text("")
        path = tmp_path / "file" / "lookout.db"
    else:
        if os.geteuid() == 0:
            pytest.skip("root writes read-only files")
        SQLiteEventLog(path).close()
        path.chmod(0o444)
    for view in (SQLiteEventLog, SQLiteJobStore, SQLiteOccupancyLog):
        with pytest.raises(StoreError) as info:
            view(path)
        assert str(info.value).startswith(f"{path}: {expected}")
        assert "\n" not in str(info.value)
    assert SQLiteStore.lookup(path) is None


# ------------------------------------------------ a file that is not ours, or leaves its name


def schema_of(path: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT name, sql FROM sqlite_master ORDER BY name").fetchall()
    conn.close()
    return rows


def test_another_applications_database_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE contacts (name TEXT)")
        conn.execute("INSERT INTO contacts VALUES ('Ada')")
    conn.close()
    before, raw = schema_of(path), path.read_bytes()
    for view in (SQLiteEventLog, SQLiteJobStore, SQLiteOccupancyLog):
        with pytest.raises(StoreError) as info:
            view(path)
        message = str(info.value)
        assert message.startswith(f"{path}: a SQLite database of another application")
        assert "(tables: contacts)" in message and "\n" not in message
    assert schema_of(path) == before  # no store_gaps, no sqlite_sequence, no events
    assert path.read_bytes() == raw  # not even the journal mode
    assert SQLiteStore.lookup(path) is None


def test_lookout_databases_old_and_new_are_still_opened(tmp_path: Path) -> None:
    old = tmp_path / "old.db"  # an event log from before store_gaps existed
    with sqlite3.connect(old) as conn:
        conn.execute(
            "CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, session TEXT NOT NULL, "
            "t REAL NOT NULL, type TEXT NOT NULL, call_id TEXT, data TEXT NOT NULL)"
        )
    conn.close()
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    for path in (old, empty, tmp_path / "new.db"):
        log = SQLiteEventLog(path)
        log.record(text(1))
        log.close()
        assert numbers(path) == [1]


def test_a_database_deleted_while_open_is_said_counted_and_started_anew(tmp_path: Path) -> None:
    db, problems = tmp_path / "lookout.db", Problems()
    log = SQLiteEventLog(db, on_problem=problems)
    jobs = SQLiteJobStore(db)
    for i in range(5):
        log.record(text(i))
    assert log.flush()
    db.unlink()  # rm lookout.db (its -wal and -shm stay, as rm *.db leaves them)
    for i in range(5, 8):
        log.record(text(i))
    assert log.flush()
    message = problems.wait_for(DATA_DROPPED)
    assert "was deleted while open" in message and "5 events" in message, message
    health = log.health()
    assert health.dropped == 5 and not health.complete and not health.degraded
    job = Job("job-1", "call-1", "start_occupancy_report", {"minutes": 1.0})
    jobs.put(job)
    assert jobs.get("job-1") == job  # every view's tables are made again
    jobs.close()
    log.close()
    assert numbers(db) == [5, 6, 7]
    gaps = read_gaps(db)
    assert [(g["kind"], g["dropped"]) for g in gaps] == [("event", 5)]
    assert "deleted while open" in gaps[0]["reason"] and gaps[0]["detail"] == {"model_text": 5}
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


def test_a_database_moved_while_open_keeps_its_events_and_a_new_one_starts(
    tmp_path: Path,
) -> None:
    db, problems = tmp_path / "lookout.db", Problems()
    log = SQLiteEventLog(db, on_problem=problems)
    for i in range(5):
        log.record(text(i))
    assert log.flush()
    moved = tmp_path / "archive.db"
    db.rename(moved)
    for i in range(5, 8):
        log.record(text(i))
    assert log.flush()
    message = problems.wait_for("reopened")
    assert "renamed or moved" in message and str(db.name) in message, message
    log.close()
    assert log.complete
    assert numbers(moved) == [0, 1, 2, 3, 4]  # all of them: the WAL went into the file
    assert numbers(db) == [5, 6, 7]
    assert problems.kinds == ["reopened"]


def test_a_database_deleted_just_before_closing_is_said(tmp_path: Path) -> None:
    db, problems = tmp_path / "lookout.db", Problems()
    log = SQLiteEventLog(db, on_problem=problems)
    for i in range(3):
        log.record(text(i))
    assert log.flush()
    db.unlink()
    log.close()  # nothing more to write: closing looks once more
    assert log.health().dropped == 3 and not log.complete
    assert "3 events" in problems.wait_for(DATA_LOST)
