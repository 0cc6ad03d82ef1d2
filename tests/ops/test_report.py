"""`lookout report`: figures from hand-built events and from a real run, rendered both ways."""

from __future__ import annotations

import itertools
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from device.app.report.command import ReportError, load_events, make_report, summarize
from device.events import CaptureStatsEvent, CountChanged, RunStarted, SourceStateEvent
from live.events import ConnectionState, Event, ModelText, StreamStarted, StreamStopped
from live.store.eventlog import SQLiteEventLog
from tests.cli import lookout
from tests.datafiles import REPO_ROOT, data_file

PNG = b"\x89PNG\r\n\x1a\n"


def count(t: float, n: int, previous: int | None) -> CountChanged:
    return CountChanged(t=t, count=n, previous=previous, raw=n, t_media=t)


def one_run() -> list[Event]:
    """2 people for 2 s, nobody for 3 s, 3 for 2 s, camera away for 3 s, then 1 for 1 s.

    The model's stream stops at 8 s too; the device's count does not depend on it.
    """
    return [
        ConnectionState(t=0.0, state="connecting"),
        SourceStateEvent(t=0.0, source="0", state="running"),
        StreamStarted(t=0.01, id="c1", name="count_people", args={}),
        count(1.0, 2, None),
        count(3.0, 0, 2),
        count(6.0, 3, 0),
        ModelText(t=7.0, text="3 people in view (was 0)."),
        StreamStopped(t=7.5, id="c1", name="count_people", reason="stop_streaming", emissions=3),
        SourceStateEvent(t=8.0, source="0", state="reconnecting", reason="no frame"),
        SourceStateEvent(t=10.5, source="0", state="running"),
        count(11.0, 1, None),
        CaptureStatsEvent(
            t=12.0, frames_read=1, frames_sampled=1, frames_detected=1, dropped={}, detect_ms_mean=1
        ),
    ]


def write_jsonl(path: Path, events: list[Event]) -> Path:
    with path.open("a") as file:
        for event in events:
            file.write(json.dumps(event.to_dict()) + "\n")
    return path


def test_figures_from_hand_built_events(tmp_path: Path) -> None:
    summary = summarize([e.to_dict() for e in one_run()])
    assert summary["runs"] == 1 and summary["duration_s"] == 12.0
    assert summary["observed_s"] == 8.0  # 1-8 s and 11-12 s; unknown while the camera was away
    assert summary["max_count"] == 3 and summary["min_count"] == 0 and summary["final_count"] == 1
    assert summary["mean_occupancy"] == pytest.approx((2 * 2 + 0 * 3 + 3 * 2 + 1 * 1) / 8, abs=1e-3)
    assert summary["time_empty_s"] == 3.0 and summary["time_occupied_s"] == 5.0
    # 2->0 and 0->3; the first count after an unknown stretch is a start, not a change.
    assert summary["changes"] == 2 and summary["count_reports"] == 4
    assert summary["model_messages"] == 1
    assert summary["streams_started"] == 1 and summary["streams_stopped"] == 1
    assert summary["stop_reasons"] == {"stop_streaming": 1}


def test_runs_appended_to_one_file_are_read_one_after_the_other(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "events.jsonl", one_run())
    # A second run starts its times at 0 again, with a source event before the session.
    second: list[Event] = [
        SourceStateEvent(t=0.0, source="0", state="running"),
        ConnectionState(t=0.0, state="connecting"),
        count(0.5, 4, None),
        ConnectionState(t=2.0, state="closed"),
    ]
    write_jsonl(path, second)
    summary = make_report(path, tmp_path / "report.png")
    assert summary["runs"] == 2 and summary["duration_s"] == 14.0
    assert summary["observed_s"] == 9.5 and summary["max_count"] == 4
    assert summary["changes"] == 2  # a count never carries into the next run
    assert summary["mean_occupancy"] == pytest.approx((11 + 4 * 1.5) / 9.5, abs=1e-3)


@pytest.mark.parametrize("suffix", [".png", ".html"])
def test_renders_png_and_self_contained_html(tmp_path: Path, suffix: str) -> None:
    path = write_jsonl(tmp_path / "events.jsonl", one_run())
    out = tmp_path / f"report{suffix}"
    summary = make_report(path, out)
    data = out.read_bytes()
    if suffix == ".png":
        assert data.startswith(PNG) and len(data) > 20_000
        return
    text = data.decode()
    assert "data:image/png;base64," in text and "http://" not in text.replace("file://", "")
    assert "<th>Mean occupancy (time-weighted)</th><td>1.38</td>" in text
    assert "<th>Time with nobody</th><td>3.00 s</td>" in text
    assert "3 people in view (was 0)." in text and "stop_streaming" in text
    assert summary["changes"] == 2


def test_sqlite_log_gives_the_same_figures(tmp_path: Path) -> None:
    log = SQLiteEventLog(tmp_path / "events.sqlite")
    for event in one_run():
        log.record(event)
    log.close()
    from_db = make_report(tmp_path / "events.sqlite", tmp_path / "db.png")
    from_jsonl = summarize([e.to_dict() for e in one_run()])
    assert from_db == from_jsonl


def test_a_report_of_a_db_leaves_nothing_beside_it(tmp_path: Path) -> None:
    """Reading a finished log creates no ``-wal``/``-shm`` files (a read-only connection
    to a WAL database makes them and cannot remove them)."""
    logs = tmp_path / "logs"
    logs.mkdir()
    log = SQLiteEventLog(logs / "events.sqlite")
    for event in one_run():
        log.record(event)
    log.close()
    before = sorted(p.name for p in logs.iterdir())
    assert before == ["events.sqlite"]
    summary = make_report(logs / "events.sqlite", tmp_path / "db.html")
    assert summary["max_count"] == 3
    result = lookout("report", str(logs / "events.sqlite"), "--out", str(tmp_path / "r.png"))
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in logs.iterdir()) == before


def test_a_report_of_a_db_still_being_written_sees_its_newest_events(tmp_path: Path) -> None:
    """A log another process writes (its ``-wal`` beside it) is read with what the
    writer committed and not yet checkpointed."""
    import sqlite3

    db = tmp_path / "events.sqlite"
    log = SQLiteEventLog(db)
    for event in one_run():
        log.record(event)
    log.close()
    writer = sqlite3.connect(db)  # another writer, its WAL left open
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    data = json.dumps(count(12.5, 9, 1).to_dict())
    writer.execute("UPDATE events SET data = ? WHERE id = (SELECT max(id) FROM events)", (data,))
    writer.commit()
    try:
        assert (tmp_path / "events.sqlite-wal").exists()
        assert load_events(db)[-1]["count"] == 9
    finally:
        writer.close()


def test_problems_are_one_line_report_errors(tmp_path: Path) -> None:
    good = write_jsonl(tmp_path / "good.jsonl", one_run())
    not_event = tmp_path / "other.jsonl"
    not_event.write_text('{"hello": 1}\n')
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    text_file = tmp_path / "notes.txt"
    text_file.write_text("shopping\nmilk\n")
    cases = [
        (tmp_path / "missing.jsonl", tmp_path / "r.png", "no such file"),
        (not_event, tmp_path / "r.png", "other.jsonl:1: not a Lookout event"),
        (text_file, tmp_path / "r.png", "notes.txt: not a Lookout events file"),
        (empty, tmp_path / "r.png", "no events"),
        (binary, tmp_path / "r.png", "blob.bin: not a Lookout events file"),
        (tmp_path, tmp_path / "r.png", "is a directory"),
        (good, tmp_path / "r.pdf", "must be .html or .png"),
        (good, tmp_path / "nowhere" / "r.png", "does not exist"),
    ]
    for source, out, message in cases:
        with pytest.raises(ReportError, match=message) as info:
            make_report(source, out)
        assert "\n" not in str(info.value)


def test_half_written_last_line_of_a_killed_run_is_ignored(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = write_jsonl(tmp_path / "events.jsonl", one_run())
    with path.open("a") as file:
        file.write('{"type":"count","t":13.0,"id":"c2","cou')
    with caplog.at_level(logging.WARNING, logger="lookout.report"):
        assert len(load_events(path)) == len(one_run())
    assert [r.getMessage() for r in caplog.records] == [
        f"{path}: skipped 1 line that is not a whole event (torn or corrupt: line "
        f"{len(one_run()) + 1}); the report is of the rest"
    ]


def damaged_log(path: Path) -> Path:
    """One run's log as the disk and other writers can leave it: a line torn in the middle
    (a full disk, then writing again), a run of NUL bytes (copytruncate under a writer
    that was not appending), a line another writer glued to a torn one, garbage."""
    events = [json.dumps(e.to_dict(), separators=(",", ":")).encode() for e in one_run()]
    damaged = [
        *events[:2],
        events[2][:25],  # torn: the rest of this line never reached the disk
        b"\0" * 6463 + events[3],  # NUL bytes where copytruncate cut the file
        events[4],
        events[6][:20] + events[5],  # another writer's line glued to a torn one
        b"\xff\xfe not even UTF-8",
        *events[7:],
    ]
    path.write_bytes(b"\n".join(damaged) + b"\n")
    return path


def test_torn_lines_nul_runs_and_glued_lines_anywhere_are_skipped_and_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = damaged_log(tmp_path / "events.jsonl")
    summary = make_report(path, tmp_path / "r.html")
    kept = [e.to_dict() for i, e in enumerate(one_run()) if i not in (2, 6)]
    assert summary == summarize(kept)  # every whole event, the glued one too
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"lookout: warning: {path}: skipped 3 lines that are not whole events (torn or "
        "corrupt: lines 3, 6, 7) and 6,463 NUL bytes; the report is of the rest"
    ]
    html = (tmp_path / "r.html").read_text()
    assert "3 lines and 6,463 NUL bytes of it were skipped" in html  # the page says it too


def test_lookout_report_says_what_it_skipped_without_being_asked(tmp_path: Path) -> None:
    path = damaged_log(tmp_path / "events.jsonl")
    result = lookout("report", str(path), "--out", str(tmp_path / "report.html"), timeout=60)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "skipped 3 lines" in lines[0] and "6,463 NUL bytes" in lines[0], lines[0]
    assert "wrote" in result.stdout and "max 3 people" in result.stdout


def test_lookout_report_on_a_file_with_a_torn_last_line(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "events.jsonl", one_run())
    with path.open("a") as file:
        file.write('{"type":"count","t":13.0,"id":"c2","cou')
    result = lookout("report", str(path), "--out", str(tmp_path / "report.html"), timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"lookout: warning: {path}: skipped 1 line that is not a whole event (torn or "
        f"corrupt: line {len(one_run()) + 1}); the report is of the rest"
    ]
    assert "wrote" in result.stdout and "max 3 people" in result.stdout


def test_missing_matplotlib_says_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_jsonl(tmp_path / "events.jsonl", one_run())
    for module in ("matplotlib.backends.backend_agg", "matplotlib.figure"):
        monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ReportError) as info:
        make_report(path, tmp_path / "r.png")
    # The command that works for this install (Lookout is not on PyPI): this interpreter's pip.
    assert f"{sys.executable} -m pip install 'matplotlib>=3.8'" in str(info.value)


def expected_figures(events: list[dict[str, Any]]) -> tuple[int, int, float]:
    """Max, changes and time-weighted mean, straight from the count events, in media time
    (a file is evaluated on its own clock): each count holds until the next, and the
    last until the count became unknown at the end of the replay."""
    counts = [(e["t_media"], e["count"]) for e in events if e["type"] == "count"]
    assert counts[-1][1] is None, counts[-1]  # the end of the file: unknown from there on
    end = counts.pop()[0]
    times = [t for t, _ in counts] + [end]
    weighted = sum(c * (times[i + 1] - times[i]) for i, (_, c) in enumerate(counts))
    changes = sum(1 for a, b in itertools.pairwise(counts) if a[1] != b[1])
    return max(c for _, c in counts), changes, weighted / (end - counts[0][0])


@pytest.mark.slow
def test_report_of_a_real_run(tmp_path: Path) -> None:
    jsonl, db = tmp_path / "run.jsonl", tmp_path / "run.sqlite"
    (tmp_path / "empty.toml").write_text("")  # not /etc/lookout/lookout.toml
    env = {k: v for k, v in os.environ.items() if k not in {"GEMINI_API_KEY", "GOOGLE_API_KEY"}}
    result = subprocess.run(
        [
            sys.executable, "-m", "device.cli", "run", "--source", str(data_file("vtest.avi")),
            "--model", "local", "--pace", "fast", "--no-http", "--duration", "12",
            "--events", str(jsonl), "--db", str(db), "--config", str(tmp_path / "empty.toml"),
        ],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    events = load_events(jsonl)
    summary = make_report(jsonl, tmp_path / "real.html")
    top, changes, mean = expected_figures(events)
    assert summary["max_count"] == top and summary["changes"] == changes >= 2
    assert summary["mean_occupancy"] == pytest.approx(mean, abs=1e-3)
    texts = [e for e in events if e["type"] == "model_text"]
    assert summary["model_messages"] == len(texts) >= 3
    assert summary["streams_started"] == 1 and summary["streams_stopped"] == 1
    # --duration 12 on a file is twelve seconds of the file, whatever the pace.
    assert 11.5 <= summary["duration_s"] <= 12.0 and summary["axis"] == "media"
    # The SQLite log of the same run tells the same story.
    from_db = make_report(db, tmp_path / "real.png")
    for key in ("max_count", "changes", "model_messages", "streams_started", "final_count"):
        assert from_db[key] == summary[key], key
    assert (tmp_path / "real.png").read_bytes().startswith(PNG)


def file_run(run_id: str, speed: float, counts: list[tuple[float, int]]) -> list[Event]:
    """A replay of a file at ``speed`` x its own rate: session t = media t / speed."""
    events: list[Event] = [
        RunStarted(
            t=0.0,
            run_id=run_id,
            started="2026-12-01T10:00:00+0000",
            started_wall=1_795_000_000.0,
            source="clip.mp4",
            live=False,
            model="local",
            config={},
        )
    ]
    previous = None
    for media, n in counts:
        events.append(CountChanged(t=media / speed, count=n, previous=previous, raw=n,
                                   t_media=media))  # fmt: skip
        previous = n
    end = counts[-1][0] + 10.0
    events.append(SourceStateEvent(t=end / speed, source="clip.mp4", state="ended"))
    events.append(CountChanged(t=end / speed, count=None, previous=previous, t_media=end,
                               reason="source ended"))  # fmt: skip
    return events


def test_a_fast_replay_is_reported_in_its_own_media_time(tmp_path: Path) -> None:
    # 80 s of video replayed in 5.6 s: the figures are about the video's 80 s.
    events = file_run("aaaa1111", speed=80 / 5.6, counts=[(0.0, 2), (30.0, 5), (60.0, 1)])
    summary = summarize([e.to_dict() for e in events])
    assert summary["axis"] == "media"
    assert summary["duration_s"] == pytest.approx(70.0) and summary["observed_s"] == 70.0
    assert summary["mean_occupancy"] == pytest.approx((2 * 30 + 5 * 30 + 1 * 10) / 70, abs=1e-3)
    path = write_jsonl(tmp_path / "events.jsonl", events)
    result = lookout("report", str(path), "--out", str(tmp_path / "r.png"), timeout=60)
    assert result.returncode == 0, result.stderr
    assert "over 70.0 s of media" in result.stdout


def test_two_runs_in_one_log_are_told_apart_and_one_is_chosen_with_run(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "events.jsonl", file_run("aaaa1111", 10.0, [(0.0, 2)]))
    write_jsonl(path, file_run("bbbb2222", 10.0, [(0.0, 7), (5.0, 3)]))
    both = make_report(path, tmp_path / "both.png")
    assert both["runs"] == 2 and both["max_count"] == 7
    second = make_report(path, tmp_path / "b.png", run="bbbb")
    assert second["runs"] == 1 and second["max_count"] == 7 and second["changes"] == 1
    first = make_report(path, tmp_path / "a.png", run="1")  # or its number
    assert first["max_count"] == 2
    with pytest.raises(ReportError, match=r"--run cccc is not a run of this log \(runs: run 1 "):
        make_report(path, tmp_path / "c.png", run="cccc")
    result = lookout("report", str(path), "--out", str(tmp_path / "x.png"), "--run", "zz")
    assert result.returncode == 2 and "aaaa1111" in result.stderr and "bbbb2222" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_run_number_is_never_taken_for_the_start_of_an_id(tmp_path: Path) -> None:
    # Ids are hex: "2" is the second run, though the first run's id starts with 2; "9" is
    # no run of a log of two (not the run whose id starts with 9).
    path = write_jsonl(tmp_path / "events.jsonl", file_run("2aaa1111", 10.0, [(0.0, 2)]))
    write_jsonl(path, file_run("9bbb2222", 10.0, [(0.0, 7), (5.0, 3)]))
    assert make_report(path, tmp_path / "two.png", run="2")["max_count"] == 7
    with pytest.raises(ReportError, match=r"--run 9 is not a run of this log"):
        make_report(path, tmp_path / "nine.png", run="9")
    assert make_report(path, tmp_path / "id.png", run="9bbb")["max_count"] == 7


@pytest.mark.slow
def test_report_of_an_ask_db_says_it_holds_no_run_in_one_line(tmp_path: Path) -> None:
    """ask keeps its reports in --db and writes no events there: a report of that file
    says in one line it is no run's log (never a chart of nothing, never a traceback)."""
    db = tmp_path / "ask.db"
    (tmp_path / "empty.toml").write_text("")
    asked = lookout("ask", "report for 10 seconds", "--model", "local", "--db", str(db),
                    "--source", str(data_file("vtest.avi")), "--pace", "fast",
                    "--config", str(tmp_path / "empty.toml"), timeout=120)  # fmt: skip
    assert asked.returncode == 0, asked.stderr
    result = lookout("report", str(db), "--out", str(tmp_path / "r.html"), timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"lookout: {db}: not a Lookout event database (no such table: events)"
    ]
    assert not (tmp_path / "r.html").exists()


def test_a_camera_run_is_charted_on_the_clock_as_a_step_of_the_system_clock_left_it() -> None:
    """A Pi that booted three days behind and was set by NTP a minute in: the chart's
    clock times are the real ones, for the whole run, not three days in the past."""
    from device.app.report.data import build_timeline
    from device.events import ClockStep

    behind = 3 * 86400.0
    started = 1_795_000_000.0 - behind
    run = RunStarted(t=0.5, run_id="cam", started="", started_wall=started, source="cam 0",
                     live=True, model="local", command="run", config={})  # fmt: skip
    events = [
        run.to_dict(),
        CountChanged(t=1.0, count=2, previous=None, raw=2).to_dict(),
        ClockStep(t=60.5, step_s=behind, wall=started + 60 + behind).to_dict(),
        CountChanged(t=90.0, count=3, previous=2, raw=3).to_dict(),
    ]
    timeline = build_timeline(events)
    assert timeline.axis == "wall"
    # The count change at t = 90 s happened 89.5 s after the start, on the real clock.
    origin = timeline.wall_origin
    assert origin is not None
    assert origin + timeline.runs[0].time(events[-1]) + timeline.runs[0].offset == (
        pytest.approx(started + behind + 89.5, abs=1.0)
    )


def test_every_flag_of_lookout_report_is_in_the_operations_docs() -> None:
    """docs/operations.md's report section names each flag ``lookout report --help``
    lists, so the two cannot drift apart again (it once said there was no --period)."""
    import re

    from tests.cli import lookout_in_process

    shown = lookout_in_process("report", "--help")
    assert shown.returncode == 0, shown.stderr
    flags = set(re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", shown.stdout.split("options:", 1)[1]))
    assert {"--out", "--run", "--period", "-h", "--help"} <= flags, flags
    docs = (REPO_ROOT / "docs" / "operations.md").read_text()
    section = docs.split("\n## Reports\n", 1)[1].split("\n## ", 1)[0]
    missing = sorted(flag for flag in flags if f"`{flag}" not in section)
    assert not missing, f"docs/operations.md's Reports section does not mention {missing}"
    assert "no flag" not in section
