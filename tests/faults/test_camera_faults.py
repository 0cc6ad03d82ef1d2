"""Camera faults under the whole app: the session stays up and the count resumes.

A fake *live* camera serves real vtest frames and, on the test's command,
stalls in read(), raises, returns corrupt frames, changes resolution, and
disappears (open fails) before coming back. The real app (capture loop,
session, count_people with the ONNX detector, local model) must survive each
fault, say what happened in events, and keep counting afterwards.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from device.app.run import App
from device.app.wiring import build_app
from device.bus import EventBus
from device.config import build
from device.events import CountChanged
from device.vision.percept import Perceived, Percept
from live.events import Emission, Event
from live.util.clock import MonotonicClock
from tests.cameras import VtestCamera, vtest_frames

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


class Probe:
    """An event sink and result observer the test can wait on."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.results: list[Percept] = []
        self.changed = anyio.Event()

    def _notify(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()

    def write(self, event: Event) -> None:
        self.events.append(event)
        self._notify()

    def on_result(self, result: Perceived) -> None:
        if isinstance(result, Percept):  # the count's going unknown is in ``counts``
            self.results.append(result)
        self._notify()

    def close(self) -> None:
        pass

    def counts(self) -> list[CountChanged]:
        return [e for e in self.events if isinstance(e, CountChanged)]

    def states(self) -> list[str]:
        return [e.to_dict()["state"] for e in self.events if e.type == "source_state"]

    async def wait(self, predicate: Callable[[], Any], timeout: float = 20) -> None:
        with anyio.fail_after(timeout):
            while not predicate():
                await self.changed.wait()

    async def processed_more(self, than: int) -> None:
        await self.wait(lambda: len(self.results) >= than + 3)


def watched_app(camera: VtestCamera, **flags: Any) -> tuple[App, Probe]:
    """The real app on ``camera`` (local model, no server), watched by a probe."""
    config = build(
        {"model": "local", "http": "", **flags},
        environ={},
        system_config=Path("/nonexistent"),
    )
    clock = MonotonicClock()
    bus = EventBus(clock)
    probe = Probe()
    bus.subscribe(probe)
    bus.on_percept(probe.on_result)
    return build_app(
        config, operations=False, bus=bus, out=io.StringIO(), clock=clock, source=camera
    ), probe


async def test_every_camera_fault_is_survived_and_the_count_resumes(tmp_path: Path) -> None:
    camera = VtestCamera(vtest_frames())
    probe = Probe()
    config = build(
        {
            "model": "local",
            "http": "",
            "detect_fps": 10.0,
            "stall_timeout": 0.5,
            "events": tmp_path / "events.jsonl",
        },
        environ={},
        system_config=Path("/nonexistent"),
    )
    clock = MonotonicClock()
    bus = EventBus(clock)
    bus.subscribe(probe)
    bus.on_percept(probe.on_result)
    app = build_app(
        config, operations=False, bus=bus, out=io.StringIO(), clock=clock, source=camera
    )
    app.source_runner.initial_backoff_s = 0.05
    app.source_runner.max_backoff_s = 0.2
    codes: list[int] = []

    async def run_app() -> None:
        codes.append(await app.run())

    async with anyio.create_task_group() as tg:
        tg.start_soon(run_app)
        await probe.wait(lambda: any(e.type == "count" for e in probe.events))
        assert probe.results[-1].raw >= 2  # real people in real frames

        # 1. A read that blocks (a lost RTSP stream): the watchdog gives up on it.
        camera.stall.set()
        await probe.wait(lambda: app.source_runner.stats.stalls == 1)
        await probe.wait(lambda: probe.states()[-1] == "running")
        camera.release_stall.set()
        await probe.processed_more(len(probe.results))

        # 2. Reads that raise.
        before = len(probe.states())
        camera.read_failures = 3
        await probe.wait(lambda: "reconnecting" in probe.states()[before:])
        await probe.wait(lambda: probe.states()[-1] == "running")
        await probe.processed_more(len(probe.results))

        # 3. Corrupt frames are dropped by the capture loop, nothing else happens.
        camera.corrupt = 40  # 0.4 s of garbage: the 10 fps sampler must meet some
        await probe.wait(lambda: app.capture.stats.dropped["unusable"] >= 1)
        await probe.processed_more(len(probe.results))

        # 4. The resolution changes mid-stream.
        camera.small = True
        await probe.wait(lambda: bool(probe.results) and probe.results[-1].frame.shape[1] == 640)
        await probe.processed_more(len(probe.results))
        assert app.source_runner.stats.resolution_changes >= 1

        # 5. The camera disappears, then comes back: the count is unknown meanwhile.
        before = len(probe.states())
        counts_before = len(probe.counts())
        camera.unplugged = True
        await probe.wait(lambda: probe.states()[before:].count("reconnecting") >= 2)
        gone = probe.counts()[counts_before:]
        assert gone and gone[0].count is None, gone
        assert gone[0].reason.startswith("camera reconnecting since "), gone[0].reason
        assert "(fake vtest camera: read failed" in gone[0].reason, gone[0].reason
        assert app.current_percept() is None
        assert (await app.counter.count_people_now())["people"] is None
        camera.unplugged = False
        await probe.wait(lambda: probe.states()[-1] == "running")
        await probe.processed_more(len(probe.results))
        # Back by itself, as a new first count (nothing to compare with).
        await probe.wait(lambda: probe.counts()[-1].count is not None)
        back = [c for c in probe.counts()[counts_before:] if c.count is not None]
        assert back[0].previous is None, back
        # The model's stream was told both: unknown with the reason, then the count.
        said = [
            e.payload for e in probe.events if isinstance(e, Emission) and "people" in e.payload
        ]
        unknown = [i for i, p in enumerate(said) if p["people"] is None]
        assert unknown and said[unknown[-1]]["reason"].startswith("camera reconnecting since ")
        assert said[-1]["people"] is not None

        assert app.session is not None and len(app.session.running_streams()) == 1
        app.request_stop()
    assert codes == [0]
    reasons = [e.to_dict()["reason"] for e in probe.events if e.type == "source_state"]
    assert any("no such device" in r for r in reasons)
    assert any("read failed" in r for r in reasons)
    assert any("no frame within 0.5 s (read stalled)" in r for r in reasons), reasons


async def test_a_camera_that_goes_quiet_makes_the_count_unknown_before_its_watchdog(
    tmp_path: Path,
) -> None:
    # A read that blocks, with a watchdog far away: "running" says nothing of freshness.
    camera = VtestCamera(vtest_frames())
    app, probe = watched_app(camera, detect_fps=10.0, stall_timeout=60.0)
    async with anyio.create_task_group() as tg:
        tg.start_soon(app.run)
        await probe.wait(lambda: probe.counts() and probe.counts()[-1].count is not None)
        stale_after = app.perception.stale_after_s()
        camera.stall.set()
        # Within one detection period plus the hold (and the slack stale_after_s gives).
        await probe.wait(lambda: probe.counts()[-1].count is None, timeout=stale_after + 3)
        last = probe.results[-1]
        gone = probe.counts()[-1]
        assert gone.reason.startswith("no usable frame from fake vtest camera for "), gone.reason
        assert probe.states()[-1] == "running"  # the watchdog has not given up yet
        assert app.current_percept() is None
        camera.release_stall.set()
        await probe.wait(lambda: probe.counts()[-1].count is not None)
        assert probe.results[-1].seq > last.seq
        app.request_stop()


async def test_short_camera_glitches_do_not_restart_anyone_s_visit(tmp_path: Path) -> None:
    """People standing in a zone while the camera drops a read every few seconds (and is
    reopened at once): each person is one visit, said dwelling once, with one track id;
    the count is unknown during each glitch all the same. A long outage starts afresh."""
    still = vtest_frames(1)  # frame 0: three people; shown still, they stand there
    camera = VtestCamera(still)
    app, probe = watched_app(
        camera, detect_fps=5.0, zones=["all=0,0,1,0,1,1,0,1"], dwell=2.0, motion="off"
    )
    app.source_runner.initial_backoff_s = 0.05
    app.source_runner.max_backoff_s = 0.1

    def dwells() -> list[dict[str, Any]]:
        return [e.to_dict() for e in probe.events if e.type == "dwell"]

    async with anyio.create_task_group() as tg:
        tg.start_soon(app.run)
        await probe.wait(lambda: len(dwells()) >= 3)  # the three have stayed 2 s
        people = {d["track"] for d in dwells()}
        for _ in range(4):
            before = len(probe.states())
            camera.read_failures = 1
            await probe.wait(lambda b=before: "reconnecting" in probe.states()[b:])
            await probe.wait(lambda: probe.states()[-1] == "running")
            await probe.processed_more(len(probe.results))
        # Each glitch made the count unknown, and it came back ...
        unknown = [c for c in probe.counts() if c.count is None]
        assert len(unknown) >= 4 and probe.counts()[-1].count is not None
        # ... but nobody's visit started again: still one dwell each, the same ids.
        assert len(dwells()) == len(people) >= 3, dwells()
        assert {t.id for t in probe.results[-1].people} == people
        zone = probe.results[-1].zones["all"]
        assert zone.people == len(people) and zone.dwelling == len(people)
        app.request_stop()


async def test_a_camera_frame_over_the_pixel_limit_is_left_out_and_said() -> None:
    """A stream that sends a huge frame now and then: that frame is not used (nor resized,
    which would cost its size again), it is said, and the camera goes on without a
    reconnect."""
    import numpy as np

    frames = vtest_frames(5)
    camera = VtestCamera([*frames, np.full((1500, 1000, 3), 90, np.uint8)])
    camera.max_pixels = 1_000_000
    app, probe = watched_app(camera, detect_fps=10.0)

    def said() -> list[str]:
        return [e.to_dict()["message"] for e in probe.events if e.type == "error"]

    async with anyio.create_task_group() as tg:
        tg.start_soon(app.run)
        await probe.wait(lambda: app.source_runner.stats.skipped_unreadable >= 12)
        await probe.processed_more(len(probe.results))
        app.request_stop()
    first, tenth = said()  # at 1 and 10, not at every frame
    assert first.startswith("skipped (1 so far): fake vtest camera: frame ")
    assert first.endswith(
        " is 1000x1500, 1.5 megapixels, over the limit of 1 (--max-image-pixels): not used"
    )
    assert tenth.startswith("skipped (10 so far): ")
    assert probe.states().count("reconnecting") == 0
    assert all(p.frame.shape[:2] == (576, 768) for p in probe.results)
