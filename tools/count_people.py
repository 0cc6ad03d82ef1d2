"""``count_people``: the people count for the model, as changes, from the device's perception.

The device runs the detector and the tracker once per sampled frame
(``device/vision/perception.py``); what it made of each frame (a ``Percept``) rides
beside the frame into the session's fan-out. This streaming tool consumes its
call's input stream of those percepts and yields only *changes*; it runs no
detector of its own, so any number of calls cost next to nothing and every
consumer of a frame sees the same numbers.

Without a region a call reports the device's own count — the number the page,
the metrics and MQTT show. With a region it counts, of the same people, those
whose feet are inside, for that call alone: no second rule of who is there.
``count_people_now`` answers once, from the newest percept.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from device.vision.percept import CountUnknown, CurrentPercept, Percept
from device.vision.regions import count_people_in_region
from live.input_stream import InputStream
from live.tool import ToolArgumentError, ToolContext, coalesce_updates
from live.util.plural import counted
from tools.regions import parse_region
from tools.watch import Watch, watch_changes

TOOL = "count_people"


def _no_percept() -> Percept | None:
    return None


def _no_reason() -> str:
    return "no current count (no frame yet)"


def check_count_args(args: dict[str, Any]) -> None:
    """Refuses a region that is not 3+ points inside 0..1, which its type cannot say.

    min_change's range is declared in the signature instead, where the model sees it.
    """
    parse_region(args.get("region"), tool=TOOL)


def coalesce_counts(older: dict[str, Any], newer: dict[str, Any]) -> dict[str, Any]:
    """Two count changes the model has not heard yet, as one.

    ``previous`` stays what the model last heard, and ``while_away`` says how
    often the count changed meanwhile and how low and high it went.
    """
    if not (isinstance(older.get("people"), int) and isinstance(newer.get("people"), int)):
        return coalesce_updates(older, newer)
    away = older.get("while_away")
    if not isinstance(away, dict) or "changes" not in away:
        away = {"changes": 1, "min": older["people"], "max": older["people"]}
    merged = dict(newer)
    merged["previous"] = older.get("previous")
    merged["while_away"] = {
        "changes": int(away["changes"]) + 1,
        "min": min(int(away["min"]), newer["people"]),
        "max": max(int(away["max"]), newer["people"]),
    }
    return merged


def _count_watch(polygon: np.ndarray | None, min_change: int, failure_alarm: int) -> Watch[int]:
    """One call's view of the count: the device's own, or a region's."""

    def read(percept: Percept) -> int | None:
        if percept.count is None or polygon is None:
            return percept.count
        return count_people_in_region(percept.people, percept.frame.shape, polygon)

    def unknown(reason: str, last: int | None) -> dict[str, Any] | None:
        # Only a consumer that was told a count must hear that it no longer holds.
        return None if last is None else {"people": None, "previous": last, "reason": reason}

    def alarm(failures: int, error: str, last: int | None) -> dict[str, Any]:
        return {
            "status": "error",
            "error": f"{counted(failures, 'frame')} in a row could not be used ({error}); "
            "still trying",
            "people": last,
        }

    return Watch(
        read=read,
        say=lambda value, last: {"people": value, "previous": last},
        unknown=unknown,
        changed=lambda last, value: abs(value - last) >= min_change,
        alarm_after=failure_alarm,
        alarm=alarm,
    )


@dataclass
class CountPeople:
    """The count tools over the device's perception (``current`` gives its newest percept)."""

    current: CurrentPercept = field(default=_no_percept)
    why_unknown: Callable[[], str] = field(default=_no_reason)
    # Consecutive unusable frames before the model is told (once) that input is broken.
    failure_alarm: int = 10

    async def __call__(
        self,
        stream: InputStream[Percept | CountUnknown],
        context: ToolContext,
        min_change: Annotated[
            int,
            Field(
                ge=1, description="report only changes of at least this many people (default 1)."
            ),
        ] = 1,
        region: list[list[float]] | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        """Count the people in view and report whenever the number changes.

        Reports {"people": n, "previous": m} at once (the current count) and then only
        when the count changes; {"people": null, "reason": ...} when the count cannot be
        known (the camera is down), until counting resumes. Keep it running; call
        stop_streaming to end it.

        Args:
            region: optional area to count in, a polygon of [x, y] points normalised to
                0..1 of the image width and height; people whose feet are inside count.
        """
        if min_change < 1:
            raise ToolArgumentError(f"{TOOL}: min_change must be at least 1")
        watch = _count_watch(parse_region(region, tool=TOOL), min_change, self.failure_alarm)
        async for said in watch_changes(stream, self.current, watch):
            yield said

    async def count_people_now(self) -> dict[str, Any]:
        """How many people are in view right now (the device's current count, at once).

        Returns {"people": n, "in_last_frame": raw detections, "frame": index,
        "t": seconds into the source, "source": name}; people is null when the count
        is unknown (no frame yet, or the camera is down).
        """
        percept = self.current()
        if percept is None or percept.count is None:
            return {"people": None, "reason": self.why_unknown()}
        return {
            "people": percept.count,
            "in_last_frame": percept.raw,
            "frame": percept.frame.index,
            "t": round(percept.t_media, 2),
            "source": percept.frame.source,
        }


__all__ = ["TOOL", "CountPeople", "check_count_args", "coalesce_counts"]
