"""`lookout run` with a Gemini model: the real CLI process, the real google-genai SDK,
the real detector on the real video, against the fake Live server over TLS."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from tests.datafiles import REPO_ROOT, data_file
from tests.deliveries import assert_every_change_accounted_for
from tests.fakelive import FakeLiveServer, ThreadedFakeLiveServer
from tests.fakelive.server import DEFAULT_API_KEY

pytestmark = pytest.mark.slow

MODEL = "gemini-3.8-live"


@pytest.fixture
def server() -> Iterator[ThreadedFakeLiveServer]:
    with FakeLiveServer.run_in_thread() as srv:
        yield srv


def start(server: ThreadedFakeLiveServer, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "device.cli", "run", "--model", MODEL, "--no-http", *args],
        cwd=REPO_ROOT,
        env=server.subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen[str], timeout: float = 120) -> tuple[str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    return out, err


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def people_responses(server: ThreadedFakeLiveServer, call_id: str) -> list[Any]:
    return [
        r
        for c in server.connections()
        for r in c.function_responses()
        if r.id == call_id and isinstance(r.response, dict) and "people" in r.response
    ]


def test_a_gemini_run_streams_every_count_change_to_the_model(
    server: ThreadedFakeLiveServer, tmp_path: Path
) -> None:
    events_path = tmp_path / "events.jsonl"
    proc = start(
        server,
        "--source",
        str(data_file("vtest.avi")),
        "--pace",
        "fast",
        "--events",
        str(events_path),
    )
    conn = server.wait_connection(1, timeout=30)
    declarations = {d["name"]: d for d in conn.function_declarations()}
    assert set(declarations) == {"count_people", "count_people_now", "look", "stop_streaming"}
    assert set(declarations["look"]["parameters"]["properties"]) == {"question"}
    count = declarations["count_people"]
    assert count["behavior"] == "NON_BLOCKING"
    assert set(count["parameters"]["properties"]) == {
        "min_change",
        "region",
    }  # nothing hidden leaks
    assert conn.api_key == DEFAULT_API_KEY
    (call_id,) = server.send_tool_call({"name": "count_people", "args": {}})
    out, err = finish(proc)

    responses = [r for c in server.connections() for r in c.function_responses() if r.id == call_id]
    assert responses[0].response == {
        "status": "The function is running asynchronously and the results are pending."
    }
    assert responses[0].will_continue is True and responses[0].scheduling == "SILENT"
    changes = people_responses(server, call_id)
    assert len(changes) >= 5
    assert all(r.will_continue is True and r.scheduling == "WHEN_IDLE" for r in changes)
    events = read_jsonl(events_path)
    counts = [e["count"] for e in events if e["type"] == "count"]
    assert [r.response["people"] for r in changes] == counts
    assert [e["id"] for e in events if e["type"] == "tool_call"] == [call_id]
    # No frame goes to the model unless asked.
    assert all(c.frames() == [] for c in server.connections())
    # The key is never printed or logged.
    assert DEFAULT_API_KEY not in out + err + events_path.read_text()


def test_go_away_then_a_1011_drop_loses_and_repeats_no_count(
    server: ThreadedFakeLiveServer, tmp_path: Path
) -> None:
    events_path = tmp_path / "events.jsonl"
    proc = start(
        server,
        "--source",
        str(data_file("vtest.avi")),
        "--pace",
        "fast",
        "--events",
        str(events_path),
    )
    server.wait_connection(1, timeout=30)
    (call_id,) = server.send_tool_call({"name": "count_people", "args": {}})
    server.wait_function_response(call_id, count=3, timeout=30)  # pending + two changes
    server.send_resumption_update("handle-after-2")
    server.send_go_away("5s")
    second = server.wait_connection(2, timeout=30)
    assert second.resumption_handle == "handle-after-2"
    server.wait_function_response(call_id, count=5, timeout=30)
    server.send_resumption_update("handle-after-4", connection=1)
    server.close_connection(1011, "internal error", connection=1)
    third = server.wait_connection(3, timeout=30)
    assert third.resumption_handle == "handle-after-4"
    finish(proc)

    changes = people_responses(server, call_id)
    by_connection = {r.connection for r in changes}
    assert {0, 1, 2} <= by_connection  # the stream kept running across both reconnects
    events = read_jsonl(events_path)
    counts = [(e["count"], e["previous"]) for e in events if e["type"] == "count"]
    assert_every_change_accounted_for([r.response for r in changes], counts)
    states = [e["state"] for e in events if e["type"] == "connection"]
    # Connections that ended within seconds are a run of failures: its start is said, its
    # retries are not (tests/faults/test_flapping_model.py); three connections were made.
    assert states[:3] == ["connecting", "connected", "go_away"]
    assert len(server.connections()) == 3


def test_frames_only_when_asked_at_most_one_per_second_and_never_in_privacy_mode(
    server: ThreadedFakeLiveServer, tmp_path: Path
) -> None:
    video = str(data_file("vtest.avi"))
    proc = start(
        server, "--source", video, "--send-frames", "--duration", "3.5", "--max-side", "640"
    )
    server.wait_connection(1, timeout=30)
    finish(proc)
    frames = server.connections()[0].frames()
    assert 2 <= len(frames) <= 4
    gaps = [b.t - a.t for a, b in itertools.pairwise(frames)]
    assert all(gap >= 0.9 for gap in gaps)
    for frame in frames:
        assert frame.mime_type == "image/jpeg"
        image = cv2.imdecode(np.frombuffer(frame.data or b"", np.uint8), cv2.IMREAD_COLOR)
        assert image is not None and max(image.shape[:2]) <= 640

    private = start(server, "--source", video, "--send-frames", "--privacy", "--duration", "2.5")
    server.wait_connection(2, timeout=30)
    finish(private)
    assert server.connections()[1].frames() == []
