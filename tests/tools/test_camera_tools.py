"""The tools take the camera (issue 34): ``camera`` is an enum of the device's cameras where
it names them, and each call reads its own camera alone.

One unnamed camera: the declarations are exactly those of before cameras had names. Two
cameras: every camera tool takes ``camera`` (required), a line is its camera's, and two
count_people calls for two cameras run side by side, each on its own percepts.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from device.app.wiring import build_app
from device.config import Config, build
from device.vision.percept import CountUnknown, Percept
from device.vision.percept import LineTotals as Totals
from live.config import SessionConfig
from live.requests import LiveRequestQueue
from live.session import Runner
from live.store.eventlog import MemoryEventLog
from live.testing import ScriptedModel
from tests.datafiles import data_file
from tests.percepts import make_percept
from tools.cameras import Cameras, per_camera
from tools.count_people import CountPeople, check_count_args, coalesce_counts
from tools.function_tool import FunctionTool
from tools.look import Look
from tools.watchers import SceneWatchers

POST = "0.5599,0.7292,0.5599,0.2083"
CAMERA_TOOLS = {"count_people", "count_people_now", "watch_line", "watch_zone", "look"}


def config_of(tmp_path: Path, **settings: Any) -> Config:
    return build(
        {"model": "local", "http": "", **settings},
        environ={},
        system_config=tmp_path / "none.toml",
    )


def declarations(config: Config) -> dict[str, Any]:
    app = build_app(config, operations=False, out=io.StringIO())
    return {d.name: d for d in app.session.declarations()}


def classic_declarations(line: str) -> dict[str, Any]:
    """The tools as a device of one camera declared them before cameras had names."""
    counter = CountPeople()
    watchers = SceneWatchers(lines=[line], zones=[], current=lambda: None)
    tools = [
        FunctionTool(counter, name="count_people", check=check_count_args),
        FunctionTool(counter.count_people_now),
        FunctionTool(watchers.watch_line_tool(), name="watch_line"),
        FunctionTool(Look().look),
    ]
    return {t.name: t.declaration() for t in tools}


def test_one_unnamed_camera_declares_as_before_and_two_declare_the_camera_enum(
    tmp_path: Path,
) -> None:
    video = str(data_file("vtest.avi"))
    one = declarations(config_of(tmp_path, source=video, lines=[f"post={POST}"]))
    classic = classic_declarations("post")
    assert {name: one[name] for name in classic} == classic  # not a word changed

    two = declarations(
        config_of(
            tmp_path,
            source=[f"door={video}", f"till={video}"],
            lines=[f"door:post={POST}", f"till:exit={POST}"],
            zones=["till:desk=0.1,0.1,0.4,0.1,0.4,0.4"],
        )
    )
    assert set(two) == CAMERA_TOOLS | {"stop_streaming"}
    for name in CAMERA_TOOLS:
        parameters = two[name].parameters
        assert parameters.properties["camera"].enum == ["door", "till"], name
        assert "camera" in (parameters.required or []), name
    line = two["watch_line"].parameters.properties["name"]
    assert line.enum == ["post", "exit"]
    assert "door: post; till: exit" in (line.description or "")
    assert two["watch_zone"].parameters.properties["name"].enum == ["desk"]

    # One named camera: the camera is declared, and may be left out.
    named = declarations(config_of(tmp_path, source=[f"door={video}"]))
    camera = named["count_people"].parameters.properties["camera"]
    assert camera.enum == ["door"] and camera.nullable
    assert "camera" not in (named["count_people"].parameters.required or [])


def percept(camera: str, count: int, t: float, lines: dict[str, Totals] | None = None) -> Percept:
    boxes = [[10.0 + 30 * i, 10.0, 30.0 + 30 * i, 80.0] for i in range(count)]
    made = make_percept(boxes, t=t, seq=round(t * 10), lines=lines)
    return Percept(**{**made.__dict__, "camera": camera})


class TwoCameras:
    """count_people and watch_line of two cameras, door (with a line, post) and till."""

    def __init__(self) -> None:
        self.current: dict[str, Percept | None] = {"door": None, "till": None}
        self.cameras = Cameras(("door", "till"))
        counters = {
            name: CountPeople(current=lambda name=name: self.current[name])  # type: ignore[misc]
            for name in self.cameras.names
        }
        watchers = {
            name: SceneWatchers(
                lines=["post"] if name == "door" else [],
                zones=[],
                current=lambda name=name: self.current[name],  # type: ignore[misc]
            )
            for name in self.cameras.names
        }
        from device.app.scene.tools import _checker, _name_type

        self.tools = [
            FunctionTool(
                per_camera("count_people", self.cameras, counters),
                check=check_count_args,
                coalesce=coalesce_counts,
                input_filter=self.cameras.input_filter,
            ),
            FunctionTool(
                per_camera(
                    "watch_line",
                    self.cameras,
                    {n: w.watch_line_tool() for n, w in watchers.items()},
                    annotations={"name": _name_type("line", {"door": ["post"]}, False)},
                ),
                check=_checker("line", "watch_line", self.cameras, watchers),
                input_filter=self.cameras.input_filter,
            ),
        ]


def said(model: ScriptedModel, call_id: str) -> list[dict[str, Any]]:
    return [e for e in model.emissions(call_id) if "status" not in e]


@pytest.mark.anyio
async def test_two_count_people_calls_for_two_cameras_run_side_by_side() -> None:
    device = TwoCameras()
    model = ScriptedModel()
    queue: LiveRequestQueue[Percept | CountUnknown] = LiveRequestQueue(realtime_maxsize=4)
    runner = Runner(model, device.tools, SessionConfig(), on_event=MemoryEventLog().record)

    def send(item: Percept | CountUnknown) -> None:
        frame = item.frame if isinstance(item, Percept) else None
        device.current[item.camera] = item if isinstance(item, Percept) else None
        queue.send_realtime(frame=frame, percept=item, origin=item.camera)

    async with runner.run_live(queue) as session:
        await model.wait_for(lambda: model.connections)
        # One message, two calls of one tool: ADK keeps one slot per tool name and would
        # orphan the first stream.
        door, till = model.call_many(
            [("count_people", {"camera": "door"}), ("count_people", {"camera": "till"})]
        )
        await model.wait_for(lambda: model.responses(door) and model.responses(till))
        await session.wait_input_consumer()
        # The till's percept comes right after the door's each time: in one shared
        # latest-wins stream it would push the door's out.
        for t, (at_door, at_till) in enumerate([(1, 5), (2, 5), (2, 6), (3, 6)]):
            send(percept("door", at_door, float(t)))
            send(percept("till", at_till, float(t)))
            await session.wait_inputs_idle()
        await session.wait_delivered()
        assert said(model, door) == [
            {"camera": "door", "people": n, "previous": was}
            for n, was in [(1, None), (2, 1), (3, 2)]
        ]
        assert said(model, till) == [
            {"camera": "till", "people": n, "previous": was} for n, was in [(5, None), (6, 5)]
        ]
        # Stopping the door's count leaves the till's running.
        stopped = await session.stop_streaming("count_people", door)
        assert [s["id"] for s in stopped["stopped"]] == [door]
        send(CountUnknown("camera reconnecting since 12:03:10", camera="till"))
        send(percept("door", 9, 4.0))
        await session.wait_inputs_idle()
        send(percept("till", 2, 5.0))
        await session.wait_inputs_idle()
        await session.wait_delivered()
        assert [s["id"] for s in session.running_streams()] == [till]
        assert said(model, till)[2:] == [
            {"camera": "till", "people": None, "previous": 6,
             "reason": "camera reconnecting since 12:03:10"},
            {"camera": "till", "people": 2, "previous": None},
        ]  # fmt: skip
        assert said(model, door)[-1]["people"] == 3  # nothing after its stop
        queue.close()


@pytest.mark.anyio
async def test_a_line_of_one_camera_asked_of_another_is_refused_naming_whose_it_is() -> None:
    device = TwoCameras()
    model = ScriptedModel()
    queue: LiveRequestQueue[Percept | CountUnknown] = LiveRequestQueue()
    runner = Runner(model, device.tools, SessionConfig(), on_event=MemoryEventLog().record)
    async with runner.run_live(queue) as session:
        await model.wait_for(lambda: model.connections)
        asked = {
            "wrong camera": ("watch_line", {"camera": "till", "name": "post"}),
            "no camera": ("count_people", {}),
            "unknown camera": ("count_people", {"camera": "hall"}),
            "right camera": ("watch_line", {"camera": "door", "name": "post"}),
        }
        ids = dict(zip(asked, model.call_many(list(asked.values())), strict=True))
        await model.wait_for(lambda: all(model.responses(i) for i in ids.values()))
        answers = {what: model.responses(i)[0].response for what, i in ids.items()}
        assert answers["wrong camera"] == {
            "status": "error",
            "error": "watch_line: camera till has no line named 'post' "
            "(it has no lines; 'post' is door's)",
        }
        assert answers["no camera"]["error"] == (
            "count_people: missing required argument(s) camera"
        )
        assert (
            "camera must be one of door, till, got str 'hall'"
            in (answers["unknown camera"]["error"])
        )
        assert answers["right camera"]["status"] != "error"
        await session.wait_input_consumer()
        totals = {"post": Totals("post", entered=1, exited=0, last="in")}
        queue.send_realtime(percept=percept("door", 1, 0.0, totals), origin="door")
        await session.wait_inputs_idle()
        await session.wait_delivered()
        assert said(model, ids["right camera"]) == [
            {"camera": "door", "line": "post", "in": 1, "out": 0, "last": "in"}
        ]
        queue.close()
