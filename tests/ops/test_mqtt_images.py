"""The event pictures on MQTT, through a real Mosquitto: Home Assistant ``image`` entities.

The real command on the sample video (a line over the lamp post, ``--snapshots``) sends
each line's last crossing as JPEG bytes on a retained topic, announced by discovery as
an ``image`` entity; the publisher driven directly shows what a run cannot stage on cue:
a burst sends the newest picture, a pruned one is skipped, and ``--privacy`` clears the
pictures and image entities an earlier run left on the broker.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import cv2
import numpy as np
import pytest

from device.events import DwellPassed, LineCrossed, SnapshotSaved
from tests.cli import lookout
from tests.datafiles import data_file
from tests.ops.support import Broker, Received, Subscriber
from tests.ops.test_mqtt import publisher, wait
from tests.ops.test_pictures_route import a_picture

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
POST = "post=0.5599,0.7292,0.5599,0.2083"  # as tests/device/test_snapshots.py: 7 crossings


def retained(broker: Broker, topics: list[str], until: str) -> dict[str, Received]:
    """What the broker holds on ``topics`` (a subscriber that comes later), once ``until``
    is among it."""
    late = Subscriber(broker.port, topics)
    try:
        late.wait_for(lambda ms: any(m.topic == until for m in ms), until)
        return {m.topic: m for m in late.messages if m.retain}
    finally:
        late.close()


def crossing(t: float, track: int) -> LineCrossed:
    return LineCrossed(line="door", direction="in", track=track, t_media=t, total_in=track,
                       total_out=0)  # fmt: skip


@pytest.mark.usefixtures("remembered_detections")
def test_a_run_sends_the_last_crossings_picture_and_its_image_entity(
    broker: Broker, tmp_path: Path
) -> None:
    folder = tmp_path / "snaps"
    events = tmp_path / "events.jsonl"
    live = Subscriber(broker.port, ["lookout/pics/line/post/image"])
    done = lookout(
        "run", "--pace", "fast", "--source", str(data_file("vtest.avi")), "--model", "local",
        "--http", "", "--duration", "20", "--line", POST, "--snapshots", str(folder),
        "--events", str(events), "--mqtt", broker.url, "--device-id", "pics",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    logged = [json.loads(line) for line in events.read_text().splitlines()]
    pictures = [e["file"] for e in logged if e["type"] == "snapshot" and e["of"] == "crossing"]
    assert len(pictures) >= 3
    files = {(folder / name).read_bytes(): name for name in pictures}
    image_topic = "lookout/pics/line/post/image"
    config_topic = "homeassistant/image/pics_line_post_image/config"
    held = retained(broker, ["lookout/pics/#", "homeassistant/image/#"], config_topic)
    # The broker holds a picture of a crossing: JPEG bytes, as written, that decode.
    picture = held[image_topic].payload
    assert picture in files
    image = cv2.imdecode(np.frombuffer(picture, np.uint8), cv2.IMREAD_COLOR)
    assert image is not None and image.shape[0] > 100
    # Sent as they came, each one a written picture; the broker keeps the newest it got.
    sent = [m.payload for m in live.messages]
    live.close()
    assert sent and all(payload in files for payload in sent)
    assert picture == sent[-1]
    config = json.loads(held[config_topic].payload)
    assert config["image_topic"] == image_topic
    assert config["content_type"] == "image/jpeg" and "image_encoding" not in config
    assert config["availability"] == [{"topic": "lookout/pics/state"}]
    assert config["device"]["identifiers"] == ["lookout_pics"]
    assert config["unique_id"] == "lookout_pics_line_post_image"
    count_config = json.loads(held["homeassistant/image/pics_count_image/config"].payload)
    assert count_config["image_topic"] == "lookout/pics/count/image"


async def test_a_burst_sends_the_newest_picture_and_a_pruned_one_is_skipped(
    broker: Broker, tmp_path: Path
) -> None:
    folder = tmp_path / "pics"
    topic = "lookout/burst/line/door/image"
    zone_topic = "lookout/burst/zone/queue/image"
    watch = Subscriber(broker.port, [topic, zone_topic])
    pub = publisher(broker, "burst", lines=["door"], zones=["queue"], pictures=folder)
    shots = [a_picture(folder, t=float(t), track=t) for t in (1, 2, 3)]
    pruned, _ = a_picture(folder, t=4.0, track=4)
    (folder / pruned.file).unlink()
    dwelt, dwell_jpeg = a_picture(folder, t=5.0, track=5)
    dwell = SnapshotSaved(file=dwelt.file, of="dwell", name="queue", track=5, t_media=5.0)
    async with anyio.create_task_group() as tg:
        tg.start_soon(pub.serve)
        with anyio.fail_after(10):
            await pub.wait_connected()
        for event, _ in shots:  # three crossings within one moment: one read, the newest
            pub.write(crossing(event.t_media, event.track or 0))
            pub.write(event)
        await wait(watch, lambda ms: len(ms) >= 1, "a picture")
        pub.write(crossing(4.0, 4))
        pub.write(pruned)  # gone before it was read: the topic keeps the one before
        pub.write(DwellPassed(zone="queue", track=5, seconds=12.0, t_media=5.0))
        pub.write(dwell)  # read after the pruned one: once it is here, that one was tried
        await wait(watch, lambda ms: any(m.topic == zone_topic for m in ms), "the dwell")
        tg.cancel_scope.cancel()
    newest = shots[-1][1]
    assert [m.payload for m in watch.on(topic)] == [newest]
    assert [m.payload for m in watch.on(zone_topic)] == [dwell_jpeg]
    assert pub.images is not None and pub.images.missing == 1
    held = retained(broker, ["lookout/burst/#"], topic)
    assert held[topic].payload == newest
    watch.close()


async def test_privacy_clears_the_pictures_and_image_entities_an_earlier_run_left(
    broker: Broker, tmp_path: Path
) -> None:
    folder = tmp_path / "pics"
    topic = "lookout/shy/line/door/image"
    config_topic = "homeassistant/image/shy_line_door_image/config"
    earlier = publisher(broker, "shy", lines=["door"], pictures=folder)
    event, jpeg = a_picture(folder)
    async with anyio.create_task_group() as tg:
        tg.start_soon(earlier.serve)
        with anyio.fail_after(10):
            await earlier.wait_connected()
        earlier.write(crossing(event.t_media, 4))
        earlier.write(event)
        watch = Subscriber(broker.port, [topic, config_topic])
        await wait(watch, lambda ms: {m.topic for m in ms} == {topic, config_topic}, "both")
        watch.close()
        tg.cancel_scope.cancel()
    assert retained(broker, [topic], topic)[topic].payload == jpeg
    private = publisher(broker, "shy", lines=["door"], pictures=folder, private=True)
    assert private.images is None
    assert not [m for m in private.topics.discovery() if m.payload and "/image/" in m.topic]
    watch = Subscriber(broker.port, [topic, config_topic])  # the earlier run's, retained

    def cleared(messages: list[Received]) -> bool:
        return {m.topic for m in messages if not m.payload} == {topic, config_topic}

    async with anyio.create_task_group() as tg:
        tg.start_soon(private.serve)
        with anyio.fail_after(10):
            await private.wait_connected()
        private.write(crossing(event.t_media, 5))
        private.write(event)  # never sent, whatever the folder holds
        await wait(watch, cleared, "the picture and its entity cleared")
        tg.cancel_scope.cancel()
    watch.close()
    assert not [m for m in watch.messages if m.payload and not m.retain]  # none sent anew
    # Who subscribes later gets neither (the state's retained offline comes after them:
    # a broker answers a subscription's topics in their order).
    state = "lookout/shy/state"
    held: dict[str, Any] = retained(broker, [topic, config_topic, state], state)
    assert set(held) == {state}


async def test_a_renamed_line_takes_its_image_entity_along(broker: Broker, tmp_path: Path) -> None:
    """An edit on the page: the old name's image entity and picture go, the new one's comes."""
    from tests.ops.test_mqtt_scene import edited, last_is

    folder = tmp_path / "pics"
    base = "lookout/ren"
    watch = Subscriber(broker.port, [f"{base}/#", "homeassistant/#"])
    pub = publisher(broker, "ren", lines=["door"], zones=["queue"], pictures=folder)
    event, _ = a_picture(folder)
    old_config = "homeassistant/image/ren_line_door_image/config"
    new_config = "homeassistant/image/ren_line_entrance_image/config"
    async with anyio.create_task_group() as tg:
        tg.start_soon(pub.serve)
        pub.write(crossing(event.t_media, 4))
        pub.write(event)
        await wait(watch, lambda ms: any(m.topic == f"{base}/line/door/image" for m in ms), "pic")
        pub.write(
            edited(
                [
                    ("line", "entrance", "renamed", "door"),
                    ("zone", "queue", "removed", ""),
                    ("zone", "till", "added", ""),
                ]
            )
        )
        await wait(
            watch,
            lambda ms: (
                last_is(old_config, b"")(ms)
                and last_is(f"{base}/line/door/image", b"")(ms)
                and any(m.topic == new_config and m.payload for m in ms)
            ),
            "the old image entity and picture cleared, the new entity announced",
        )
        tg.cancel_scope.cancel()
    watch.close()
    config = json.loads([m for m in watch.messages if m.topic == new_config][-1].payload)
    assert config["image_topic"] == f"{base}/line/entrance/image"
