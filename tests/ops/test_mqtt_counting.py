"""Home Assistant's view of a camera that goes away and comes back, on a real Mosquitto.

The real app (a fake live camera serving real frames, the real detector, the
local model) publishes to the broker; a subscriber reads what Home Assistant
would: the people sensor is available only while ``state`` and ``counting``
both say online.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import anyio
import pytest

from device.app.wiring import build_app
from device.config import build
from tests.cameras import VtestCamera, vtest_frames
from tests.ops.support import Broker, Received, Subscriber

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
BASE = "lookout/porch"


def available(messages: list[Received]) -> bool | None:
    """Home Assistant's availability of the people sensor after these messages."""
    last: dict[str, bytes] = {}
    for m in messages:
        last[m.topic] = m.payload
    if f"{BASE}/state" not in last or f"{BASE}/counting" not in last:
        return None
    return last[f"{BASE}/state"] == b"online" and last[f"{BASE}/counting"] == b"online"


def counts(messages: list[Received]) -> list[int | None]:
    return [json.loads(m.payload)["count"] if m.payload else None
            for m in messages if m.topic == f"{BASE}/count"]  # fmt: skip


async def test_camera_down_makes_the_sensors_unavailable_and_back_brings_a_fresh_count(
    broker: Broker, tmp_path: Path
) -> None:
    watch = Subscriber(broker.port, [f"{BASE}/#"])
    camera = VtestCamera(vtest_frames())
    config = build(
        {"model": "local", "http": "", "mqtt": broker.url, "device_id": "porch",
         "detect_fps": 10.0},
        environ={},
        system_config=tmp_path / "none.toml",
    )  # fmt: skip
    app = build_app(config, out=io.StringIO(), source=camera)
    app.source_runner.initial_backoff_s = 0.1
    app.source_runner.max_backoff_s = 0.3
    stale_after = app.perception.stale_after_s()

    def wait(predicate: object, what: str, timeout: float = 15) -> None:
        watch.wait_for(predicate, what, timeout)  # type: ignore[arg-type]

    async with anyio.create_task_group() as tg:
        tg.start_soon(app.run)
        await anyio.to_thread.run_sync(
            wait, lambda ms: available(ms) and any(c is not None for c in counts(ms)), "a count"
        )
        seen = len(watch.messages)
        camera.unplugged = True
        # Within one detection period plus the hold (the state change is at once; the
        # freshness watch is the bound when the camera only stops delivering).
        await anyio.to_thread.run_sync(
            wait, lambda ms: available(ms) is False, "unavailable", stale_after + 5
        )
        # Unavailable first (Home Assistant never reads an empty count as a value), then
        # the retained count is cleared, not left standing.
        await anyio.to_thread.run_sync(
            wait, lambda ms: counts(ms[seen:])[-1:] == [None], "the count cleared"
        )
        gone = watch.messages[seen:]
        # (A count may change just before the camera goes: the order asked for is that of
        # going unavailable and clearing the count.)
        offline = next(
            k
            for k, m in enumerate(gone)
            if m.topic == f"{BASE}/counting" and m.payload != b"online"
        )
        cleared = next(
            k for k, m in enumerate(gone) if m.topic == f"{BASE}/count" and counts([m]) == [None]
        )
        assert offline < cleared
        late = Subscriber(broker.port, [f"{BASE}/count"])
        assert late.messages == []  # nobody connecting now reads an old count
        late.close()
        seen = len(watch.messages)
        camera.unplugged = False
        await anyio.to_thread.run_sync(
            wait, lambda ms: available(ms[seen:]) is None and available(ms) is True, "available"
        )
        back = counts(watch.messages[seen:])
        assert back and isinstance(back[-1], int)  # with a fresh count
        events = [json.loads(m.payload) for m in watch.messages if m.topic == f"{BASE}/events"]
        unknown = [e for e in events if e["type"] == "count" and e["count"] is None]
        assert unknown and unknown[0]["reason"].startswith("camera reconnecting since ")
        app.request_stop()
    watch.close()
