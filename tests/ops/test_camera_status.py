"""Two cameras on one device: /api/state, /healthz, /metrics and the images, per camera.

A fake of the device (cameras door and till) behind the real status server on loopback:
each camera's events and percepts go to that camera alone; the page's state carries
every camera, its top level the first camera's; health names the camera that does not
count; every count, line, zone and perception series is labelled with its camera.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import aiohttp
import anyio
import cv2
import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families

from device.events import CountChanged, LineCrossed, SourceStateEvent, ZoneCount
from device.feeds.runner import SourceState
from device.outputs.telemetry import Telemetry
from device.vision.percept import CountUnknown, LineTotals, Percept, ZoneState
from tests.ops.support import FakeApp, perceived, serving, two_cameras
from tests.ops.test_status_server import next_sse
from tests.percepts import make_percept

pytestmark = pytest.mark.anyio
DOOR_LINE = {"post": {"points": [[0.5, 0.9], [0.5, 0.1]]}}
TILL_ZONE = {"queue": {"points": [[0.1, 0.1], [0.6, 0.1], [0.6, 0.9], [0.1, 0.9]]}}
Metrics = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def shop(**till: Any) -> FakeApp:
    """Cameras door (a line, post) and till (a zone, queue; ``till``: its own settings)."""
    app = two_cameras(till={"zones": TILL_ZONE, **till})
    door = app.camera_list[0]
    door.config = door.config.model_copy(update={"lines": DOOR_LINE})
    return app


def seen(camera: str, people: int, grey: int = 60) -> Percept:
    """A percept of ``camera``: ``people`` boxes on a frame of one grey."""
    image = np.full((90, 120, 3), grey, np.uint8)
    percept = make_percept([[10, 10, 40, 80]] * people, image=image, detect_ms=8.0)
    if camera == "door":
        percept = dataclasses.replace(percept, lines={"post": LineTotals("post", 3, 1, "in")})
    else:
        percept = dataclasses.replace(percept, zones={"queue": ZoneState("queue", people, 0, 4.0)})
    return dataclasses.replace(percept, camera=camera)


def counted(camera: str, n: int) -> CountChanged:
    return CountChanged(t=1.0, count=n, previous=None, raw=n, t_media=1.0, camera=camera)


def metrics(telemetry: Telemetry) -> Metrics:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(telemetry.metrics_text().decode())
        for sample in family.samples
    }


def test_each_camera_has_its_own_count_lines_and_zones_and_the_top_level_is_the_first() -> None:
    tel = Telemetry(shop())
    tel.write(counted("door", 2))
    tel.on_percept(seen("door", 2))
    crossed = LineCrossed(line="post", direction="in", track=4, total_in=4, total_out=1,
                          t_media=1.0, camera="door")  # fmt: skip
    tel.write(crossed)
    # The page shows the crossing with the next percept, which holds the line's totals.
    assert tel.cameras["door"].lines["post"].entered == 3
    door_after = seen("door", 2)
    tel.on_percept(dataclasses.replace(door_after, lines={"post": LineTotals("post", 4, 1, "in")}))
    tel.write(SourceStateEvent(source="rtsp://u:secret@till/1", state="running", camera="till"))
    tel.write(counted("till", 1))
    tel.on_percept(seen("till", 1, grey=200))
    tel.write(ZoneCount(zone="queue", people=1, previous=0, dwelling=0, longest_s=5.0,
                        camera="till"))  # fmt: skip
    perceived(
        tel, CountChanged(t=2.0, count=None, previous=1, reason="till stalled", camera="till")
    )
    state = json.loads(json.dumps(tel.state()))  # plain JSON types only
    assert state["camera_names"] == ["door", "till"]
    door, till = state["cameras"]["door"], state["cameras"]["till"]
    assert door["count"] == 2 and door["count_reason"] is None and door["raw"] == 2
    assert door["lines"]["post"]["in"] == 4 and door["zones"] == {}
    assert till["count"] is None and till["count_reason"] == "till stalled"
    assert till["lines"] == {} and till["zones"]["queue"]["people"] is None  # unknown with it
    assert till["source"]["name"] == "rtsp://till/1" and door["source"]["name"] == ""
    assert (door["frame_seq"], till["frame_seq"]) == (2, 1)
    assert door["health"]["ok"] and not till["health"]["ok"]
    assert till["history"] == [[1.0, 1], [2.0, None]] and door["history"] == [[1.0, 2]]
    assert till["perception"]["detect_fps"] == 2.0 and till["perception"]["behind"] is False
    # The top level is the first camera's, as a device of one camera always had it.
    for key in ("count", "raw", "lines", "zones", "tracks", "frame_seq", "history", "source"):
        assert state[key] == door[key], key
    assert state["health"]["status"] == "degraded"
    assert state["health"]["reason"] == "camera till: count unknown: till stalled"


def test_a_percept_or_event_of_one_camera_never_moves_the_other() -> None:
    tel = Telemetry(shop())
    tel.write(counted("till", 3))
    tel.on_percept(seen("till", 3, grey=200))
    door, till = tel.cameras["door"], tel.cameras["till"]
    assert (door.count, door.raw, door.frame_seq) == (None, None, 0)
    assert (till.count, till.raw, till.frame_seq) == (3, 3, 1)
    assert door.snapshot_jpeg() is None and till.snapshot_jpeg() is not None


def test_health_is_ok_when_every_camera_counts_degraded_when_some_do_unhealthy_when_none() -> None:
    app = shop()
    tel = Telemetry(app)
    for camera in ("door", "till"):
        perceived(tel, counted(camera, 1))
    assert tel.health().status == "ok"
    app.camera_list[1].source_runner.state = SourceState.RECONNECTING
    tel.write(SourceStateEvent(source="rtsp://u:pw@till/1", state="reconnecting",
                               reason="read timeout; retry in 2 s", camera="till"))  # fmt: skip
    health = tel.health()
    assert health.ok and health.status == "degraded"
    assert health.reason == "camera till: source reconnecting (read timeout; retry in 2 s)"
    assert health.summary == "camera till: source reconnecting"  # states only: /healthz
    perceived(tel, CountChanged(t=3.0, count=None, previous=1, reason="no frame for 3 s",
                           camera="door"))  # fmt: skip
    health = tel.health()
    assert not health.ok
    assert health.summary == (
        "no camera counts: camera door: count unknown; camera till: source reconnecting"
    )
    values = metrics(tel)
    assert values[("lookout_healthy", ())] == 0
    assert values[("lookout_camera_counting", (("camera", "door"),))] == 0


async def test_healthz_names_the_camera_that_does_not_count_and_nothing_more() -> None:
    app = shop()
    async with serving(app) as (tel, base), aiohttp.ClientSession() as http:
        for camera in ("door", "till"):
            perceived(tel, counted(camera, 1))
        async with http.get(base + "/healthz") as ok:
            assert ok.status == 200 and (await ok.json())["status"] == "ok"
        app.camera_list[1].source_runner.state = SourceState.FAILED
        tel.write(SourceStateEvent(source="rtsp://u:pw@till.lan/1", state="failed",
                                   reason="401 Unauthorized", camera="till"))  # fmt: skip
        async with http.get(base + "/healthz") as degraded:
            assert degraded.status == 200
            body = await degraded.json()
        assert body == {"ok": True, "status": "degraded", "reason": "camera till: source failed"}
        app.camera_list[0].source_runner.state = SourceState.ENDED
        async with http.get(base + "/healthz") as down:
            assert down.status == 503
            text = await down.text()
        assert "camera door: source ended" in text and "camera till: source failed" in text
        assert "till.lan" not in text and "Unauthorized" not in text


async def test_metrics_label_each_camera_and_leave_an_unknown_count_out() -> None:
    app = shop()
    app.camera_list[1].achieved_fps, app.camera_list[1].behind = 1.4, True
    app.camera_list[1].detect_fps = 5.0
    app.camera_list[0].capture.stats.frames_read = 40
    app.camera_list[1].capture.stats.frames_read = 25
    async with serving(app) as (tel, base), aiohttp.ClientSession() as http:
        tel.write(counted("door", 2))
        tel.on_percept(seen("door", 2))
        tel.on_percept(seen("till", 1))
        tel.on_percept(CountUnknown("no frame for 3 s", camera="till"))  # a frame, then lost
        async with http.get(base + "/metrics") as response:
            text = await response.text()
    values = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }
    door, till = (("camera", "door"),), (("camera", "till"),)
    assert values[("lookout_people", door)] == 2
    assert ("lookout_people", till) not in values  # unknown: left out, never 0
    assert ("lookout_people_raw", till) not in values  # the last frame's number went with it
    assert values[("lookout_frames_read_total", door)] == 40
    assert values[("lookout_frames_read_total", till)] == 25
    assert (
        values[("lookout_line_crossings_total", (*door, ("direction", "in"), ("line", "post")))]
        == 3
    )
    assert not [k for k in values if k[0] == "lookout_zone_people"]  # till's count is unknown
    assert values[("lookout_detector_latency_seconds_count", door)] == 1
    assert values[("lookout_detector_latency_seconds_count", till)] == 1
    assert values[("lookout_detect_fps", till)] == 5
    assert values[("lookout_detect_fps_achieved", till)] == 1.4
    assert ("lookout_detect_fps_achieved", door) not in values  # not measured
    assert values[("lookout_detector_behind", till)] == 1
    assert values[("lookout_detector_behind", door)] == 0
    assert values[("lookout_source_state", (*till, ("state", "running")))] == 1
    assert values[("lookout_healthy", ())] == 1 and values[("lookout_degraded", ())] == 1
    # Adding them up reads the device as a whole.
    assert sum(v for (name, _), v in values.items() if name == "lookout_people") == 2


async def test_each_cameras_frames_are_served_by_name_and_a_private_one_serves_none() -> None:
    app = shop(privacy=True)  # till is private; door is not
    async with serving(app) as (tel, base), aiohttp.ClientSession() as http:
        for camera, grey in (("door", 40), ("till", 220)):
            tel.write(counted(camera, 1))
            tel.on_percept(seen(camera, 1, grey=grey))
        async with http.get(base + "/snapshot.jpg?camera=door") as door:
            assert door.status == 200
            image = cv2.imdecode(np.frombuffer(await door.read(), np.uint8), cv2.IMREAD_COLOR)
        assert abs(int(image[5, 115].mean()) - 40) < 20  # door's own frame (its top right corner)
        async with http.get(base + "/snapshot.jpg") as first:
            assert first.status == 200  # the first camera's
        async with http.get(base + "/snapshot.jpg?camera=till") as private:
            assert private.status == 404
            assert await private.text() == "privacy mode: no images are served\n"
        async with http.get(base + "/stream.mjpg?camera=till") as private:
            assert private.status == 404
        async with http.get(base + "/stream.mjpg?camera=porch") as unknown:
            assert unknown.status == 404
            assert await unknown.text() == "no camera named 'porch' (cameras: door, till)\n"
        async with http.get(base + "/stream.mjpg?camera=door") as stream:
            assert stream.status == 200
            assert b"image/jpeg" in await stream.content.readuntil(b"\r\n\r\n")
        async with http.get(base + "/api/state") as response:
            state = await response.json()
        assert state["cameras"]["till"]["privacy"] is True and state["privacy"] is False
        assert state["cameras"]["till"]["frame_seq"] == 0  # never kept, never served


async def test_the_event_stream_pushes_every_camera() -> None:
    async with serving(shop()) as (tel, base), aiohttp.ClientSession() as http:
        perceived(tel, counted("till", 4))
        async with http.get(base + "/events") as events:
            with anyio.fail_after(5):
                state = await next_sse(events)
    assert state["cameras"]["till"]["count"] == 4 and state["count"] is None
