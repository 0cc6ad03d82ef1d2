"""Each camera's achieved detection rate, and who falls behind the shared detector, said once
(device/app/detector_load.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from device.app.detector_load import DetectorLoad
from device.vision.perception import PerceptionStats
from live.util.clock import FakeClock

pytestmark = pytest.mark.anyio


@dataclass
class FakeCamera:
    name: str
    detect_fps: float
    known: bool = True
    watched: bool = True
    ended: bool = False
    achieved_fps: float | None = None
    behind: bool = False
    stats: PerceptionStats = field(default_factory=PerceptionStats)

    @property
    def perception(self) -> Any:
        return SimpleNamespace(stats=self.stats, known=self.known, interval=1 / self.detect_fps)

    @property
    def config(self) -> Any:
        return SimpleNamespace(named_cameras=True)


async def test_a_camera_short_of_its_rate_is_said_once_and_again_when_it_keeps_up() -> None:
    clock = FakeClock()
    said: list[str] = []
    door, till = FakeCamera("door", 5), FakeCamera("till", 2)
    load = DetectorLoad([door, till], said.append, clock, window_s=10)  # type: ignore[list-item]
    async with anyio.create_task_group() as group:
        group.start_soon(load.watch)
        await anyio.wait_all_tasks_blocked()
        for window, (door_looks, till_looks) in enumerate([(31, 20), (30, 20), (50, 20)]):
            door.stats.detected += door_looks - 10
            door.stats.gated += 10  # held by the motion gate: looked at all the same
            till.stats.detected += till_looks
            clock.advance(10)
            await anyio.wait_all_tasks_blocked()
            if window == 0:
                assert door.achieved_fps == pytest.approx(3.1) and door.behind
                assert till.achieved_fps == pytest.approx(2.0) and not till.behind
        group.cancel_scope.cancel()
    assert said == [
        "door: the detector keeps up with 3.1 of 5 detections a second (2 cameras share it): "
        "lower --detect-fps, or run lookout doctor for a faster backend",
        "door: the detector keeps up again (5.0 detections a second)",
    ]


async def test_a_camera_not_counting_is_not_measured() -> None:
    clock = FakeClock()
    said: list[str] = []
    porch = FakeCamera("porch", 5, known=False)
    fast = FakeCamera("replay", 5, watched=False)  # a fast replay: slower, never behind
    load = DetectorLoad([porch, fast], said.append, clock, window_s=10)  # type: ignore[list-item]
    async with anyio.create_task_group() as group:
        group.start_soon(load.watch)
        await anyio.wait_all_tasks_blocked()
        clock.advance(30)
        await anyio.wait_all_tasks_blocked()
        group.cancel_scope.cancel()
    assert said == [] and porch.achieved_fps is None and fast.achieved_fps is None
