"""Lines and zones written back to a configuration file, or as TOML to copy into one.

The status page edits the scene of a running device; the edit must outlive the run.
``write_scene`` replaces the ``[lines.*]`` and ``[zones.*]`` tables of the file the
device was started with and leaves everything else as the user wrote it (comments,
order, spacing): tomlkit, a small pure-Python library, keeps a document's formatting,
which the standard library's ``tomllib`` (read-only) cannot. The file is replaced
whole (a temporary file beside it, then a rename), so a crash or a full disk never
leaves half a configuration; a read-only file is not written.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path

import tomlkit
from tomlkit.items import Table

from device.config.scene import LineSpec, ZoneSpec, parse_lines, parse_zones

DIGITS = 4  # a ten-thousandth of the frame: under a pixel at 4K


def _points(points: tuple[tuple[float, float], ...]) -> list[list[float]]:
    return [[round(x, DIGITS), round(y, DIGITS)] for x, y in points]


def _tables(lines: Mapping[str, LineSpec], zones: Mapping[str, ZoneSpec]) -> dict[str, Table]:
    tables: dict[str, Table] = {}
    if lines:
        table = tomlkit.table(is_super_table=True)
        for name, line in lines.items():
            item = tomlkit.table()
            item.add("points", _points(line.points))
            table.add(name, item)
        tables["lines"] = table
    if zones:
        table = tomlkit.table(is_super_table=True)
        for name, zone in zones.items():
            item = tomlkit.table()
            item.add("points", _points(zone.points))
            if zone.dwell is not None:
                item.add("dwell", zone.dwell)
            table.add(name, item)
        tables["zones"] = table
    return tables


def scene_toml(lines: Mapping[str, LineSpec], zones: Mapping[str, ZoneSpec]) -> str:
    """The ``[lines.NAME]`` and ``[zones.NAME]`` tables of a configuration file."""
    doc = tomlkit.document()
    for key, table in _tables(lines, zones).items():
        doc.add(key, table)
    return tomlkit.dumps(doc)


def with_scene(text: str, lines: Mapping[str, LineSpec], zones: Mapping[str, ZoneSpec]) -> str:
    """``text`` (a configuration file) with its lines and zones replaced by these.

    A file with a ``[lookout]`` table may keep them inside it or beside it
    (``device/config/layers.py:load_file``): both places are cleared, and the new
    tables go where the file had them (beside, when it had none).
    """
    doc = tomlkit.parse(text)
    inner = doc.get("lookout")
    holder: tomlkit.TOMLDocument | Table = doc
    if isinstance(inner, Table):
        for key in ("lines", "zones"):
            if key in inner:
                holder = inner
                del inner[key]
    for key in ("lines", "zones"):
        if key in doc:
            del doc[key]
    for key, table in _tables(lines, zones).items():
        holder.add(key, table)
    return tomlkit.dumps(doc)


def write_scene(path: Path, lines: Mapping[str, LineSpec], zones: Mapping[str, ZoneSpec]) -> None:
    """Replace the lines and zones of configuration file ``path``.

    Raises OSError (the file unreadable or read-only, the folder unwritable, the disk
    full) or ValueError (the file is no longer valid TOML, or reads back different),
    with the file as it was.
    """
    target = path.resolve()
    # No write bit at all is the owner's "do not change": refused even to root.
    if not os.access(target, os.W_OK) or not target.stat().st_mode & 0o222:
        raise PermissionError(13, "the file is read-only", str(path))
    # In here: the configuration loads nothing outside itself when imported.
    from device.input_file import CONFIG_MAX, read_input

    text = read_input(target, CONFIG_MAX).decode("utf-8")  # swapped since the start?
    try:
        new_text = with_scene(text, lines, zones)
    except tomlkit.exceptions.TOMLKitError as exc:
        raise ValueError(f"it is not valid TOML now ({exc})") from None
    _check(new_text, lines, zones)
    from device.whole_file import write_whole

    write_whole(target, new_text.encode("utf-8"), mode=target.stat().st_mode & 0o7777, sync=True)


def _check(text: str, lines: Mapping[str, LineSpec], zones: Mapping[str, ZoneSpec]) -> None:
    """What is written must read back as these lines and zones (the layout rules of
    ``load_file``: beside or inside ``[lookout]``)."""
    data = tomllib.loads(text)
    inner = data.get("lookout", {})
    read_lines = data.get("lines", inner.get("lines", {}) if isinstance(inner, dict) else {})
    read_zones = data.get("zones", inner.get("zones", {}) if isinstance(inner, dict) else {})
    if parse_lines(read_lines) != {n: _rounded(s) for n, s in lines.items()} or parse_zones(
        read_zones
    ) != {n: _rounded(s) for n, s in zones.items()}:
        raise ValueError("it would not read back as the same lines and zones")


def _rounded(spec: LineSpec | ZoneSpec) -> LineSpec | ZoneSpec:
    points = tuple((round(x, DIGITS), round(y, DIGITS)) for x, y in spec.points)
    return spec.model_copy(update={"points": points})


__all__ = ["scene_toml", "with_scene", "write_scene"]
