"""Named lines and zones: their specs, and parsing them from flags or TOML tables.

``--line NAME=X1,Y1,X2,Y2`` and ``[lines.NAME] points = [[x1, y1], [x2, y2]]`` (and the
same for zones) become the same ``LineSpec``/``ZoneSpec``; every mistake is a ValueError
whose text the configuration turns into one line naming the flag or the key.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict

from device.config.values import MAX_DWELL_S, shown

# Matched whole (fullmatch): "$" alone also matches before a final newline, which let
# "door\n" through as a second line called door on the console.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,39}")


class LineSpec(BaseModel):
    """A directed segment A -> B, normalised to the frame (0..1)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    points: tuple[tuple[float, float], tuple[float, float]]


class ZoneSpec(BaseModel):
    """A polygon normalised to the frame, and its own dwell time (None: --dwell)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    points: tuple[tuple[float, float], ...]
    dwell: float | None = None


def _point(value: object, where: str) -> tuple[float, float]:
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise ValueError(f"{where} must be [x, y], not {shown(value)}")
    xy = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise ValueError(f"{where} must be two numbers, not {shown(value)}")
        if not 0.0 <= float(v) <= 1.0:
            raise ValueError(
                f"{where} = {shown(list(value))} is outside 0..1 (coordinates are fractions "
                "of the frame's width and height)"
            )
        xy.append(float(v))
    return (xy[0], xy[1])


def _name(name: object) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(
            f"name {shown(name)} must be 1-40 letters, digits, - or _ "
            "(it names MQTT topics and sensors)"
        )
    return name


def _numbers(name: str, text: str) -> list[tuple[float, float]]:
    parts = [p.strip() for p in text.split(",")]
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise ValueError(f"{name}: {text!r} must be numbers separated by commas") from None
    if len(values) % 2:
        raise ValueError(f"{name}: {text!r} has an odd number of coordinates")
    return [
        _point(values[i : i + 2], f"{name}: point {i // 2 + 1}") for i in range(0, len(values), 2)
    ]


def _split_flag(item: object, usage: str) -> tuple[str, str]:
    if not isinstance(item, str) or "=" not in item:
        raise ValueError(f"must be {usage}, not {shown(item)}")
    name, _, text = item.partition("=")
    return _name(name.strip()), text


def _from_flags(value: object, usage: str) -> object:
    """Repeated ``--line``/``--zone`` flags (a list of NAME=...) as the TOML table they mean."""
    if not isinstance(value, list):
        return value
    table: dict[str, Any] = {}
    for item in value:
        name, text = _split_flag(item, usage)
        if name in table:
            raise ValueError(f"{name} is given twice")
        table[name] = {"points": _numbers(name, text)}
    return table


def parse_lines(value: object) -> dict[str, LineSpec]:
    """``--line NAME=X1,Y1,X2,Y2`` flags (a list) or a TOML ``[lines.NAME]`` table."""
    value = _from_flags(value, "NAME=X1,Y1,X2,Y2")
    if not isinstance(value, Mapping):
        raise ValueError(f"must be a table of lines, not {shown(value)}")
    lines: dict[str, LineSpec] = {}
    for name, spec in value.items():
        _name(name)
        if isinstance(spec, LineSpec):
            lines[name] = spec
            continue
        if not isinstance(spec, Mapping) or set(spec) - {"points"} or "points" not in spec:
            raise ValueError(f"{name} must be a table with points = [[x1, y1], [x2, y2]]")
        points = spec["points"]
        if not isinstance(points, list | tuple) or len(points) != 2:
            raise ValueError(f"{name} needs exactly two points [[x1, y1], [x2, y2]]")
        a, b = (_point(p, f"{name}: point {i + 1}") for i, p in enumerate(points))
        if math.dist(a, b) < 0.01:
            raise ValueError(f"{name}: its two points are (almost) the same")
        lines[name] = LineSpec(points=(a, b))
    return lines


def parse_zones(value: object) -> dict[str, ZoneSpec]:
    """``--zone NAME=X1,Y1,X2,Y2,X3,Y3[,...]`` flags or a TOML ``[zones.NAME]`` table."""
    value = _from_flags(value, "NAME=X1,Y1,X2,Y2,X3,Y3[,...]")
    if not isinstance(value, Mapping):
        raise ValueError(f"must be a table of zones, not {shown(value)}")
    zones: dict[str, ZoneSpec] = {}
    for name, spec in value.items():
        _name(name)
        if isinstance(spec, ZoneSpec):
            zones[name] = spec
            continue
        if not isinstance(spec, Mapping) or set(spec) - {"points", "dwell"} or "points" not in spec:
            raise ValueError(
                f"{name} must be a table with points = [[x, y], ...] and optionally dwell"
            )
        points = spec["points"]
        if not isinstance(points, list | tuple) or len(points) < 3:
            raise ValueError(f"{name} needs at least 3 points [[x, y], ...]")
        polygon = tuple(_point(p, f"{name}: point {i + 1}") for i, p in enumerate(points))
        if _area(polygon) < 1e-4:
            raise ValueError(f"{name}: its points enclose no area")
        dwell = spec.get("dwell")
        if dwell is not None:
            ok = isinstance(dwell, int | float) and not isinstance(dwell, bool)
            if not ok or not math.isfinite(dwell) or not 0 < dwell <= MAX_DWELL_S:
                raise ValueError(
                    f"{name}: dwell must be seconds between 0 and {MAX_DWELL_S:g}, "
                    f"not {shown(dwell)}"
                )
            dwell = float(dwell)
        zones[name] = ZoneSpec(points=polygon, dwell=dwell)
    return zones


def _area(points: tuple[tuple[float, float], ...]) -> float:
    total = 0.0
    for (x1, y1), (x2, y2) in zip(points, points[1:] + points[:1], strict=True):
        total += x1 * y2 - x2 * y1
    return abs(total) / 2


Lines = Annotated[dict[str, LineSpec], BeforeValidator(parse_lines)]
Zones = Annotated[dict[str, ZoneSpec], BeforeValidator(parse_zones)]
# Repeatable flags whose values add to (or replace, by name) the file's.
PARSERS: dict[str, Callable[[object], dict[str, Any]]] = {
    "lines": parse_lines,
    "zones": parse_zones,
}

__all__ = ["PARSERS", "LineSpec", "Lines", "ZoneSpec", "Zones", "parse_lines", "parse_zones"]
