"""An event sink that keeps what it is given, for tests that read back a run's events."""

from __future__ import annotations

from live.events import Event


class Recorder:
    """Subscribed to the bus (or given as an event log): every event, in order."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def write(self, event: Event) -> None:
        self.events.append(event)

    def close(self) -> None:
        pass


__all__ = ["Recorder"]
