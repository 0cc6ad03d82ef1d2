"""``watch_line`` and ``watch_zone``: the scene's lines and zones for the model, as changes.

The device counts crossings and zone occupancy in perception
(``device/vision/scene.py``) whether or not a model listens; each percept carries
every line's totals and every zone's state after its frame. These streaming
tools consume their call's input stream of percepts and yield only what
changed, like ``count_people``: a crossing (with the run's totals, so a missed
emission costs nothing), a zone's count or its dwellers. They run no detector
and no tracker of their own.

Their ``name`` parameter is an enum of the configured names (the model cannot
invent one; an unknown name is refused with the list), so the tools exist only
when something is configured, unless the lines and zones can be edited while the
session runs (the status page's editor, ``editable``): then the tools are always
declared, ``name`` is any string (its description names those there at the start),
and a name is checked when called, against the scene of the newest frame; so a line
drawn on the page after the model connected can be watched without a restart.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field

from device.vision.percept import CountUnknown, CurrentPercept, LineTotals, Percept, ZoneState
from live.input_stream import InputStream
from live.tool import ToolArgumentError, ToolContext
from tools.watch import Watch, watch_changes

LINE_TOOL = "watch_line"
ZONE_TOOL = "watch_zone"
# At most one crossing emission per this many seconds of media time: a crowd
# walking through must not flood the model; the totals carry what was merged.
LINE_MIN_INTERVAL_S = 1.0


def line_payload(totals: LineTotals) -> dict[str, Any]:
    return {"line": totals.name, "in": totals.entered, "out": totals.exited, "last": totals.last}


def zone_payload(state: ZoneState, dwell_s: float | None = None) -> dict[str, Any]:
    threshold = dwell_s if dwell_s is not None else state.dwell_s
    dwelling = state.dwelling
    if dwell_s is not None:
        dwelling = sum(1 for stay in state.stays if stay >= dwell_s)
    return {
        "zone": state.name,
        "people": state.people,
        "dwelling": dwelling,
        "longest_s": state.longest_s,
        "dwell_s": threshold,
    }


def _gone(kind: str, name: str) -> dict[str, Any]:
    return {
        kind: name,
        "removed": True,
        "reason": f"the {kind} {name} was removed or renamed on the device's status page; "
        "this call ends",
    }


def _names_type(names: Sequence[str]) -> Any:
    return Literal[tuple(names)]


@dataclass
class SceneWatchers:
    """The two tools over perception's lines and zones (``current``: the newest percept)."""

    lines: Sequence[str]
    zones: Sequence[str]
    current: CurrentPercept
    min_interval_s: float = LINE_MIN_INTERVAL_S
    # Lines and zones may change while the session runs (the status page's editor).
    editable: bool = False

    def _name_type(self, kind: str, names: Sequence[str]) -> Any:
        if not self.editable:
            return Annotated[
                _names_type(names), Field(description=f"the {kind}, by its configured name")
            ]
        now = ", ".join(names) if names else "none yet"
        return Annotated[
            str,
            Field(
                description=f"the {kind}, by name (at the start: {now}; one drawn later on "
                "the device's status page is valid too)"
            ),
        ]

    def check_line(self, args: dict[str, Any]) -> None:
        """``FunctionTool``'s ``check`` for watch_line: refused before the stream starts."""
        self._check("line", str(args.get("name", "")))

    def check_zone(self, args: dict[str, Any]) -> None:
        self._check("zone", str(args.get("name", "")))

    def names_now(self, kind: str) -> list[str]:
        """The lines (``kind`` "line") or zones there are: the configured ones, or, in an
        editable scene, the newest frame's (the names at the start before any frame)."""
        percept = self.current() if self.editable else None
        if percept is None:
            return list(self.lines if kind == "line" else self.zones)
        return list(percept.lines if kind == "line" else percept.zones)

    def _check(self, kind: str, name: str) -> None:
        """An editable scene's name, checked against the newest frame's lines or zones
        (the names at the start before any frame)."""
        if not self.editable:
            return  # the enum did
        names = self.names_now(kind)
        if name not in names:
            there = (
                f"{kind}s now: {', '.join(names)}"
                if names
                else (f"no {kind}s yet: one can be drawn on the device's status page")
            )
            tool = LINE_TOOL if kind == "line" else ZONE_TOOL
            raise ToolArgumentError(f"{tool}: no {kind} named {name!r} ({there})")

    def watch_line_tool(self) -> Callable[..., AsyncIterator[dict[str, Any]]]:
        watchers = self

        async def watch_line(
            stream: InputStream[Percept | CountUnknown], context: ToolContext, name: str
        ) -> AsyncIterator[dict[str, Any]]:
            """Count the people crossing a named line, in each direction.

            Reports {"line": name, "in": total in, "out": total out, "last": "in"|"out"} at
            once (the totals so far) and then after each crossing (at most about once a
            second; the totals always include every crossing). {"counting": false,
            "reason": ...} while the camera is down (crossings then are not seen). Keep it
            running; call stop_streaming to end it.

            Args:
                name: the line's name.
            """
            async for item in watchers._line(stream, name):
                yield item

        watch_line.__annotations__["name"] = self._name_type("line", self.lines)
        return watch_line

    def watch_zone_tool(self) -> Callable[..., AsyncIterator[dict[str, Any]]]:
        watchers = self

        async def watch_zone(
            stream: InputStream[Percept | CountUnknown],
            context: ToolContext,
            name: str,
            dwell_seconds: Annotated[
                float | None,
                Field(gt=0, le=86400, description="seconds after which a person is dwelling"),
            ] = None,
        ) -> AsyncIterator[dict[str, Any]]:
            """Watch a named zone: how many people are in it, and who stays long.

            Reports {"zone": name, "people": n, "dwelling": k, "longest_s": s, "dwell_s": t}
            at once and whenever the number of people in the zone changes or someone has
            stayed longer than the dwell time (dwelling: how many have; longest_s: the
            longest stay now). people is null while the count is unknown (the camera is
            down). Keep it running; call stop_streaming to end it.

            Args:
                name: the zone's name.
                dwell_seconds: dwell time for this call (default: the zone's configured one).
            """
            async for item in watchers._zone(stream, name, dwell_seconds):
                yield item

        watch_zone.__annotations__["name"] = self._name_type("zone", self.zones)
        return watch_zone

    def _line(
        self, stream: InputStream[Percept | CountUnknown], name: str
    ) -> AsyncIterator[dict[str, Any]]:
        def unknown(reason: str, last: LineTotals | None) -> dict[str, Any]:
            # Said even before any total: crossings now go unseen.
            totals = last or LineTotals(name)
            return line_payload(totals) | {"counting": False, "reason": reason}

        watch = Watch(
            read=lambda percept: percept.lines.get(name),
            say=lambda totals, last: line_payload(totals),
            unknown=unknown,
            changed=lambda last, totals: (
                (totals.entered, totals.exited) != (last.entered, last.exited)
            ),
            back={"counting": True},
            min_interval_s=self.min_interval_s,
            gone=lambda percept: None if name in percept.lines else _gone("line", name),
        )
        return watch_changes(stream, self.current, watch)

    def _zone(
        self, stream: InputStream[Percept | CountUnknown], name: str, dwell_s: float | None
    ) -> AsyncIterator[dict[str, Any]]:
        def read(percept: Percept) -> dict[str, Any] | None:
            state = percept.zones.get(name)
            if state is None or state.people is None:
                return None
            return zone_payload(state, dwell_s)

        def unknown(reason: str, last: dict[str, Any] | None) -> dict[str, Any] | None:
            return None if last is None else {"zone": name, "people": None, "reason": reason}

        watch = Watch(
            read=read,
            say=lambda payload, last: payload,
            unknown=unknown,
            changed=lambda last, payload: (
                (payload["people"], payload["dwelling"]) != (last["people"], last["dwelling"])
            ),
            gone=lambda percept: None if name in percept.zones else _gone("zone", name),
        )
        return watch_changes(stream, self.current, watch)


__all__ = ["LINE_TOOL", "ZONE_TOOL", "SceneWatchers", "line_payload", "zone_payload"]
