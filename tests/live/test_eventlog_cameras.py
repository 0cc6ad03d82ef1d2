"""The SQLite event log's ``camera`` column (issue 34): filled from each event, indexed, and
added in place to a log from before it, whose rows then read as the main camera's.

Real SQLite on real files; another connection stands for another process.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

from device.events import CountChanged, LineCrossed, RunStarted
from live.events import ModelText
from live.store.database import SQLiteStore
from live.store.eventlog import SQLiteEventLog, log_cameras, read_events
from tests.live.test_store import Gate

# The events table as Lookout made it before cameras had names (c4ee81d to 65ac779).
OLD_SCHEMA = """
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
OLD_ROWS = [
    ("old", 0.5, "run", None, '{"type":"run","t":0.5,"run_id":"old1","source":"a.avi"}'),
    ("old", 1.0, "count", None, '{"type":"count","t":1.0,"count":2,"previous":null}'),
    ("old", 2.0, "model_text", None, '{"type":"model_text","t":2.0,"text":"two people"}'),
]
CAMERA_TYPES = {"count", "crossing"}


def old_log(path: Path) -> Path:
    conn = sqlite3.connect(path)
    with conn:
        conn.executescript(OLD_SCHEMA)
        conn.executemany(
            "INSERT INTO events(session, t, type, call_id, data) VALUES (?,?,?,?,?)", OLD_ROWS
        )
    conn.close()
    return path


def columns(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [row[1] for row in conn.execute("PRAGMA table_info(events)")]
    finally:
        conn.close()


def cameras_by_type(path: Path) -> list[tuple[str, str | None]]:
    conn = sqlite3.connect(path)
    try:
        return list(conn.execute("SELECT type, camera FROM events ORDER BY id"))
    finally:
        conn.close()


def two_cameras(path: Path, session: str = "new") -> None:
    log = SQLiteEventLog(path, session=session)
    log.record(RunStarted(t=0.1, run_id="r2", started="", started_wall=0.0, source="door.avi",
                          live=False, model="local"))  # fmt: skip
    log.record(CountChanged(t=1.0, count=3, previous=None, camera="door"))
    log.record(CountChanged(t=1.1, count=1, previous=None, camera="till"))
    log.record(LineCrossed(t=2.0, line="post", direction="in", track=4, t_media=2.0, total_in=1,
                           total_out=0, camera="door"))  # fmt: skip
    log.record(ModelText(t=3.0, text="door: 3 people"))
    log.close()


def test_each_row_names_its_camera_and_the_devices_own_rows_none(tmp_path: Path) -> None:
    db = tmp_path / "two.db"
    two_cameras(db)
    assert cameras_by_type(db) == [
        ("run", None),
        ("count", "door"),
        ("count", "till"),
        ("crossing", "door"),
        ("model_text", None),
    ]
    assert log_cameras(db, CAMERA_TYPES) == ["door", "till"]
    assert [e["type"] for e in read_events(db, camera="door")] == ["count", "crossing"]
    assert [e["count"] for e in read_events(db, kind="count", camera="till")] == [1]


def test_the_camera_index_answers_the_camera_queries(tmp_path: Path) -> None:
    db = tmp_path / "two.db"
    two_cameras(db)
    conn = sqlite3.connect(db)
    try:
        indexes = {row[1]: row[2] for row in conn.execute("PRAGMA index_list(events)")}
        assert "events_camera" in indexes
        shape = [row[2] for row in conn.execute("PRAGMA index_info(events_camera)")]
        assert shape == ["camera", "type", "t"]
        plans = [
            " ".join(str(row[3]) for row in conn.execute(f"EXPLAIN QUERY PLAN {query}", params))
            for query, params in (
                ("SELECT data FROM events WHERE type = ? AND camera = ?", ("count", "door")),
                ("SELECT MIN(camera) FROM events WHERE camera > ?", ("door",)),
            )
        ]
    finally:
        conn.close()
    assert all("USING" in plan and "INDEX events_camera" in plan for plan in plans), plans


def test_an_older_log_gets_the_column_in_place_and_its_rows_are_the_main_cameras(
    tmp_path: Path,
) -> None:
    db = old_log(tmp_path / "old.db")
    assert "camera" not in columns(db)
    two_cameras(db)  # a Lookout with cameras opens it to write
    assert columns(db)[-1] == "camera"
    assert cameras_by_type(db)[:3] == [("run", "main"), ("count", "main"), ("model_text", "main")]
    assert cameras_by_type(db)[3:5] == [("run", None), ("count", "door")]
    assert log_cameras(db, CAMERA_TYPES) == ["door", "main", "till"]
    assert [e["count"] for e in read_events(db, kind="count", camera="main")] == [2]
    # Opened again: nothing left to migrate, and nothing of it refused.
    log = SQLiteEventLog(db, session="third")
    log.record(CountChanged(t=9.0, count=0, previous=3, camera="door"))
    log.close()
    assert log.complete and [e["t"] for e in read_events(db, kind="count", camera="door")] == [
        1.0,
        9.0,
    ]


def test_an_older_log_that_can_only_be_read_is_read_as_it_is(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    db = old_log(folder / "old.db")
    before = db.read_bytes()
    db.chmod(stat.S_IRUSR)
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        assert log_cameras(db, CAMERA_TYPES) == ["main"]
        assert [e["type"] for e in read_events(db, camera="main")] == ["run", "count", "model_text"]
        assert list(read_events(db, camera="door")) == []
        assert db.read_bytes() == before and os.listdir(folder) == ["old.db"]
    finally:
        folder.chmod(stat.S_IRWXU)
        db.chmod(stat.S_IRUSR | stat.S_IWUSR)
    assert "camera" not in columns(db)


def test_an_older_log_locked_by_another_process_is_migrated_once_it_lets_go(
    tmp_path: Path,
) -> None:
    db, gate = old_log(tmp_path / "old.db"), Gate()
    SQLiteStore.open(db).release()  # in WAL mode, with store_gaps: as Lookout left it
    other = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN EXCLUSIVE")
    store = SQLiteStore.open(db, busy_timeout_s=0.01, sleep=gate)
    log = SQLiteEventLog(db, store=store, session="new")
    store.release(0)  # the log holds its own reference
    log.record(CountChanged(t=5.0, count=1, previous=None, camera="door"))
    # Meanwhile the other process (a Lookout with cameras too) migrates it first.
    other.execute("ALTER TABLE events ADD COLUMN camera TEXT DEFAULT 'main'")
    other.execute("COMMIT")
    gate.opened.set()
    assert log.flush()
    log.close()
    other.close()
    assert log.complete
    assert cameras_by_type(db)[-1] == ("count", "door")
    assert log_cameras(db, CAMERA_TYPES) == ["door", "main"]
