"""``lookout ask`` over the log of several cameras (issue 34): a question naming a camera
(or a line or zone of one) is answered for it; one naming none, for each camera and in
total; a camera the log does not have is refused in one line naming its cameras (exit 4).
An older log, from before cameras had names, is answered as before.

The log is written through the real sinks (``tests/camera_logs.py``); the questions go
through `lookout ask` with the offline model, as a user asks them.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.camera_logs import two_cameras, without_cameras, write_logs
from tests.cli import lookout
from tests.live.test_eventlog_cameras import OLD_SCHEMA

EXIT_UNANSWERED = 4


@pytest.fixture
def db(tmp_path: Path) -> Path:
    (tmp_path / "empty.toml").write_text("")
    return write_logs(tmp_path, two_cameras())[1]


def ask(db: Path, question: str) -> tuple[int, str, str]:
    done = lookout("ask", question, "--db", str(db), "--model", "local",
                              "--config", str(db.parent / "empty.toml"))  # fmt: skip
    return done.returncode, done.stdout, done.stderr


def answer(out: str) -> str:
    """The answer: the last line (the ones before say the calls)."""
    return out.strip().splitlines()[-1]


def test_a_question_about_the_doors_line_is_the_doors_alone(db: Path) -> None:
    code, out, err = ask(db, "how many visitors at the door today?")
    assert code == 0, err
    # Both cameras have a line "post": the door's is 2 in, 1 out; the till's is not added.
    assert answer(out).endswith(", camera door: 2 came in at post.")
    code, out, err = ask(db, "how many came in and went out at the door in the last 10 minutes?")
    assert code == 0, err
    assert answer(out).endswith(", camera door: post: 2 in, 1 out.")


def test_a_question_about_the_till_is_the_tills(db: Path) -> None:
    code, out, err = ask(db, "how many people waited at the till?")
    assert code == 0, err
    assert answer(out).endswith(
        ", camera till: queue: 2 came in, 1 stayed past the dwell time (longest 6 s), "
        "at most 2 people at once."
    )
    code, out, err = ask(db, "when was it busiest at the till?")
    assert code == 0, err
    # An 8 s recording: its own time, its one minute ending with it.
    assert answer(out) == (
        "In till.avi (0:00-0:08), camera till, the busiest minute was 0:00-0:08: 3 people in view."
    )


def test_a_question_naming_no_camera_is_answered_per_camera_and_in_total(db: Path) -> None:
    code, out, err = ask(db, "how many visitors today?")
    assert code == 0, err
    assert answer(out).endswith(
        ": door: 2 came in at post | till: 0 came in at post | in total: 2 came in."
    )
    code, out, err = ask(db, "how many crossed?")  # the whole log, both ways
    assert code == 0, err
    assert answer(out).endswith(
        ": door: post: 2 in, 1 out | till: post: 0 in, 1 out | in total: 2 in, 2 out."
    )
    code, out, err = ask(db, "when was it busiest?")
    assert code == 0, err
    assert answer(out).endswith("| in total: the busiest was door, 4 people.")
    # Only the till watched a zone: its answer, said as the till's.
    code, out, err = ask(db, "how many people stayed in the queue?")
    assert code == 0, err
    assert ", camera till: queue: 2 came in" in answer(out)


def test_an_unknown_camera_is_refused_in_one_line_naming_the_cameras(db: Path) -> None:
    for question in ("how many came in at the hall today?", "how many came in at the hall?"):
        code, out, _ = ask(db, question)
        assert code == EXIT_UNANSWERED
        said = answer(out)
        assert said.startswith(
            "I cannot answer that: I know no camera, line or zone called 'hall' "
            "(cameras: door, till; lines: post; zones: queue)"
        )


def test_an_older_log_without_cameras_is_answered_as_before(tmp_path: Path) -> None:
    # The door's share of the run, as a Lookout from before cameras had names logged it.
    events = [e for e in two_cameras() if getattr(e, "camera", "door") == "door"]
    old = without_cameras(events)
    old[0].pop("cameras")
    old[0]["config"] = {"lines": {"post": {}}, "zones": {}}
    db = tmp_path / "old.sqlite"
    conn = sqlite3.connect(db)
    with conn:
        conn.executescript(OLD_SCHEMA)
        conn.executemany(
            "INSERT INTO events(session, t, type, call_id, data) VALUES ('s', ?, ?, NULL, ?)",
            [(e["t"], e["type"], json.dumps(e)) for e in old],
        )
    conn.close()
    (tmp_path / "empty.toml").write_text("")
    for question in ("how many visitors today?", "how many visitors at post today?"):
        code, out, err = ask(db, question)
        assert code == 0, err
        said = answer(out)
        assert said.startswith("Today (") and said.endswith("): 2 came in at post.")
    # A place the log has no name for is not taken as "anywhere": refused, naming its line.
    code, out, _ = ask(db, "how many visitors at the door today?")
    assert code == EXIT_UNANSWERED
    assert "I know no camera, line or zone called 'door' (lines: post)" in answer(out)
