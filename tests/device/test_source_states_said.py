"""What a run says of a camera that stays away: a line per failure run's milestone,
not one per attempt to reopen it (it is tried every couple of seconds)."""

from __future__ import annotations

from typing import Any

from device.app.freshness import CountFreshness
from device.bus import EventBus
from device.feeds.runner import SourceState, StateChange
from live.util.clock import FakeClock
from tests.recorder import Recorder


class Forgetting:
    """Perception as freshness sees it: what it was told to forget."""

    def __init__(self) -> None:
        self.reasons: list[str] = []

    def forget(self, reason: str, *, outage: bool = False) -> bool:
        self.reasons.append(reason)
        return True


class Camera:
    name = "cam"
    is_camera = True


def test_only_said_attempts_reach_the_event_logs_and_the_console() -> None:
    clock = FakeClock()
    bus = EventBus(clock)
    sink = Recorder()
    bus.subscribe(sink)
    perception = Forgetting()
    fresh = CountFreshness(bus, perception, Camera(), clock)  # type: ignore[arg-type]
    fresh.on_source_state(StateChange(SourceState.RUNNING, "64x48 frames"))
    said_at = {1, 2, 10}
    for attempt in range(1, 31):
        reason = f"cannot open cam ({attempt} failures in a row); retry in 2 s"
        fresh.on_source_state(
            StateChange(SourceState.RECONNECTING, reason, attempt, said=attempt in said_at)
        )
    fresh.on_source_state(StateChange(SourceState.RUNNING, "64x48 frames, after 30 failed..."))
    states: list[dict[str, Any]] = [e.to_dict() for e in sink.events]
    assert [(s["state"], s.get("attempt")) for s in states] == [
        ("running", 0),
        ("reconnecting", 1),
        ("reconnecting", 2),
        ("reconnecting", 10),
        ("running", 0),
    ], states
    assert len(perception.reasons) == 3  # unknown said again only with something new
