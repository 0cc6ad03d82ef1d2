"""`lookout report` with lines and zones: entries/exits and zone occupancy per period.

Hand-built logs (JSON lines and the real SQLite event log) whose figures are worked
out by hand, and a real `lookout run --line --zone` on the sample video whose report
must add up to the crossing, zone and dwell events it logged.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import re
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from device.app.report.command import ReportError, make_report
from device.app.report.data import build_timeline, load_events, summarize
from device.app.report.scene import build_scene, period_for
from device.events import (
    CaptureStatsEvent,
    CountChanged,
    DwellPassed,
    LineCrossed,
    RunStarted,
    SceneChanged,
    SourceStateEvent,
    ZoneCount,
)
from live.events import Event
from live.store.eventlog import SQLiteEventLog
from tests.datafiles import REPO_ROOT, data_file
from tests.ops.test_report import PNG, one_run, write_jsonl

BASE = 1_795_000_000.0
# A start on a round hour of this machine's local time, so periods start with the run.
ROUND_HOUR = BASE - (BASE + time.localtime(BASE).tm_gmtoff) % 3600
LINES = {"door": {"points": [[0.5, 0.1], [0.5, 0.9]]}, "side": {"points": [[0, 0], [1, 1]]}}
ZONES = {"till": {"points": [[0, 0], [1, 0], [1, 1]], "dwell": None}}
OLD_KEYS = set(summarize([e.to_dict() for e in one_run()]))


def png_size(data: bytes) -> tuple[int, int]:
    assert data.startswith(PNG)
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk comes first
    return width, height


def crossing(t: float, line: str, direction: str, totals: dict[str, list[int]]) -> LineCrossed:
    counts = totals.setdefault(line, [0, 0])
    counts[0 if direction == "in" else 1] += 1
    return LineCrossed(t=t, line=line, direction=direction, track=int(t), t_media=t,
                       total_in=counts[0], total_out=counts[1])  # fmt: skip


def zone(t: float, people: int | None, previous: int | None) -> ZoneCount:
    return ZoneCount(t=t, zone="till", people=people, previous=previous, dwelling=0,
                     longest_s=0.0, t_media=t)  # fmt: skip


def camera_run(started_wall: float = ROUND_HOUR, run_id: str = "cam00001") -> list[Event]:
    """120 s of a camera with two lines and a zone; the camera is away from 60 to 70 s.

    door: in at 5, 12, 40; out at 35, 70.  side: in at 95.
    till: 0 from 0, 2 from 10, 1 from 20, 3 from 50, unknown 60-75, 1 from 75 to the end.
    Dwell events in till at 55 and 80.
    """
    totals: dict[str, list[int]] = {}
    return [
        RunStarted(
            t=0.0,
            run_id=run_id,
            started="2026-11-19T10:00:00+0000",
            started_wall=started_wall,
            source="rtsp://cam",
            live=True,
            model="local",
            config={"lines": LINES, "zones": ZONES},
        ),
        SourceStateEvent(t=0.0, source="rtsp://cam", state="running"),
        zone(0.0, 0, None),
        CountChanged(t=0.0, count=0, previous=None, raw=0, t_media=0.0),
        crossing(5.0, "door", "in", totals),
        zone(10.0, 2, 0),
        crossing(12.0, "door", "in", totals),
        zone(20.0, 1, 2),
        crossing(35.0, "door", "out", totals),
        crossing(40.0, "door", "in", totals),
        zone(50.0, 3, 1),
        DwellPassed(t=55.0, zone="till", track=7, seconds=12.0, t_media=55.0),
        SourceStateEvent(t=60.0, source="rtsp://cam", state="reconnecting", reason="no frame"),
        zone(60.0, None, 3),
        SourceStateEvent(t=70.0, source="rtsp://cam", state="running"),
        crossing(70.0, "door", "out", totals),
        zone(75.0, 1, None),
        DwellPassed(t=80.0, zone="till", track=9, seconds=12.0, t_media=80.0),
        crossing(95.0, "side", "in", totals),
        CaptureStatsEvent(
            t=120.0,
            frames_read=1,
            frames_sampled=1,
            frames_detected=1,
            dropped={},
            detect_ms_mean=1.0,
        ),
    ]


def dicts(events: list[Event]) -> list[dict[str, Any]]:
    return [e.to_dict() for e in events]


def test_entries_exits_and_zone_occupancy_per_period_of_a_camera_run() -> None:
    events = dicts(camera_run())
    summary = summarize(events, period_s=30.0)
    assert summary["axis"] == "wall" and summary["period_s"] == 30.0
    # Totals are the crossing events of the log, per line and direction.
    crossings = [e for e in events if e["type"] == "crossing"]
    for name, totals in summary["lines"].items():
        for direction in ("in", "out"):
            expected = sum(
                1 for e in crossings if e["line"] == name and e["direction"] == direction
            )
            assert totals[direction] == expected, (name, direction)
    assert summary["lines"] == {"door": {"in": 3, "out": 2}, "side": {"in": 1, "out": 0}}
    periods = summary["periods"]
    assert [p["start"] for p in periods] == [0.0, 30.0, 60.0, 90.0]
    assert [p["lines"]["door"] for p in periods] == [
        {"in": 2, "out": 0}, {"in": 1, "out": 1}, {"in": 0, "out": 1}, {"in": 0, "out": 0},
    ]  # fmt: skip
    assert [p["lines"]["side"]["in"] for p in periods] == [0, 0, 0, 1]
    # till: (0x10 + 2x10 + 1x10)/30; (1x20 + 3x10)/30; unknown 60-75 then 1; 1 to the end.
    till = [p["zones"]["till"] for p in periods]
    assert [z["mean"] for z in till] == [1.0, pytest.approx(50 / 30, abs=1e-3), 1.0, 1.0]
    assert [z["max"] for z in till] == [2, 3, 1, 1]
    assert [z["dwell_events"] for z in till] == [0, 1, 1, 0]
    assert summary["zones"] == {
        "till": {
            "mean_people": pytest.approx(125 / 105, abs=1e-3),
            "max_people": 3,
            "observed_s": 105.0,
            "dwell_events": 2,
        }
    }
    # A camera's periods are named by the local time of day.
    clock = [time.strftime("%H:%M:%S", time.localtime(ROUND_HOUR + s)) for s in (0, 30)]
    assert periods[0]["label"] == f"{clock[0]}–{clock[1]}"
    # The count's own figures are what they were without lines and zones.
    plain = [e for e in events if e["type"] not in {"crossing", "zone", "dwell"}]
    plain[0] = dict(plain[0], config={})
    assert {k: v for k, v in summary.items() if k in OLD_KEYS} == summarize(plain) | {
        "events": len(events)
    }


def test_a_camera_started_off_the_hour_has_periods_on_round_times() -> None:
    events = dicts(camera_run(started_wall=ROUND_HOUR + 7.0))
    timeline = build_timeline(events)
    scene = build_scene(timeline, 30.0)
    assert scene.first == -7.0 and scene.periods == 5  # 09:59:53 is not shown; 10:00:00 is
    summary = summarize(events, period_s=30.0)
    starts = [ROUND_HOUR + 7.0 + p["start"] for p in summary["periods"]]
    assert all((s + time.localtime(s).tm_gmtoff) % 30 == 0 for s in starts)
    assert summary["lines"] == {"door": {"in": 3, "out": 2}, "side": {"in": 1, "out": 0}}
    assert sum(p["lines"]["door"]["in"] for p in summary["periods"]) == 3


def test_period_is_picked_from_the_length_when_not_given() -> None:
    assert period_for(120) == 10.0 and period_for(241) == 15.0
    assert period_for(3600) == 300.0 and period_for(86400) == 3600.0
    assert period_for(30 * 86400) == 2 * 86400.0
    summary = summarize(dicts(camera_run()))
    assert summary["period_s"] == 10.0 and len(summary["periods"]) == 12
    assert sum(p["lines"]["door"]["out"] for p in summary["periods"]) == 2


def file_run(run_id: str, speed: float, crossings: list[tuple[float, str]]) -> list[Event]:
    """A recording replayed at ``speed``: session t = media t / speed; zone 2 from 0 to 40 s."""
    totals: dict[str, list[int]] = {}
    events: list[Event] = [
        RunStarted(
            t=0.0,
            run_id=run_id,
            started="2026-11-19T10:00:00+0000",
            started_wall=BASE,
            source="clip.mp4",
            live=False,
            model="local",
            config={"lines": {"door": LINES["door"]}, "zones": ZONES},
        ),
        SourceStateEvent(t=0.0, source="clip.mp4", state="running"),
        CountChanged(t=0.0, count=2, previous=None, raw=2, t_media=0.0),
        ZoneCount(
            t=0.0, zone="till", people=2, previous=None, dwelling=0, longest_s=0.0, t_media=0.0
        ),
    ]
    for media, direction in crossings:
        events.append(
            dataclasses.replace(crossing(media, "door", direction, totals), t=media / speed)
        )
    events += [
        SourceStateEvent(t=40.0 / speed, source="clip.mp4", state="ended"),
        ZoneCount(
            t=40.0 / speed,
            zone="till",
            people=None,
            previous=2,
            dwelling=0,
            longest_s=0.0,
            t_media=40.0,
        ),
        CountChanged(t=40.0 / speed, count=None, previous=2, t_media=40.0, reason="ended"),
    ]
    return events


def test_a_recording_is_counted_in_its_media_time_and_run_selects_one(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "events.jsonl", file_run("aaaa1111", 8.0, [(3.0, "in")]))
    write_jsonl(path, file_run("bbbb2222", 8.0, [(5.0, "in"), (25.0, "out"), (26.0, "out")]))
    second = make_report(path, tmp_path / "b.html", run="bbbb", period_s=20.0)
    assert second["axis"] == "media" and second["lines"] == {"door": {"in": 1, "out": 2}}
    assert [p["lines"]["door"] for p in second["periods"]] == [
        {"in": 1, "out": 0},
        {"in": 0, "out": 2},
    ]
    assert [p["label"] for p in second["periods"]] == ["0–20 s", "20–40 s"]
    assert second["zones"]["till"]["mean_people"] == 2.0
    both = make_report(path, tmp_path / "both.png", period_s=20.0)
    assert both["runs"] == 2 and both["lines"] == {"door": {"in": 2, "out": 2}}
    # The second run follows the first on the report's axis: its crossings at 40 + media t.
    assert [p["lines"]["door"] for p in both["periods"]] == [
        {"in": 1, "out": 0}, {"in": 0, "out": 0}, {"in": 1, "out": 0}, {"in": 0, "out": 2},
    ]  # fmt: skip
    assert both["zones"]["till"]["observed_s"] == 80.0  # never carried across the runs


def test_a_files_end_said_before_its_last_frame_is_perceived_does_not_cut_the_zone_short(
    tmp_path: Path,
) -> None:
    """The source says it ended as soon as it reads the end of the file, while its last
    frames may still be perceived: the zone's last count holds until the last frame
    whatever the replay's pace (placed by session time, the end would come earlier the
    faster the replay went)."""
    figures = []
    for speed in (1.0, 8.0, 50.0):
        events = file_run(f"run{speed:g}", speed, [])
        ended = next(i for i, e in enumerate(events) if isinstance(e, SourceStateEvent)
                     and e.state == "ended")  # fmt: skip
        # The end said a frame's perception early: just after the 3.0 s frame was counted.
        events[ended] = dataclasses.replace(events[ended], t=3.05 / speed)
        events.insert(ended, ZoneCount(t=3.0 / speed, zone="till", people=1, previous=2,
                                       dwelling=0, longest_s=0.0, t_media=3.0))  # fmt: skip
        path = write_jsonl(tmp_path / f"{speed:g}.jsonl", events)
        till = make_report(path, tmp_path / f"{speed:g}.html")["zones"]["till"]
        figures.append((till["mean_people"], till["observed_s"]))
    # 2 people for 3 s, then 1 until the last frame at 40 s.
    assert figures == [(pytest.approx((2 * 3 + 1 * 37) / 40, abs=1e-3), 40.0)] * 3


@pytest.mark.parametrize("suffix", [".html", ".png"])
def test_rendered_with_tables_and_panels(tmp_path: Path, suffix: str) -> None:
    path = write_jsonl(tmp_path / "events.jsonl", camera_run())
    out = tmp_path / f"r{suffix}"
    make_report(path, out, period_s=30.0)
    data = out.read_bytes()
    if suffix == ".png":
        assert png_size(data) == (1200, 360 + 2 * 220)  # the count, then lines, then zones
        return
    text = data.decode()
    assert '<table id="lines">' in text and '<table id="zones">' in text
    assert "<summary>Lines per 30 s (" in text  # folded below the chart
    assert "<td>door</td><td>2</td><td>0</td>" in text  # the first period
    assert "<tr><th>total</th><th>door</th><th>3</th><th>2</th></tr>" in text
    assert "<td>till</td><td>1.67</td><td>3</td><td>1</td>" in text  # 30-60 s
    assert "<tr><th>Line door: in / out</th><td>3 / 2</td></tr>" in text
    assert "<tr><th>Zone till: dwell events</th><td>2</td></tr>" in text


def test_a_log_without_lines_or_zones_reports_as_before(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "events.jsonl", one_run())
    summary = make_report(path, tmp_path / "r.html")
    assert set(summary) == OLD_KEYS
    text = (tmp_path / "r.html").read_text()
    assert 'id="lines"' not in text and 'id="zones"' not in text and "Line " not in text
    make_report(path, tmp_path / "r.png")
    assert png_size((tmp_path / "r.png").read_bytes()) == (1200, 360)
    # Empty lines and zones in the run's configuration are no lines and zones either.
    configured = [
        RunStarted(
            t=0.0,
            run_id="x",
            started="",
            started_wall=BASE,
            source="0",
            live=True,
            model="local",
            config={"lines": {}, "zones": {}},
        ),
        *one_run(),
    ]
    assert set(summarize(dicts(configured))) == OLD_KEYS


def test_configured_lines_without_crossings_show_zeros() -> None:
    events = [e for e in camera_run() if not isinstance(e, LineCrossed)]
    summary = summarize(dicts(events), period_s=60.0)
    assert summary["lines"] == {"door": {"in": 0, "out": 0}, "side": {"in": 0, "out": 0}}


def test_sqlite_log_gives_the_same_figures(tmp_path: Path) -> None:
    log = SQLiteEventLog(tmp_path / "events.db", session="cam00001")
    for event in camera_run():
        log.record(event)
    log.close()
    from_db = make_report(tmp_path / "events.db", tmp_path / "db.png", period_s=30.0)
    assert from_db == summarize(dicts(camera_run()), period_s=30.0)


# ---------------------------------------------------------------------- a real run


def zone_figures(events: list[dict[str, Any]], name: str) -> tuple[float, int, int]:
    """Mean (time-weighted, media time), max and dwell events of a zone, from its events:
    each count holds until the next, the last until the source's last frame (the run's
    newest media time), where the zone stops being watched."""
    steps = [
        (e["t_media"], e["people"]) for e in events if e["type"] == "zone" and e["zone"] == name
    ]
    steps.append(
        (max(e["t_media"] for e in events if isinstance(e.get("t_media"), float | int)), None)
    )
    weighted = observed = 0.0
    for (t, people), (t_next, _) in itertools.pairwise(steps):
        if people is not None:
            weighted += people * (t_next - t)
            observed += t_next - t
    top = max(p for _, p in steps if p is not None)
    dwells = sum(1 for e in events if e["type"] == "dwell" and e["zone"] == name)
    return weighted / observed, top, dwells


@pytest.mark.slow
@pytest.mark.usefixtures("remembered_detections")
def test_report_of_a_real_run_with_a_line_and_a_zone(tmp_path: Path) -> None:
    jsonl, db = tmp_path / "run.jsonl", tmp_path / "run.db"
    (tmp_path / "empty.toml").write_text("")
    env = {k: v for k, v in os.environ.items() if k not in {"GEMINI_API_KEY", "GOOGLE_API_KEY"}}
    result = subprocess.run(
        [
            sys.executable, "-m", "device.cli", "run", "--source", str(data_file("vtest.avi")),
            "--model", "local", "--pace", "fast", "--no-http", "--duration", "20",
            "--line", "post=0.5599,0.7292,0.5599,0.2083",
            "--zone", "left=0.05,0.3,0.45,0.3,0.45,0.95,0.05,0.95", "--dwell", "2",
            "--events", str(jsonl), "--db", str(db), "--config", str(tmp_path / "empty.toml"),
        ],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=90, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    events = load_events(jsonl)
    crossings = [e for e in events if e["type"] == "crossing"]
    assert len(crossings) >= 3, "the sample video should cross the post line"
    summary = make_report(jsonl, tmp_path / "real.html", period_s=5.0)
    ins = sum(1 for e in crossings if e["direction"] == "in")
    outs = sum(1 for e in crossings if e["direction"] == "out")
    assert summary["lines"] == {"post": {"in": ins, "out": outs}}
    # The device's own running totals end where the report's do.
    assert (crossings[-1]["total_in"], crossings[-1]["total_out"]) == (ins, outs)
    assert sum(p["lines"]["post"]["in"] for p in summary["periods"]) == ins
    assert sum(p["lines"]["post"]["out"] for p in summary["periods"]) == outs
    # Each crossing in the period its media time falls in.
    for period in summary["periods"]:
        inside = [e for e in crossings if period["start"] <= e["t_media"] < period["end"]]
        assert period["lines"]["post"]["in"] + period["lines"]["post"]["out"] == len(inside)
    mean, top, dwells = zone_figures(events, "left")
    left = summary["zones"]["left"]
    assert left["mean_people"] == pytest.approx(mean, abs=1e-3)
    assert left["max_people"] == top and left["dwell_events"] == dwells >= 1
    assert max(p["zones"]["left"]["max"] or 0 for p in summary["periods"]) == top
    # The SQLite log of the same run tells the same story, and the chart has its panels.
    from_db = make_report(db, tmp_path / "real.png", period_s=5.0)
    assert from_db["lines"] == summary["lines"] and from_db["zones"] == summary["zones"]
    assert png_size((tmp_path / "real.png").read_bytes())[1] == 360 + 2 * 220
    assert 'id="lines"' in (tmp_path / "real.html").read_text()


def test_a_period_that_cannot_be_read_is_refused_in_one_line(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "events.jsonl", camera_run())
    for period, message in [
        (0.0, "the period must be more than 0 s and at most a year, not 0"),
        (float("nan"), "the period must be more than 0 s"),
        (0.01, "cuts this log into 12000 periods (at most 10000): choose a longer one"),
    ]:
        with pytest.raises(ReportError, match=re.escape(message)) as refused:
            make_report(path, tmp_path / "r.html", period_s=period)
        assert "\n" not in str(refused.value)


def test_a_line_renamed_and_a_zone_removed_on_the_page_are_reported_as_edited() -> None:
    """At 45 s the operator renamed door to entrance and removed till (a ``scene`` event):
    door's crossings are entrance's (one line, its totals carried over on the device too),
    and till is no longer occupied after 45 s (it was 1 from 20 s, and 3 at 50 s would be
    a zone that no longer exists: the edit came first here)."""
    events = [e for e in camera_run() if not (isinstance(e, ZoneCount) and e.t >= 50.0)]
    events = [e for e in events if not (isinstance(e, DwellPassed))]
    events = [  # after the edit the device logs the new name
        dataclasses.replace(e, line="entrance")
        if isinstance(e, LineCrossed) and e.line == "door" and e.t > 45.0
        else e
        for e in events
    ]
    edit = SceneChanged(
        t=45.0,
        lines={"entrance": [[0.5, 0.1], [0.5, 0.9]], "side": [[0, 0], [1, 1]]},
        zones={},
        changes=[
            {"kind": "line", "name": "entrance", "how": "renamed", "was": "door", "said": ""},
            {"kind": "zone", "name": "till", "how": "removed", "was": "", "said": ""},
        ],
        revision=1,
    )
    events.insert(next(i for i, e in enumerate(events) if e.t > 45.0), edit)
    summary = summarize(dicts(events), period_s=30.0)
    assert summary["lines"] == {"entrance": {"in": 3, "out": 2}, "side": {"in": 1, "out": 0}}
    till = [p["zones"].get("till") for p in summary["periods"]]
    # 0-30: (0x10 + 2x10 + 1x10)/30; 30-45: 1; removed at 45 s, it has no rows after.
    assert [z["max"] if z else "no row" for z in till] == [2, 1, "no row", "no row"]
    assert summary["zones"]["till"]["observed_s"] == 45.0


def test_a_line_drawn_and_removed_without_a_crossing_is_no_line_of_the_report(
    tmp_path: Path,
) -> None:
    """The operator drew "spare" at 10 s and removed it at 20 s, nobody crossed it: no
    rows, no total, no legend entry; both edits are marked on the chart's time axis."""
    events = list(camera_run())
    added = SceneChanged(
        t=10.0, lines={"door": [[0.5, 0.1], [0.5, 0.9]], "spare": [[0, 0], [1, 1]]},
        zones={}, changes=[{"kind": "line", "name": "spare", "how": "added", "was": "",
                            "said": "line spare added"}], revision=1,
    )  # fmt: skip
    removed = SceneChanged(
        t=20.0, lines={"door": [[0.5, 0.1], [0.5, 0.9]]}, zones={},
        changes=[{"kind": "line", "name": "spare", "how": "removed", "was": "",
                  "said": "line spare removed"}], revision=2,
    )  # fmt: skip
    for edit in (added, removed):
        events.insert(next(i for i, e in enumerate(events) if e.t > edit.t), edit)
    path = write_jsonl(tmp_path / "events.jsonl", events)
    summary = make_report(path, tmp_path / "r.html", period_s=30.0)
    assert "spare" not in summary["lines"]
    assert all("spare" not in p["lines"] for p in summary["periods"])
    text = (tmp_path / "r.html").read_text()
    assert "spare" not in text
    timeline = build_timeline([e.to_dict() for e in events])
    scene = build_scene(timeline, 30.0)
    assert "spare" not in scene.lines and [what for _, what in scene.edits] == [
        "line spare added",
        "line spare removed",
    ]
