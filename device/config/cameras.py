"""Several cameras on one device: ``[cameras.NAME]`` tables and ``--source NAME=SPEC``.

A camera is named (the names of lines and zones: letters, digits, ``-`` and ``_``).
Its settings are the device's (the global sections are every camera's defaults),
overridden value by value by its own table, as Frigate does it::

    detect_fps = 2              # every camera's, unless it says otherwise

    [cameras.door]
    source = "rtsp://door.lan/stream"
    [cameras.door.lines.post]
    points = [[0.56, 0.73], [0.56, 0.21]]

    [cameras.till]
    source = "/dev/video1"
    detect_fps = 5
    privacy = true

On the command line, ``--source door=rtsp://... --source till=/dev/video1`` names the
cameras, and ``--line door:post=...`` (``--zone`` the same) gives a camera a line.
A device with no camera named has one, ``main``, made of the global settings alone:
one camera configured as before this file existed is exactly what it was.

What a camera may set is what belongs to one view of the world: its source and how
it is read, how often and how surely people are detected in it, its motion gate,
lines, zones and dwell, and privacy. The detector itself (its file, precision,
threads, the CPU profile) is the device's: one model serves every camera.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, create_model
from pydantic.fields import FieldInfo

from device.config.errors import ConfigError
from device.config.scene.specs import PARSERS
from device.config.sections.outputs import DeviceSettings
from device.config.sections.vision import PerceptionSettings, SceneSettings, SourceSettings
from device.config.values import shown

MAIN = "main"  # the camera of a device that names none
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,39}")

# The settings a camera may have of its own, by the section they come from.
_PER_CAMERA: dict[type[BaseModel], tuple[str, ...]] = {
    SourceSettings: tuple(SourceSettings.model_fields),
    PerceptionSettings: (
        "detect_fps", "threshold", "motion", "motion_threshold", "motion_heartbeat",
        "motion_hangover", "motion_pixel_delta",
    ),
    SceneSettings: tuple(SceneSettings.model_fields),
    DeviceSettings: ("privacy", "area"),
}  # fmt: skip
CAMERA_SETTINGS: tuple[str, ...] = tuple(n for names in _PER_CAMERA.values() for n in names)
# Sections whose names a camera's table may use to group its settings.
CAMERA_SECTIONS = {"source", "perception", "scene", "device"}


def _optional(field: FieldInfo) -> tuple[Any, FieldInfo]:
    """A setting as a camera has it: the same type and bounds, unset by default."""
    copied = FieldInfo.merge_field_infos(field, default=None, default_factory=None)
    annotation: Any = field.annotation
    return annotation | None, copied


if TYPE_CHECKING:
    CameraSettings = BaseModel
else:
    # Made from the sections' own fields: a camera's value is checked (type, bounds,
    # parsers) and described exactly as the device's is.
    CameraSettings = create_model(
        "CameraSettings",
        __config__=ConfigDict(extra="forbid", allow_inf_nan=False),
        __doc__="What one camera sets for itself (None: the device's setting).",
        **{
            name: _optional(section.model_fields[name])
            for section, names in _PER_CAMERA.items()
            for name in names
        },
    )


def check_name(name: object, what: str = "a camera's name") -> str:
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ConfigError(
            f"{what} {shown(name)} must be 1-40 letters, digits, - or _ "
            "(it names MQTT topics, metrics and sensors)"
        )
    return name


def camera_table(raw: object, where: str) -> dict[str, Any]:
    """One camera's table (flat, or grouped by section) as flat settings; ``where``
    names it (``lookout.toml: cameras.door``). Values are checked when the camera's
    settings are made from it."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where} must be a table of settings, not {shown(raw)}")
    flat: dict[str, Any] = {}
    for key, value in raw.items():
        name = str(key).replace("-", "_")
        if name in CAMERA_SECTIONS and isinstance(value, Mapping):
            items = [(str(k).replace("-", "_"), v, f"{key}.{k}") for k, v in value.items()]
        else:
            items = [(name, value, str(key))]
        for setting, inner, spelled in items:
            if setting not in CAMERA_SETTINGS:
                raise ConfigError(
                    f"{where}.{spelled} is not a setting a camera has of its own (a camera "
                    f"sets: {', '.join(CAMERA_SETTINGS)}; the others are the device's)"
                )
            if setting in flat:
                raise ConfigError(f"{where}.{spelled} is given twice")
            flat[setting] = inner
    return flat


def cameras_table(raw: object, where: str) -> dict[str, dict[str, Any]]:
    """The ``cameras`` table of a file: each camera's flat settings, by name."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where} must be a table of cameras ([cameras.NAME]), not {shown(raw)}")
    return {
        check_name(name, f"{where}: camera"): camera_table(table, f"{where}.{name}")
        for name, table in raw.items()
    }


def merge_cameras(
    below: Mapping[str, Mapping[str, Any]], above: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    """``above``'s cameras over ``below``'s, setting by setting (a flag's line adds to a
    file's lines, or replaces the one of its name, as for the device's own)."""
    merged: dict[str, dict[str, Any]] = {name: dict(table) for name, table in below.items()}
    for name, table in above.items():
        into = merged.setdefault(name, {})
        for setting, value in table.items():
            old = into.get(setting)
            if setting in PARSERS and old is not None:
                parse = PARSERS[setting]
                into[setting] = {**parse(old), **parse(value)}
            else:
                into[setting] = value
    return merged


def _looks_named(item: str) -> bool:
    name, sep, spec = item.partition("=")
    # A path that exists is a path, even with an "=" in it; a URL's "=" comes after "://".
    return bool(sep) and bool(NAME.fullmatch(name)) and bool(spec) and not Path(item).exists()


def sources_flags(items: list[str]) -> tuple[str | None, dict[str, str]]:
    """``--source`` given once or more: the device's one source (not named), or the
    cameras' sources by name (``--source door=rtsp://...``)."""
    named: dict[str, str] = {}
    unnamed: list[str] = []
    for item in items:
        if _looks_named(item):
            name, _, spec = item.partition("=")
            if name in named:
                raise ConfigError(f"--source {name}= is given twice")
            named[name] = spec
        else:
            unnamed.append(item)
    if unnamed and (named or len(unnamed) > 1):
        for item in unnamed:
            name, sep, spec = item.partition("=")
            if sep and spec and not any(c in name for c in "/:.") and not Path(item).exists():
                # Meant as a camera's name (no path or URL has "=" so early): say its rule.
                check_name(name, f"--source {item!r}: the camera's name")
        raise ConfigError(
            "--source given more than once: name each camera (--source door=rtsp://cam/stream "
            "--source till=1)"
        )
    return (unnamed[0] if unnamed else None), named


def scene_flags(
    setting: str, items: list[str], cameras: set[str]
) -> tuple[list[str], dict[str, list[str]]]:
    """``--line``/``--zone`` flags: the device's (``NAME=...``) and each camera's
    (``CAMERA:NAME=...``)."""
    flag = "--line" if setting == "lines" else "--zone"
    own: list[str] = []
    by_camera: dict[str, list[str]] = {}
    for item in items:
        head, sep, _ = item.partition("=")
        if sep and ":" in head:
            camera, _, rest = item.partition(":")
            check_name(camera, f"{flag} {item!r}: the camera")
            if cameras and camera not in cameras:
                raise ConfigError(
                    f"{flag} {item!r}: no camera named {camera!r} "
                    f"(cameras: {', '.join(sorted(cameras))})"
                )
            by_camera.setdefault(camera, []).append(rest)
        else:
            own.append(item)
    return own, by_camera


__all__ = [
    "CAMERA_SECTIONS",
    "CAMERA_SETTINGS",
    "MAIN",
    "CameraSettings",
    "camera_table",
    "cameras_table",
    "check_name",
    "merge_cameras",
    "scene_flags",
    "sources_flags",
]
