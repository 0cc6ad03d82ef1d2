"""A step of the system clock while the device runs is said, and logged for what is
stored as wall time (NTP on a Raspberry Pi without a real-time clock, which boots days
behind and is set right a minute later)."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import anyio
import pytest

from device.app.wiring import build_app
from device.config import build
from live.events import Event
from live.util.walltime import StepWatch, wall_time
from tests.cameras import VtestCamera, vtest_frames

pytestmark = pytest.mark.anyio

BEHIND = 3 * 86400.0


class SteppingWall:
    """The system clock, three days behind until NTP sets it."""

    def __init__(self) -> None:
        self.synced = False

    def __call__(self) -> float:
        return time.time() - (0.0 if self.synced else BEHIND)


def test_a_step_watch_tells_steps_not_slews() -> None:
    wall, mono = [1000.0], [5.0]
    watch = StepWatch(wall=lambda: wall[0], monotonic=lambda: mono[0])
    wall[0], mono[0] = 1001.0, 6.0
    assert watch.check() is None  # both moved on together
    wall[0] += 0.5  # a slew or a late read: not a step
    assert watch.check() is None
    wall[0] += BEHIND
    assert watch.check() == pytest.approx(BEHIND + 0.5)
    assert watch.check() is None  # said once
    wall[0] -= 60
    assert watch.check() == pytest.approx(-60)


def test_wall_time_takes_the_newest_clock_for_the_whole_run() -> None:
    run = {"t": 0.5, "started_wall": 1000.0}
    assert wall_time(10.5, run) == 1010.0
    steps = [{"t": 60.0, "step_s": BEHIND}]
    assert wall_time(10.5, run, steps) == 1010.0 + BEHIND  # before the step, too
    assert wall_time(100.5, run, steps) == 1100.0 + BEHIND
    assert wall_time(1.0, {"t": 0.0}) is None  # a run without a start time


@pytest.mark.slow
async def test_the_device_says_a_clock_step_and_logs_it(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    config = build(
        {"model": "local", "http": "", "detect_fps": 5.0, "events": events},
        environ={},
        system_config=tmp_path / "none.toml",
    )
    wall = SteppingWall()
    out = io.StringIO()
    camera = VtestCamera(vtest_frames(20))
    app = build_app(
        config, operations=False, out=out, source=camera, wall_steps=StepWatch(wall=wall)
    )
    counted, stepped = anyio.Event(), anyio.Event()

    class Watch:
        def write(self, event: Event) -> None:
            if event.type == "count":
                counted.set()
            elif event.type == "clock_step":
                stepped.set()

        def close(self) -> None:
            pass

    assert app.bus is not None
    app.bus.subscribe(Watch())
    async with anyio.create_task_group() as tg:
        tg.start_soon(app.run)
        with anyio.fail_after(20):
            await counted.wait()
            wall.synced = True  # NTP sets the clock
            await stepped.wait()
        app.request_stop()
    logged = [json.loads(line) for line in events.read_text().splitlines()]
    (run,) = [e for e in logged if e["type"] == "run"]
    (step,) = [e for e in logged if e["type"] == "clock_step"]
    assert run["started_wall"] == pytest.approx(time.time() - BEHIND, abs=60)
    assert step["step_s"] == pytest.approx(BEHIND, abs=1.0)
    # On the console: said once, in words, with the time now.
    (line,) = [s for s in out.getvalue().splitlines() if "clock stepped" in s]
    assert "stepped +3 d 0 h 0 min" in line and time.strftime("%Y-%m-%d") in line
    # What is stored as wall time follows it: the last event is now, not three days ago.
    assert wall_time(logged[-1]["t"], run, [step]) == pytest.approx(time.time(), abs=60)
