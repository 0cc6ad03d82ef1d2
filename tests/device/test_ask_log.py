"""`lookout ask` about a recorded log: answered from it, never from the default video, and a
question it cannot answer said as such (exit 4) with what would answer it.

The log is a real ``lookout run --pace fast --line --zone --dwell --db`` of the sample video,
made once per session (with the session's remembered detections).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from device.app.report.data import load_events
from tests.cli import lookout
from tests.datafiles import data_file
from tests.detection_cache import remembered

EXIT_UNANSWERED = 4


@pytest.fixture(scope="session")
def shop_log(tmp_path_factory: pytest.TempPathFactory, detections_folder: Path) -> Path:
    where = tmp_path_factory.mktemp("shop")
    db = where / "shop.sqlite"
    (where / "empty.toml").write_text("")
    with remembered(detections_folder):
        ran = lookout(
            "run", "--source", str(data_file("vtest.avi")), "--model", "local",
            "--pace", "fast", "--no-http", "--line", "post=0.5599,0.7292,0.5599,0.2083",
            "--zone", "kiosk=0.1,0.3,0.5,0.3,0.5,0.9,0.1,0.9", "--dwell", "5",
            "--db", str(db), "--config", str(where / "empty.toml"), timeout=180,
        )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return db


def ask(db: Path, question: str, *extra: str) -> tuple[int, str, str, list[dict[str, Any]]]:
    """The answer, and what the question added to the log (nothing, ever)."""
    before = len(load_events(db))
    asked = lookout("ask", question, "--db", str(db), "--model", "local",
                    "--config", str(db.parent / "empty.toml"), *extra)  # fmt: skip
    return asked.returncode, asked.stdout, asked.stderr, load_events(db)[before:]


def logged_events(db: Path, kind: str) -> list[dict[str, Any]]:
    return [e for e in load_events(db) if e["type"] == kind]


@pytest.mark.slow
def test_a_dwell_question_is_answered_from_the_log_not_the_default_video(shop_log: Path) -> None:
    code, out, err, logged = ask(shop_log, "how many people dwelled at the kiosk?")
    assert code == 0, err
    dwells = [e for e in logged_events(shop_log, "dwell") if e["zone"] == "kiosk"]
    assert dwells, "the sample video should have people stay in the kiosk zone"
    assert "kiosk: " in out and f"{len(dwells)} stayed past the dwell time" in out
    assert "frame 0" not in out and "vtest.avi" not in out and "count_people_now" not in err
    # No video was opened, and nothing was written into the log it read.
    assert logged == [] and "source" not in err


@pytest.mark.slow
def test_crossings_today_are_the_runs_crossings_in_the_logs_own_day(shop_log: Path) -> None:
    code, out, err, _ = ask(shop_log, "how many visitors today?")
    assert code == 0, err
    found = logged_events(shop_log, "crossing")
    ins = sum(e["direction"] == "in" for e in found)
    outs = sum(e["direction"] == "out" for e in found)
    assert out.startswith("Today (") and f": {ins} came in at post." in out
    assert "60 minutes" not in out
    code, out, _, _ = ask(shop_log, "how many went out today?")
    assert code == 0 and f": {outs} went out at post." in out
    code, out, _, _ = ask(shop_log, "how many came in and went out today?")
    assert code == 0 and f"post: {ins} in, {outs} out." in out
    # A day the log holds nothing of is not a day nobody came: said, exit 4.
    code, out, _, _ = ask(shop_log, "how many visitors yesterday?")
    assert code == EXIT_UNANSWERED and "the log holds nothing from yesterday" in out


@pytest.mark.slow
def test_the_busiest_minute_is_the_max_of_the_logged_counts(shop_log: Path) -> None:
    code, out, err, _ = ask(shop_log, "when was it busiest?")
    assert code == 0, err
    most = max(e["count"] for e in logged_events(shop_log, "count") if e["count"] is not None)
    assert "busiest minute was" in out and f"{most} people in view" in out
    assert "I can count the people" not in out  # not the canned help


@pytest.mark.slow
@pytest.mark.parametrize(
    ("question", "said"),
    [
        ("how many visitors this week?", "questions about 'week'"),
        ("how many people are there now?",
         "no --source: this asks about now; give --source or ask about the log"),
        ("what colour is the sky?", "questions about 'colour', 'sky'"),
    ],
)  # fmt: skip
def test_an_unanswerable_question_is_said_as_such_with_exit_4(
    shop_log: Path, question: str, said: str
) -> None:
    code, out, err, _ = ask(shop_log, question)
    assert code == EXIT_UNANSWERED, (out, err)
    assert out.startswith("I cannot answer that:") and said in out
    assert "frame 0" not in out and "In the last 60 minutes" not in out


@pytest.mark.slow
def test_a_question_writes_nothing_into_the_log_it_reads(shop_log: Path, tmp_path: Path) -> None:
    import shutil

    db = tmp_path / "shop.sqlite"
    shutil.copy(shop_log, db)
    (tmp_path / "empty.toml").write_text("")
    before = db.read_bytes()
    for _ in range(2):
        code, _, err, _ = ask(db, "how many visitors today?")
        assert code == 0, err
    # ask writes nothing into the log it reads: not its run, not its question.
    assert db.read_bytes() == before
    assert not [e for e in logged_events(db, "run") if e["command"] == "ask"]
    reported = lookout("report", str(db), "--out", str(tmp_path / "r.html"))
    assert reported.returncode == 0, reported.stderr
    assert " runs" not in reported.stdout  # one run of the device, however many questions
