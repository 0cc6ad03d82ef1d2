"""watch_line and watch_zone through the real runtime: declarations, emissions, bad names."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from device.vision.percept import CountUnknown, LineTotals, Percept, ZoneState
from live.config import SessionConfig
from live.requests import LiveRequestQueue
from live.session import Runner
from live.store.eventlog import MemoryEventLog
from live.testing import ScriptedModel
from tests.percepts import make_percept
from tools.function_tool import FunctionTool
from tools.watchers import LINE_TOOL, ZONE_TOOL, SceneWatchers

pytestmark = pytest.mark.anyio


def percept(t: float, lines: dict[str, tuple[int, int]], zone: int | None = None) -> Percept:
    base = make_percept(t=t, seq=int(t * 10) + 1)
    totals = {
        name: LineTotals(name, i, o, "in" if i >= o else "out") for name, (i, o) in lines.items()
    }
    zones = {}
    if zone is not None:
        stays = tuple(float(10 * k) for k in range(zone))
        zones["kiosk"] = ZoneState(
            "kiosk", zone, sum(s >= 15 for s in stays), max(stays, default=0), 15.0, stays
        )
    return Percept(
        frame=base.frame,
        detections=base.detections,
        raw=0,
        count=0,
        previous=0,
        changed=False,
        detect_ms=1.0,
        seq=base.seq,
        lines=totals,
        zones=zones,
    )


def tools(watchers: SceneWatchers) -> list[FunctionTool]:
    return [
        FunctionTool(watchers.watch_line_tool(), name=LINE_TOOL, check=watchers.check_line),
        FunctionTool(watchers.watch_zone_tool(), name=ZONE_TOOL, check=watchers.check_zone),
    ]


async def run(
    watchers: SceneWatchers,
    name: str,
    args: dict[str, Any],
    items: Sequence[Percept | CountUnknown],
) -> tuple[ScriptedModel, str]:
    model = ScriptedModel()
    queue = LiveRequestQueue()
    runner = Runner(model, tools(watchers), SessionConfig(), on_event=MemoryEventLog().record)
    async with runner.run_live(queue) as session:
        await model.wait_for(lambda: model.connections)
        call_id = model.call(name, args)
        await model.wait_for(lambda: model.responses(call_id))
        if model.responses(call_id)[0].response.get("status") != "error":
            await session.wait_input_consumer()
            for item in items:
                await session.wait_inputs_idle()
                if isinstance(item, Percept):
                    queue.send_realtime(frame=item.frame, percept=item)
                else:
                    queue.send_realtime(percept=item)
            await session.wait_inputs_idle()
        queue.close()
    return model, call_id


def said(model: ScriptedModel, call_id: str) -> list[dict[str, Any]]:
    return [e for e in model.emissions(call_id) if "status" not in e]


def watchers(now: Percept | None = None) -> SceneWatchers:
    return SceneWatchers(lines=["post", "door"], zones=["kiosk"], current=lambda: now)


def test_the_declarations_list_the_configured_names() -> None:
    line, zone = tools(watchers())
    line_enum = line.declaration().parameters.properties["name"].enum  # type: ignore[union-attr]
    zone_params = zone.declaration().parameters.properties  # type: ignore[union-attr]
    assert line_enum == ["post", "door"]
    assert zone_params["name"].enum == ["kiosk"]
    assert "dwell_seconds" in zone_params


async def test_an_unknown_line_is_refused_naming_the_configured_ones() -> None:
    model, call_id = await run(watchers(), LINE_TOOL, {"name": "exit"}, [])
    answer = model.responses(call_id)[0].response
    assert answer["status"] == "error"
    assert "post" in answer["error"] and "door" in answer["error"] and "exit" in answer["error"]


async def test_watch_line_says_the_totals_at_once_then_each_crossing_rate_bounded() -> None:
    now = percept(0.0, {"post": (2, 1)})
    items = [
        percept(0.2, {"post": (2, 1)}),  # nothing new
        percept(1.2, {"post": (3, 1)}),  # a crossing: said
        percept(1.4, {"post": (3, 2)}),  # within a second of the last: held back...
        percept(1.6, {"post": (4, 2)}),
        percept(2.4, {"post": (4, 2)}),  # ...and said here, with both in the totals
        percept(3.6, {"post": (4, 2)}),
    ]
    model, call_id = await run(watchers(now), LINE_TOOL, {"name": "post"}, items)
    assert said(model, call_id) == [
        {"line": "post", "in": 2, "out": 1, "last": "in"},
        {"line": "post", "in": 3, "out": 1, "last": "in"},
        {"line": "post", "in": 4, "out": 2, "last": "in"},
    ]


async def test_watch_line_says_when_it_cannot_see_and_when_it_can_again() -> None:
    items: list[Percept | CountUnknown] = [
        percept(0.0, {"post": (1, 0)}),
        CountUnknown("camera reconnecting since 12:00:00"),
        CountUnknown("camera reconnecting since 12:00:00"),
        percept(9.0, {"post": (1, 0)}),
    ]
    model, call_id = await run(watchers(), LINE_TOOL, {"name": "post"}, items)
    assert said(model, call_id) == [
        {"line": "post", "in": 1, "out": 0, "last": "in"},
        {
            "line": "post",
            "in": 1,
            "out": 0,
            "last": "in",
            "counting": False,
            "reason": "camera reconnecting since 12:00:00",
        },
        {"line": "post", "in": 1, "out": 0, "last": "in", "counting": True},
    ]


async def test_watch_zone_reports_people_and_dwellers_on_change_and_unknown() -> None:
    items: list[Percept | CountUnknown] = [
        percept(0.0, {}, zone=1),
        percept(0.2, {}, zone=1),
        percept(0.4, {}, zone=2),  # the second has been there 10 s: not dwelling at 15 s
        percept(0.6, {}, zone=3),  # the third, 20 s: dwelling
        CountUnknown("source ended at 12:00:00 (end of file)"),
    ]
    model, call_id = await run(watchers(), ZONE_TOOL, {"name": "kiosk"}, items)
    assert [(e.get("people"), e.get("dwelling")) for e in said(model, call_id)] == [
        (1, 0),
        (2, 0),
        (3, 1),
        (None, None),
    ]
    assert said(model, call_id)[-1]["reason"] == "source ended at 12:00:00 (end of file)"


async def test_watch_zone_with_its_own_dwell_time() -> None:
    items = [percept(0.0, {}, zone=3)]  # stays 0, 10 and 20 s
    model, call_id = await run(watchers(), ZONE_TOOL, {"name": "kiosk", "dwell_seconds": 5}, items)
    assert said(model, call_id) == [
        {"zone": "kiosk", "people": 3, "dwelling": 2, "longest_s": 20.0, "dwell_s": 5.0}
    ]


async def test_watch_zone_refuses_a_dwell_time_that_is_not_positive() -> None:
    model, call_id = await run(watchers(), ZONE_TOOL, {"name": "kiosk", "dwell_seconds": -1}, [])
    assert model.responses(call_id)[0].response["status"] == "error"


def test_the_instruction_names_the_lines_and_zones_and_the_tools_exist_only_with_them(
    tmp_path: Any,
) -> None:
    from device.app.parts import system_instruction
    from device.app.scene.tools import scene_tools
    from device.config import build

    # No lines, and no status page to draw one on: nothing to watch.
    bare = build({"http": ""}, environ={}, system_config=tmp_path / "none.toml")
    assert scene_tools(bare, lambda: None) == []
    assert "watch_line" not in system_instruction(bare)
    # No lines yet, but the page can draw them while the run goes on: the tools are there.
    paged = build({}, environ={}, system_config=tmp_path / "none.toml")
    assert [t.name for t in scene_tools(paged, lambda: None)] == ["watch_line", "watch_zone"]
    assert "drawn later" in system_instruction(paged)
    config = build(
        {"lines": ["door=0.5,0.1,0.5,0.9"], "zones": ["kiosk=0.1,0.1,0.4,0.1,0.4,0.4"],
         "dwell": 20.0, "http": ""},
        environ={}, system_config=tmp_path / "none.toml",
    )  # fmt: skip
    text = system_instruction(config)
    assert "door" in text and "kiosk (dwell 20 s)" in text and "watch_zone" in text
    assert [t.name for t in scene_tools(config, lambda: None)] == ["watch_line", "watch_zone"]


async def test_a_line_removed_or_renamed_on_the_page_ends_its_watch_saying_so() -> None:
    items: list[Percept | CountUnknown] = [
        percept(0.0, {"post": (1, 0)}),
        percept(1.0, {"door": (1, 0)}),  # post renamed to door on the status page
        percept(2.0, {"door": (2, 0)}),
    ]
    model, call_id = await run(watchers(), LINE_TOOL, {"name": "post"}, items)
    emitted = said(model, call_id)
    assert emitted[0] == {"line": "post", "in": 1, "out": 0, "last": "in"}
    assert (
        emitted[1]["removed"] is True
        and "renamed on the device's status page" in (emitted[1]["reason"])
    )
    assert len(emitted) == 2  # nothing said of a line that is no longer there


async def test_with_the_page_a_line_drawn_after_the_start_can_be_watched() -> None:
    """With the status page's editor the names are checked when called, against the newest
    frame's scene: a line drawn after the model connected is watched, an unknown name is
    refused with the lines there now."""
    now = percept(0.0, {"post": (0, 0), "exit": (2, 1)})  # exit drawn on the page
    editable = SceneWatchers(lines=["post"], zones=[], current=lambda: now, editable=True)
    declared = tools(editable)[0].declaration().parameters.properties["name"]  # type: ignore[union-attr]
    assert declared.enum is None and "at the start: post" in (declared.description or "")
    model, call_id = await run(editable, LINE_TOOL, {"name": "exit"}, [now])
    assert said(model, call_id)[0] == {"line": "exit", "in": 2, "out": 1, "last": "in"}
    model, call_id = await run(editable, LINE_TOOL, {"name": "door"}, [])
    answer = model.responses(call_id)[0].response
    assert answer["status"] == "error"
    assert "no line named 'door' (lines now: post, exit)" in answer["error"]
    empty = SceneWatchers(lines=[], zones=[], current=lambda: None, editable=True)
    model, call_id = await run(empty, ZONE_TOOL, {"name": "till"}, [])
    assert (
        "no zones yet: one can be drawn on the device's status page"
        in (model.responses(call_id)[0].response["error"])
    )
