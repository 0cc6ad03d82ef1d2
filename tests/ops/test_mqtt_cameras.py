"""Several cameras on MQTT and in Home Assistant (issue 34): one real ``lookout run``.

Three named cameras in one process, through a real Mosquitto: ``door`` (the sample
video, a line), ``till`` (a two-second clip, a zone: it ends early) and ``porch`` (a
camera nobody answers). A subscriber records everything from start to exit; a later
one reads what the broker holds after it. Each camera has its own topics under
``lookout/shop/<camera>/``, its own availability and its own Home Assistant device.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from device.outputs.mqtt.state import UNKNOWN_COUNT
from tests.cli import lookout
from tests.clips import write_clip
from tests.datafiles import data_file
from tests.detection_cache import remembered
from tests.ops.support import Broker, Received, Subscriber, free_port, mosquitto_path, need_tool
from tests.ops.test_mqtt_home_assistant import what_home_assistant_logs

pytestmark = pytest.mark.slow

BASE = "lookout/shop"
CAMERAS = ("door", "till", "porch")
POST = "0.5599,0.7292,0.5599,0.2083"  # as tests/device/test_cameras_run.py
QUEUE = "0.1,0.1,0.6,0.1,0.6,0.9,0.1,0.9"
SENTINEL = "test/sentinel"


@dataclass
class Run:
    said: str  # the console
    messages: list[Received]  # every message, in order, from before the start to the exit
    held: dict[str, Received]  # what the broker holds once the run ended (retained)

    def on(self, topic: str) -> list[Received]:
        return [m for m in self.messages if m.topic == topic]

    def config(self, component: str, object_id: str) -> dict[str, object]:
        held = self.held[f"homeassistant/{component}/shop_{object_id}/config"]
        config = json.loads(held.payload)
        assert isinstance(config, dict)
        return config


def counts(messages: list[Received]) -> list[int | None]:
    return [json.loads(m.payload)["count"] for m in messages]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, detections_folder: Path) -> Iterator[Run]:
    executable = need_tool(mosquitto_path(), "mosquitto", "mosquitto")
    folder = tmp_path_factory.mktemp("cameras")
    broker = Broker(executable, tmp_path_factory.mktemp("broker"))
    broker.start()
    try:
        till = write_clip(folder / "till.avi", 2.0, start_s=10.0, mirrored=True)
        (folder / "empty.toml").write_text("")
        watch = Subscriber(broker.port, [f"{BASE}/#", "homeassistant/#"])
        with remembered(detections_folder):
            done = lookout(
                "run", "--config", str(folder / "empty.toml"), "--model", "local", "--no-http",
                "--source", f"door={data_file('vtest.avi')}", "--source", f"till={till}",
                "--source", f"porch=http://127.0.0.1:{free_port()}/stream.mjpg",
                "--line", f"door:post={POST}", "--zone", f"till:queue={QUEUE}",
                "--pace", "fast", "--duration", "5", "--mqtt", broker.url, "--device-id", "shop",
            )  # fmt: skip
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        offline = Received(f"{BASE}/state", b"offline", False)
        watch.wait_for(lambda ms: offline in ms, "offline at the exit")
        watch.close()
        # Mosquitto answers a subscription's filters in their order: once the sentinel
        # (subscribed last) has come, everything retained before it has.
        seed = Subscriber(broker.port, ["nothing/here"])
        seed.client.publish(SENTINEL, b"1", qos=1, retain=True).wait_for_publish(5)
        seed.close()
        late = Subscriber(broker.port, [f"{BASE}/#", "homeassistant/#", SENTINEL])
        late.wait_for(lambda ms: any(m.topic == SENTINEL for m in ms), "the sentinel")
        late.close()
        held = {m.topic: m for m in late.messages if m.retain and m.topic != SENTINEL}
        yield Run(done.stdout, list(watch.messages), held)
    finally:
        broker.stop()


def test_each_camera_publishes_its_count_lines_and_zones_on_its_own_topics(run: Run) -> None:
    # Every topic is the device's own (state, events, instance) or one camera's.
    device = {f"{BASE}/state", f"{BASE}/events", f"{BASE}/instance"}
    mine = tuple(f"{BASE}/{camera}/" for camera in CAMERAS)
    stray = {m.topic for m in run.messages if m.topic.startswith(BASE)} - device
    assert {t for t in stray if not t.startswith(mine)} == set()
    # Each camera's own count: the door's and the till's counted, each on its topic.
    assert [c for c in counts(run.on(f"{BASE}/door/count")) if c is not None]
    assert [c for c in counts(run.on(f"{BASE}/till/count")) if c is not None]
    # The door's line, its totals as the console says them, each crossing on its topic.
    said = re.search(r"door: totals: line post (\d+) in, (\d+) out", run.said)
    assert said, run.said[-2000:]
    total_in, total_out = int(said[1]), int(said[2])
    assert total_in + total_out > 0
    assert run.held[f"{BASE}/door/line/post/in"].payload == str(total_in).encode()
    assert run.held[f"{BASE}/door/line/post/out"].payload == str(total_out).encode()
    crossings = [json.loads(m.payload) for m in run.on(f"{BASE}/door/line/post/crossing")]
    assert len(crossings) == total_in + total_out
    # The till's zone: its people while the clip ran, unknown once it ended.
    zone = [json.loads(m.payload)["people"] for m in run.on(f"{BASE}/till/zone/queue/people")]
    assert [p for p in zone if p is not None] and zone[-1] is None
    # Each camera's events on its own topic, saying whose; the device's, on the device's.
    for camera in CAMERAS:
        events = [json.loads(m.payload) for m in run.on(f"{BASE}/{camera}/events")]
        assert events and {e["camera"] for e in events} == {camera}
    kinds = {e["type"] for e in map(json.loads, (m.payload for m in run.on(f"{BASE}/events")))}
    assert kinds and not kinds & {"count", "crossing", "zone", "source_state", "capture_stats"}


def test_a_camera_that_ends_or_fails_takes_only_its_own_counting_offline(run: Run) -> None:
    said = [(i, m.topic.split("/")[2], m.payload) for i, m in enumerate(run.messages)
            if m.topic in {f"{BASE}/{c}/counting" for c in CAMERAS}]  # fmt: skip
    till = [(i, p) for i, camera, p in said if camera == "till"]
    online = next(i for i, p in till if p == b"online")
    ended = next(i for i, p in till if p == b"offline" and i > online)  # its clip ended
    door = [(i, p) for i, camera, p in said if camera == "door"]
    # The door was counting when the till ended, and went on counting after it.
    assert [p for i, p in door if i < ended][-1] == b"online"
    after = [m for m in run.messages[ended:] if m.topic == f"{BASE}/door/count"]
    assert [c for c in counts(after) if c is not None]
    # The porch's camera never answered: never counting, its count never a number.
    assert {p for _, camera, p in said if camera == "porch"} == {b"offline"}
    assert {m.payload for m in run.on(f"{BASE}/porch/count")} == {UNKNOWN_COUNT}
    # After the run, no camera's last count is left standing as current.
    for camera in CAMERAS:
        assert run.held[f"{BASE}/{camera}/counting"].payload == b"offline"
        assert run.held[f"{BASE}/{camera}/count"].payload == UNKNOWN_COUNT
    assert run.held[f"{BASE}/state"].payload == b"offline"


def test_each_camera_is_a_home_assistant_device_linked_to_the_lookout_device(run: Run) -> None:
    lookout_device = run.config("binary_sensor", "online")
    assert lookout_device["state_topic"] == f"{BASE}/state"
    own = lookout_device["device"]
    assert isinstance(own, dict) and "via_device" not in own
    assert (own["identifiers"], own["name"]) == (["lookout_shop"], "Lookout shop")
    for camera in CAMERAS:
        people = run.config("sensor", f"{camera}_people")
        device = people["device"]
        assert isinstance(device, dict)
        assert device["identifiers"] == [f"lookout_shop_{camera}"]
        assert device["name"] == f"Lookout shop {camera}"
        assert device["via_device"] == "lookout_shop"
        assert people["state_topic"] == f"{BASE}/{camera}/count"
        # Its own availability: the process is up, and this camera knows its count.
        assert people["availability"] == [{"topic": f"{BASE}/state"},
                                          {"topic": f"{BASE}/{camera}/counting"}]  # fmt: skip
        assert people["availability_mode"] == "all"
        assert run.config("binary_sensor", f"{camera}_occupancy")["device"] == device
    door = run.config("sensor", "door_people")["device"]
    line_in = run.config("sensor", "door_line_post_in")
    assert line_in["state_topic"] == f"{BASE}/door/line/post/in" and line_in["device"] == door
    queue = run.config("sensor", "till_zone_queue_people")
    assert queue["availability"] == [{"topic": f"{BASE}/state"},
                                     {"topic": f"{BASE}/till/zone/queue/counting"}]  # fmt: skip
    # No entity of the unnamed layout, and none twice.
    assert "homeassistant/sensor/shop_people/config" not in run.held
    configs = [json.loads(m.payload) for t, m in run.held.items() if t.endswith("/config")]
    assert len({c["unique_id"] for c in configs}) == len(configs)
    # Home Assistant reads every camera's states without an error in its log.
    assert what_home_assistant_logs(run.messages) == []
