"""The tracker on synthetic scenes: ids through occlusion, crossing paths, people passing
close and walking side by side, flicker, a static false positive, and time going back."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from device.vision.lines import LineCounter
from device.vision.percept import LineTotals
from device.vision.tracker import Tracker, TrackerConfig
from models.detections import Detections

FPS = 5.0


def dets(boxes: Sequence[Sequence[float]], scores: Sequence[float] | None = None) -> Detections:
    arr = np.asarray([list(b) for b in boxes], np.float32).reshape(-1, 4)
    s = np.asarray(scores if scores is not None else [0.8] * len(arr), np.float32)
    return Detections(arr, s)


def person(x: float, y: float = 200.0, w: float = 40.0, h: float = 100.0) -> list[float]:
    """A box whose feet are at (x, y)."""
    return [x - w / 2, y - h, x + w / 2, y]


def confirmed_ids(tracker: Tracker, frame: Detections, t: float) -> list[int]:
    return [tr.id for tr in tracker.update(frame, t) if tr.state == "confirmed"]


def test_a_walker_keeps_one_id_through_a_one_second_occlusion() -> None:
    tracker = Tracker()
    speed = 60.0  # px/s: about half a body height per second
    ids: set[int] = set()
    hidden_frames = 0
    for i in range(40):
        t = i / FPS
        x = 100 + speed * t
        occluded = 3.0 <= t < 4.0  # behind a post for a second
        frame = dets([] if occluded else [person(x)])
        tracks = tracker.update(frame, t)
        if occluded:
            hidden_frames += 1
            assert [tr.state for tr in tracks] == ["lost"]
        else:
            ids.update(tr.id for tr in tracks if tr.state == "confirmed")
    assert hidden_frames == 5
    assert ids == {1}


def test_two_people_crossing_paths_keep_their_own_ids() -> None:
    tracker = Tracker()
    left_ids: list[int] = []
    right_ids: list[int] = []
    for i in range(30):
        t = i / FPS
        a = 100 + 80 * t  # walks right
        b = 500 - 80 * t  # walks left, a little lower in the image
        tracks = tracker.update(dets([person(a, 200), person(b, 215)]), t)
        for tr in tracks:
            if tr.state != "confirmed" or not tr.seen:
                continue
            centre = (tr.box[0] + tr.box[2]) / 2
            # Which of the two this box is, by where it should be now.
            (left_ids if abs(centre - a) < abs(centre - b) else right_ids).append(tr.id)
    assert len(set(left_ids)) == 1 and len(set(right_ids)) == 1
    assert set(left_ids) != set(right_ids)
    # Each was followed past the point where they met (t = 2.5 s).
    assert len(left_ids) >= 25 and len(right_ids) >= 25


def test_a_flickering_detection_does_not_make_new_people() -> None:
    tracker = Tracker()
    rng = np.random.default_rng(7)
    seen_ids: set[int] = set()
    for i in range(50):
        t = i / FPS
        boxes = []
        for k, x in enumerate((100.0, 300.0, 500.0)):
            if i > 2 and rng.random() < 0.3:
                continue  # missed by the detector in this frame
            jitter = rng.normal(0, 2, 4)
            boxes.append(list(np.asarray(person(x + 10 * t + 50 * k * 0)) + jitter))
        seen_ids.update(confirmed_ids(tracker, dets(boxes), t))
    assert seen_ids == {1, 2, 3}


def test_a_static_low_score_false_positive_never_becomes_a_person() -> None:
    tracker = Tracker(TrackerConfig(high=0.45, confirm_score=0.6))
    for i in range(100):
        t = i / FPS
        # A cone at 0.49 that never moves, beside a real walker.
        frame = dets([person(600, 300, 30, 50), person(100 + 40 * t)], [0.49, 0.8])
        tracks = tracker.update(frame, t)
    confirmed = [tr for tr in tracks if tr.state == "confirmed"]
    assert len(confirmed) == 1
    assert abs((confirmed[0].box[0] + confirmed[0].box[2]) / 2 - (100 + 40 * t)) < 10
    assert [tr.state for tr in tracks if tr.id == 0] == ["tentative"]


def test_a_low_scoring_person_who_walks_is_confirmed() -> None:
    tracker = Tracker()
    states = []
    for i in range(15):
        t = i / FPS
        states = [tr.state for tr in tracker.update(dets([person(100 + 60 * t)], [0.5]), t)]
    assert states == ["confirmed"]


def test_people_present_at_the_start_count_from_the_first_frame() -> None:
    tracker = Tracker()
    first = tracker.update(dets([person(100), person(300)]), 0.0)
    assert [tr.id for tr in first] == [1, 2]
    assert all(tr.state == "confirmed" and tr.seen for tr in first)


def test_an_arrival_is_tentative_until_its_second_frame() -> None:
    tracker = Tracker()
    tracker.update(dets([person(100)]), 0.0)
    second = tracker.update(dets([person(100), person(400)]), 0.2)
    assert [tr.state for tr in second] == ["confirmed", "tentative"]
    third = tracker.update(dets([person(100), person(400)]), 0.4)
    assert [tr.id for tr in third] == [1, 2]


def test_a_lost_person_is_removed_after_max_lost_and_comes_back_with_a_new_id() -> None:
    tracker = Tracker(TrackerConfig(max_lost_s=1.0))
    tracker.update(dets([person(100)]), 0.0)
    tracker.update(dets([]), 0.5)
    assert [tr.state for tr in tracker.update(dets([]), 1.0)] == ["lost"]
    assert tracker.update(dets([]), 1.2) == ()
    tracker.update(dets([person(100)]), 1.4)
    assert [tr.id for tr in tracker.update(dets([person(100)]), 1.6)] == [2]


def test_doubtful_boxes_keep_a_track_but_never_start_one() -> None:
    tracker = Tracker(TrackerConfig(high=0.45, low=0.2))
    tracker.update(dets([person(100)], [0.8]), 0.0)
    # Half hidden: the detector is unsure, and the track holds on that box.
    tracks = tracker.update(dets([person(106), person(400)], [0.3, 0.3]), 0.2)
    assert [(tr.id, tr.state, tr.seen) for tr in tracks] == [(1, "confirmed", True)]


def test_time_going_back_starts_the_scene_afresh_and_ids_go_on() -> None:
    tracker = Tracker()
    tracker.update(dets([person(100)]), 5.0)
    tracks = tracker.update(dets([person(300)]), 0.0)  # a loop back to the start
    assert [tr.id for tr in tracks] == [2]


def passing_close(config: TrackerConfig) -> tuple[list[tuple[str, int]], LineTotals]:
    """A walks right at 40 px/s and is hidden behind the post for 0.6 s while B, who
    has just come in a little further back, walks left past where A was: the (person,
    id) of every confirmed track seen, and the totals of a line A crosses while hidden
    (x = 430 px of a 768 px frame)."""
    tracker = Tracker(config)
    line = LineCounter("post", (430 / 768, 0.8), (430 / 768, 0.2))
    seen: list[tuple[str, int]] = []
    for i in range(16):
        t = i / FPS
        boxes = []
        if not 1.2 <= t < 1.8:
            boxes.append(person(360 + 40 * t, 260, 30, 80))
        if t >= 1.0:
            boxes.append(person(375 - 50 * (t - 1.0), 225, 26, 70))
        tracks = tracker.update(dets(boxes), t)
        line.update(tracks, (576, 768, 3), t)
        seen += [("A" if tr.box[3] > 240 else "B", tr.id) for tr in tracks if tr.seen and tr.id]
    return seen, line.totals


def test_someone_passing_close_to_a_hidden_person_does_not_take_their_track() -> None:
    """Tightly first: B's new track keeps B's box, which plainly overlaps it, though A's
    track (lost, its box grown while it coasts) reaches it too; A is picked up where
    they come out, with their id, and their crossing of the line is counted."""
    seen, totals = passing_close(TrackerConfig())
    ids = {who: {i for w, i in seen if w == who} for who in "AB"}
    assert ids == {"A": {1}, "B": {2}}
    assert (totals.entered, totals.exited) == (1, 0)
    # Loosely first (no tight pass), A's track took B, and A came out as someone new.
    seen, totals = passing_close(TrackerConfig(tight_iou=0))
    assert ("B", 1) in seen
    assert (totals.entered, totals.exited) == (0, 0)


def side_by_side(config: TrackerConfig, fps: float) -> list[tuple[str, int]]:
    """A stands at x = 700 px; at 2 s B arrives beside them (35 px to the left, about a
    body width) and both walk left at 70 px/s: the (person, id) of every confirmed
    track seen."""
    tracker = Tracker(config)
    seen: list[tuple[str, int]] = []
    for i in range(int(6 * fps)):
        t = i / fps
        a = 700 - 70 * max(0.0, t - 2.0)
        boxes = [person(a, 350, 35, 100)]
        if t >= 2.0:
            boxes.append(person(a - 35, 355, 35, 100))
        for tr in tracker.update(dets(boxes), t):
            if tr.seen and tr.id:
                centre = (tr.box[0] + tr.box[2]) / 2
                seen.append(("A" if abs(centre - a) < abs(centre - a + 35) else "B", tr.id))
    return seen


def test_two_people_walking_side_by_side_keep_their_ids_at_2_and_5_detections_a_second() -> None:
    for fps in (2.0, 5.0):
        seen = side_by_side(TrackerConfig(), fps)
        ids = {who: {i for w, i in seen if w == who} for who in "AB"}
        assert ids == {"A": {1}, "B": {2}}, fps


def test_a_new_track_takes_part_in_the_tight_pass_only_when_frames_are_close() -> None:
    """Half a second after it started, a new track's box (it has no velocity yet) is where
    its person was, and now the person beside them is there: taking that box by overlap
    would swap the two at every frame."""
    always = TrackerConfig(tight_tentative_s=10.0)
    assert len({i for _, i in side_by_side(always, 2.0)}) > 2
    assert len({i for _, i in side_by_side(always, 5.0)}) == 2


def test_the_tight_overlap_is_checked() -> None:
    with pytest.raises(ValueError):
        TrackerConfig(tight_iou=1.0)
    with pytest.raises(ValueError):
        TrackerConfig(tight_iou=-0.1)
