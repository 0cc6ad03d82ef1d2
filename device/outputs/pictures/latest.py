"""The latest pictured events (``--snapshots``): what the status page lists, and how each is said.

The page's list is fed by the ``snapshot`` events, which come once a picture is on disk
(``device/outputs/pictures/snapshots.py``), so each entry links to a file that was written; one
pruned since (the folder's cap) answers 404, and the page shows its text without it.
The report says each picture the same way (``caption``).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from device.events import RunStarted, SnapshotSaved
from live.events import Event

KEEP = 12  # pictures the page lists, newest first
ROUTE = "snapshots"  # the status server's route: GET /snapshots/<file>


def caption(event: Mapping[str, Any]) -> str:
    """What a picture is of, from its ``snapshot`` event (as logged, or as sent)."""
    of = event.get("of")
    name = event.get("name") or ""
    track = event.get("track")
    by = f" by track {track}" if track is not None else ""
    if of == "crossing":
        direction = event.get("direction")
        way = f" ({direction})" if direction else ""
        return f"crossing of line {name}{way}{by}"
    if of == "dwell":
        return f"dwell in zone {name}{by}"
    if of == "count":
        count = event.get("count")
        return "count changed" if count is None else f"count changed to {count}"
    return str(of or "event")


class LatestPictures:
    """The last ``keep`` pictures written, for the page's state."""

    def __init__(self, keep: int = KEEP, *, wall: Callable[[], float] = time.time) -> None:
        self._wall = wall
        self._items: deque[dict[str, Any]] = deque(maxlen=keep)
        # A camera's frame times are its clock's (seconds since boot): no time to show.
        self._recording = False

    def take(self, event: Event) -> bool:
        """A bus event: True when it changed the list (a picture written)."""
        if isinstance(event, RunStarted):
            self._recording = not event.live
        elif isinstance(event, SnapshotSaved):
            self.add(event)
            return True
        return False

    def add(self, event: SnapshotSaved) -> None:
        data = event.to_dict()
        self._items.append(
            {
                "file": event.file,
                "url": f"{ROUTE}/{event.file}",
                "of": event.of,
                "name": event.name,
                "track": event.track,
                "direction": event.direction,
                "count": event.count,
                # Where the frame is in a recording (null for a camera).
                "t_media": round(event.t_media, 2) if self._recording else None,
                # When it was written: within a moment of the event itself (the worker
                # draws and writes it at once), the device's local time as the page says it.
                "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(self._wall())),
                "caption": caption(data),
            }
        )

    def json(self) -> list[dict[str, Any]]:
        """Newest first."""
        return [dict(item) for item in reversed(self._items)]


__all__ = ["KEEP", "ROUTE", "LatestPictures", "caption"]
