"""An unknown count is said as unknown, once, and the count comes back by itself.

Perception and the count_people stream, on synthetic detections (the
detector's output is the input here; the real detector is in other tests).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from device.events import CountChanged
from device.vision.frame import Frame
from device.vision.percept import CountUnknown, Percept
from device.vision.perception import Perception
from live.config import SessionConfig
from live.events import Event
from live.requests import LiveRequestQueue
from live.session import Runner
from live.store.eventlog import MemoryEventLog
from live.testing import ScriptedModel
from models.detections import Detections
from tests.percepts import make_percept
from tools.count_people import CountPeople, check_count_args, coalesce_counts
from tools.function_tool import FunctionTool

pytestmark = pytest.mark.anyio


class Boxes:
    """A detector that sees ``people`` boxes, however many the test says."""

    def __init__(self) -> None:
        self.people = 0
        self.detect_s = 0.0

    def detect(self, frame_bgr: np.ndarray) -> Detections:
        boxes = np.asarray([[10 + 30 * i, 10, 30 + 30 * i, 80] for i in range(self.people)])
        scores = np.full(self.people, 0.9, np.float32)
        return Detections(boxes.reshape(-1, 4).astype(np.float32), scores)


def frame(t: float, index: int) -> Frame:
    return Frame(np.zeros((100, 400, 3), np.uint8), t_media=t, index=index, source="cam")


class Now:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


async def test_forgetting_says_unknown_once_and_the_next_frame_is_a_new_first_count() -> None:
    events: list[Event] = []
    detector, now = Boxes(), Now()
    published: list[Percept | CountUnknown] = []
    perception = Perception(
        detector, detect_fps=2.0, publish=events.append, on_percept=published.append, now=now
    )
    assert not perception.known and perception.unknown_reason == "no frame yet"
    detector.people = 3
    await perception.process(frame(0.0, 0))
    assert perception.known and perception.current() is not None
    assert perception.last_at == 100.0

    assert perception.forget("camera reconnecting since 12:03:10 (unplugged)") is True
    assert perception.forget("camera failed since 12:03:10") is False  # said once only
    unknown = [e for e in events if isinstance(e, CountChanged) and e.count is None]
    assert unknown == [unknown[0]] and unknown[0].previous == 3
    assert unknown[0].reason == "camera reconnecting since 12:03:10 (unplugged)"
    # Where the percepts go (the tools among them), it is said once, after the last
    # percept, with the same reason.
    assert [type(p) for p in published] == [Percept, CountUnknown]
    told = [p for p in published if isinstance(p, CountUnknown)]
    assert [u.reason for u in told] == [unknown[0].reason]
    assert perception.current() is None and not perception.known
    assert perception.unknown_reason == "camera failed since 12:03:10"

    # The same three people again: said, because nobody knows it is "the same" any more.
    now.t = 130.0
    await perception.process(frame(0.5, 5))
    counts = [(e.count, e.previous) for e in events if isinstance(e, CountChanged)]
    assert counts == [(3, None), (None, 3), (3, None)]
    assert perception.last_at == 130.0


async def test_how_long_a_count_stays_current_follows_rate_coasting_and_detector() -> None:
    detector = Boxes()
    fast = Perception(detector, detect_fps=10.0)
    sparse = Perception(detector, detect_fps=0.8)
    # One period, plus how long a missed person still counts, plus slack.
    assert fast.stale_after_s() == pytest.approx(0.1 + 1.0 + 0.5)
    assert sparse.stale_after_s() == pytest.approx(1.25 + 1.25 + 0.5)
    # A detector slower than the period (a Pi at 10 fps) is not taken for a dead camera.
    slow = Perception(_Slow(0.4), detect_fps=10.0)
    await slow.process(frame(0.0, 0))
    assert slow.stale_after_s() >= 0.8 + 1.0 + 0.5


class _Slow(Boxes):
    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds

    def detect(self, frame_bgr: np.ndarray) -> Detections:
        import time

        time.sleep(self.seconds)  # the detector's own cost, not a wait for something
        return super().detect(frame_bgr)


# ------------------------------------------------------------ the model's stream


async def stream(
    items: list[Percept | CountUnknown], args: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    model = ScriptedModel()
    queue = LiveRequestQueue()
    tool = FunctionTool(
        CountPeople(), name="count_people", check=check_count_args, coalesce=coalesce_counts
    )
    runner = Runner(model, [tool], SessionConfig(), on_event=MemoryEventLog().record)
    async with runner.run_live(queue) as session:
        await model.wait_for(lambda: model.connections)
        call_id = model.call("count_people", args or {})
        await model.wait_for(lambda: model.responses(call_id))
        await session.wait_input_consumer()
        for item in items:
            await session.wait_inputs_idle()
            if isinstance(item, Percept):
                queue.send_realtime(frame=item.frame, percept=item)
            else:
                queue.send_realtime(percept=item)
        await session.wait_inputs_idle()
        queue.close()
    return [e for e in model.emissions(call_id) if "people" in e]


async def test_the_stream_says_null_with_the_reason_then_the_fresh_count() -> None:
    lost = CountUnknown("camera reconnecting since 12:03:10 (read failed)")
    said = await stream(
        [
            make_percept(count=2, seq=1, t=0.0),
            lost,
            CountUnknown("camera failed since 12:03:10"),  # already unknown: nothing new
            make_percept(count=2, seq=2, t=5.0),
            make_percept(count=4, seq=3, t=6.0),
        ]
    )
    assert said == [
        {"people": 2, "previous": None},
        {"people": None, "previous": 2, "reason": lost.reason},
        {"people": 2, "previous": None},
        {"people": 4, "previous": 2},
    ]


async def test_a_region_call_is_told_unknown_too() -> None:
    region = {"region": [[0, 0], [1, 0], [1, 1], [0, 1]]}
    box = [10, 10, 30, 80]
    said = await stream(
        [
            make_percept([box], seq=1, t=0.0),
            CountUnknown("no usable frame from cam for 3 s"),
            make_percept([box, [60, 10, 80, 80]], seq=2, t=4.0),
        ],
        region,
    )
    people = [(e["people"], e.get("previous")) for e in said]
    assert people[0] == (1, None) and people[1] == (None, 1)
    assert said[1]["reason"] == "no usable frame from cam for 3 s"
    assert people[-1][0] == 2 and people[-1][1] is None


async def test_unknown_before_any_count_says_nothing() -> None:
    said = await stream([CountUnknown("camera opening"), make_percept(count=1, seq=1)])
    assert said == [{"people": 1, "previous": None}]


async def test_asking_while_unknown_gives_the_reason() -> None:
    counter = CountPeople(current=lambda: None, why_unknown=lambda: "camera failed since 09:00:00")
    answer = await counter.count_people_now()
    assert answer == {"people": None, "reason": "camera failed since 09:00:00"}


@pytest.mark.parametrize(("down_s", "same_people"), [(1.5, True), (9.0, True), (12.0, False)])
async def test_after_a_short_outage_the_same_people_go_on_after_a_long_one_afresh(
    down_s: float, same_people: bool
) -> None:
    detector = Boxes()
    detector.people = 2
    perception = Perception(detector, detect_fps=2.0)
    for k in range(4):
        await perception.process(frame(k / 2, k))
    before = {t.id for t in perception.current().people}  # type: ignore[union-attr]
    assert len(before) == 2
    assert perception.forget("camera reconnecting since 12:03:10", outage=True)
    back = await perception.process(frame(1.5 + down_s, 99))
    assert back is not None and back.count == 2  # a fresh first count, said as such
    assert back.previous is None and back.changed
    assert ({t.id for t in back.people} == before) is same_people
    # A source that ended (not an outage) starts afresh whatever the gap.
    perception.forget("camera ended")
    assert {t.id for t in (await perception.process(frame(3.0 + down_s, 100))).people} != before  # type: ignore[union-attr]
