"""`lookout report` with pictures: the latest pictured events, each with a small thumbnail.

A hand-built log of a run with ``--snapshots`` over a folder of real JPEGs (one pruned
since, the folder moved later), and a real `lookout run --snapshots` on the sample video
reported by the real command.
"""

from __future__ import annotations

import base64
import json
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from device.app.report.command import make_report
from device.events import CountChanged, RunStarted, SnapshotSaved, SourceStateEvent
from device.outputs.pictures.snapshots import file_name
from live.events import Event
from tests.cli import lookout
from tests.datafiles import data_file
from tests.ops.test_report import write_jsonl

POST = "post=0.5599,0.7292,0.5599,0.2083"  # 7 crossings in the sample video's first 20 s


class PicturesTable(HTMLParser):
    """The rows of the report's ``#pictures`` table: each cell's text and image."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[dict[str, Any]] = []
        self._inside = False
        self._cells: list[str] = []
        self._image: bytes | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "table":
            self._inside = found.get("id") == "pictures"
        elif self._inside and tag == "tr":
            self._cells, self._image = [], None
        elif self._inside and tag == "td":
            self._cells.append("")
        elif self._inside and tag == "img":
            src = found.get("src") or ""
            assert src.startswith("data:image/jpeg;base64,"), src[:40]
            self._image = base64.b64decode(src.split(",", 1)[1])

    def handle_data(self, data: str) -> None:
        if self._inside and self._cells:
            self._cells[-1] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._inside = False
        elif self._inside and tag == "tr" and self._cells:
            when, what, picture = self._cells
            self.rows.append({"when": when, "what": what, "text": picture, "image": self._image})


def pictures_in(report: Path) -> list[dict[str, Any]]:
    table = PicturesTable()
    table.feed(report.read_text())
    return table.rows


def width_of(jpeg: bytes) -> int:
    image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    assert image is not None
    return int(image.shape[1])


def pictured_run(folder: Path, n: int, *, logged_folder: Path | None) -> list[Event]:
    """A replayed file whose count changed ``n`` times, each change pictured (640 px wide)."""
    folder.mkdir(parents=True, exist_ok=True)
    config = {"snapshots": str(logged_folder)} if logged_folder is not None else {}
    events: list[Event] = [
        RunStarted(t=0.0, run_id="0123456789ab", started="2026-11-19T10:00:00+0000",
                   started_wall=1_795_000_000.0, source="plaza.mp4", live=False,
                   model="local", command="run", config=config),
        SourceStateEvent(t=0.0, source="plaza.mp4", state="running"),
    ]  # fmt: skip
    for i in range(n):
        t = 10.0 * (i + 1)
        events.append(CountChanged(t=t, count=i + 1, previous=i, raw=i + 1, t_media=t))
        name = file_name("0123456789ab", t, "count", str(i + 1), None)
        ok, jpeg = cv2.imencode(".jpg", np.full((480, 640, 3), 40 + i, np.uint8))
        assert ok
        (folder / name).write_bytes(jpeg.tobytes())
        events.append(SnapshotSaved(t=t + 0.05, file=name, of="count", t_media=t, count=i + 1))
    return events


def test_the_last_24_pictured_events_are_thumbnails_and_a_missing_one_is_said(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "pics"
    log = write_jsonl(tmp_path / "events.jsonl", pictured_run(folder, 30, logged_folder=folder))
    pruned = sorted(folder.iterdir())[-3]  # the third newest: pruned by the folder's cap
    pruned.unlink()
    report = tmp_path / "report.html"
    make_report(log, report)
    rows = pictures_in(report)
    assert len(rows) == 24  # of 30: the newest, newest first
    assert [r["what"] for r in rows] == [f"count changed to {n}" for n in range(30, 6, -1)]
    # On the report's axis, as its chart and tables: the recording's time from its start
    # (the first frame here is at 10 s of it).
    assert rows[0]["when"] == "290.0 s"
    missing = rows[2]
    assert missing["image"] is None
    assert missing["text"] == f"picture missing: {pruned.name} is not in {folder}"
    shown = [r for r in rows if r is not missing]
    assert all(r["image"] is not None and width_of(r["image"]) == 240 for r in shown)
    assert "Pictured events (the last 24 of 30)" in report.read_text()
    # Small enough to mail: 24 thumbnails, not 24 full pictures.
    assert report.stat().st_size < 600_000


def test_a_moved_folder_is_given_with_snapshots_and_a_log_without_one_is_said(
    tmp_path: Path,
) -> None:
    first = tmp_path / "on-the-device"
    log = write_jsonl(tmp_path / "events.jsonl", pictured_run(first, 3, logged_folder=first))
    moved = tmp_path / "copied-here"
    shutil.move(first, moved)
    report = tmp_path / "report.html"
    make_report(log, report)
    assert all(r["image"] is None and "is not in" in r["text"] for r in pictures_in(report))
    make_report(log, report, snapshots=moved)
    assert all(r["image"] is not None for r in pictures_in(report))
    unsaid = write_jsonl(tmp_path / "old.jsonl", pictured_run(moved, 1, logged_folder=None))
    make_report(unsaid, report)
    (row,) = pictures_in(report)
    assert "its folder is not in the log (give it with --snapshots DIR)" in row["text"]


def test_a_log_without_pictures_has_no_pictures_section(tmp_path: Path) -> None:
    events = [e for e in pictured_run(tmp_path / "p", 2, logged_folder=None)
              if not isinstance(e, SnapshotSaved)]  # fmt: skip
    report = tmp_path / "report.html"
    make_report(write_jsonl(tmp_path / "events.jsonl", events), report)
    assert 'id="pictures"' not in report.read_text() and "Latest events" not in report.read_text()


@pytest.mark.slow
@pytest.mark.usefixtures("remembered_detections")
def test_the_report_of_a_real_run_shows_its_crossings_pictures(tmp_path: Path) -> None:
    folder, events, report = tmp_path / "snaps", tmp_path / "events.jsonl", tmp_path / "r.html"
    ran = lookout(
        "run", "--pace", "fast", "--source", str(data_file("vtest.avi")), "--model", "local",
        "--http", "", "--duration", "20", "--line", POST, "--snapshots", str(folder),
        "--events", str(events),
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    done = lookout("report", str(events), "--out", str(report))
    assert done.returncode == 0, done.stdout + done.stderr
    logged = [json.loads(line) for line in events.read_text().splitlines()]
    crossings = [e for e in logged if e["type"] == "crossing"]
    rows = pictures_in(report)
    assert len(rows) == len(crossings) >= 3
    # Newest first, each said as its crossing was, in the video's time, with its picture.
    for row, crossing in zip(rows, reversed(crossings), strict=True):
        assert row["what"] == (
            f"crossing of line post ({crossing['direction']}) by track {crossing['track']}"
        )
        assert row["when"] == f"{crossing['t_media']:.1f} s"
        assert row["image"] is not None and width_of(row["image"]) == 240
