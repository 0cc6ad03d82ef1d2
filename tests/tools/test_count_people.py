"""count_people: smoothing, change-only emissions on real video, bad input, bad arguments."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest
from google.genai import types

from live import LiveRequestQueue, MemoryEventLog, Runner, SessionConfig
from live.events import ErrorEvent
from live.testing import ScriptedModel
from models.detector import Detections, PersonDetector
from tests.datafiles import data_file
from tools import FunctionTool
from tools.count_people import CountChanged, CountPeople, check_count_args, count_in_region
from tools.smoothing import CountSmoother

# ------------------------------------------------------------------ smoothing


def feed(
    smoother: CountSmoother, counts: list[int], fps: float = 2.0
) -> list[tuple[int, int | None]]:
    changes = []
    for i, raw in enumerate(counts):
        change = smoother.update(raw, i / fps)
        if change is not None:
            changes.append((change.count, change.previous))
    return changes


def test_single_frame_flicker_is_not_reported() -> None:
    counts = [3, 3, 3, 4, 3, 3, 2, 3, 3, 3, 3]
    assert feed(CountSmoother(k=3, min_hold_s=1.0), counts) == [(3, None)]


def test_a_real_change_is_reported_once_after_it_held() -> None:
    counts = [3, 3, 3, 5, 5, 5, 5, 5, 5, 5, 5]
    assert feed(CountSmoother(k=3, min_hold_s=1.0), counts) == [(3, None), (5, 3)]


def test_min_change_ignores_small_steps() -> None:
    counts = [4, 4, 5, 5, 5, 5, 5, 5, 7, 7, 7, 7, 7, 7]
    assert feed(CountSmoother(min_change=2), counts) == [(4, None), (7, 4)]


def test_same_emissions_at_any_pace() -> None:
    counts = [1, 1, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1]
    a = CountSmoother()
    b = CountSmoother()
    # The same media times, processed with different wall-clock gaps: media time decides.
    assert feed(a, counts) == feed(b, counts)


# --------------------------------------------------------------- real video


@pytest.fixture(scope="module")
def detector() -> PersonDetector:
    return PersonDetector()


def vtest_samples(every: int = 5, limit: int = 160) -> Iterator[tuple[int, float, np.ndarray]]:
    cap = cv2.VideoCapture(str(data_file("vtest.avi")))
    index = 0
    try:
        while index < limit:
            ok, frame = cap.read()
            if not ok:
                return
            if index % every == 0:
                yield index, index / 10.0, frame
            index += 1
    finally:
        cap.release()


def jpeg(frame: np.ndarray) -> bytes:
    ok, data = cv2.imencode(".jpg", frame)
    assert ok
    return data.tobytes()


async def run_clip(
    counter: CountPeople,
    frames: list[tuple[float, np.ndarray | None, bytes]],
    args: dict[str, object] | None = None,
) -> tuple[ScriptedModel, str, MemoryEventLog]:
    model = ScriptedModel()
    log = MemoryEventLog()
    queue = LiveRequestQueue()
    tool = FunctionTool(counter, name="count_people", check=check_count_args)
    async with Runner(model, [tool], SessionConfig(), event_log=log).run_live(queue) as session:
        call_id = model.call("count_people", args or {})
        await model.wait_for(lambda: model.responses(call_id))
        if model.responses(call_id)[0].response.get("status") == "error":
            frames = []  # refused: there is no stream to feed
        else:
            await session.wait_input_consumer()
        for t, frame, data in frames:
            await session.wait_inputs_idle()
            queue.send_realtime(types.Blob(data=data, mime_type="image/jpeg"), frame=frame, t=t)
        await session.wait_inputs_idle()
        queue.close()
    return model, call_id, log


@pytest.mark.anyio
async def test_replayed_clip_emits_exactly_the_smoothed_changes(detector: PersonDetector) -> None:
    samples = list(vtest_samples())
    smoother = CountSmoother()
    expected = []
    for _, t, frame in samples:
        change = smoother.update(len(detector.detect(frame)), t)
        if change is not None:
            expected.append({"people": change.count, "previous": change.previous})
    counter = CountPeople(detector=detector)
    model, call_id, log = await run_clip(counter, [(t, f, b"") for _, t, f in samples])
    emissions = model.emissions(call_id)
    assert emissions[-1] == {"status": "stopped", "reason": "session closed"} or all(
        "people" in e for e in emissions
    )
    people = [e for e in emissions if "people" in e]
    assert people == expected
    assert len(people) >= 3  # the clip really has arrivals and departures
    values = [e["people"] for e in people]
    assert all(a != b for a, b in itertools.pairwise(values))
    counts = [e for e in log.events if isinstance(e, CountChanged)]
    assert [c.count for c in counts] == values
    assert counter.stats.processed == len(samples)


@pytest.mark.anyio
async def test_decodes_the_jpeg_when_no_frame_is_attached(detector: PersonDetector) -> None:
    samples = list(vtest_samples(every=10, limit=60))
    counter = CountPeople(detector=detector)
    model, call_id, _ = await run_clip(counter, [(t, None, jpeg(f)) for _, t, f in samples])
    first = model.emissions(call_id)[0]
    assert first["previous"] is None and first["people"] >= 2
    assert counter.stats.processed == len(samples) and counter.stats.corrupt == 0


@pytest.mark.anyio
async def test_a_corrupt_frame_does_not_kill_the_stream(detector: PersonDetector) -> None:
    samples = list(vtest_samples(every=5, limit=40))
    frames: list[tuple[float, np.ndarray | None, bytes]] = [(t, f, b"") for _, t, f in samples]
    frames.insert(3, (frames[2][0] + 0.5, None, b"\xff\xd8not really a jpeg"))
    frames = [(i * 0.5, f, d) for i, (_, f, d) in enumerate(frames)]
    counter = CountPeople(detector=detector)
    model, call_id, log = await run_clip(counter, frames)
    assert counter.stats.corrupt == 1
    assert counter.stats.processed == len(samples)
    assert not [e for e in model.emissions(call_id) if e.get("status") == "error"]
    assert not [e for e in log.events if isinstance(e, ErrorEvent)]


@pytest.mark.anyio
async def test_persistent_bad_input_is_reported_once(detector: PersonDetector) -> None:
    garbage = [(i * 0.5, None, b"garbage") for i in range(25)]
    counter = CountPeople(detector=detector, failure_alarm=10)
    model, call_id, _ = await run_clip(counter, garbage)
    errors = [e for e in model.emissions(call_id) if e.get("status") == "error"]
    assert len(errors) == 1
    assert "10 frames in a row could not be used" in errors[0]["error"]


@pytest.mark.anyio
async def test_missing_model_file_fails_the_call_clearly(tmp_path: Path) -> None:
    missing = tmp_path / "nope.onnx"
    counter = CountPeople(detector=lambda: PersonDetector(missing))
    model, call_id, log = await run_clip(counter, [])
    final = model.responses(call_id)[-1].response
    assert final["status"] == "error"
    assert "DetectorError" in final["error"] and "nope.onnx" in final["error"]
    assert [e.id for e in log.events if isinstance(e, ErrorEvent)] == [call_id]


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
    counter = CountPeople(detector=lambda: PersonDetector())
    model, call_id, _ = await run_clip(counter, [], args)
    answer = model.responses(call_id)
    assert len(answer) == 1
    assert answer[0].response["status"] == "error"
    assert message in answer[0].response["error"]


def test_region_counts_people_whose_feet_are_inside() -> None:
    boxes = np.array([[10, 10, 30, 90], [60, 10, 80, 90]], dtype=np.float32)
    detections = Detections(boxes=boxes, scores=np.array([0.9, 0.8], dtype=np.float32))
    left_half = np.array([[0, 0], [0.5, 0], [0.5, 1], [0, 1]], dtype=np.float64)
    assert count_in_region(detections, (100, 100, 3), left_half) == 1
    assert count_in_region(detections, (100, 100, 3), None) == 2


@pytest.mark.anyio
async def test_region_argument_limits_the_count(detector: PersonDetector) -> None:
    samples = list(vtest_samples(every=10, limit=30))
    full = CountPeople(detector=detector)
    part = CountPeople(detector=detector)
    frames = [(t, f, b"") for _, t, f in samples]
    model_a, a, _ = await run_clip(full, frames)
    tiny = [[0.0, 0.0], [0.05, 0.0], [0.05, 0.05], [0.0, 0.05]]
    model_b, b, _ = await run_clip(part, frames, {"region": tiny})
    assert model_a.emissions(a)[0]["people"] >= 2
    assert model_b.emissions(b)[0]["people"] == 0
