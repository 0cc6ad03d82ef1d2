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
silently. A body of the wrong shape or types is the client's mistake (400, naming the
field: ``scene/body.py``). What is written into the file is what the edit changed (by
name), over the file as it is then: another device started with the same file keeps
its own edits there (``device/config/scene/file.py``). Edits may add at most
``scene_allowance.PER_HOUR_BYTES`` an hour to the event logs (429 past it).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio

from device.app.scene.allowance import Allowance
from device.app.scene.body import MAX_ITEMS, MAX_ZONE_POINTS, EditError, read_edit
from device.capture import FrameDriver
from device.config import Config
from device.config.scene.file import Saved, scene_toml, write_scene
from device.config.scene.specs import LineSpec, ZoneSpec
from device.config.values import SCENE_DETECT_FPS
from device.events import SceneChanged
from device.vision.perception import Perception
from device.vision.scene import Scene, SceneEdit, SceneSpec
from live.events import Event

Reply = tuple[int, dict[str, Any]]
Known = tuple[Mapping[str, LineSpec], Mapping[str, ZoneSpec]]


def _points(points: tuple[tuple[float, float], ...]) -> list[list[float]]:
    return [[x, y] for x, y in points]


def _said(edits: list[SceneEdit]) -> list[dict[str, str]]:
    return [
        {"kind": e.kind, "name": e.name, "how": e.how, "was": e.was, "said": e.said()}
        for e in edits
    ]


class SceneEditor:
    """The running device's lines and zones, and their edits."""

    def __init__(
        self,
        config: Config,
        perception: Perception,
        publish: Callable[[Event], None],
        *,
        capture: FrameDriver | None = None,
        sample_fps: float | None = None,
        allowance: Allowance | None = None,
    ) -> None:
        self.config = config
        self.camera = config.camera_name
        # A named camera's scene is written into its own table of the file (None: the
        # device's own, a device that names no camera).
        self._table = self.camera if config.named_cameras else None
        self.file: Path | None = config.file
        self.lines: dict[str, LineSpec] = dict(config.scene.lines)
        self.zones: dict[str, ZoneSpec] = dict(config.scene.zones)
        self.revision = 0
        self._perception = perception
        self._publish = publish
        self._capture = capture
        self._sample_fps = sample_fps
        self._lock = anyio.Lock()
        self.allowance = allowance or Allowance()
        flags = [f for f in ("lines", "zones") if (config.given(f) or "").startswith("--")]
        self._flags_note = (
            "the --line/--zone flags this device was started with still apply at its next "
            "start (they add to the file's, or replace them by name)"
            if flags
            else ""
        )
        # The file's scene as this device last read or wrote it: what changed in the file
        # since was changed by someone else (another device started with the same file).
        self._known: Known | None = None if flags else (self.lines, self.zones)
        # The scene as last saved (or started with): an edit writes what changed since,
        # so one that could not be saved (a read-only file) is saved with the next.
        self._saved: Known = (self.lines, self.zones)

    # ------------------------------------------------------------------ reading

    def current(self) -> dict[str, Any]:
        """The scene as the page edits it (``GET /api/scene``)."""
        return {
            "camera": self.camera,
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
        edit = read_edit(body)
        if edit.revision is not None and edit.revision != self.revision:
            raise EditError(
                f"the scene was changed meanwhile (revision {self.revision}, not "
                f"{edit.revision}): reload it and edit again",
                409,
            )
        lines, zones = edit.lines, edit.zones
        edits = self._perception_sees(lines, zones, edit.lines_were, edit.zones_were, dry=True)
        toml = scene_toml(lines, zones, self._table)
        if not edits:
            return 200, self._answer([], "", "nothing changed", toml)
        logged = self._logged_size(lines, zones, edits)
        wait_s = self.allowance.wait_s(logged)
        if wait_s > 0:
            raise EditError(
                f"too many scene edits: each is logged whole ({logged // 1024 + 1} KiB now), and "
                f"edits may log {self.allowance.per_hour // 1024 // 1024} MiB an hour: try again "
                f"in {min(wait_s, 3600):.0f} s",
                429,
            )
        self.allowance.spend(logged)
        saved, not_saved, note = await self._save(lines, zones)
        edits = self._perception_sees(lines, zones, edit.lines_were, edit.zones_were, dry=False)
        self.lines, self.zones = lines, zones
        self.revision += 1
        changes = _said(edits)
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
                camera=self.camera,
            )
        )
        self._keep_up(lines, zones)
        return 200, self._answer(changes, saved, not_saved, toml, note)

    def _logged_size(
        self, lines: Mapping[str, LineSpec], zones: Mapping[str, ZoneSpec], edits: list[SceneEdit]
    ) -> int:
        """About what the edit's ``scene`` event will take in a log."""
        scene = (
            {n: _points(s.points) for n, s in lines.items()},
            {n: _points(s.points) for n, s in zones.items()},
        )
        return len(json.dumps([scene, _said(edits)])) + 512  # its other fields, and the file

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
    ) -> tuple[str, str, str]:
        """Where the scene was written ("" and why not), and what else the file holds."""
        file = self.file
        if file is None:
            return "", "this device was started without a configuration file (--config FILE)", ""
        before, known, table = self._saved, self._known, self._table
        try:
            saved: Saved = await anyio.to_thread.run_sync(
                lambda: write_scene(file, lines, zones, before=before, known=known, camera=table)
            )
        except OSError as exc:
            reason = exc.strerror or str(exc)
            if exc.errno in (28, 122):
                reason = "the disk is full"
            return "", f"cannot write {self.file}: {reason}", ""
        except ValueError as exc:
            return "", f"cannot write {self.file}: {exc}", ""
        self._known, self._saved = (saved.lines, saved.zones), (lines, zones)
        note = ""
        if saved.others:
            shown = ", ".join(saved.others[:4]) + (", ..." if len(saved.others) > 4 else "")
            note = (
                f"{self.file} also holds changes made elsewhere since this device read it "
                f"({shown}): kept there, they apply at its next start"
            )
        return str(self.file), "", note

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
        self, changes: list[dict[str, str]], saved: str, not_saved: str, toml: str, note: str = ""
    ) -> dict[str, Any]:
        answer: dict[str, Any] = {
            "revision": self.revision,
            "changes": changes,
            "saved": saved,
            "toml": toml,
        }
        if not_saved:
            answer["not_saved"] = not_saved
        notes = [n for n in (note, self._flags_note if saved else "") if n]
        if notes:
            answer["note"] = "; ".join(notes)
        return answer


__all__ = ["EditError", "SceneEditor"]
