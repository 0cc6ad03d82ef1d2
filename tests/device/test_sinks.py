"""The JSON-lines sink on a disk that fails, and after a run killed mid-write."""

from __future__ import annotations

import errno
import json
import logging
import os
import resource
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import device.outputs.sinks
from device.app.report.jsonl import read_jsonl
from device.outputs.sinks import JsonlSink
from live.events import ModelText
from tests.datafiles import REPO_ROOT


def text(i: int) -> ModelText:
    return ModelText(t=float(i), text=f"line {i}")


def lines(path: Path) -> list[dict[str, object]]:
    raw = path.read_bytes()
    assert raw == b"" or raw.endswith(b"\n"), "a torn last line"
    return [json.loads(line) for line in raw.decode().splitlines()]


def test_a_torn_last_line_is_ended_never_cut_and_said(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Another process may share the file: nothing is ever cut off it. The torn line (a run
    killed mid-write) stays, ended, so the next line starts on a line of its own; the
    report skips it and says so."""
    path = tmp_path / "events.jsonl"
    first = JsonlSink(path)
    for i in range(3):
        first.write(text(i))
    first.close()
    torn = b'{"type":"model_text","t":3.0,"te'
    with path.open("ab") as file:
        file.write(torn)  # the run was killed here
    with caplog.at_level(logging.WARNING, logger="lookout.store"):
        second = JsonlSink(path)
    assert second.torn_bytes == len(torn)
    assert [r.getMessage() for r in caplog.records] == [
        f"events file {path}: its last line is torn ({len(torn)} bytes, left by a run killed "
        "mid-write or a full disk); it stays, and the next line starts on a line of its own"
    ]
    for i in range(4, 6):
        second.write(text(i))
    second.close()
    raw = path.read_bytes().splitlines()
    assert raw[3] == torn
    assert [json.loads(line)["text"] for line in raw[:3] + raw[4:]] == [
        f"line {i}" for i in (0, 1, 2, 4, 5)
    ]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="lookout.store"):
        JsonlSink(path).close()  # nothing torn: nothing said
    assert caplog.records == []


def test_a_file_that_is_one_torn_line_of_ours_is_kept_and_appended_to(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"type":"mod')
    sink = JsonlSink(path)
    sink.write(text(1))
    sink.close()
    first, second = path.read_bytes().splitlines()
    assert first == b'{"type":"mod'
    assert json.loads(second)["text"] == "line 1"


def test_files_that_are_not_ours_are_refused_and_left_as_they_were(tmp_path: Path) -> None:
    db = tmp_path / "events.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (x)")
    conn.close()
    text_file = tmp_path / "notes.txt"
    text_file.write_text("one\ntwo\nno newline at the end")
    other = tmp_path / "other.jsonl"
    other.write_text('{"msg": "not an event"}\n')
    for path, why in [
        (db, "a SQLite database, not a JSON-lines events file"),
        (text_file, "not a Lookout events file"),
        (other, "not a Lookout events file"),
    ]:
        before = path.read_bytes()
        with pytest.raises(OSError, match=why) as info:
            JsonlSink(path)
        assert str(info.value).startswith(f"{path}: ") and "\n" not in str(info.value)
        assert path.read_bytes() == before


def test_a_log_whose_first_line_a_killed_run_left_torn_is_still_ours(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"type":"mod')  # the first run was killed in its first line
    for i in (1, 2):  # the next run ends it, and the one after still knows the file
        sink = JsonlSink(path)
        sink.write(text(i))
        sink.close()
    first, *rest = path.read_bytes().splitlines()
    assert first == b'{"type":"mod'
    assert [json.loads(line)["text"] for line in rest] == ["line 1", "line 2"]


def test_leading_nul_bytes_are_not_a_reason_to_refuse(tmp_path: Path) -> None:
    """copytruncate under a writer that is not in append mode leaves a run of NUL bytes
    where the old lines were; the file is still ours."""
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\0" * 500 + b'{"type":"model_text","t":1.0,"text":"line 1"}\n')
    sink = JsonlSink(path)
    sink.write(text(2))
    sink.close()
    assert path.read_bytes().endswith(b'"text":"line 2"}\n')


def test_write_errors_lose_lines_leave_no_glued_line_are_said_once_per_kind_and_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "events.jsonl"
    problems: list[tuple[str, str]] = []
    sink = JsonlSink(path, on_problem=lambda kind, message: problems.append((kind, message)))
    sink.write(text(0))
    real_write = os.write
    failure: list[int] = []

    def failing_write(fd: int, data: bytes | memoryview) -> int:
        if not failure:
            return real_write(fd, data)
        if len(data) > 10:
            return real_write(fd, bytes(data[:10]))  # part of the line reaches the disk
        raise OSError(failure[0], os.strerror(failure[0]))

    monkeypatch.setattr(device.outputs.sinks.os, "write", failing_write)
    with caplog.at_level(logging.WARNING, logger="lookout.store"):
        failure.append(errno.ENOSPC)
        for i in range(1, 4):
            sink.write(text(i))
        failure[0] = errno.EIO
        sink.write(text(4))
        failure.clear()
        for i in range(5, 15):  # a run of good writes: writing again
            sink.write(text(i))
        sink.close()
    assert sink.lost == 4 and sink.written == 11 and not sink.complete
    # What reached the disk of a lost line stays (nothing is ever cut off a file another
    # process may share), but on a line of its own: no good line is glued to it.
    whole, torn = [], []
    for raw in path.read_bytes().splitlines():
        try:
            whole.append(json.loads(raw)["text"])
        except ValueError:
            torn.append(raw)
    assert whole == ["line 0"] + [f"line {i}" for i in range(5, 15)]
    assert len(torn) == 4 and all(t.startswith(b'{"type":"model_text"') for t in torn)
    assert path.read_bytes().endswith(b"\n")
    assert [k for k, _ in problems] == ["degraded", "degraded", "recovered", "lost"]
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [m for _, m in problems]
    assert "No space left on device" in messages[0] and "Input/output error" in messages[1]
    assert messages[2].endswith("writing again; 4 lines were lost meanwhile")
    assert "4 lines lost (3 No space left on device, 1 Input/output error)" in messages[3]


def test_a_nearly_full_disk_that_takes_a_short_line_now_and_then_does_not_flap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "events.jsonl"
    problems: list[str] = []
    sink = JsonlSink(path, on_problem=lambda kind, message: problems.append(kind))
    real_write = os.write
    calls = [0]

    def every_third_fits(fd: int, data: bytes | memoryview) -> int:
        calls[0] += 1
        if calls[0] % 3:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(device.outputs.sinks.os, "write", every_third_fits)
    for i in range(60):
        sink.write(text(i))
    sink.close()
    assert sink.lost == 40 and sink.written == 20
    assert problems == ["degraded", "lost"]  # said once, tallied at the end


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_device_counts_lost_lines_without_a_traceback_per_event(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="lookout.store"):
        sink = JsonlSink(Path("/dev/full"))
        for i in range(50):
            sink.write(text(i))
        sink.close()
    assert sink.lost == 50 and sink.last_error == "No space left on device"
    assert len(caplog.records) == 2  # the failure, then the count at close
    assert all(r.exc_info is None for r in caplog.records)


# ------------------------------------------------------- files shared and moved


def test_two_writers_on_one_file_and_a_full_disk_cut_no_line(tmp_path: Path) -> None:
    """Two sinks append to one file, line by line in turn, until the disk fills, and go on
    once it is freed: every line a sink says it wrote is in the file whole, in one piece;
    the line the disk cut is said by the sink (lost) and is a line of its own."""
    path = tmp_path / "shared.jsonl"
    limit = 6000  # about 30 lines

    def small_disk() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))

    done = subprocess.run(
        [sys.executable, "-m", "tests.jsonl_writers", str(path), "40", "25"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, preexec_fn=small_disk,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    landed = report["landed"][0] + report["landed"][1]
    raw = path.read_bytes()
    assert b"\0" not in raw
    # Read back as `lookout report` reads it: a line of the other writer that follows
    # the torn one directly is still read whole.
    events, skipped = read_jsonl(raw, path)
    assert sorted(e["text"] for e in events) == sorted(landed)  # none cut by the other
    assert len(skipped.lines) <= 1, skipped  # at most the one line the full disk cut
    assert raw.endswith(b"\n")
    assert all(report["lost"]), report["lost"]  # the disk did fill for both
    assert any(t.startswith("a-3") for t in report["landed"][0])  # ...and was freed
    assert any(t.startswith("b-3") for t in report["landed"][1])


class Ticks:
    """An injected clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_renamed_file_is_followed_by_a_new_one_at_its_name(tmp_path: Path) -> None:
    """logrotate's default (create) renames the file: the sink notices within a second
    and writes a new file at the name; the renamed one keeps what it had."""
    path = tmp_path / "events.jsonl"
    clock = Ticks()
    problems: list[tuple[str, str]] = []
    sink = JsonlSink(path, on_problem=lambda k, m: problems.append((k, m)), clock=clock)
    for i in range(3):
        sink.write(text(i))
    path.rename(tmp_path / "events.jsonl.1")
    path.touch()  # logrotate's create
    sink.write(text(3))  # within the second: may still go to the renamed file
    clock.now += 1.5
    for i in range(4, 6):
        sink.write(text(i))
    sink.close()
    old = [e["text"] for e in lines(tmp_path / "events.jsonl.1")]
    new = [e["text"] for e in lines(path)]
    assert old[:3] == ["line 0", "line 1", "line 2"] and new[-2:] == ["line 4", "line 5"]
    assert old + new == [f"line {i}" for i in range(6)]  # each line once, none lost
    assert sink.complete
    assert [k for k, _ in problems] == ["reopened"]
    assert "renamed or moved" in problems[0][1] and str(path) in problems[0][1]


def test_a_deleted_file_is_said_counted_and_written_anew(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    clock = Ticks()
    problems: list[tuple[str, str]] = []
    sink = JsonlSink(path, on_problem=lambda k, m: problems.append((k, m)), clock=clock)
    for i in range(3):
        sink.write(text(i))
    path.unlink()
    clock.now += 1.5
    for i in range(3, 5):
        sink.write(text(i))
    assert sink.degraded is False and sink.lost == 3
    sink.close()
    assert [e["text"] for e in lines(path)] == ["line 3", "line 4"]
    assert not sink.complete
    kinds = [k for k, _ in problems]
    assert kinds == ["dropped", "lost"], problems
    assert "deleted" in problems[0][1] and "3 lines" in problems[0][1]


def test_a_file_deleted_just_before_the_end_is_said(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    sink = JsonlSink(path, clock=Ticks())
    sink.write(text(0))
    path.unlink()
    sink.write(text(1))
    sink.close()  # no check was due yet: closing looks once more
    assert sink.lost == 2 and not sink.complete
