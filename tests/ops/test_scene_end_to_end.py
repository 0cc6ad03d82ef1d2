"""One real run with a line and a zone: the JSON lines, the SQLite log, MQTT (real Mosquitto)
and the status page all say the same totals.

The sample video is replayed fast through the real app (detector, tracker, local model,
status server, MQTT publisher); the source holds still after frame 500, so the outputs can
be read while the device is still running and nothing is left in flight.
"""

from __future__ import annotations

import io
import json
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import pytest

from device.app.wiring import build_app
from device.config import build
from device.sources import FrameSource, open_source
from device.vision.frame import Frame
from live.store.eventlog import read_events
from tests.datafiles import data_file
from tests.ops.support import Broker, Subscriber

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.usefixtures("remembered_detections")]
BASE = "lookout/scene"
HOLD_AT = 500


class HeldSource:
    """The real file source, which stops delivering at ``HOLD_AT`` until released."""

    def __init__(self, inner: FrameSource) -> None:
        self.inner = inner
        self.name = inner.name
        self.is_camera = inner.is_camera
        self.fps = inner.fps
        self.frame_count = getattr(inner, "frame_count", None)
        self.held = threading.Event()
        self.release = threading.Event()

    def open(self) -> None:
        self.inner.open()

    def read(self) -> Frame | None:
        frame = self.inner.read()
        if frame is not None and frame.index >= HOLD_AT and not self.release.is_set():
            self.held.set()
            self.release.wait(60)
        return frame

    def seek(self, index: int) -> None:
        self.inner.seek(index)

    def close(self) -> None:
        self.release.set()
        self.inner.close()


def retained(broker: Broker, topics: list[str]) -> dict[str, bytes]:
    """What a client connecting now reads (retained messages only)."""
    late = Subscriber(broker.port, topics)
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and len({m.topic for m in late.messages}) < len(topics):
            time.sleep(0.02)
        return {m.topic: m.payload for m in late.messages if m.retain}
    finally:
        late.close()


async def test_events_sqlite_mqtt_and_the_page_agree_on_lines_and_zones(
    broker: Broker, tmp_path: Path
) -> None:
    events_path, db_path = tmp_path / "events.jsonl", tmp_path / "events.sqlite"
    config = build(
        {"model": "local", "pace": "fast", "http": "127.0.0.1:0", "mqtt": broker.url,
         "device_id": "scene", "events": events_path, "db": db_path,
         "lines": ["post=0.5599,0.7292,0.5599,0.2083"],
         "zones": ["left=0.05,0.3,0.45,0.3,0.45,0.95,0.05,0.95"], "dwell": 5.0},
        environ={}, system_config=tmp_path / "none.toml",
    )  # fmt: skip
    source = HeldSource(open_source(str(data_file("vtest.avi")), clock_now=time.monotonic))
    app = build_app(config, out=io.StringIO(), source=source)
    ops = app.operations
    code: list[int] = []

    async def run() -> None:
        code.append(await app.run())

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await anyio.to_thread.run_sync(source.held.wait, 120)
        assert app.session is not None
        with anyio.fail_after(30):
            await app.session.wait_inputs_idle()
        assert ops.server is not None
        url = f"http://127.0.0.1:{ops.server.port}"

        def jsonl() -> list[dict[str, Any]]:
            return [json.loads(line) for line in events_path.read_text().splitlines()]

        def page() -> dict[str, Any]:
            with urllib.request.urlopen(f"{url}/api/state", timeout=5) as response:
                state: dict[str, Any] = json.load(response)
            return state

        def metrics_text() -> str:
            with urllib.request.urlopen(f"{url}/metrics", timeout=5) as response:
                return str(response.read().decode())

        def settled() -> bool:
            # Every output has caught up with the last event perception made.
            events = jsonl()
            crossings = [e for e in events if e["type"] == "crossing"]
            stored = list(read_events(db_path, kind="crossing"))
            return bool(crossings) and len(stored) == len(crossings)

        deadline = time.monotonic() + 20
        while not settled():
            assert time.monotonic() < deadline, "the SQLite log did not catch up"
            await anyio.sleep(0.05)

        events = jsonl()
        crossings = [e for e in events if e["type"] == "crossing"]
        entered = sum(e["direction"] == "in" for e in crossings)
        exited = sum(e["direction"] == "out" for e in crossings)
        assert entered + exited >= 10  # 500 frames of the sample video cross it often
        assert (crossings[-1]["total_in"], crossings[-1]["total_out"]) == (entered, exited)
        stored = list(read_events(db_path, kind="crossing"))
        assert [(e["direction"], e["track"]) for e in stored] == [
            (e["direction"], e["track"]) for e in crossings
        ]
        zones = [e for e in events if e["type"] == "zone"]
        assert [e["people"] for e in read_events(db_path, kind="zone")] == [
            e["people"] for e in zones
        ]

        state = await anyio.to_thread.run_sync(page)
        assert (state["lines"]["post"]["in"], state["lines"]["post"]["out"]) == (entered, exited)
        assert state["zones"]["left"]["people"] == zones[-1]["people"]
        assert state["zones"]["left"]["dwelling"] == zones[-1]["dwelling"]

        topics = [f"{BASE}/line/post/in", f"{BASE}/line/post/out", f"{BASE}/zone/left/people"]
        mqtt = await anyio.to_thread.run_sync(retained, broker, topics)
        assert int(mqtt[f"{BASE}/line/post/in"]) == entered
        assert int(mqtt[f"{BASE}/line/post/out"]) == exited
        assert json.loads(mqtt[f"{BASE}/zone/left/people"])["people"] == zones[-1]["people"]

        metrics = await anyio.to_thread.run_sync(metrics_text)
        assert (
            f'lookout_line_crossings_total{{camera="main",direction="in",line="post"}} {entered}.0'
            in metrics
        )
        assert (
            f'lookout_line_crossings_total{{camera="main",direction="out",line="post"}} {exited}.0'
            in metrics
        )

        source.release.set()
    assert code == [0]
