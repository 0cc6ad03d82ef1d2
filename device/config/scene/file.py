"""Lines and zones written back to a configuration file, or as TOML to copy into one.

The status page edits the scene of a running device; the edit must outlive the run.
``write_scene`` changes, by name, the lines and zones of the file the device was
started with, in the file's own layout (``scene/layout.py``), and leaves everything
else as the user wrote it. How, and why:

- under an advisory lock on the file, from its read to its replacement
  (``device/files/whole_file.py:locked``): two devices started with one file (the default
  ``/etc/lookout/lookout.toml`` on a host with two cameras) take turns, and each
  re-reads the file under the lock, so one device's edit never erases the other's. An
  edit is what changed (names added, moved, removed) against what this device ran,
  applied to the file as it is now;
- the file is replaced whole (a temporary of its own beside it, renamed over it), its
  owner, group and mode kept; a link as the file is followed (the link is the admin's,
  the file it points to is rewritten, the link stays); a hard-linked file is refused;
- before it takes the name, the new text is read by the reader the next start uses
  (``layers.load_file`` and the settings' validation, every accepted layout) and must
  give the scene intended: otherwise nothing is replaced, and the edit is answered not
  saved with the reason. A read-only file, or one over ``MAX_EDIT_BYTES``, is not
  written;
- a named camera's scene goes into its own table (``[cameras.door.lines.NAME]``), and
  is read back as that camera's (``Config.camera``). A camera has the device's lines
  (or zones) until it has its own: its first edit of them writes them all into its
  table, and taking the last of them away leaves its table empty rather than gone (an
  empty table: none of the device's).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from device.config.errors import ConfigError
from device.config.layers import apply, load_file, read
from device.config.model import Config
from device.config.scene.layout import DIGITS, camera_root, edited, place, scene_toml
from device.config.scene.specs import LineSpec, ZoneSpec

S = TypeVar("S", LineSpec, ZoneSpec)
Lines = Mapping[str, LineSpec]
Zones = Mapping[str, ZoneSpec]


def file_scene(
    path: Path, origin: Path | None = None, camera: str | None = None
) -> tuple[dict[str, LineSpec], dict[str, ZoneSpec]]:
    """The lines and zones a start with configuration file ``path`` gets from it (the
    reader and checks of ``lookout run --config``): the device's, or camera ``camera``'s
    (the device's where the file does not name it). Raises ``ConfigError``."""
    shown = str(origin or path)
    try:
        config = apply(Config(), read(load_file(path), shown), say_notes=False)
        if camera is not None and camera in config.cameras:
            config = config.camera(camera)
    except ConfigError as exc:
        raise ConfigError(str(exc).replace(str(path), shown)) from None
    return dict(config.scene.lines), dict(config.scene.zones)


@dataclass(frozen=True)
class SceneChange:
    """What an edit changes, by name: a spec set (added, moved, renamed to) or None
    (removed)."""

    lines: dict[str, LineSpec | None] = field(default_factory=dict)
    zones: dict[str, ZoneSpec | None] = field(default_factory=dict)

    @classmethod
    def between(cls, before: tuple[Lines, Zones], after: tuple[Lines, Zones]) -> SceneChange:
        return cls(_diff(before[0], after[0]), _diff(before[1], after[1]))

    def applied(
        self, lines: Lines, zones: Zones
    ) -> tuple[dict[str, LineSpec], dict[str, ZoneSpec]]:
        """``lines`` and ``zones`` with this change made (as the file keeps them)."""
        return _apply(lines, self.lines), _apply(zones, self.zones)

    def touches(self, kind: str, name: str) -> bool:
        return name in (self.lines if kind == "lines" else self.zones)


def _diff(before: Mapping[str, S], after: Mapping[str, S]) -> dict[str, S | None]:
    out: dict[str, S | None] = {n: None for n in before if n not in after}
    out.update({n: s for n, s in after.items() if before.get(n) != s})
    return out


def _apply(current: Mapping[str, S], change: Mapping[str, S | None]) -> dict[str, S]:
    out = {n: s for n, s in current.items() if n not in change or change[n] is not None}
    out.update({n: _rounded(s) for n, s in change.items() if s is not None})
    return out


def _rounded(spec: S) -> S:
    points = tuple((round(x, DIGITS), round(y, DIGITS)) for x, y in spec.points)
    return spec.model_copy(update={"points": points})


def with_scene(text: str, lines: Lines, zones: Zones) -> str:
    """``text`` (a configuration file) with its lines and zones replaced by these."""
    return edited(text, lines, zones, whole=True)


@dataclass(frozen=True)
class Saved:
    """A scene written: the file written (a link's target), the scene it now holds, and
    the names in it that someone else changed since ``known`` (kept as they are)."""

    path: Path
    lines: dict[str, LineSpec]
    zones: dict[str, ZoneSpec]
    others: tuple[str, ...] = ()


def write_scene(
    path: Path,
    lines: Lines,
    zones: Zones,
    *,
    before: tuple[Lines, Zones] | None = None,
    known: tuple[Lines, Zones] | None = None,
    camera: str | None = None,
) -> Saved:
    """Make configuration file ``path`` hold these lines and zones.

    ``before``: the scene these were edited from; only what changed from it is written,
    over the file as it is now (None: the file's whole scene becomes these). ``known``:
    the file's scene as this device last read or wrote it, to name what others changed.
    ``camera``: they are this named camera's (None: the device's own).
    Raises OSError (unreadable, read-only, locked for too long, an unkept owner, the
    disk full) or ValueError (it is not a valid configuration now, or would not read
    back as intended), with the file as it was.
    """
    # A link as the configuration is the admin's: the file it points to is edited.
    target = Path(os.path.realpath(path))
    # No write bit at all is the owner's "do not change": refused even to root.
    if not os.access(target, os.W_OK) or not target.stat().st_mode & 0o222:
        raise PermissionError(13, "the file is read-only", str(path))
    # In here: the configuration loads nothing outside itself when imported.
    from device.files.whole_file import locked

    with locked(target) as held:
        try:
            text = held.data.decode("utf-8")
            now = file_scene(target, camera=camera)
            device = file_scene(target) if camera is not None else now
        except (UnicodeDecodeError, ConfigError) as exc:
            raise ValueError(f"it does not read as a configuration now ({exc})") from None
        change = SceneChange.between(now if before is None else before, (lines, zones))
        intended = change.applied(*now)
        if camera is None:
            new_text = edited(text, change.lines, change.zones)
        else:
            new_text = _camera_edited(text, camera, change, intended, device)

        def reads_back(written: Path) -> None:
            try:
                got = file_scene(written, origin=target, camera=camera)
            except ConfigError as exc:
                raise ValueError(f"the next start would refuse it ({exc})") from None
            if got != intended:
                raise ValueError("it would not read back as the same lines and zones")

        if new_text == text:  # it holds them already (another device made the same edit)
            reads_back(target)
        else:
            held.replace(new_text.encode("utf-8"), check=reads_back)
    return Saved(target, *intended, others=_others(now, known, change))


def _camera_edited(
    text: str,
    camera: str,
    change: SceneChange,
    intended: tuple[Lines, Zones],
    device: tuple[Lines, Zones],
) -> str:
    """``text`` with ``change`` made in camera ``camera``'s table: a kind it does not
    have of its own yet (it has the device's) is written whole; one left with none,
    where the device has some, is kept as an empty table."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return edited(text, change.lines, change.zones, camera=camera)  # which says why
    root = camera_root(doc, camera)
    lines: dict[str, LineSpec | None] = dict(change.lines)
    zones: dict[str, ZoneSpec | None] = dict(change.zones)
    if lines and place(doc, "lines", root) is None:
        lines = {name: spec for name, spec in intended[0].items()}
    if zones and place(doc, "zones", root) is None:
        zones = {name: spec for name, spec in intended[1].items()}
    keep = tuple(
        kind
        for kind, touched, now, inherited in (
            ("lines", change.lines, intended[0], device[0]),
            ("zones", change.zones, intended[1], device[1]),
        )
        if touched and not now and inherited
    )
    return edited(text, lines, zones, camera=camera, keep_empty=keep)


def _others(
    now: tuple[Lines, Zones], known: tuple[Lines, Zones] | None, change: SceneChange
) -> tuple[str, ...]:
    if known is None:
        return ()
    found = []
    for kind, was, is_now in (("line", known[0], now[0]), ("zone", known[1], now[1])):
        for name in sorted(set(was) | set(is_now)):
            if was.get(name) != is_now.get(name) and not change.touches(kind + "s", name):
                found.append(f"{kind} {name}")
    return tuple(found)


__all__ = [
    "DIGITS",
    "Saved",
    "SceneChange",
    "file_scene",
    "scene_toml",
    "with_scene",
    "write_scene",
]
