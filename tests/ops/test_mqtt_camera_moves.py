"""A device that comes to name its cameras, or drops one, through a real Mosquitto (issue 34).

The publisher is driven directly, run after run on one broker, as a device restarted
with another configuration: naming the cameras moves the unnamed camera's topics and
Home Assistant entities once (removed, said in one line); a camera an earlier run had
is removed, and a device that names none again keeps no camera's. Each camera's
pictures go to its own topics; a camera under privacy sends none and clears its own.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from device.events import CountChanged, LineCrossed, ZoneCount
from device.outputs.mqtt.publisher import MqttPublisher
from device.outputs.mqtt.state import CameraScene
from tests.ops.support import Broker, Received, Subscriber
from tests.ops.test_mqtt import publisher, wait
from tests.ops.test_pictures_route import a_picture

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

BASE = "lookout/shop"
HA = "homeassistant"
SENTINEL = "test/sentinel"


def held(broker: Broker) -> dict[str, bytes]:
    """What the broker holds of the device and Home Assistant now (a later subscriber)."""
    seed = Subscriber(broker.port, ["nothing/here"])
    seed.client.publish(SENTINEL, b"1", qos=1, retain=True).wait_for_publish(5)
    seed.close()
    late = Subscriber(broker.port, [f"{BASE}/#", f"{HA}/#", SENTINEL])
    try:
        # A subscription's filters are answered in their order: the sentinel comes last.
        late.wait_for(lambda ms: any(m.topic == SENTINEL for m in ms), "the sentinel")
        return {m.topic: m.payload for m in late.messages if m.retain and m.topic != SENTINEL}
    finally:
        late.close()


async def a_run(
    pub: MqttPublisher,
    until: Callable[[list[Received]], bool],
    what: str,
    events: tuple[Any, ...] = (),
) -> None:
    """Run ``pub`` until the broker has shown ``until``, then exit (the goodbye)."""
    watch = Subscriber(pub.settings.port, [f"{BASE}/#", f"{HA}/#"])
    async with anyio.create_task_group() as tg:
        tg.start_soon(pub.serve)
        with anyio.fail_after(10):
            await pub.wait_connected()
        for event in events:
            pub.write(event)
        await wait(watch, until, what)
        tg.cancel_scope.cancel()
    watch.close()


def cleared(*topics: str) -> Callable[[list[Received]], bool]:
    def check(messages: list[Received]) -> bool:
        last = {m.topic: m.payload for m in messages}
        return all(last.get(topic) == b"" for topic in topics)

    return check


def has(topic: str) -> Callable[[list[Received]], bool]:
    return lambda messages: any(m.topic == topic and m.payload for m in messages)


def named(broker: Broker, cameras: dict[str, CameraScene], **options: Any) -> MqttPublisher:
    return publisher(broker, "shop", cameras=cameras, **options)


DOOR = CameraScene(lines=("post",))
TILL = CameraScene(zones=("queue",))
UNNAMED = [  # what a device that named no camera left, with a line and a zone
    f"{BASE}/count", f"{BASE}/counting", f"{BASE}/line/post/in", f"{BASE}/line/post/out",
    f"{BASE}/zone/queue/people", f"{BASE}/zone/queue/counting",
    f"{HA}/sensor/shop_people/config", f"{HA}/binary_sensor/shop_occupancy/config",
    f"{HA}/sensor/shop_line_post_in/config", f"{HA}/event/shop_line_post_crossing/config",
    f"{HA}/sensor/shop_zone_queue_people/config",
]  # fmt: skip


async def test_naming_the_cameras_moves_the_unnamed_cameras_topics_once_and_says_so(
    broker: Broker,
) -> None:
    before = publisher(broker, "shop", lines=["post"], zones=["queue"])
    crossing = LineCrossed(line="post", direction="in", track=1, t_media=1.0, total_in=1,
                           total_out=0)  # fmt: skip
    await a_run(before, has(f"{BASE}/line/post/in"), "the unnamed layout", (crossing,))
    assert set(UNNAMED) <= set(held(broker))

    said: list[str] = []
    after = named(broker, {"door": DOOR, "till": TILL}, announce=said.append)
    await a_run(after, cleared(*UNNAMED), "the unnamed layout removed")
    now = held(broker)
    assert not set(UNNAMED) & set(now), sorted(set(UNNAMED) & set(now))
    assert {f"{BASE}/door/line/post/in", f"{HA}/sensor/shop_door_people/config",
            f"{HA}/sensor/shop_till_zone_queue_people/config"} <= set(now)  # fmt: skip
    moved = [line for line in said if "cameras are named now" in line]
    assert len(moved) == 1 and f"{BASE}/<camera>/" in moved[0], said

    # Once: the next start finds nothing of the unnamed layout, and says nothing of it.
    said.clear()
    again = named(broker, {"door": DOOR, "till": TILL}, announce=said.append)
    await a_run(again, has(f"{BASE}/door/counting"), "the named layout")
    assert not [line for line in said if "cameras are named now" in line], said


async def test_a_camera_an_earlier_run_had_is_removed_and_naming_none_keeps_none(
    broker: Broker,
) -> None:
    till_topics = [f"{BASE}/till/count", f"{BASE}/till/counting",
                   f"{BASE}/till/zone/queue/people", f"{BASE}/till/zone/queue/counting",
                   f"{HA}/sensor/shop_till_people/config",
                   f"{HA}/sensor/shop_till_zone_queue_people/config"]  # fmt: skip
    both = named(broker, {"door": DOOR, "till": TILL})
    till_zone = ZoneCount(zone="queue", people=2, previous=None, dwelling=0, longest_s=0.0,
                          camera="till")  # fmt: skip
    await a_run(both, has(f"{BASE}/till/zone/queue/people"), "two cameras", (till_zone,))
    assert set(till_topics) <= set(held(broker))

    door_only = named(broker, {"door": DOOR})
    await a_run(door_only, cleared(*till_topics), "the till removed")
    now = held(broker)
    assert not set(till_topics) & set(now)
    assert {f"{BASE}/door/counting", f"{HA}/sensor/shop_door_people/config",
            f"{HA}/binary_sensor/shop_online/config"} <= set(now)  # fmt: skip

    # Back to one unnamed camera: no camera's entities, nor the Lookout device's own.
    door_topics = [f"{BASE}/door/count", f"{BASE}/door/line/post/in",
                   f"{HA}/sensor/shop_door_people/config",
                   f"{HA}/sensor/shop_door_line_post_in/config",
                   f"{HA}/binary_sensor/shop_online/config"]  # fmt: skip
    unnamed = publisher(broker, "shop", lines=["post"])
    await a_run(unnamed, cleared(*door_topics), "the door camera removed")
    now = held(broker)
    assert not set(door_topics) & set(now)
    assert {f"{BASE}/count", f"{BASE}/line/post/in", f"{HA}/sensor/shop_people/config"} <= set(now)


async def test_each_camera_sends_its_own_pictures_and_a_private_one_clears_its_own(
    broker: Broker, tmp_path: Path
) -> None:
    folder = tmp_path / "pics"
    door_picture = f"{BASE}/door/count/image"
    till_picture = f"{BASE}/till/count/image"
    till_entity = f"{HA}/image/shop_till_count_image/config"
    picture, _ = a_picture(folder)

    def shot(camera: str) -> tuple[Any, ...]:
        """A count change of ``camera`` and its picture."""
        counted = replace(picture, of="count", name="", track=None, camera=camera)
        return CountChanged(count=2, previous=None, camera=camera), counted

    open_run = named(broker, {"door": DOOR, "till": TILL}, pictures=folder)
    await a_run(
        open_run, lambda ms: has(door_picture)(ms) and has(till_picture)(ms), "both pictures",
        (*shot("door"), *shot("till")),
    )  # fmt: skip
    assert {door_picture, till_picture, till_entity} <= set(held(broker))

    private_till = CameraScene(zones=("queue",), private=True)
    shy = named(broker, {"door": DOOR, "till": private_till}, pictures=folder)
    assert not [m for m in shy.state.discovery() if "shop_till" in m.topic and "/image/" in m.topic]
    await a_run(shy, cleared(till_picture, till_entity), "the till's picture cleared",
                shot("till"))  # fmt: skip
    now = held(broker)
    assert till_picture not in now and till_entity not in now
    assert door_picture in now and f"{HA}/image/shop_door_count_image/config" in now
    config = json.loads(now[f"{HA}/image/shop_door_count_image/config"])
    assert config["image_topic"] == door_picture
