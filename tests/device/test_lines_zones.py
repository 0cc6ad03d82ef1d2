"""Lines and zones on synthetic tracks: direction, hysteresis, the segment's extent, dwell."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from device.vision.lines import LineCounter
from device.vision.percept import Track
from device.vision.presence import PresenceRule
from device.vision.scene import Scene, SceneSpec
from device.vision.zones import Dwell, ZoneWatcher
from tests.percepts import a_track

SHAPE = (100, 100, 3)  # 100x100 px: normalised x 0.5 is pixel 50


def track(
    feet_x: float,
    feet_y: float,
    *,
    id: int = 1,
    key: int | None = None,
    seen: bool = True,
    state: str = "confirmed",
    h: float = 20.0,
    t: float = 0.0,
    score: float = 0.9,
) -> Track:
    box = (feet_x - 4, feet_y - h, feet_x + 4, feet_y)
    return a_track(box, id=id, key=key, state=state, seen=seen, score=score, t=t)


def walk(counter: LineCounter, xs: Sequence[float], y: float = 50.0, **kw: object) -> list[str]:
    directions = []
    for i, x in enumerate(xs):
        for c in counter.update((track(x, y, **kw),), SHAPE, i * 0.2):  # type: ignore[arg-type]
            directions.append(c.direction)
    return directions


def vertical_up() -> LineCounter:
    # x = 50 px from y = 80 up to y = 20: like the post line in the acceptance check.
    return LineCounter("post", (0.5, 0.8), (0.5, 0.2))


def test_left_to_right_across_a_line_drawn_upwards_is_in() -> None:
    # (B - A) x (P - A) with B - A = (0, -60): positive for P right of the line.
    assert walk(vertical_up(), [30, 40, 48, 55, 62, 70]) == ["in"]
    assert walk(vertical_up(), [70, 60, 52, 45, 38, 30]) == ["out"]


def test_the_same_walk_across_the_line_drawn_the_other_way_is_the_opposite() -> None:
    down = LineCounter("post", (0.5, 0.2), (0.5, 0.8))
    assert walk(down, [30, 40, 48, 55, 62, 70]) == ["out"]
    assert walk(LineCounter("post", (0.5, 0.2), (0.5, 0.8)), [70, 60, 45, 30]) == ["in"]


def test_a_horizontal_line_left_to_right_counts_walking_down_as_in() -> None:
    door = LineCounter("door", (0.1, 0.5), (0.9, 0.5))  # B - A = (80, 0)
    directions = []
    for i, y in enumerate([30, 40, 60, 70]):
        directions += [c.direction for c in door.update((track(50, y),), SHAPE, i * 0.2)]
    assert directions == ["in"]  # (80, 0) x (0, +) > 0: below the line is positive


def test_shuffling_on_the_line_counts_once() -> None:
    # Feet wobble within the margin (15 % of a 20 px box = 3 px) around x = 50.
    xs = [35, 45, 49, 52, 48, 51, 52.5, 49, 47.5, 52, 50, 65, 70]
    assert walk(vertical_up(), xs) == ["in"]


def test_someone_standing_on_the_line_with_a_jittery_detector_is_not_counted_again() -> None:
    import numpy as np

    rng = np.random.default_rng(3)
    # 20 s on the line at 5 fps, the box jittering by 5 % of its 100 px height.
    xs = [30.0, 40.0, *list(50 + rng.normal(0, 5, 100)), 70.0]
    counter = LineCounter("post", (0.5, 0.9), (0.5, 0.0))
    directions = []
    for i, x in enumerate(xs):
        frame = (track(float(x), 60, h=100),)
        directions += [c.direction for c in counter.update(frame, (100, 100, 3), i * 0.2)]
    assert directions == ["in"]


def test_walking_across_and_back_counts_both_ways() -> None:
    assert walk(vertical_up(), [30, 40, 60, 70, 60, 40, 30]) == ["in", "out"]


def test_crossing_beyond_the_segment_does_not_count() -> None:
    # The segment runs from y = 20 to y = 80; this person walks across at y = 90.
    assert walk(vertical_up(), [30, 40, 60, 70], y=90) == []
    assert walk(vertical_up(), [30, 40, 60, 70], y=10) == []


def test_a_person_hidden_on_the_line_is_counted_when_seen_on_the_far_side() -> None:
    counter = vertical_up()
    said = []
    for i, (x, seen) in enumerate([(30, True), (40, True), (50, False), (52, False), (65, True)]):
        said += [c.direction for c in counter.update((track(x, 50, seen=seen),), SHAPE, i)]
    assert said == ["in"]


def test_a_crossing_made_while_tentative_is_counted_when_the_track_is_confirmed() -> None:
    counter = vertical_up()
    first = counter.update((track(40, 50, id=0, key=9, state="tentative"),), SHAPE, 0.0)
    second = counter.update((track(60, 50, id=0, key=9, state="tentative"),), SHAPE, 0.2)
    third = counter.update((track(62, 50, id=4, key=9),), SHAPE, 0.4)
    assert first == [] and second == []
    assert [(c.direction, c.track) for c in third] == [("in", 4)]
    assert (counter.totals.entered, counter.totals.exited, counter.totals.last) == (1, 0, "in")


def test_a_tentative_track_that_never_becomes_a_person_is_never_counted() -> None:
    counter = vertical_up()
    counter.update((track(40, 50, id=0, key=9, state="tentative"),), SHAPE, 0.0)
    counter.update((track(60, 50, id=0, key=9, state="tentative"),), SHAPE, 0.2)
    assert counter.update((), SHAPE, 0.4) == []  # removed
    assert counter.totals.entered == 0


def test_totals_of_two_people_add_up_in_one_frame() -> None:
    counter = vertical_up()
    counter.update((track(40, 40, id=1), track(60, 60, id=2)), SHAPE, 0.0)
    crossings = counter.update((track(60, 40, id=1), track(40, 60, id=2)), SHAPE, 0.2)
    assert sorted(c.direction for c in crossings) == ["in", "out"]
    assert (counter.totals.entered, counter.totals.exited) == (1, 1)


# --------------------------------------------------------------------- zones

SQUARE = ((0.2, 0.2), (0.6, 0.2), (0.6, 0.6), (0.2, 0.6))


def counted(*tracks: Track, t: float = 0.0) -> tuple[Track, ...]:
    """Who the device counts among ``tracks`` at ``t`` (the presence rule, as perception)."""
    return PresenceRule().people(tracks, t, SHAPE)


def update(zone: ZoneWatcher, tracks: tuple[Track, ...], t: float) -> tuple[object, list[Dwell]]:
    return zone.update(counted(*tracks, t=t), tracks, SHAPE, t)


def test_zone_count_follows_the_people_in_it_and_dwell_is_reported_once_per_visit() -> None:
    zone = ZoneWatcher("kiosk", SQUARE, dwell_s=3.0)
    changes = []
    dwells: list[tuple[int, float]] = []
    t = 0.0
    for step in range(30):  # 6 s inside at 5 fps
        t = step * 0.2
        change, passed = zone.update(
            (track(40, 40, id=3, t=t),), (track(40, 40, id=3, t=t),), SHAPE, t
        )
        if change is not None:
            changes.append((change.state.people, change.state.dwelling))
        dwells += [(d.track, d.seconds) for d in passed]
    assert changes == [(1, 0), (1, 1)]
    assert dwells == [(3, 3.0)]
    assert zone.state.longest_s == 5.8 and zone.state.stays == (5.8,)
    # Leaves, comes back: a new visit, its own dwell.
    out = (track(90, 90, id=3),)
    zone.update(out, out, SHAPE, t + 0.2)
    assert zone.state.dwelling == 0 and zone.state.people == 0
    for step in range(20):
        back = (track(40, 40, id=3),)
        _, passed = zone.update(back, back, SHAPE, t + 0.4 + step * 0.2)
        dwells += [(d.track, d.seconds) for d in passed]
    assert len(dwells) == 2


def test_a_short_occlusion_does_not_reset_the_dwell_time() -> None:
    zone = ZoneWatcher("kiosk", SQUARE, dwell_s=2.0)
    update(zone, (track(40, 40, id=1, t=0.0),), 0.0)
    update(zone, (track(40, 40, id=1, seen=False, state="lost", t=0.0),), 1.0)
    _, passed = update(zone, (track(40, 40, id=1, t=2.0),), 2.0)
    assert [(d.track, d.seconds) for d in passed] == [(1, 2.0)]


def test_the_zone_counts_only_people_the_device_counts_whose_feet_are_inside() -> None:
    zone = ZoneWatcher("kiosk", SQUARE, dwell_s=30.0)
    tracks = (
        track(40, 40, id=1),
        track(40, 40, id=0, key=7, state="tentative", score=0.5),  # not counted yet
        track(40, 80, id=2),  # body in the square, feet below it
    )
    update(zone, tracks, 0.0)
    assert zone.state.people == 1


def test_a_zone_keeps_a_person_the_detector_misses_for_a_moment_like_the_count() -> None:
    zone = ZoneWatcher("kiosk", SQUARE, dwell_s=30.0)
    said = []
    for step in range(20):
        t = step * 0.2
        missed = 8 <= step < 11  # missed by the detector for 0.6 s: the track coasts
        person = track(40, 40, id=1, seen=not missed, state="lost" if missed else "confirmed")
        person = dataclasses.replace(person, last_seen=1.4 if missed else t, confident_at=t)
        change, _ = update(zone, (person,), t)
        if change is not None:
            said.append(change.state.people)
    assert said == [1]


def test_the_scene_says_a_zone_is_unknown_when_the_source_goes_down_and_keeps_line_totals() -> None:
    scene = Scene(
        SceneSpec(lines={"post": ((0.5, 0.8), (0.5, 0.2))}, zones={"kiosk": (SQUARE, 5.0)})
    )
    first = (track(40, 40, id=1),)
    scene.update(first, first, SHAPE, 0.0)
    second = (track(60, 40, id=1),)
    events = scene.update(second, second, SHAPE, 0.2)
    assert [e.type for e in events] == ["crossing", "zone"]
    gone = scene.forget(0.4)
    assert [(e.type, e.to_dict()["people"]) for e in gone] == [("zone", None)]
    assert scene.line_totals()["post"].entered == 1
    assert scene.zone_states()["kiosk"].people is None


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.lists(
            st.tuples(
                st.integers(1, 6),  # which person
                st.floats(0, 100),  # feet x
                st.floats(0, 100),  # feet y
                st.sampled_from(["confirmed", "lost", "tentative"]),
                st.booleans(),  # seen in this frame
                st.floats(0.2, 0.99),  # score
            ),
            max_size=6,
            unique_by=lambda p: p[0],
        ),
        min_size=1,
        max_size=60,
    ),
    st.floats(0.0, 3.0),
)
def test_dwelling_never_exceeds_the_people_in_the_zone(
    frames: list[list[tuple[int, float, float, str, bool, float]]], dwell: float
) -> None:
    """Whatever the tracker hands over (people coming, going, hidden, flickering), a zone
    never says more people dwelling than it says are in it."""
    zone = ZoneWatcher("kiosk", SQUARE, dwell_s=dwell)
    for step, people in enumerate(frames):
        t = step * 0.2
        tracks = tuple(
            dataclasses.replace(
                track(x, y, id=0 if state == "tentative" else k, key=k, state=state, t=t),
                seen=seen or state != "lost",
                score=score,
                last_seen=t if seen or state != "lost" else t - 0.4,
            )
            for k, x, y, state, seen, score in people
        )
        change, dwells = update(zone, tracks, t)
        state = zone.state
        assert state.people is not None and 0 <= state.dwelling <= state.people
        assert len(state.stays) == state.people
        if change is not None:
            assert change.state.dwelling <= (change.state.people or 0)
        assert all(d.seconds >= dwell - 1e-9 for d in dwells)


def test_a_line_or_zone_named_twice_on_the_command_line_is_refused(tmp_path: object) -> None:
    import pytest

    from device.config import ConfigError, build

    for flags in (
        {"lines": ["door=0,0,1,1", "door=0.5,0,0.5,1"]},
        {"zones": ["k=0,0,1,0,1,1", "k=0,0,0.5,0,0.5,0.5"]},
    ):
        with pytest.raises(ConfigError, match="given twice"):
            build(flags, environ={}, system_config=Path(str(tmp_path)) / "none.toml")


def test_the_model_may_watch_every_line_and_zone_and_a_few_counts_besides(
    tmp_path: object,
) -> None:
    from device.app.parts import SPARE_STREAMS, session_config
    from device.config import build

    config = build(
        {"lines": [f"l{i}=0.5,0,0.5,1" for i in range(30)], "zones": ["z=0,0,1,0,1,1"]},
        environ={},
        system_config=Path(str(tmp_path)) / "none.toml",
    )
    assert session_config(config).max_streams == SPARE_STREAMS + 31


def test_a_crossing_is_dated_where_the_path_met_the_line_not_when_it_was_counted() -> None:
    """Feet at x = 30, 40, 48, 55 (0.2 s apart) across x = 50: the path from the last point
    clearly on the near side (40 at 0.2 s: 48 is within the margin) to the first on the far
    side (55 at 0.6 s) meets the line at 0.2 + 0.4 * 10/15 s; the track, still tentative
    then, is confirmed two frames later, when it is counted."""
    counter = vertical_up()
    found = []
    for i, x in enumerate([30, 40, 48, 55, 62, 70]):
        state = "tentative" if i < 5 else "confirmed"
        found += counter.update((track(x, 50.0, state=state),), SHAPE, i * 0.2)
    (crossing,) = found
    assert crossing.direction == "in" and crossing.t_media == pytest.approx(1.0)
    assert crossing.t_crossed == pytest.approx(0.2 + 0.4 * 10 / 15)
