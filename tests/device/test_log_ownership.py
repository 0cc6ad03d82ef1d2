"""A log path that names someone else's file is refused before anything is written to it.

Through the real CLI: arguments swapped (``--events good.sqlite``), a text file, another
tool's JSON lines, another application's SQLite database. Each is refused in one line
(exit 2) and the file is left byte for byte as it was; a database stays intact.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from live.events import ModelText
from live.store.eventlog import SQLiteEventLog, read_events
from tests.cli import lookout
from tests.datafiles import data_file

pytestmark = pytest.mark.slow


def command(name: str, tmp_path: Path, *args: str) -> list[str]:
    (tmp_path / "empty.toml").write_text("")  # never the machine's /etc/lookout/lookout.toml
    source = ["--source", str(data_file("vtest.avi")), "--model", "local"]
    config = ["--config", str(tmp_path / "empty.toml")]
    if name == "run":
        return ["run", *source, *config, "--no-http", "--pace", "fast", "--duration", "1", *args]
    return ["ask", "how many people?", *source, *config, *args]


def refusal(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, (result.args, result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lookout: "), result.stderr
    return lines[0]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def lookout_db(path: Path) -> Path:
    """A real Lookout event database of a few events."""
    log = SQLiteEventLog(path, session="earlier")
    for i in range(5):
        log.record(ModelText(t=float(i), text=f"event {i}"))
    log.close()
    return path


def integrity(path: Path) -> str:
    with sqlite3.connect(path) as conn:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])


def schema(path: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(path) as conn:
        return sorted(conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall())


@pytest.mark.parametrize("name", ["run", "ask"])
def test_arguments_swapped_leave_the_database_intact(tmp_path: Path, name: str) -> None:
    db = lookout_db(tmp_path / "good.sqlite")
    before = digest(db)
    events = tmp_path / "events.jsonl"
    result = lookout(*command(name, tmp_path, "--events", str(db), "--db", str(events)))
    line = refusal(result)
    assert f"--events {db}" in line and "SQLite database" in line, line
    assert digest(db) == before  # not one byte appended, nothing cut
    assert integrity(db) == "ok"
    assert [e["text"] for e in read_events(db)] == [f"event {i}" for i in range(5)]
    assert not events.exists()


def test_files_that_are_not_lookout_event_logs_are_refused_and_left_alone(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("shopping\nmilk\nthe last line has no newline")
    other_jsonl = tmp_path / "app.jsonl"
    other_jsonl.write_text('{"level": "info", "msg": "started"}\n{"level": "info"}\n')
    array = tmp_path / "list.json"
    array.write_text('[{"type": "count"}]\n')
    for path in (notes, other_jsonl, array):
        before = digest(path)
        line = refusal(lookout(*command("run", tmp_path, "--events", str(path))))
        assert f"--events {path}: not a Lookout events file" in line, line
        assert digest(path) == before, path.read_bytes()


def test_a_lookout_events_file_is_still_appended_to(tmp_path: Path) -> None:
    """The check refuses what is not ours and nothing else: an empty file, and the log of
    an earlier run whose last line it left torn (the torn line stays, ended; never cut)."""
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    result = lookout(*command("run", tmp_path, "--events", str(empty)))
    assert result.returncode == 0, result.stderr
    assert json.loads(empty.read_text().splitlines()[0])["type"] == "run"
    earlier = tmp_path / "earlier.jsonl"
    earlier.write_text('{"type":"model_text","t":1.0,"text":"hi"}\n{"type":"model_te')
    result = lookout(*command("run", tmp_path, "--events", str(earlier)))
    assert result.returncode == 0, result.stderr
    lines = earlier.read_text().splitlines()
    assert json.loads(lines[0])["text"] == "hi"
    assert lines[1] == '{"type":"model_te'  # ended by a newline, so nothing is glued to it
    assert json.loads(lines[2])["type"] == "run"
    assert earlier.read_bytes().endswith(b"\n")


@pytest.mark.parametrize("name", ["run", "ask"])
def test_another_applications_database_is_refused_before_anything_is_written(
    tmp_path: Path, name: str
) -> None:
    foreign = tmp_path / "contacts.sqlite"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE contacts (name TEXT, phone TEXT)")
        conn.execute("INSERT INTO contacts VALUES ('Ada', '123')")
    conn.close()
    before_schema, before = schema(foreign), digest(foreign)
    events = tmp_path / "events.jsonl"
    line = refusal(lookout(*command(name, tmp_path, "--db", str(foreign), "--events", str(events))))
    assert f"--db {foreign}:" in line and "not a Lookout event log" in line, line
    assert "contacts" in line, line
    assert schema(foreign) == before_schema  # no store_gaps, no sqlite_sequence, no events
    assert digest(foreign) == before  # not even the journal mode changed
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("contacts")) == [
        "contacts.sqlite"
    ]
    assert integrity(foreign) == "ok"
    assert not events.exists()  # refused before any output opened its file


def test_one_new_file_for_both_logs_is_refused(tmp_path: Path) -> None:
    """``--events x --db x``: the JSON lines and the database would write into each other."""
    same = tmp_path / "log"
    line = refusal(lookout(*command("run", tmp_path, "--events", str(same), "--db", str(same))))
    assert f"--db {same}: this process writes JSON lines to it, not a database" in line, line
    assert not same.exists()  # refused at start: nothing it made is left
