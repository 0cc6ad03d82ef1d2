"""``lookout report`` of a log of several cameras (issue 34): each camera's count, lines and
zones (a line's name may be another camera's too), and the device's totals; ``--camera``
for one; an older log, without cameras, read as the main camera's and reported as before.

The logs are written through the real sinks (``tests/camera_logs.py``).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from device.app.report.command import make_report
from device.app.report.data import load_events
from device.events import CameraEvent
from device.logged_cameras import CAMERA_TYPES
from tests.camera_logs import two_cameras, without_cameras, write_logs, write_old_jsonl
from tests.cli import lookout_in_process
from tests.live.test_eventlog_cameras import OLD_SCHEMA
from tests.ops.test_report import PNG, one_run


@pytest.fixture(params=["jsonl", "sqlite"])
def log(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    jsonl, db = write_logs(tmp_path, two_cameras())
    return jsonl if request.param == "jsonl" else db


def test_each_camera_is_reported_on_its_own_and_the_device_in_total(
    log: Path, tmp_path: Path
) -> None:
    summary = make_report(log, tmp_path / "r.html")
    door, till = summary["cameras"]["door"], summary["cameras"]["till"]
    # Each camera's count, from its own events only (the two were never added up).
    assert (door["max_count"], door["final_count"], door["mean_occupancy"]) == (4, 1, 3.0)
    assert (till["max_count"], till["final_count"], till["observed_s"]) == (3, 0, 7.0)
    # Both have a line "post": each is its own.
    assert door["lines"] == {"post": {"in": 2, "out": 1}}
    assert till["lines"] == {"post": {"in": 0, "out": 1}}
    assert not door["zones"] and till["zones"]["queue"]["max_people"] == 2
    assert summary["total"] == {"in": 2, "out": 2, "dwell_events": 1}
    page = (tmp_path / "r.html").read_text()
    assert "events of 2 cameras (door, till)" in page
    assert 'id="figures-door"' in page and 'id="figures-till"' in page
    assert "<tr><td>0–10 s</td><td>door</td><td>post</td><td>2</td><td>1</td></tr>" in page
    assert "<tr><td>0–10 s</td><td>till</td><td>post</td><td>0</td><td>1</td></tr>" in page
    assert "<tr><th>all cameras</th><th></th><th>2</th><th>2</th><th>1</th></tr>" in page
    assert page.count("door: 4 people in view (was 2).") == 1  # the device's own, once


def test_lookout_report_says_each_camera_and_the_total_in_one_line(tmp_path: Path) -> None:
    log = write_logs(tmp_path, two_cameras())[0]
    done = lookout_in_process("report", str(log), "--out", str(tmp_path / "r.png"))
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        f"wrote {tmp_path / 'r.png'}: 2 cameras: "
        "door: max 4 people, mean occupancy 3.00 over 8.0 s of media, 2 changes; "
        "line post 2 in 1 out | "
        "till: max 3 people, mean occupancy 2.14 over 7.0 s of media, 2 changes; "
        "line post 0 in 1 out; zone queue max 2 (1 dwells) | in total 2 in 2 out\n"
    )
    assert (tmp_path / "r.png").read_bytes().startswith(PNG)


def test_camera_reports_one_camera_as_a_log_of_it_alone(tmp_path: Path) -> None:
    log = write_logs(tmp_path, two_cameras())[1]
    done = lookout_in_process("report", str(log), "--out", str(tmp_path / "t.html"),
                              "--camera", "till")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        f"wrote {tmp_path / 't.html'}: camera till: max 3 people, mean occupancy 2.14 over "
        "7.0 s of media, 2 changes; line post 0 in 1 out; zone queue max 2 (1 dwells)\n"
    )
    page = (tmp_path / "t.html").read_text()
    assert "<tr><th>Line post: in / out</th><td>0 / 1</td></tr>" in page
    assert 'id="figures"' in page and "Zone queue: dwell events" in page
    assert "<th>camera</th>" in page  # its lines and zones still say whose they are


def test_an_unknown_camera_is_refused_in_one_line_naming_the_logs_cameras(
    tmp_path: Path,
) -> None:
    log = write_logs(tmp_path, two_cameras())[0]
    done = lookout_in_process("report", str(log), "--out", str(tmp_path / "r.html"),
                              "--camera", "hall")  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == (
        "lookout: --camera hall: no camera of that name in this log (cameras: door, till)\n"
    )
    assert not (tmp_path / "r.html").exists()


def test_an_older_jsonl_log_reads_as_the_main_camera_and_reports_as_before(
    tmp_path: Path,
) -> None:
    old = write_old_jsonl(tmp_path / "old.jsonl", one_run())
    events = load_events(old)
    assert {e.get("camera") for e in events if e["type"] in CAMERA_TYPES} == {"main"}
    assert all("camera" not in e for e in events if e["type"] not in CAMERA_TYPES)
    summary = make_report(old, tmp_path / "old.html")
    assert "cameras" not in summary and "camera" not in summary
    new = write_logs(tmp_path, one_run())[0]
    assert make_report(new, tmp_path / "new.html") == summary
    assert make_report(old, tmp_path / "main.html", camera="main") == summary
    done = lookout_in_process("report", str(old), "--out", str(tmp_path / "r.html"),
                              "--camera", "door")  # fmt: skip
    assert done.returncode == 2 and "(cameras: main)" in done.stderr


def test_an_older_database_is_reported_without_being_changed(tmp_path: Path) -> None:
    db = tmp_path / "old.sqlite"
    conn = sqlite3.connect(db)
    with conn:
        conn.executescript(OLD_SCHEMA)
        conn.executemany(
            "INSERT INTO events(session, t, type, call_id, data) VALUES ('s', ?, ?, NULL, ?)",
            [(e["t"], e["type"], json.dumps(e)) for e in without_cameras(one_run())],
        )
    conn.close()
    before = db.read_bytes()
    summary = make_report(db, tmp_path / "old.html")
    assert summary["max_count"] == 3 and "cameras" not in summary
    assert db.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == [
        "old.html",
        "old.sqlite",
    ]


def test_the_camera_event_types_are_every_camera_event_of_the_device() -> None:
    def types(cls: type[CameraEvent]) -> set[str]:
        found = {str(cls.type)} if "type" in vars(cls) else set()
        for sub in cls.__subclasses__():
            found |= types(sub)
        return found

    assert types(CameraEvent) == CAMERA_TYPES
