"""A scene edit's body (``PUT /api/scene``) read into lines and zones, or one line why not.

Every field has one type, checked the same way, and a wrong one is the client's
mistake (400, naming the field); a revision that is a whole number but not the
device's is a conflict (409), only then.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from device.config.scene.layout import DIGITS
from device.config.scene.specs import LineSpec, ZoneSpec, parse_lines, parse_zones

MAX_ITEMS = 32  # lines, and zones: each is MQTT topics, sensors and a row on the page
MAX_ZONE_POINTS = 64
FIELDS = ("revision", "lines", "zones")


class EditError(ValueError):
    """An edit that cannot be applied: one line, and the HTTP status it is answered with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def as_json(value: Any) -> str:
    """A value as the client sent it, short: ``"0"`` (a string), ``true``, ``null``."""
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _kind_of(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return as_json(value)
    if isinstance(value, str):
        return f"{as_json(value)} (a string)"
    if isinstance(value, int | float):
        return as_json(value)
    return "an array" if isinstance(value, list) else "an object"


@dataclass(frozen=True)
class Edit:
    """An edit as read: the scene it asks for, and the renames (new name -> old name)."""

    revision: int | None
    lines: dict[str, LineSpec]
    zones: dict[str, ZoneSpec]
    lines_were: dict[str, str]
    zones_were: dict[str, str]


def _items(body: Mapping[str, Any], key: str, kind: str) -> tuple[dict[str, Any], dict[str, str]]:
    """``body[key]`` as the table ``parse_lines``/``parse_zones`` read, and the renames
    (new name -> the name it was)."""
    value = body.get(key, {})
    if not isinstance(value, Mapping):
        raise EditError(f"{key} must be an object of {kind}s by name, not {_kind_of(value)}")
    if len(value) > MAX_ITEMS:
        raise EditError(f"at most {MAX_ITEMS} {kind}s, not {len(value)}")
    table: dict[str, Any] = {}
    was: dict[str, str] = {}
    for name, item in value.items():
        if not isinstance(item, Mapping):
            raise EditError(f"{kind} {name}: must be an object with points, not {_kind_of(item)}")
        item = dict(item)
        before = item.pop("was", None)
        if before is not None:
            if not isinstance(before, str):
                raise EditError(
                    f"{kind} {name}: was must be the name it had (a string), not {_kind_of(before)}"
                )
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


def _revision(body: Mapping[str, Any]) -> int | None:
    revision = body.get("revision")
    if revision is None:
        return None
    if isinstance(revision, bool) or not isinstance(revision, int) or revision < 0:
        raise EditError(
            f"revision must be the whole number GET /api/scene gave, not {_kind_of(revision)}"
        )
    return revision


def read_edit(body: Mapping[str, Any]) -> Edit:
    """The edit ``body`` asks for (``EditError``, 400, for any field of a wrong type or
    value, checked as the command line's ``--line``/``--zone`` are)."""
    unknown = set(body) - set(FIELDS)
    if unknown:
        raise EditError(f"unknown field {sorted(unknown)[0]!r} (give lines, zones, revision)")
    revision = _revision(body)
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
    return Edit(revision, lines, zones, lines_were, zones_were)


__all__ = ["FIELDS", "MAX_ITEMS", "MAX_ZONE_POINTS", "Edit", "EditError", "as_json", "read_edit"]
