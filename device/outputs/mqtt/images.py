"""The newest picture of each line, zone and the count, read off the loop for MQTT.

A ``snapshot`` event (published once its JPEG is on disk) names a file; the publisher
offers it here, and ``run`` reads the file in a worker thread and hands the bytes to the
publisher as a retained message on the event's image topic (``ha_discovery.image_topic``:
``.../line/<name>/image``, ``.../zone/<name>/image``, ``.../count/image``), which Home
Assistant's ``image`` entities show. Only the newest picture of each topic waits: a
burst of crossings reads one file per line, not one per crossing. A picture pruned
before it was read (the folder's cap) is skipped; the topic keeps the one before.

Each camera's pictures go to its own topics; under ``--privacy`` (or a camera's own
``privacy``) none of its pictures is offered, and ``image_removal`` clears what an earlier
run with pictures left on the broker (the image entities, then their retained pictures).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import anyio

from device.events import SnapshotSaved
from device.outputs.mqtt.backlog import Message
from device.outputs.mqtt.camera import cleared
from device.outputs.mqtt.ha_discovery import image_topic
from device.outputs.mqtt.state import MqttState
from device.outputs.pictures.files import read_picture
from live.events import Event
from live.util.signal import Wakeup

log = logging.getLogger("lookout.mqtt")

# A broker's own limit (Mosquitto's message_size_limit, often set to 1 MB or so on shared
# brokers) refuses a bigger one and drops the connection: a picture above this is skipped.
MAX_IMAGE_BYTES = 1_000_000


class ImageFeed:
    """Pictures to publish, newest per topic; ``run`` reads and hands them over."""

    def __init__(self, folder: Path, state: MqttState, *, max_bytes: int = MAX_IMAGE_BYTES) -> None:
        self.folder = folder
        self.state = state
        self.max_bytes = max_bytes
        self._wanted: dict[str, str] = {}  # topic -> file name, in the order offered
        self._wakeup = Wakeup()
        self.sent = 0  # pictures handed to the publisher
        self.missing = 0  # named, but not there (pruned) or too large when read

    def offer(self, event: Event) -> None:
        """Bus event (through the publisher): a written picture goes to its topic."""
        if not isinstance(event, SnapshotSaved):
            return
        camera = self.state.camera_of(event)
        if camera is None or not camera.images:
            return  # a camera under privacy
        if event.of == "crossing" and event.name not in camera.latest_lines:
            return  # a line MQTT does not carry (its name cannot name a topic)
        if event.of == "dwell" and event.name not in camera.latest_zones:
            return
        topic = image_topic(camera.topics, event.of, event.name)
        self._wanted[topic] = event.file  # a newer picture replaces one not read yet
        self._wakeup.set()

    async def run(self, put: Callable[[Message], None]) -> None:
        """Read each wanted picture off the loop and ``put`` it (retained); runs until
        cancelled."""
        while True:
            while not self._wanted:
                await self._wakeup.wait()
            topic = next(iter(self._wanted))
            name = self._wanted.pop(topic)
            data = await anyio.to_thread.run_sync(read_picture, self.folder, name, self.max_bytes)
            if data is None:
                self.missing += 1
                log.info(
                    "MQTT: picture %s not sent (gone from %s, or too large)", name, self.folder
                )
                continue
            put(Message(topic, data, qos=1, retain=True))
            self.sent += 1


def image_removal(state: MqttState) -> list[Message]:
    """Empty retained messages: no image entity of a private camera's count, lines and
    zones, and no picture of theirs left on the broker (``--privacy``, after an earlier
    run's)."""
    messages: list[Message] = []
    for camera in state.cameras.values():
        if not camera.private:
            continue
        kinds = [("count", ""), *(("crossing", n) for n in camera.latest_lines),
                 *(("dwell", n) for n in camera.latest_zones)]  # fmt: skip
        discovery = camera.ha_discovery
        configs = [discovery.image_config(of, name, "").topic for of, name in kinds]
        pictures = [image_topic(camera.topics, of, name) for of, name in kinds]
        # The entities go first: Home Assistant never reads a cleared topic as a picture.
        messages += cleared([*configs, *pictures])
    return messages


__all__ = ["MAX_IMAGE_BYTES", "ImageFeed", "image_removal"]
