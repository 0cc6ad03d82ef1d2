"""count_people: the model's stream of count changes, read from the device's percepts."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from device.vision.frame import Frame
from device.vision.percept import Percept
from device.vision.regions import count_in_region
from live.config import SessionConfig
from live.requests import LiveRequestQueue
from live.session import Runner
from live.store.eventlog import MemoryEventLog
from live.testing import ScriptedModel
from models.detections import Detections
from tests.percepts import people_tracks
from tools.count_people import CountPeople, check_count_args, coalesce_counts
from tools.function_tool import FunctionTool

# ------------------------------------------------------------- percepts in


def box(x: float, y: float, w: float = 20, h: float = 60) -> list[float]:
    return [x, y, x + w, y + h]


def percept(
    seq: int,
    t: float,
    count: int | None,
    boxes: Sequence[list[float]] = (),
    *,
    previous: int | None = None,
    error: str | None = None,
) -> Percept:
    image = np.zeros((100, 200, 3), np.uint8)
    detections = Detections(
        np.asarray(list(boxes), np.float32).reshape(-1, 4), np.full(len(boxes), 0.9, np.float32)
    )
    return Percept(
        frame=Frame(image, t_media=t, index=seq, source="test"),
        detections=detections,
        raw=len(boxes),
        count=count,
        previous=previous,
        changed=count != previous,
        detect_ms=1.0,
        seq=seq,
        error=error,
        tracks=people_tracks(boxes, t),
        people=people_tracks(boxes, t),
    )


def tool(counter: CountPeople) -> FunctionTool:
    return FunctionTool(
        counter, name="count_people", check=check_count_args, coalesce=coalesce_counts
    )


async def run_percepts(
    counter: CountPeople, percepts: Sequence[Percept], args: dict[str, Any] | None = None
) -> tuple[ScriptedModel, str]:
    model = ScriptedModel()
    queue = LiveRequestQueue()
    runner = Runner(model, [tool(counter)], SessionConfig(), on_event=MemoryEventLog().record)
    async with runner.run_live(queue) as session:
        await model.wait_for(lambda: model.connections)
        call_id = model.call("count_people", args or {})
        await model.wait_for(lambda: model.responses(call_id))
        if model.responses(call_id)[0].response.get("status") != "error":
            await session.wait_input_consumer()
            for p in percepts:
                await session.wait_inputs_idle()
                queue.send_realtime(frame=p.frame, percept=p)
            await session.wait_inputs_idle()
        queue.close()
    return model, call_id


def people(model: ScriptedModel, call_id: str) -> list[dict[str, Any]]:
    """The count emissions of a call (not its status and error ones)."""
    return [e for e in model.emissions(call_id) if "people" in e and "status" not in e]


@pytest.mark.anyio
async def test_the_model_hears_exactly_the_device_count_changes() -> None:
    counts = [2, 2, 3, 3, 3, 1, 1, 4]
    percepts = [percept(i, i * 0.5, c) for i, c in enumerate(counts)]
    model, call_id = await run_percepts(CountPeople(), percepts)
    assert people(model, call_id) == [
        {"people": 2, "previous": None},
        {"people": 3, "previous": 2},
        {"people": 1, "previous": 3},
        {"people": 4, "previous": 1},
    ]


@pytest.mark.anyio
async def test_a_new_call_is_told_the_current_count_at_once() -> None:
    now = percept(7, 3.5, 5)
    model, call_id = await run_percepts(CountPeople(current=lambda: now), [percept(8, 4.0, 5)])
    # The current state first, before any new frame; the unchanged next frame adds nothing.
    assert people(model, call_id) == [{"people": 5, "previous": None}]


@pytest.mark.anyio
async def test_min_change_reports_only_steps_that_big() -> None:
    counts = [4, 5, 4, 5, 6, 7, 6]
    percepts = [percept(i, i * 0.5, c) for i, c in enumerate(counts)]
    model, call_id = await run_percepts(CountPeople(), percepts, {"min_change": 2})
    assert [e["people"] for e in people(model, call_id)] == [4, 6]


@pytest.mark.anyio
async def test_a_region_counts_only_the_feet_inside_it_of_the_people_counted() -> None:
    left, right = box(10, 20), box(150, 20)
    scenes = [[left, right]] * 4 + [[left, right, box(30, 20)]] * 6
    percepts = [percept(i, i * 0.5, len(s), s) for i, s in enumerate(scenes)]
    left_half = [[0.0, 0.0], [0.5, 0.0], [0.5, 1.0], [0.0, 1.0]]
    model, call_id = await run_percepts(CountPeople(), percepts, {"region": left_half})
    # One person on the left, then two from the frame the device counts the newcomer.
    assert people(model, call_id) == [
        {"people": 1, "previous": None},
        {"people": 2, "previous": 1},
    ]
    # A box the device does not count as a person (here: no track) is not in the region's
    # count either: one rule of who is there.
    uncounted = percept(20, 10.0, 1, [left, box(40, 20)])
    uncounted = dataclasses.replace(uncounted, people=uncounted.people[:1])
    model, call_id = await run_percepts(CountPeople(), [uncounted], {"region": left_half})
    assert people(model, call_id) == [{"people": 1, "previous": None}]


@pytest.mark.anyio
async def test_frames_perception_could_not_use_are_reported_once_not_counted() -> None:
    good = [percept(i, i * 0.5, 3) for i in range(2)]
    bad = [percept(i, i * 0.5, 3, error="corrupt frame") for i in range(2, 27)]
    model, call_id = await run_percepts(CountPeople(failure_alarm=10), good + bad)
    errors = [e for e in model.emissions(call_id) if e.get("status") == "error"]
    assert len(errors) == 1
    assert "10 frames in a row could not be used (corrupt frame)" in errors[0]["error"]
    assert errors[0]["people"] == 3  # the last count it had, not a zero
    assert people(model, call_id) == [{"people": 3, "previous": None}]


@pytest.mark.anyio
async def test_frames_without_a_percept_are_skipped() -> None:
    model = ScriptedModel()
    queue = LiveRequestQueue()
    async with Runner(model, [tool(CountPeople())]).run_live(queue) as session:
        await model.wait_for(lambda: model.connections)
        call_id = model.call("count_people")
        await session.wait_input_consumer()
        image = np.zeros((10, 10, 3), np.uint8)
        queue.send_realtime(frame=Frame(image, t_media=0.0, index=0))  # off the detection grid
        p = percept(1, 0.5, 2)
        queue.send_realtime(frame=p.frame, percept=p)
        await session.wait_inputs_idle()
        queue.close()
    assert people(model, call_id) == [{"people": 2, "previous": None}]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"min_change": 0}, "min_change must be at least 1"),
        ({"min_change": "two"}, "min_change must be an integer"),
        ({"region": [[0, 0], [1, 1]]}, "region needs at least 3 points"),
        ({"region": [[0, 0], [2, 0], [0, 1]]}, "outside 0..1"),
        ({"region": "left half"}, "region must be a list"),
        ({"colour": "red"}, "unknown argument(s) 'colour'"),
    ],
)
async def test_bad_arguments_get_an_error_response(args: dict[str, object], message: str) -> None:
    model, call_id = await run_percepts(CountPeople(), [], args)
    answer = model.responses(call_id)
    assert len(answer) == 1
    assert answer[0].response["status"] == "error"
    assert message in answer[0].response["error"]


def test_the_model_is_told_min_change_is_at_least_one() -> None:
    decl = tool(CountPeople()).declaration()
    assert decl.parameters is not None and decl.parameters.properties is not None
    assert decl.parameters.properties["min_change"].minimum == 1


def test_region_counts_people_whose_feet_are_inside() -> None:
    boxes = np.array([[10, 10, 30, 90], [60, 10, 80, 90]], dtype=np.float32)
    detections = Detections(boxes=boxes, scores=np.array([0.9, 0.8], dtype=np.float32))
    left_half = np.array([[0, 0], [0.5, 0], [0.5, 1], [0, 1]], dtype=np.float64)
    assert count_in_region(detections, (100, 100, 3), left_half) == 1
    assert count_in_region(detections, (100, 100, 3), None) == 2


def test_changes_missed_while_away_coalesce_into_the_current_state() -> None:
    emissions = [
        {"people": 3, "previous": 2},
        {"people": 5, "previous": 3},
        {"people": 0, "previous": 5},
        {"people": 1, "previous": 0},
    ]
    merged = emissions[0]
    for newer in emissions[1:]:
        merged = coalesce_counts(merged, newer)
    # Now 1, and the model last heard 2: with how often and how far it moved meanwhile.
    assert merged == {
        "people": 1,
        "previous": 2,
        "while_away": {"changes": 4, "min": 0, "max": 5},
    }


@pytest.mark.anyio
async def test_count_people_now_answers_from_the_newest_percept() -> None:
    now = percept(4, 2.0, 3, [box(1, 1), box(50, 1), box(90, 1), box(120, 1)])
    assert await CountPeople(current=lambda: now).count_people_now() == {
        "people": 3,
        "in_last_frame": 4,
        "frame": 4,
        "t": 2.0,
        "source": "test",
    }
    unknown = await CountPeople().count_people_now()
    assert unknown["people"] is None and "no current count" in unknown["reason"]
