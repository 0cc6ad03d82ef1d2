"""One detector for every camera, in turns (device/vision/shared_detector.py): each waiting camera
is served once before any twice, moving cameras before a still one's heartbeat, and a still
one never starves."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from device.vision.shared_detector import SharedDetector
from live.util.clock import FakeClock

pytestmark = pytest.mark.anyio


class Nothing:
    def detect(self, image: object) -> object:
        return None


async def served_in_order(
    shared: SharedDetector, asks: list[tuple[str, bool]], rounds: int
) -> list[str]:
    """Cameras asking again as soon as they are served, ``rounds`` times each, while one
    holder keeps the detector busy until they have all asked: the order of the turns."""
    order: list[str] = []

    async def camera(name: str, urgent: bool) -> None:
        for _ in range(rounds):
            async with shared.turn(urgent=urgent):
                order.append(name)
                await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as group, shared.turn():
        for name, urgent in asks:
            group.start_soon(camera, name, urgent)
        await anyio.wait_all_tasks_blocked()
    return order


async def test_waiting_cameras_are_served_in_turn_none_twice_before_the_others() -> None:
    shared = SharedDetector(Nothing())
    order = await served_in_order(shared, [("door", True), ("till", True), ("hall", True)], 3)
    assert order == ["door", "till", "hall"] * 3


async def test_a_still_cameras_heartbeat_waits_behind_moving_ones() -> None:
    clock = FakeClock()
    shared = SharedDetector(Nothing(), routine_wait_s=2.0, monotonic=clock.now)
    order = await served_in_order(shared, [("still", False), ("door", True), ("till", True)], 1)
    assert order == ["door", "till", "still"]


async def test_a_heartbeat_that_waited_long_enough_goes_first() -> None:
    clock = FakeClock()
    shared = SharedDetector(Nothing(), routine_wait_s=2.0, monotonic=clock.now)
    order: list[str] = []

    async def ask(name: str, urgent: bool) -> None:
        async with shared.turn(urgent=urgent):
            order.append(name)

    async with anyio.create_task_group() as group, shared.turn():
        group.start_soon(ask, "still", False)
        await anyio.wait_all_tasks_blocked()
        clock.advance(2.5)  # the busy cameras held the detector for 2.5 s
        group.start_soon(ask, "door", True)
        await anyio.wait_all_tasks_blocked()
    assert order == ["still", "door"]


async def test_a_camera_that_stops_waiting_gives_its_turn_away() -> None:
    shared = SharedDetector(Nothing())
    order: list[str] = []

    async def ask(name: str) -> None:
        async with shared.turn():
            order.append(name)

    async with shared.turn():
        async with anyio.create_task_group() as waiting:
            waiting.start_soon(ask, "gone")
            await anyio.wait_all_tasks_blocked()
            assert shared.waiting == 1
            waiting.cancel_scope.cancel()
        assert shared.waiting == 0
    with anyio.fail_after(1):
        await ask("door")  # the detector is free at once: nobody holds a turn for "gone"
    assert order == ["door"]
