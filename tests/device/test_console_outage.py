"""A camera that goes away is one console line with its reason, not one per part.

The real app (the ONNX detector, the tracker, two lines and a zone, the local model's
count and watch streams) on a live camera of real vtest frames that the test unplugs
(``tests/cameras.py``); the console is read as a person watching it would.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from device.app.wiring import build_app
from device.bus import EventBus
from device.config import build
from device.events import CountChanged, SceneChanged, SourceStateEvent, ZoneCount
from device.outputs.console import ConsoleSink
from live.events import Event
from live.util.clock import MonotonicClock
from tests.cameras import VtestCamera, vtest_frames

LINES = ["post=0.5599,0.7292,0.5599,0.2083", "door=0.2,0.9,0.2,0.1"]
ZONE = "left=0.05,0.3,0.45,0.3,0.45,0.95,0.05,0.95"
STOPPED = "count, 1 zone unknown; 2 lines not counting"


class Watcher:
    """The run's events, with a wait woken by each one."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._changed = anyio.Event()

    def write(self, event: Event) -> None:
        self.events.append(event)
        self._changed.set()
        self._changed = anyio.Event()

    def close(self) -> None:
        pass

    async def until(self, what: Callable[[list[Event]], Any], timeout: float = 30) -> None:
        with anyio.fail_after(timeout):
            while not what(self.events):
                await self._changed.wait()

    def states(self) -> list[str]:
        return [e.state for e in self.events if isinstance(e, SourceStateEvent)]


def counts(events: list[Event]) -> list[int | None]:
    return [e.count for e in events if isinstance(e, CountChanged)]


async def run_camera(steps: Callable[[VtestCamera, Watcher], Any]) -> tuple[str, Watcher]:
    """The app on a fake live camera with two lines and a zone; ``steps`` drive the camera.
    Returns what the console printed and the run's events."""
    camera = VtestCamera(vtest_frames())
    config = build(
        {"model": "local", "http": "", "lines": LINES, "zones": [ZONE], "stall_timeout": 30},
        environ={},
        system_config=Path("/nonexistent"),
    )
    clock = MonotonicClock()
    bus = EventBus(clock)
    watcher = Watcher()
    bus.subscribe(watcher)
    out = io.StringIO()
    app = build_app(
        config, operations=False, bus=bus, out=out, clock=clock, source=camera
    )  # fmt: skip
    app.source_runner.initial_backoff_s = 0.05
    app.source_runner.max_backoff_s = 0.2
    async with anyio.create_task_group() as tg:
        tg.start_soon(app.run)
        await watcher.until(lambda events: [c for c in counts(events) if c])
        await watcher.until(
            lambda events: [e for e in events if isinstance(e, ZoneCount) and e.people is not None]
        )
        await steps(camera, watcher)
        app.stop.request()
    return out.getvalue(), watcher


def said(console: str) -> list[str]:
    return [line.split("] ", 1)[1] for line in console.splitlines() if "] " in line]


@pytest.mark.anyio
@pytest.mark.slow
async def test_an_unplugged_camera_is_one_line_with_its_reason_and_what_stopped() -> None:
    async def unplug_and_back(camera: VtestCamera, watcher: Watcher) -> None:
        with camera.lock:
            camera.unplugged = True
        await watcher.until(lambda events: None in counts(events))
        with camera.lock:
            camera.unplugged = False
        await watcher.until(lambda events: counts(events)[-1] is not None)

    console, watcher = await run_camera(unplug_and_back)
    lines = said(console)
    # The reason, once, on the source's line, with what stopped with it.
    assert console.count("fake vtest camera: read failed") == 1, console
    (lost,) = [line for line in lines if "read failed" in line]
    assert lost.startswith("source fake vtest camera reconnecting: ")
    assert lost.endswith(f" — {STOPPED}"), lost
    # Not a line for the count, the zone, each line again.
    assert not [line for line in lines if line.startswith("count: unknown")], console
    assert not [line for line in lines if re.match(r"zone \w+: unknown", line)], console
    # Back: the count and the zone are said as numbers again, and the end is one line too.
    back = lines.index(next(line for line in lines if "running: 768x576 frames, after" in line))
    assert any(re.fullmatch(r"count: \d+", line) for line in lines[back:]), console
    (ended,) = [line for line in lines if " ended: " in line]
    assert ended == f"source fake vtest camera ended: closed — {STOPPED}"
    # The event logs still keep each part's own event, with its reason.
    unknown = [e for e in watcher.events if isinstance(e, CountChanged) and e.count is None]
    assert unknown[0].reason is not None and "read failed" in unknown[0].reason
    assert [e for e in watcher.events if isinstance(e, ZoneCount) and e.people is None]


@pytest.mark.anyio
@pytest.mark.slow
async def test_frames_that_stop_coming_are_one_count_line_with_what_stopped() -> None:
    async def stall_and_release(camera: VtestCamera, watcher: Watcher) -> None:
        camera.stall.set()  # the next read blocks: the camera says nothing, frames stop
        await watcher.until(lambda events: None in counts(events))
        camera.release_stall.set()
        await watcher.until(lambda events: counts(events)[-1] is not None)

    console, watcher = await run_camera(stall_and_release)
    lines = said(console)
    stalled = [line for line in lines if "no usable frame" in line]
    assert len(stalled) == 1, console
    assert re.fullmatch(
        r"count: unknown: no usable frame from fake vtest camera for \d+ s"
        r" — 1 zone unknown; 2 lines not counting",
        stalled[0],
    ), stalled
    assert not [line for line in lines if re.match(r"zone \w+: unknown", line)], console
    assert "reconnecting" not in watcher.states()  # the camera itself never said a thing


def test_what_stops_is_the_scene_as_edited_while_running() -> None:
    out = io.StringIO()
    console = ConsoleSink(out, camera=True, lines=2, zones=1)
    # The page's editor removed the zone and a line: one line is left.
    console.write(
        SceneChanged(lines={"door": [[0.2, 0.9], [0.2, 0.1]]}, zones={}, changes=[], t=1.0)
    )
    console.write(CountChanged(count=2, previous=None, t=2.0))
    console.write(SourceStateEvent(source="cam", state="reconnecting", reason="read failed", t=3.0))
    console.write(CountChanged(count=None, previous=2, reason="camera reconnecting", t=3.0))
    assert said(out.getvalue())[-1] == (
        "source cam reconnecting: read failed — count unknown; 1 line not counting"
    )
    assert len([line for line in said(out.getvalue()) if "unknown" in line]) == 1
