"""The offline model with several cameras (issue 34): one count_people per camera, one watch
per line and zone of each, and every sentence says whose it is ("door: 4 people in view
(was 3).")."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from live.config import EmitMode, SessionConfig
from live.events import ModelText
from live.input_stream import InputStream
from live.requests import LiveRequestQueue
from live.session import Runner
from live.util.clock import FakeClock
from models.local.model import LocalModel
from tests.cli import lookout
from tests.clips import write_clip
from tests.datafiles import data_file
from tests.live.harness import blob_value, frame_blob
from tools.cameras import Cameras, per_camera
from tools.function_tool import FunctionTool

POST = "0.5599,0.7292,0.5599,0.2083"


async def count_people(stream: InputStream) -> AsyncIterator[dict[str, Any]]:
    """Stands in for the real tool: reports each frame's number when it changes."""
    last = None
    async for request in stream:
        value = blob_value(request.blob.data if request.blob else None)
        if value != last:
            yield {"people": value, "previous": last}
            last = value


@pytest.mark.anyio
@pytest.mark.parametrize("mode", [EmitMode.FUNCTION_RESPONSE, EmitMode.TEXT])
async def test_the_local_model_counts_each_camera_and_says_whose(mode: EmitMode) -> None:
    clock = FakeClock()
    queue: LiveRequestQueue[Any] = LiveRequestQueue(realtime_maxsize=4, now=clock.now)
    model = LocalModel()
    cameras = Cameras(("door", "till"))
    tool = FunctionTool(
        per_camera("count_people", cameras, {"door": count_people, "till": count_people}),
        input_filter=cameras.input_filter,
    )
    runner = Runner(model, [tool], SessionConfig(emit_mode=mode), clock=clock)
    texts: list[str] = []

    async def said(text: str) -> None:
        with anyio.fail_after(30):
            while text not in texts:
                event = await session.events.receive()
                if isinstance(event, ModelText):
                    texts.append(event.text)

    def frame(camera: str, value: int) -> None:
        queue.send_realtime(frame_blob(value), origin=camera)

    async with runner.run_live(queue) as session:
        while len(session.running_streams()) < 2:
            await session.events.receive()
        assert sorted(s["args"]["camera"] for s in session.running_streams()) == ["door", "till"]
        frame("door", 2)
        frame("till", 5)
        await said("door: 2 people in view.")
        await said("till: 5 people in view.")
        frame("door", 3)
        await said("door: 3 people in view (was 2).")
        queue.send_content("count")
        await said("door: 3 people in view. till: 5 people in view.")
        queue.send_content("stop")
        await said("Successfully stopped streaming function count_people")
        assert session.running_streams() == []
        queue.send_content("start")  # both again
        while len(session.running_streams()) < 2:
            await session.events.receive()
        frame("till", 1)
        await said("till: 1 person in view.")
        queue.close()


@pytest.mark.slow
@pytest.mark.usefixtures("remembered_detections")
def test_a_run_of_two_cameras_with_the_local_model_says_whose_count_changed(
    tmp_path: Path,
) -> None:
    till = write_clip(tmp_path / "till.avi", 8.0, mirrored=True)
    (tmp_path / "empty.toml").write_text("")
    events_path = tmp_path / "events.jsonl"
    result = lookout(
        "run", "--config", str(tmp_path / "empty.toml"), "--model", "local", "--no-http",
        "--source", f"door={data_file('vtest.avi')}", "--source", f"till={till}",
        "--line", f"door:post={POST}", "--pace", "fast", "--duration", "8",
        "--events", str(events_path),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in events_path.read_text().splitlines()]
    calls = [(e["name"], e["args"]) for e in events if e["type"] == "tool_call"]
    assert calls == [
        ("count_people", {"camera": "door"}),
        ("count_people", {"camera": "till"}),
        ("watch_line", {"camera": "door", "name": "post"}),  # the door's line, the door's
    ]
    sentences = [e["text"] for e in events if e["type"] == "model_text"]
    for camera in ("door", "till"):
        counts = [e["count"] for e in events if e["type"] == "count" and e["camera"] == camera]
        heard = [
            int(s.split(": ")[1].split(" ")[0])
            for s in sentences
            if s.startswith(f"{camera}: ") and " in view" in s
        ]
        assert heard and heard == [c for c in counts if c is not None][: len(heard)], camera
    assert any(s.startswith("door: Line post: ") for s in sentences)
    assert not any(s.startswith("till: Line") for s in sentences)
    # The console says whose each call is, when it starts and when it stops.
    for said in (
        "count_people of door started",
        "count_people of till started",
        "watch_line of door started",
        "count_people of till stopped: ",
    ):
        assert said in result.stdout, said
