"""A driver's error text that quotes the camera's URL, password and all, under the whole
app: every place it surfaces (source states, the count's reason, what count_people tells
the model, the console, the JSONL) shows the URL as every source is shown."""

from __future__ import annotations

import io
import json
from pathlib import Path

import anyio
import numpy as np
import pytest

from device.app.wiring import build_app
from device.bus import EventBus
from device.config import build
from device.sources import SourceError
from live.events import Emission, Event
from live.util.clock import MonotonicClock
from tests.cameras import VtestCamera, vtest_frames

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

URL = "rtsp://admin:S3cr@tPa55@cam.local:554/live?user=admin&pwd=hunter2"
SHOWN = "rtsp://cam.local:554/live?user=***&pwd=***"


class QuotingCamera(VtestCamera):
    """A camera whose driver, once unplugged, says what it was opening (as some do)."""

    def _open_capture(self) -> int:
        if self.unplugged:
            raise OSError(f"could not open {URL}: connection refused")
        return super()._open_capture()

    def _read_capture(self, capture: int) -> tuple[np.ndarray, float | None] | None:
        try:
            return super()._read_capture(capture)
        except SourceError:  # unplugged: said as a driver would say it
            raise RuntimeError(f"[rtsp @ 0x5] {URL}: 401 Unauthorized") from None


class Probe:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.changed = anyio.Event()

    def write(self, event: Event) -> None:
        self.events.append(event)
        self.changed.set()
        self.changed = anyio.Event()

    def close(self) -> None:
        pass

    async def wait(self, predicate: object, timeout: float = 30) -> None:
        assert callable(predicate)
        with anyio.fail_after(timeout):
            while not predicate():
                await self.changed.wait()


async def test_a_driver_quoting_the_url_never_shows_its_password(tmp_path: Path) -> None:
    camera = QuotingCamera(vtest_frames())
    probe = Probe()
    events = tmp_path / "events.jsonl"
    config = build(
        {"model": "local", "http": "", "detect_fps": 5.0, "events": events},
        environ={}, system_config=Path("/nonexistent"),
    )  # fmt: skip
    clock = MonotonicClock()
    bus = EventBus(clock)
    bus.subscribe(probe)
    console = io.StringIO()
    app = build_app(config, operations=False, bus=bus, out=console, clock=clock, source=camera)
    app.source_runner.initial_backoff_s = 0.05
    app.source_runner.max_backoff_s = 0.2

    def unknown_told() -> bool:
        return any(
            isinstance(e, Emission) and e.payload.get("people", 0) is None for e in probe.events
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(app.run)
        await probe.wait(lambda: any(e.type == "count" for e in probe.events))
        camera.unplugged = True
        await probe.wait(unknown_told)
        # Both failures said: the read's and the reopening's.
        await probe.wait(
            lambda: sum(e.type == "source_state" and "refused" in e.to_dict()["reason"]
                        for e in probe.events) >= 1
        )  # fmt: skip
        app.request_stop()
    recorded = [e.to_dict() for e in probe.events]
    reasons = [e["reason"] for e in recorded if e["type"] == "source_state" and e["reason"]]
    assert any(f"RuntimeError: [rtsp @ 0x5] {SHOWN}: 401 Unauthorized" in r for r in reasons)
    assert any(f"OSError: could not open {SHOWN}: connection refused" in r for r in reasons)
    unknown = [e for e in recorded if e["type"] == "count" and e["count"] is None]
    assert unknown and SHOWN in unknown[0]["reason"], unknown
    everything = json.dumps(recorded) + console.getvalue() + events.read_text()
    assert [p for p in ("S3cr", "tPa55", "hunter2") if p in everything] == []
