"""A scene edited on the page, told to the model: ``SceneNews``.

The model watches lines and zones by name (``watch_line``, ``watch_zone``); a line drawn
on the status page while the device runs is one it has never heard of, and a removed
one ends its watch by itself (the watch says it is gone). So each edit (a ``scene``
event) reaches the session as context, without asking for a turn: which lines and zones
the camera has now, and which are new. The offline model starts a watch for each new
one (``models/local/model.py``), as it did at start for the configured ones; Gemini
reads the same sentence. The news waits for the camera's first percept that has the new
lines and zones (the next frame): a watch asked for before perception counts on them
would be refused as naming a line the camera does not have.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Protocol

from device.events import SceneChanged
from device.vision.percept import Perceived, Percept
from live.events import Event

PREFIX = "Scene changed: "  # what the offline model recognises (``SCENE_NEWS``)


class Session(Protocol):
    """Where the news goes: the session's request queue."""

    @property
    def closed(self) -> bool: ...

    def send_content(self, content: str, *, turn_complete: bool = ...) -> None: ...


class SceneNews:
    """An event sink: each camera's scene edit, as context for the model."""

    def __init__(
        self,
        queue: Session,
        scenes: Mapping[str, tuple[Sequence[str], Sequence[str]]],
        *,
        named: bool,
    ) -> None:
        """``scenes``: each camera's lines and zones at start; ``named``: the device names
        its cameras (the news then says whose)."""
        self.queue = queue
        self.named = named
        self._known = {
            camera: (set(lines), set(zones)) for camera, (lines, zones) in scenes.items()
        }
        self._pending: dict[str, tuple[set[str], set[str], str]] = {}  # camera -> news

    def write(self, event: Event) -> None:
        if not isinstance(event, SceneChanged) or self.queue.closed:
            return
        lines, zones = set(event.lines), set(event.zones)
        was_lines, was_zones = self._known.get(event.camera, (set(), set()))
        self._known[event.camera] = (lines, zones)
        news = {
            **({"camera": event.camera} if self.named else {}),
            "lines": sorted(lines),
            "zones": sorted(zones),
            "new": {"lines": sorted(lines - was_lines), "zones": sorted(zones - was_zones)},
            "removed": {"lines": sorted(was_lines - lines), "zones": sorted(was_zones - zones)},
        }
        self._pending[event.camera] = (lines, zones, PREFIX + json.dumps(news))

    def on_percept(self, percept: Perceived) -> None:
        """Bus percept subscriber: a camera's news goes once its percepts count the edit."""
        if not isinstance(percept, Percept) or percept.camera not in self._pending:
            return
        lines, zones, news = self._pending[percept.camera]
        if lines <= set(percept.lines) and zones <= set(percept.zones):
            del self._pending[percept.camera]
            if not self.queue.closed:
                self.queue.send_content(news, turn_complete=False)

    def close(self) -> None:
        """Bus subscriber: nothing to release."""


__all__ = ["PREFIX", "SceneNews"]
