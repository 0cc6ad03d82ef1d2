"""The device's event bus: one place every output subscribes to, handed to the app at construction.

Two channels: ``Event``s (counts, source and model states, tool calls,
emissions, model text, errors) for the console, the logs and MQTT, and the
history the page draws; and what perception publishes (``Perceived``: a
``Percept`` per frame it looked at, a ``CountUnknown`` when the count stops
holding), the one way a count reaches those that keep a camera's current state:
the page and the metrics, the snapshots, and the session's feed to the tools. A
count change leaves perception once, through here, whatever the number of
outputs. A subscriber that fails is logged (once per subscriber and kind of
error) and never stops the others.

At the end, ``close`` closes first the sinks that still publish as they close (the
snapshots: the pictures written in the run's last second), while the others (the
logs among them) still take events, then the rest in the order they subscribed.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Protocol

from device.vision.percept import Perceived
from live.events import Event
from live.util.clock import Clock

log = logging.getLogger("lookout.bus")


class EventSink(Protocol):
    def write(self, event: Event) -> None: ...

    def close(self) -> None: ...


PerceptSink = Callable[[Perceived], None]


class EventBus:
    def __init__(self, clock: Clock, *, epoch: float | None = None) -> None:
        self.clock = clock
        # Events carry ``t``: seconds since this epoch (the session uses the same one).
        self.epoch = clock.now() if epoch is None else epoch
        self._sinks: list[EventSink] = []
        self._close_first: list[EventSink] = []
        self._percept_sinks: list[PerceptSink] = []
        self._failed: set[tuple[int, str]] = set()
        self.published = 0

    def subscribe(self, sink: EventSink, *, closes_first: bool = False) -> None:
        """``closes_first``: the sink publishes as it closes; it is closed before the others."""
        self._sinks.append(sink)
        if closes_first:
            self._close_first.append(sink)

    def on_percept(self, sink: PerceptSink) -> None:
        self._percept_sinks.append(sink)

    def elapsed(self) -> float:
        return self.clock.now() - self.epoch

    def publish(self, event: Event) -> None:
        if event.t == 0.0:
            event = dataclasses.replace(event, t=self.elapsed())
        self.published += 1
        for sink in self._sinks:
            try:
                sink.write(event)
            except Exception as exc:
                self._report(sink, exc)

    def percept(self, percept: Perceived) -> None:
        for sink in self._percept_sinks:
            try:
                sink(percept)
            except Exception as exc:
                self._report(sink, exc)

    def _report(self, sink: object, exc: Exception) -> None:
        key = (id(sink), type(exc).__name__)
        if key in self._failed:
            return
        self._failed.add(key)
        name = getattr(sink, "__qualname__", type(sink).__name__)
        log.error(
            "output %s failed (further %s errors of it are not logged): %s",
            name,
            type(exc).__name__,
            exc,
            exc_info=exc,
        )

    def close(self) -> None:
        last = [sink for sink in self._sinks if sink not in self._close_first]
        for sink in [*self._close_first, *last]:
            try:
                sink.close()
            except Exception as exc:
                self._report(sink, exc)


__all__ = ["EventBus", "EventSink", "PerceptSink"]
