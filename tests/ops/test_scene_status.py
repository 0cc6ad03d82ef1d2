"""Lines, zones and tracks on the status page's state, the snapshot and /metrics.

Synthetic percepts (what perception would have made of a frame) and the
events perception publishes with them, fed to the real Telemetry and, over
real HTTP, the real status server.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import anyio
import cv2
import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families

from device.config import Config
from device.events import CountChanged, LineCrossed, ZoneCount
from device.outputs.page.render import BOX_COLOR, DETECTION_COLOR, LINE_COLOR
from device.outputs.telemetry import Telemetry
from device.vision.percept import LineTotals, Percept, Track, ZoneState
from device.vision.tracker import Tracker
from tests.ops.support import FakeApp, FakePerception, perceived, serving
from tests.percepts import make_percept

LINE = "post=0.5,0.9,0.5,0.1"  # vertical, drawn upwards: in = to the right
ZONE = "plaza=0.0,0.5,1.0,0.5,1.0,1.0,0.0,1.0"  # the lower half
Metrics = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@dataclass
class TrackedPerception(FakePerception):
    """The app's perception as metrics read it: stats and the tracker's own counts."""

    tracker: Tracker = field(default_factory=Tracker)


def scene_app(*, privacy: bool = False) -> FakeApp:
    # As the flags give them (--line NAME=..., --zone NAME=...), parsed by the config.
    config = Config.model_validate(
        {"device_id": "scene-cam", "model": "local", "lines": [LINE], "zones": [ZONE],
         "dwell": 5, "privacy": privacy}
    )  # fmt: skip
    return FakeApp(config=config, perception=TrackedPerception())


def track(id: int, box: tuple[float, float, float, float], state: str = "confirmed") -> Track:
    return Track(
        id=id,
        key=id or 99,
        box=box,
        score=0.8,
        state=state,  # type: ignore[arg-type]
        seen=state != "lost",
        since=0.0,
        last_seen=1.0,
        confident_at=1.0,
    )


def scene_percept(
    *, people: int = 2, entered: int = 3, exited: int = 1, dwelling: int = 1, image: Any = None
) -> Percept:
    """A 200x100 frame: two confirmed people, one tentative track, one lost one."""
    boxes = [[20, 30, 50, 90], [120, 40, 150, 95], [160, 10, 180, 40]]
    tracks = [
        track(7, (20.0, 30.0, 50.0, 90.0)),
        track(9, (120.0, 40.0, 150.0, 95.0)),
        track(0, (160.0, 10.0, 180.0, 40.0), "tentative"),
        track(4, (60.0, 20.0, 80.0, 60.0), "lost"),
    ]
    return make_percept(
        boxes,
        count=2,
        t=1.0,
        image=image,
        tracks=tracks,
        lines={"post": LineTotals("post", entered, exited, "in")},
        zones={"plaza": ZoneState("plaza", people, dwelling, 12.34, 5.0, (12.3, 2.0))},
    )


MAIN = ("camera", "main")  # every camera series is labelled with its camera


def metrics(telemetry: Telemetry) -> Metrics:
    values = {}
    for family in text_string_to_metric_families(telemetry.metrics_text().decode()):
        for sample in family.samples:
            values[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return values


def test_state_has_every_configured_line_and_zone_before_the_first_frame() -> None:
    tel = Telemetry(scene_app())
    state = tel.state()
    assert state["lines"] == {
        "post": {
            "name": "post",
            "in": 0,
            "out": 0,
            "last": None,
            "counting": False,
            "points": [[0.5, 0.9], [0.5, 0.1]],
        }
    }
    assert state["zones"] == {
        "plaza": {
            "name": "plaza",
            "people": None,
            "dwelling": None,
            "longest_s": None,
            "dwell_s": 5.0,
            "points": [[0.0, 0.5], [1.0, 0.5], [1.0, 1.0], [0.0, 1.0]],
        }
    }
    assert state["tracks"] == [] and state["frame_size"] is None
    # Nothing configured: empty tables, not missing keys, so clients need no special case.
    plain = Telemetry(FakeApp()).state()
    assert plain["lines"] == {} and plain["zones"] == {} and plain["tracks"] == []


def test_state_has_the_line_totals_zone_counts_and_tracks_of_the_last_frame() -> None:
    tel = Telemetry(scene_app())
    perceived(tel, CountChanged(t=1.0, count=2, previous=None, raw=3, t_media=1.0))
    tel.on_percept(scene_percept())
    state = json.loads(json.dumps(tel.state()))  # plain JSON types only
    line = state["lines"]["post"]
    assert (line["in"], line["out"], line["last"], line["counting"]) == (3, 1, "in", True)
    zone = state["zones"]["plaza"]
    assert (zone["people"], zone["dwelling"], zone["longest_s"], zone["dwell_s"]) == (
        2,
        1,
        12.3,
        5.0,
    )
    assert state["frame_size"] == [200, 100]
    assert [(t["id"], t["state"], t["seen"], t["box"]) for t in state["tracks"]] == [
        (7, "confirmed", True, [20.0, 30.0, 50.0, 90.0]),
        (9, "confirmed", True, [120.0, 40.0, 150.0, 95.0]),
        (0, "tentative", True, [160.0, 10.0, 180.0, 40.0]),  # not yet a person: id 0
        (4, "lost", False, [60.0, 20.0, 80.0, 60.0]),  # predicted, not seen in this frame
    ]
    assert {t["score"] for t in state["tracks"]} == {0.8}


def test_the_page_shows_a_crossing_and_a_zone_change_with_the_percept_that_made_them() -> None:
    """Perception publishes a frame's events, then its percept; the page's lines and zones
    are the percept's, so an event never shows a number the percept then takes back."""
    tel = Telemetry(scene_app())
    perceived(tel, CountChanged(t=1.0, count=2, previous=None, raw=2, t_media=1.0))
    tel.on_percept(scene_percept(entered=3, exited=1))
    before = tel.state_changes.version
    tel.write(
        LineCrossed(line="post", direction="out", track=7, t_media=1.2, total_in=3, total_out=2)
    )
    tel.write(ZoneCount(zone="plaza", people=1, previous=2, dwelling=0, longest_s=2.0))
    state = tel.state()
    assert (state["lines"]["post"]["out"], state["zones"]["plaza"]["people"]) == (1, 2)
    tel.on_percept(scene_percept(people=1, entered=3, exited=2))
    assert tel.state_changes.version == before + 1  # the page is told once, with the frame
    state = tel.state()
    assert (state["lines"]["post"]["out"], state["zones"]["plaza"]["people"]) == (2, 1)


def test_an_unknown_count_makes_zones_unknown_and_lines_not_counting_with_totals_kept() -> None:
    tel = Telemetry(scene_app())
    perceived(tel, CountChanged(t=1.0, count=2, previous=None, raw=2, t_media=1.0))
    tel.on_percept(scene_percept(entered=3, exited=1))
    reason = "camera reconnecting since 12:00:01"
    # What perception publishes when it forgets: each zone unknown, then the count.
    tel.write(ZoneCount(zone="plaza", people=None, previous=2, dwelling=0, longest_s=0.0))
    perceived(tel, CountChanged(t=2.0, count=None, previous=2, reason=reason))
    state = tel.state()
    assert state["zones"]["plaza"] | {"points": None} == {
        "name": "plaza",
        "people": None,
        "dwelling": None,
        "longest_s": None,
        "dwell_s": 5.0,
        "points": None,
    }
    line = state["lines"]["post"]
    assert (line["in"], line["out"], line["counting"]) == (3, 1, False)
    assert state["tracks"] == []  # the last frame's people are not shown as current
    values = metrics(tel)
    assert not [key for key in values if key[0].startswith("lookout_zone_")]
    # Crossings are the run's totals: they stay, as counters must.
    assert (
        values[("lookout_line_crossings_total", (MAIN, ("direction", "in"), ("line", "post")))] == 3
    )
    # A count event alone (no zone event: the zone was unknown already) also does it.
    perceived(tel, CountChanged(t=3.0, count=1, previous=None, raw=1, t_media=3.0))
    tel.on_percept(scene_percept(people=1))
    assert tel.state()["zones"]["plaza"]["people"] == 1
    perceived(tel, CountChanged(t=4.0, count=None, previous=1, reason="camera ended at 0:42"))
    assert tel.state()["zones"]["plaza"]["people"] is None


def test_metrics_have_crossings_zone_gauges_and_tracking() -> None:
    app = scene_app()
    assert isinstance(app.perception, TrackedPerception)
    app.perception.tracker.stats.confirmed = 12
    app.perception.tracker.stats.removed = 10
    app.perception.stats.detected = 4
    app.perception.stats.track_ms_total = 6.0
    tel = Telemetry(app)
    # Unknown zone before the first frame: no gauge at all (not 0).
    assert ("lookout_zone_people", (MAIN, ("zone", "plaza"))) not in metrics(tel)
    perceived(tel, CountChanged(t=1.0, count=2, previous=None, raw=2, t_media=1.0))
    tel.on_percept(scene_percept(people=2, entered=3, exited=1, dwelling=1))
    values = metrics(tel)
    assert (
        values[("lookout_line_crossings_total", (MAIN, ("direction", "in"), ("line", "post")))] == 3
    )
    assert (
        values[("lookout_line_crossings_total", (MAIN, ("direction", "out"), ("line", "post")))]
        == 1
    )
    assert values[("lookout_zone_people", (MAIN, ("zone", "plaza")))] == 2
    assert values[("lookout_zone_dwelling", (MAIN, ("zone", "plaza")))] == 1
    assert values[("lookout_zone_longest_stay_seconds", (MAIN, ("zone", "plaza")))] == 12.34
    assert values[("lookout_tracks_confirmed_total", (MAIN,))] == 12
    assert values[("lookout_tracks_removed_total", (MAIN,))] == 10
    assert values[("lookout_track_seconds_total", (MAIN,))] == pytest.approx(0.006)
    assert values[("lookout_track_seconds_mean", (MAIN,))] == pytest.approx(0.0015)
    # Exposition as Prometheus reads it: each family once, with HELP and TYPE first.
    text = tel.metrics_text().decode()
    for name, kind in (
        ("lookout_line_crossings", "counter"),
        ("lookout_zone_people", "gauge"),
        ("lookout_zone_dwelling", "gauge"),
        ("lookout_zone_longest_stay_seconds", "gauge"),
        ("lookout_tracks_confirmed", "counter"),
        ("lookout_track_seconds", "counter"),
        ("lookout_track_seconds_mean", "gauge"),
    ):
        exposed = name + "_total" if kind == "counter" else name
        assert text.count(f"# HELP {exposed} ") == 1, name
        assert text.count(f"# TYPE {exposed} {kind}\n") == 1, name
    assert 'lookout_line_crossings_total{camera="main",direction="in",line="post"} 3.0' in text
    assert 'lookout_zone_people{camera="main",zone="plaza"} 2.0' in text


def test_metrics_without_lines_or_zones_have_no_scene_families() -> None:
    values = metrics(Telemetry(FakeApp()))
    assert not [k for k in values if k[0].startswith(("lookout_line_", "lookout_zone_"))]
    assert values[("lookout_track_seconds_total", (MAIN,))] == 0  # tracking runs regardless


def colour_near(pixel: np.ndarray, bgr: tuple[int, int, int], tolerance: int = 45) -> bool:
    return bool(np.all(np.abs(pixel.astype(int) - np.array(bgr)) < tolerance))


def test_the_snapshot_draws_zones_lines_ids_and_tells_people_from_other_boxes() -> None:
    tel = Telemetry(scene_app())
    image = np.full((100, 200, 3), 90, np.uint8)
    perceived(tel, CountChanged(t=1.0, count=2, previous=None, raw=3, t_media=1.0))
    tel.on_percept(scene_percept(image=image))
    snap = tel.snapshot_jpeg()
    assert snap is not None
    drawn = cv2.imdecode(np.frombuffer(snap[1], np.uint8), cv2.IMREAD_COLOR)
    assert drawn is not None
    assert drawn.shape == image.shape and (image == 90).all()  # drawn on a copy
    # The line, x = 100 px, in its colour where no label covers it.
    assert colour_near(drawn[25, 100], LINE_COLOR), drawn[25, 100]
    # The zone (lower half) is tinted blue; above it the frame is as it was.
    inside, outside = drawn[80, 185].astype(int), drawn[30, 185].astype(int)
    assert inside[0] > inside[2] + 25, inside
    assert abs(outside - 90).max() < 15, outside
    # A confirmed person: a green box; the tentative track's box: thin and grey.
    assert colour_near(drawn[60, 120], BOX_COLOR), drawn[60, 120]
    assert colour_near(drawn[25, 180], DETECTION_COLOR, 30), drawn[25, 180]
    # The lost track (a prediction, not a box in this frame) is not drawn at all.
    assert abs(drawn[30, 60].astype(int) - 90).max() < 15, drawn[30, 60]


def zone_snapshot(zones: dict[str, ZoneState] | None) -> np.ndarray:
    """The snapshot of a grey 200x100 frame with the plaza zone only (no line label over it)."""
    config = Config.model_validate({"device_id": "zone-cam", "model": "local", "zones": [ZONE]})
    tel = Telemetry(FakeApp(config=config, perception=TrackedPerception()))
    image = np.full((100, 200, 3), 90, np.uint8)
    tel.on_percept(make_percept([], image=image, tracks=[], zones=zones))
    snap = tel.snapshot_jpeg()
    assert snap is not None
    drawn = cv2.imdecode(np.frombuffer(snap[1], np.uint8), cv2.IMREAD_COLOR)
    assert drawn is not None and drawn.shape == image.shape
    return drawn.astype(int)


def test_a_zone_that_is_unknown_is_drawn_with_no_number_and_a_frame_without_the_scene_too() -> None:
    """What the page shows while a zone is unknown: the zone where it is, its label, no count.

    Each render is compared with the same frame rendered with the zone known (0 to 9 people):
    everywhere but the count's glyph they are the same picture, and that glyph is none of
    the digits (it is the ``?``).
    """
    counted = {
        n: zone_snapshot({"plaza": ZoneState("plaza", n, 0, 0.0, 5.0, ())}) for n in range(10)
    }
    # Where the digits differ from one another: the count's glyph in the zone's label.
    glyph = np.zeros(counted[0].shape[:2], bool)
    for n in range(1, 10):
        glyph |= np.abs(counted[n] - counted[0]).max(axis=2) > 40
    ys, xs = np.nonzero(glyph)
    assert len(ys), "the zone's count is not drawn"
    y0, y1, x0, x1 = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
    assert y1 <= 50 and x1 < 100  # in the label, above the zone's top left corner (0, 0.5)
    # Away from the glyph (JPEG blocks of 16 px around it may differ): the same picture.
    elsewhere = np.ones(glyph.shape, bool)
    elsewhere[max(0, y0 - 16) : y1 + 16, max(0, x0 - 16) : x1 + 16] = False

    no_scene = zone_snapshot(None)  # the percept carries no scene at all
    unknown = zone_snapshot({"plaza": ZoneState("plaza", None, None, 0.0, 5.0, ())})
    assert np.abs(no_scene - unknown).max() < 10  # both are the unknown zone
    for drawn in (no_scene, unknown):
        # The zone is still there: tinted blue inside (the lower half), outlined, labelled.
        inside, outside = drawn[80, 150], drawn[20, 150]
        assert inside[0] > inside[2] + 25 and np.abs(outside - 90).max() < 15, (inside, outside)
        assert np.abs(drawn - counted[3]).max(axis=2)[elsewhere].max() < 25
        # Where the count would be, no digit.
        for n, known in counted.items():
            difference = np.abs(drawn[y0:y1, x0:x1] - known[y0:y1, x0:x1]).mean()
            assert difference > 8, (n, difference)  # two digits differ here by 18 or more


async def first_sse(response: aiohttp.ClientResponse) -> dict[str, Any]:
    while True:
        line = (await response.content.readline()).decode()
        if line.startswith("data: "):
            parsed: dict[str, Any] = json.loads(line[6:])
            return parsed


@pytest.mark.anyio
async def test_api_state_and_the_event_stream_carry_lines_zones_and_tracks() -> None:
    async with serving(scene_app()) as (tel, base), aiohttp.ClientSession() as http:
        perceived(tel, CountChanged(t=1.0, count=2, previous=None, raw=2, t_media=1.0))
        tel.on_percept(scene_percept(entered=5, exited=2, people=2))
        async with http.get(base + "/api/state") as response:
            state = await response.json()
        async with http.get(base + "/events") as events:
            with anyio.fail_after(5):
                streamed = await first_sse(events)
        async with http.get(base + "/metrics") as response:
            body = await response.text()
    for data in (state, streamed):
        assert (data["lines"]["post"]["in"], data["lines"]["post"]["out"]) == (5, 2)
        assert data["zones"]["plaza"]["people"] == 2
        assert [t["id"] for t in data["tracks"] if t["state"] == "confirmed"] == [7, 9]
    assert 'lookout_line_crossings_total{camera="main",direction="out",line="post"} 2.0' in body
