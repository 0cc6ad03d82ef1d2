"""Events the device side adds to a session's stream (beside live.events)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from live.events import Event

if TYPE_CHECKING:
    from device.feeds.runner import StateChange


@dataclass(frozen=True, kw_only=True)
class SourceStateEvent(Event):
    type: ClassVar[str] = "source_state"
    source: str
    state: str
    reason: str = ""
    attempt: int = 0

    @classmethod
    def of(cls, source: str, change: StateChange) -> SourceStateEvent:
        return cls(
            source=source, state=change.state.value, reason=change.reason, attempt=change.attempt
        )


@dataclass(frozen=True, kw_only=True)
class CountChanged(Event):
    """The device's smoothed people count changed (``t_media``: the frame's time in its source).

    ``count`` is null when the count became unknown (``reason`` says why).
    """

    type: ClassVar[str] = "count"
    count: int | None
    previous: int | None
    raw: int | None = None
    t_media: float | None = None
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class CaptureStatsEvent(Event):
    """Capture counters, reported at the end of a run (and on request)."""

    type: ClassVar[str] = "capture_stats"
    frames_read: int
    frames_sampled: int
    frames_detected: int
    dropped: dict[str, int]
    detect_ms_mean: float
