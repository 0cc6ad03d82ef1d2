"""One loop for the streaming tools that watch perception: say a value when it changes.

``count_people``, ``watch_line`` and ``watch_zone`` differ only in what they
read from a percept and how they say it; the loop is this one: say the current
value at once (the device already knows it), then each change; when perception
cannot count (a ``CountUnknown``), say so once with its reason, and when it
counts again say the value afresh. What the runtime bounds (lifetime,
emissions, its minimum interval on the session clock, the session budget)
stays the runtime's; ``min_interval_s`` here is of *media* time, for a value
whose changes can come faster than the scene is worth reporting (crossings).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import anyio

from device.vision.percept import CountUnknown, CurrentPercept, Percept
from live.input_stream import InputStream

V = TypeVar("V")
Payload = dict[str, Any]


def _differs(last: Any, value: Any) -> bool:
    return bool(last != value)


@dataclass
class Watch(Generic[V]):
    """What one call watches in the percepts, and how it says it.

    ``read`` gives the value in a percept (None: this percept says nothing
    about it); ``say(value, last)`` the emission for a value, ``last`` being
    the one said before (None after an outage: a fresh start); ``changed(last,
    value)`` whether a value is worth saying; ``unknown(reason, last)`` what
    to say when perception stops counting (None: nothing, as when nothing was
    said yet); ``back`` is added to the first emission after it.

    ``alarm_after``: with it, unusable frames (``Percept.error``) are not
    read, and that many in a row are said once, by ``alarm(failures, error,
    last)``; without it they are read like any other (their lines and zones
    stand as they were).

    ``gone(percept)``: what to say, once, when the watched thing is no longer in the
    scene (a line or zone removed or renamed on the status page); the call then ends.
    """

    read: Callable[[Percept], V | None]
    say: Callable[[V, V | None], Payload]
    unknown: Callable[[str, V | None], Payload | None]
    changed: Callable[[V, V], bool] = _differs
    back: Mapping[str, Any] = field(default_factory=dict)
    min_interval_s: float = 0.0
    alarm_after: int | None = None
    alarm: Callable[[int, str, V | None], Payload] | None = None
    gone: Callable[[Percept], Payload | None] | None = None


async def watch_changes(
    stream: InputStream[Percept | CountUnknown],
    current: CurrentPercept,
    watch: Watch[V],
) -> AsyncIterator[Payload]:
    """The emissions of one watching call, until its input stream ends (its stream holds
    its own camera's percepts alone: ``tools/cameras.py:Cameras.input_filter``)."""
    last: V | None = None
    said_at: float | None = None  # media time of the last change said (the bound's start)
    counting = True
    failures = 0
    alarmed = False
    now = current()
    if now is not None and (watch.alarm_after is None or now.error is None):
        first = watch.read(now)
        if first is not None:
            # The consumer needs a starting point, and the device already knows it.
            last = first
            yield watch.say(first, None)
    while True:
        try:
            request = await stream.newest()
        except anyio.EndOfStream:
            return
        percept = request.percept
        if isinstance(percept, CountUnknown):
            if counting:
                counting = False
                said = watch.unknown(percept.reason, last)
                last = None
                if said is not None:
                    yield said
            continue
        if percept is None:
            continue  # a frame perception did not look at (off its rate)
        if watch.alarm_after is not None and percept.error is not None:
            failures += 1
            if failures >= watch.alarm_after and not alarmed and watch.alarm is not None:
                alarmed = True
                yield watch.alarm(failures, percept.error, last)
            continue
        failures, alarmed = 0, False
        value = watch.read(percept)
        if value is None:
            ended = watch.gone(percept) if watch.gone is not None else None
            if ended is not None:
                yield ended
                return
            continue
        t = percept.t_media
        if not counting:
            counting = True
            last, said_at = value, t
            yield watch.say(value, None) | dict(watch.back)
            continue
        if last is not None and not watch.changed(last, value):
            continue
        if last is not None and said_at is not None and 0 <= t - said_at < watch.min_interval_s:
            continue  # the bound: a later percept says the newest value
        previous, last, said_at = last, value, t
        yield watch.say(value, previous)


__all__ = ["Watch", "watch_changes"]
