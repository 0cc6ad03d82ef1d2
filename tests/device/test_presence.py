"""The count follows the scene: perception on scripted scenes, frame by frame in media time.

Each scene says which boxes (and scores) the detector finds at each moment; the count is
what perception reports after each detection at the default 2 a second. What a user
notices: how soon an arrival or a departure shows, whether a miss or a stray box makes the
count jump, and whether the count can stay on a value that is no longer true.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from device.events import CountChanged
from device.vision.frame import Frame
from device.vision.percept import Percept, Track
from device.vision.perception import Perception
from device.vision.presence import PresenceRule
from live.events import Event
from models.detections import Detections
from tests.percepts import a_track

pytestmark = pytest.mark.anyio

Box = tuple[float, float, float, float, float]  # x1, y1, x2, y2, score
Scene = Callable[[float], list[Box]]
WIDTH, HEIGHT = 640, 480


class Scripted:
    """A detector that finds what the scene says is there at the frame's time."""

    def __init__(self, scene: Scene) -> None:
        self.scene = scene
        self.t = 0.0

    def detect(self, frame_bgr: np.ndarray) -> Detections:
        boxes = self.scene(self.t)
        return Detections(
            np.asarray([b[:4] for b in boxes], np.float32).reshape(-1, 4),
            np.asarray([b[4] for b in boxes], np.float32),
        )


def person(x: float, y: float = 200.0, score: float = 0.8) -> Box:
    return (x, y, x + 30.0, y + 80.0, score)


async def replay(scene: Scene, seconds: float, fps: float = 2.0) -> list[tuple[float, int]]:
    """(t, count) after each detection of ``scene`` at ``fps`` for ``seconds``."""
    detector = Scripted(scene)
    said: list[Event] = []
    perception = Perception(detector, detect_fps=fps, publish=said.append)
    out = []
    image = np.zeros((HEIGHT, WIDTH, 3), np.uint8)
    for k in range(round(seconds * fps)):
        t = round(k / fps, 3)
        detector.t = t
        percept = await perception.process(Frame(image, t_media=t, index=k))
        assert percept is not None and percept.count is not None
        assert percept.count == len(percept.people)
        out.append((t, percept.count))
    changes = [e for e in said if isinstance(e, CountChanged)]
    # Every change was said once, with its frame, and only changes were said.
    assert [e.count for e in changes] == [
        c for i, (_, c) in enumerate(out) if i == 0 or c != out[i - 1][1]
    ]
    return out


def first_at(counts: list[tuple[float, int]], value: int, after: float = 0.0) -> float:
    return next(t for t, c in counts if t >= after and c == value)


async def test_an_arrival_shows_within_a_second_and_at_once_when_the_detector_is_sure() -> None:
    def walker(score: float) -> Scene:
        # Someone walks in at t = 3 (a person walks: a static box that never scores high
        # is taken for a cone, and never counted).
        return lambda t: (
            [person(100)] + ([person(400 + 60 * (t - 3), score=score)] if t >= 3 else [])
        )

    doubtful = await replay(walker(0.5), 6)
    sure = await replay(walker(0.9), 6)
    assert first_at(doubtful, 2) - 3.0 <= 1.0  # confirmed once they moved, within a second
    assert first_at(sure, 2) == 3.0
    assert [c for _, c in sure] == [1] * 6 + [2] * 6


async def test_someone_leaving_in_the_middle_of_the_picture_is_gone_within_a_second() -> None:
    counts = await replay(lambda t: [person(100)] + ([person(300)] if t < 4 else []), 8)
    assert first_at(counts, 1, after=4.0) - 4.0 <= 1.0
    assert all(c == 1 for t, c in counts if t >= 5.0)


async def test_someone_walking_out_of_the_frame_stops_counting_at_once() -> None:
    # 300 px a second to the right: the last box is seen at t = 1.5 (x = 530); at 2.0
    # they would be at x = 680, out of the 640 px picture.
    counts = await replay(lambda t: [person(80 + 300 * t)] if 80 + 300 * t < 600 else [], 4)
    assert dict(counts)[1.5] == 1 and dict(counts)[2.0] == 0


async def test_single_missed_detections_do_not_make_the_count_flicker() -> None:
    # Three people; each is missed now and then (one detection in three, in turn).
    def scene(t: float) -> list[Box]:
        k = round(t * 2)
        return [person(x) for i, x in enumerate((60, 260, 460)) if k % 3 != i or k < 3]

    counts = await replay(scene, 20)
    assert {c for _, c in counts} == {3}


async def test_a_stray_box_the_detector_is_unsure_of_is_not_counted() -> None:
    stray = await replay(
        lambda t: [person(100)] + ([person(400, score=0.5)] if t == 3.0 else []), 6
    )
    assert {c for _, c in stray} == {1}


async def test_a_scene_that_keeps_changing_is_followed_not_held_on_an_old_value() -> None:
    """People come and go every 1.5 s: the count is never more than a second behind."""
    slots = (40, 140, 240, 340, 440, 540)

    def truth(t: float) -> int:
        return 2 + int(t / 1.5) % 4  # 2, 3, 4, 5, 2, 3, ...

    def scene(t: float) -> list[Box]:
        return [person(x, score=0.7) for x in slots[: truth(t)]]

    counts = await replay(scene, 30)
    for t, c in counts:
        assert c in (truth(t), truth(max(0.0, t - 1.0))), (t, c, truth(t))
    assert sum(c == truth(t) for t, c in counts) / len(counts) >= 0.6


async def test_a_track_only_doubtful_boxes_keep_alive_stops_counting() -> None:
    """A person walks up to a sign post and leaves; the post (scored 0.3 by the detector)
    takes over their track. It must not be counted for the rest of the day."""

    def scene(t: float) -> list[Box]:
        post = (400.0, 200.0, 430.0, 280.0, 0.3)
        if t < 3.0:
            return [person(100 + 100 * t), post] if t < 2.5 else [person(400), post]
        return [post]

    counts = await replay(scene, 10)
    assert dict(counts)[2.5] == 1
    assert all(c == 0 for t, c in counts if t >= 3.0 + PresenceRule().doubt_s)


def track(state: str, *, seen: bool, score: float, t: float, box: tuple[float, ...]) -> Track:
    return a_track(
        box, id=0 if state == "tentative" else 1, key=1, state=state, seen=seen, score=score, t=t
    )


def test_the_rule_over_each_kind_of_track() -> None:
    rule = PresenceRule()
    shape = (HEIGHT, WIDTH, 3)
    inside = (100.0, 100.0, 130.0, 180.0)
    outside = (650.0, 100.0, 680.0, 180.0)
    assert rule.people([track("confirmed", seen=True, score=0.5, t=5, box=inside)], 5, shape)
    # Coasting: counted for a second while in the picture, not after, not outside it.
    lost = track("lost", seen=False, score=0.8, t=4.2, box=inside)
    assert rule.people([lost], 5.0, shape) and not rule.people([lost], 5.5, shape)
    assert not rule.people([track("lost", seen=False, score=0.8, t=4.8, box=outside)], 5, shape)
    # New: counted on sight only when the detector is sure.
    assert rule.people([track("tentative", seen=True, score=0.6, t=5, box=inside)], 5, shape)
    assert not rule.people([track("tentative", seen=True, score=0.5, t=5, box=inside)], 5, shape)
    # Detections further apart than a second: one missed detection is still bridged.
    sparse = rule.for_interval(1.25)
    assert sparse.people([lost], 5.45, shape) and not sparse.people([lost], 5.5, shape)


async def test_a_percept_counts_exactly_its_people() -> None:
    counts: list[Percept] = []
    detector = Scripted(lambda t: [person(100), person(300, score=0.3)])
    perception = Perception(detector, detect_fps=2.0, on_percept=counts.append)
    image = np.zeros((HEIGHT, WIDTH, 3), np.uint8)
    for k in range(4):
        detector.t = k / 2
        await perception.process(Frame(image, t_media=k / 2, index=k))
    last = counts[-1]
    assert last.count == len(last.people) == 1 and last.raw == 1
    assert {t.key for t in last.people} < {t.key for t in last.tracks} | {-1}
