"""Two cameras and a Gemini model (issue 34): `lookout run --source door=... --source
till=...`, the real google-genai SDK against the fake Live server over TLS, the real
detector on the real video.

Two count_people calls for two cameras, in one message (ADK keeps one slot per tool name
and would orphan the first stream), run side by side, each with its camera's counts;
stopping one leaves the other running; ``--send-frames door`` sends the door's frames alone.
"""

from __future__ import annotations

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
from tests.fakelive import FakeLiveServer, ThreadedFakeLiveServer

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("remembered_detections")]

MODEL = "gemini-3.8-live"
FPS = 10.0


@pytest.fixture
def server() -> Iterator[ThreadedFakeLiveServer]:
    with FakeLiveServer.run_in_thread() as srv:
        yield srv


def half_size_clip(path: Path, seconds: float) -> Path:
    """The sample video's first ``seconds``, mirrored, at half its size (384x288): frames
    that cannot be taken for the door's."""
    source = cv2.VideoCapture(str(data_file("vtest.avi")))
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter.fourcc(*"MJPG"), FPS, (384, 288))
    try:
        for _ in range(round(seconds * FPS)):
            ok, image = source.read()
            assert ok
            writer.write(cv2.resize(cv2.flip(image, 1), (384, 288)))
    finally:
        writer.release()
        source.release()
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def people(server: ThreadedFakeLiveServer, call_id: str) -> list[Any]:
    return [
        r
        for c in server.connections()
        for r in c.function_responses()
        if r.id == call_id and isinstance(r.response, dict) and "people" in r.response
    ]


def test_two_cameras_counted_side_by_side_one_stopped_and_only_the_doors_frames_sent(
    server: ThreadedFakeLiveServer, tmp_path: Path
) -> None:
    till = half_size_clip(tmp_path / "till.avi", 10.0)
    events_path = tmp_path / "events.jsonl"
    (tmp_path / "empty.toml").write_text("")
    proc = subprocess.Popen(
        [sys.executable, "-m", "device.cli", "run", "--model", MODEL, "--no-http",
         "--config", str(tmp_path / "empty.toml"),
         "--source", f"door={data_file('vtest.avi')}", "--source", f"till={till}",
         "--send-frames", "door", "--model-fps", "5", "--pace", "fast", "--duration", "20",
         "--events", str(events_path)],
        cwd=REPO_ROOT, env=server.subprocess_env(), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        conn = server.wait_connection(1, timeout=30)
        camera = conn.declaration("count_people")["parameters"]["properties"]["camera"]  # type: ignore[index]
        assert camera["enum"] == ["door", "till"]
        door, till_call = server.send_tool_call(
            {"name": "count_people", "args": {"camera": "door"}},
            {"name": "count_people", "args": {"camera": "till"}},
        )
        server.wait_function_response(door, count=3, timeout=30)  # pending + two counts
        server.wait_function_response(till_call, count=3, timeout=30)
        (stop,) = server.send_tool_call(
            {"name": "stop_streaming", "args": {"function_name": "count_people", "call_id": door}}
        )
        stopped = server.wait_function_response(stop, timeout=30)
        _out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert stopped.response["stopped"][0]["id"] == door  # the door's alone

    events = read_jsonl(events_path)

    def counts(camera: str) -> list[int]:
        return [e["count"] for e in events if e["type"] == "count" and e["camera"] == camera]

    door_said, till_said = people(server, door), people(server, till_call)
    assert {r.response["camera"] for r in door_said} == {"door"}
    assert {r.response["camera"] for r in till_said} == {"till"}
    # Each stream said its own camera's count changes, in order, from its start.
    door_counts = [r.response["people"] for r in door_said]
    till_counts = [r.response["people"] for r in till_said]
    assert door_counts == counts("door")[: len(door_counts)]
    assert till_counts == counts("till")[: len(till_counts)]
    # The door's stream ended at its stop; the till's went on counting after it.
    assert all(r.t < stopped.t for r in door_said)
    assert len(counts("door")) > len(door_counts)
    assert any(r.t > stopped.t for r in till_said)
    # The model saw the door's frames alone (768x576; the till's are 384x288).
    # The lane sends at most --model-fps a wall second and a fast replay takes a few wall
    # seconds (more under load): enough frames that a leak of the till's would show.
    frames = [f for c in server.connections() for f in c.frames()]
    assert len(frames) >= 3, len(frames)
    sizes = {
        cv2.imdecode(np.frombuffer(f.data or b"", np.uint8), cv2.IMREAD_COLOR).shape[:2]
        for f in frames
    }
    assert sizes == {(576, 768)}
