"""The JSON-lines sink on a disk that fails, and after a run killed mid-write."""

from __future__ import annotations

import errno
import json
import logging
import os
from pathlib import Path

import pytest

import device.outputs.sinks
from device.outputs.sinks import JsonlSink
from live.events import ModelText


def text(i: int) -> ModelText:
    return ModelText(t=float(i), text=f"line {i}")


def lines(path: Path) -> list[dict[str, object]]:
    raw = path.read_bytes()
    assert raw == b"" or raw.endswith(b"\n"), "a torn last line"
    return [json.loads(line) for line in raw.decode().splitlines()]


def test_a_torn_last_line_is_cut_off_on_open_and_the_next_run_parses(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
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
    assert second.repaired_bytes == len(torn)
    assert [r.getMessage() for r in caplog.records] == [
        f"events file {path}: cut off a torn last line ({len(torn)} bytes) "
        "left by a run killed mid-write"
    ]
    for i in range(4, 6):
        second.write(text(i))
    second.close()
    assert [e["text"] for e in lines(path)] == [f"line {i}" for i in (0, 1, 2, 4, 5)]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="lookout.store"):
        JsonlSink(path).close()  # nothing to repair: nothing said
    assert caplog.records == []


def test_a_file_that_is_one_torn_line_is_emptied(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"type":"mod')
    sink = JsonlSink(path)
    sink.write(text(1))
    sink.close()
    assert [e["text"] for e in lines(path)] == ["line 1"]


def test_write_errors_lose_whole_lines_are_said_once_per_kind_and_writing_goes_on(
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
    # Nothing torn.
    assert [e["text"] for e in lines(path)] == ["line 0"] + [f"line {i}" for i in range(5, 15)]
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
