"""Lines and zones edited while the device runs (``GET``/``PUT /api/scene``, the page).

An edit is the whole scene as it should be: every line (two points) and zone (points,
and a dwell time or none for ``--dwell``), each naming the one it ``was`` when renamed.
It is checked as the command line's ``--line``/``--zone`` are (the same one-line
errors), written back to the configuration file the device was started with (or
offered as TOML when there is none, or it cannot be written), then applied at the
next frame: a renamed line keeps its totals, a moved one starts again at 0 and says
so, a ``scene`` event records it in every log, and each output (page, MQTT, snapshots,
console) takes the new scene from that event.

Edits are applied one at a time, in order; one made against an older revision than
the device's (another operator's edit came first) is refused (409), never merged
silently.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio

from device.capture import CaptureLoop
from device.config import Config
from device.config.scene import LineSpec, ZoneSpec, parse_lines, parse_zones
from device.config.scene_file import DIGITS, scene_toml, write_scene
from device.config.values import SCENE_DETECT_FPS
from device.events import SceneChanged
from device.perception import Perception
from device.scene import Scene, SceneEdit, SceneSpec
from live.events import Event

log = logging.getLogger("lookout.scene")

MAX_ITEMS = 32  # lines, and zones: each is MQTT topics, sensors and a row on the page
MAX_ZONE_POINTS = 64
Reply = tuple[int, dict[str, Any]]


class EditError(ValueError):
    """An edit that cannot be applied: one line, and the HTTP status it is answered with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def _items(body: Mapping[str, Any], key: str, kind: str) -> tuple[dict[str, Any], dict[str, str]]:
    """``body[key]`` as the table ``parse_lines``/``parse_zones`` read, and the renames
    (new name -> the name it was)."""
    value = body.get(key, {})
    if not isinstance(value, Mapping):
        raise EditError(f"{key} must be an object of {kind}s by name, not {type(value).__name__}")
    if len(value) > MAX_ITEMS:
        raise EditError(f"at most {MAX_ITEMS} {kind}s, not {len(value)}")
    table: dict[str, Any] = {}
    was: dict[str, str] = {}
    for name, item in value.items():
        if not isinstance(item, Mapping):
            raise EditError(f"{kind} {name}: must be an object with points")
        item = dict(item)
        before = item.pop("was", None)
        if before is not None:
            if not isinstance(before, str):
                raise EditError(f"{kind} {name}: was must be the name it had (a string)")
            was[name] = before
        points = item.get("points")
        if kind == "zone" and isinstance(points, list) and len(points) > MAX_ZONE_POINTS:
            raise EditError(f"zone {name}: at most {MAX_ZONE_POINTS} points")
        item["points"] = _rounded(points)
        table[name] = item
    return table, was


def _rounded(points: Any) -> Any:
    """Points as the configuration file keeps them (what runs is what is saved)."""
    if not isinstance(points, list):
        return points
    return [
        [round(v, DIGITS) if isinstance(v, float) else v for v in p] if isinstance(p, list) else p
        for p in points
    ]


def _points(points: tuple[tuple[float, float], ...]) -> list[list[float]]:
    return [[x, y] for x, y in points]


class SceneEditor:
    """The running device's lines and zones, and their edits."""

    def __init__(
        self,
        config: Config,
        perception: Perception,
        publish: Callable[[Event], None],
        *,
        capture: CaptureLoop | None = None,
        sample_fps: float | None = None,
    ) -> None:
        self.config = config
        self.file: Path | None = config.file
        self.lines: dict[str, LineSpec] = dict(config.scene.lines)
        self.zones: dict[str, ZoneSpec] = dict(config.scene.zones)
        self.revision = 0
        self._perception = perception
        self._publish = publish
        self._capture = capture
        self._sample_fps = sample_fps
        self._lock = anyio.Lock()
        flags = [f for f in ("lines", "zones") if (config.given(f) or "").startswith("--")]
        self._flags_note = (
            "the --line/--zone flags this device was started with still apply at its next "
            "start (they add to the file's, or replace them by name)"
            if flags
            else ""
        )

    # ------------------------------------------------------------------ reading

    def current(self) -> dict[str, Any]:
        """The scene as the page edits it (``GET /api/scene``)."""
        return {
            "revision": self.revision,
            "lines": {name: {"points": _points(s.points)} for name, s in self.lines.items()},
            "zones": {
                name: {"points": _points(s.points), "dwell": s.dwell}
                for name, s in self.zones.items()
            },
            "dwell": self.config.scene.dwell,
            "file": str(self.file) if self.file is not None else None,
            "limits": {"items": MAX_ITEMS, "zone_points": MAX_ZONE_POINTS},
        }

    # ------------------------------------------------------------------ editing

    async def edit(self, body: Mapping[str, Any]) -> Reply:
        """Apply ``body`` (``PUT /api/scene``): (HTTP status, the answer)."""
        async with self._lock:
            try:
                return await self._edit(body)
            except EditError as exc:
                return exc.status, {"error": str(exc)}

    async def _edit(self, body: Mapping[str, Any]) -> Reply:
        unknown = set(body) - {"revision", "lines", "zones"}
        if unknown:
            raise EditError(f"unknown field {sorted(unknown)[0]!r} (give lines, zones, revision)")
        revision = body.get("revision")
        if revision is not None and revision != self.revision:
            raise EditError(
                f"the scene was changed meanwhile (revision {self.revision}, not {revision}): "
                "reload it and edit again",
                409,
            )
        line_table, lines_were = _items(body, "lines", "line")
        zone_table, zones_were = _items(body, "zones", "zone")
        try:
            lines = parse_lines(line_table)
        except ValueError as exc:
            raise EditError(f"line {exc}") from None
        try:
            zones = parse_zones(zone_table)
        except ValueError as exc:
            raise EditError(f"zone {exc}") from None
        edits = self._perception_sees(lines, zones, lines_were, zones_were, dry=True)
        toml = scene_toml(lines, zones)
        if not edits:
            return 200, self._answer([], "", "nothing changed", toml)
        saved, not_saved = await self._save(lines, zones)
        edits = self._perception_sees(lines, zones, lines_were, zones_were, dry=False)
        self.lines, self.zones = lines, zones
        self.revision += 1
        changes = [
            {"kind": e.kind, "name": e.name, "how": e.how, "was": e.was, "said": e.said()}
            for e in edits
        ]
        self._publish(
            SceneChanged(
                lines={n: _points(s.points) for n, s in lines.items()},
                zones={
                    n: {"points": _points(s.points), "dwell": self._dwell(s)}
                    for n, s in zones.items()
                },
                changes=changes,
                saved=saved,
                not_saved=not_saved,
                revision=self.revision,
            )
        )
        self._keep_up(lines, zones)
        return 200, self._answer(changes, saved, not_saved, toml)

    def _dwell(self, zone: ZoneSpec) -> float:
        return zone.dwell if zone.dwell is not None else self.config.scene.dwell

    def _spec(self, lines: Mapping[str, LineSpec], zones: Mapping[str, ZoneSpec]) -> SceneSpec:
        return SceneSpec(
            lines={n: s.points for n, s in lines.items()},
            zones={n: (s.points, self._dwell(s)) for n, s in zones.items()},
            anchor=self.config.scene.anchor,
        )

    def _perception_sees(
        self,
        lines: Mapping[str, LineSpec],
        zones: Mapping[str, ZoneSpec],
        lines_were: Mapping[str, str],
        zones_were: Mapping[str, str],
        *,
        dry: bool,
    ) -> list[SceneEdit]:
        """What the edit changes (``dry``: worked out on a throw-away scene of the same
        geometry, nothing applied)."""
        scene = self._perception.scene
        if dry:
            scene = Scene(scene.spec)
        return scene.replace(self._spec(lines, zones), lines_were=lines_were, zones_were=zones_were)

    async def _save(
        self, lines: Mapping[str, LineSpec], zones: Mapping[str, ZoneSpec]
    ) -> tuple[str, str]:
        """Where the scene was written ("" and why not)."""
        if self.file is None:
            return "", "this device was started without a configuration file (--config FILE)"
        try:
            await anyio.to_thread.run_sync(write_scene, self.file, lines, zones)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            if exc.errno in (28, 122):
                reason = "the disk is full"
            return "", f"cannot write {self.file}: {reason}"
        except ValueError as exc:
            return "", f"cannot write {self.file}: {exc}"
        return str(self.file), ""

    def _keep_up(self, lines: Mapping[str, LineSpec], zones: Mapping[str, ZoneSpec]) -> None:
        """A first line or zone on a device counting at the rate for a count alone: detect
        at the scene's rate (people must be seen often enough to be followed over a line),
        unless the rate was set."""
        if self.config.perception.detect_fps is not None or not (lines or zones):
            return
        if self._perception.interval <= 1.0 / SCENE_DETECT_FPS + 1e-9:
            return
        self._perception.set_rate(SCENE_DETECT_FPS)
        if self._capture is not None:
            self._capture.set_sample_fps(max(SCENE_DETECT_FPS, self._sample_fps or 0.0))

    def _answer(
        self, changes: list[dict[str, str]], saved: str, not_saved: str, toml: str
    ) -> dict[str, Any]:
        answer: dict[str, Any] = {
            "revision": self.revision,
            "changes": changes,
            "saved": saved,
            "toml": toml,
        }
        if not_saved:
            answer["not_saved"] = not_saved
        if saved and self._flags_note:
            answer["note"] = self._flags_note
        return answer


__all__ = ["EditError", "SceneEditor"]
