"""Events the device side adds to a session's stream (beside live.events)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from live.events import Event

if TYPE_CHECKING:
    from device.source_runner import StateChange


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
class CaptureStatsEvent(Event):
    """Capture counters, reported at the end of a run (and on request)."""

    type: ClassVar[str] = "capture_stats"
    frames_read: int
    frames_sampled: int
    frames_encoded: int
    dropped: dict[str, int]
    encode_ms_mean: float
