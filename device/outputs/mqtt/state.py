"""What one device's MQTT topics hold now, and what each event changes there.

``MqttState`` has the device's topics (``MqttTopics``) and a ``CameraState`` per
camera (``device/outputs/mqtt/camera.py``: its count, lines and zones, and their
messages), and turns the bus's events into messages: a camera's events change its
state groups, which the backlog sends at their newest value, and go to its events
topic; the device's own events (the model's connection and text, streams, errors)
go to the device's. It knows no broker: ``device/outputs/mqtt/publisher.py`` delivers what
it makes. Where each topic is, and what it holds: ``device/outputs/mqtt/topics.py``.

It also says what an earlier run left on the broker that this one has not
(``leftover``): a camera, a line or a zone (removed), or, on a device that names
its cameras now, the unnamed camera's topics and entities (moved: removed once).
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial

from device.config.errors import ConfigError
from device.events import CameraEvent, SceneChanged
from device.outputs.mqtt.backlog import Message
from device.outputs.mqtt.camera import (
    UNKNOWN_COUNT,
    UNKNOWN_ZONE,
    CameraScene,
    CameraState,
    Changes,
    as_json,
    cleared,
    retained,
)
from device.outputs.mqtt.ha_discovery import HomeAssistantDiscovery
from device.outputs.mqtt.topics import MqttTopics
from device.vision.percept import MAIN_CAMERA
from live.events import Event
from live.util.redact import strip_credentials

log = logging.getLogger("lookout.mqtt")

EVENT_TYPES = frozenset(
    {
        "count",
        "source_state",
        "connection",
        "model_text",
        "transcript",
        "stream_started",
        "stream_stopped",
        "error",
        "capture_stats",
        "crossing",
        "zone",
        "dwell",
    }
)


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Leftover:
    """What an earlier run left on the broker that this run has not, and its removal."""

    what: str  # "line 'post' of camera 'door'", said in the log
    messages: list[Message]
    moved: bool = False  # the unnamed camera's, on a device that names its cameras now


class MqttState:
    """The topics of device ``device_id``, each camera's state, and the messages they are
    sent as. ``cameras``: the device's named cameras and what each reports from the start
    (None: it names none, and has one camera, ``main``, at the device's own topics)."""

    def __init__(
        self,
        *,
        device_id: str,
        model: str = "",
        version: str = "",
        heartbeat_s: float = 60.0,
        topic_prefix: str = "lookout",
        discovery_prefix: str = "homeassistant",
        images: bool = False,  # pictures are published: an image entity of each kind
        private: bool = False,  # no camera's are (--privacy), and an earlier run's go
        cameras: Mapping[str, CameraScene] | None = None,
        area: str | None = None,  # the Home Assistant area suggested (a camera's wins)
    ) -> None:
        self.topics = MqttTopics(device_id=device_id, topic_prefix=topic_prefix)
        self.device_id = self.topics.device_id
        self.named = cameras is not None
        self.discovery_prefix = discovery_prefix
        self._images, self._private = images, private
        self._entities = partial(
            HomeAssistantDiscovery,
            device_id=self.device_id,
            model=model,
            version=version,
            heartbeat_s=heartbeat_s,
            prefix=discovery_prefix,
        )
        # The Lookout device's own entity, when each camera is a device of its own.
        self.lookout = self._entities(self.topics.camera(None), area=area)
        self.cameras: dict[str, CameraState] = {}
        for name, scene in (cameras if cameras is not None else {MAIN_CAMERA: None}).items():
            hidden = private or (scene is not None and scene.private)
            where = (scene.area if scene is not None else None) or area
            self.cameras[name] = self._camera(
                name if self.named else None, private=hidden, area=where
            )
        self._unknown_cameras: set[str] = set()

    def _camera(
        self, name: str | None, *, private: bool = False, area: str | None = None
    ) -> CameraState:
        """Camera ``name``'s state (None: the unnamed one, at the device's topics)."""
        topics = self.topics.camera(name)
        images = self._images and not private
        discovery = self._entities(topics, images=images, camera=name, area=area)
        return CameraState(name or MAIN_CAMERA, topics, discovery, private=private)

    # The first camera's (a device of one camera: its only), as before cameras had names.

    @property
    def first(self) -> CameraState:
        return next(iter(self.cameras.values()))

    @property
    def ha_discovery(self) -> HomeAssistantDiscovery:
        return self.first.ha_discovery

    @property
    def latest_lines(self) -> Mapping[str, tuple[Message, Message]]:
        return self.first.latest_lines

    @property
    def latest_zones(self) -> Mapping[str, Message | None]:
        return self.first.latest_zones

    # ------------------------------------------------------------ changes

    def add_scene(
        self, *, camera: str | None = None, lines: Iterable[str] = (), zones: Iterable[str] = ()
    ) -> Changes:
        """Report these lines and zones of ``camera`` (None: the first) too."""
        state = self.first if camera is None else self.cameras[camera]
        return state.add_scene(lines=lines, zones=zones)

    def camera_of(self, event: Event) -> CameraState | None:
        """The camera whose state an event is of (None: the device's own event)."""
        if not isinstance(event, CameraEvent):
            return None
        if not self.named:
            return self.first
        state = self.cameras.get(event.camera)
        if state is None and event.camera not in self._unknown_cameras:
            # Cameras are the configuration's: one no camera has is a mistake, said once.
            self._unknown_cameras.add(event.camera)
            log.warning(
                "MQTT: not publishing events of camera %r: no camera of that name (cameras: %s)",
                event.camera,
                ", ".join(self.cameras),
            )
        return state

    def on_event(self, event: Event) -> Changes:
        """What ``event`` changes (nothing for an event MQTT does not carry)."""
        changes = Changes()
        camera = self.camera_of(event)
        if isinstance(event, SceneChanged):
            if camera is not None:
                camera.on_scene(event, changes)
            return changes
        if event.type not in EVENT_TYPES:
            return changes
        data = event.to_dict()
        if "source" in data and isinstance(data["source"], str):
            data["source"] = strip_credentials(data["source"])
        if isinstance(data.get("reason"), str):
            data["reason"] = strip_credentials(data["reason"])
        data["time"] = _now_iso()
        topic = self.topics.events_topic
        if camera is not None:
            camera.on_event(event, data, changes)
            topic = camera.topics.events_topic
        changes.events.append(Message(topic, as_json(data), qos=1, retain=False))
        return changes

    # -------------------------------------------------------------- state

    def state(self, key: Hashable) -> list[Message]:
        """What a state group (``(kind, camera, ...)``) is sent as, now."""
        assert isinstance(key, tuple)
        camera = self.cameras.get(key[1])
        return camera.state(key) if camera is not None else []

    def state_keys(self) -> list[Hashable]:
        return [key for camera in self.cameras.values() for key in camera.state_keys()]

    def known_keys(self) -> list[Hashable]:
        """The groups a heartbeat says again (``expire_after`` fires only on silence)."""
        return [key for camera in self.cameras.values() for key in camera.known_keys()]

    def current(self) -> list[Message]:
        """The whole retained state as it is now (at a connect, where the broker may hold an
        earlier run's values, and when Home Assistant comes back)."""
        return [m for key in self.state_keys() for m in self.state(key)]

    def goodbye(self, sent: Mapping[str, bytes]) -> list[Message]:
        """The final state: each camera's counts unknown and its line totals the broker
        lacks (``sent``: topic -> payload it has), and offline last."""
        messages = [m for camera in self.cameras.values() for m in camera.goodbye(sent)]
        messages.append(Message(self.topics.state_topic, b"offline", 1, True))
        return messages

    def discovery(self) -> list[Message]:
        """Home Assistant MQTT discovery configs (retained): the Lookout device's own first
        (a camera's device is linked to it), then each camera's."""
        own = retained(self.lookout.device_configs()) if self.named else []
        return own + [m for camera in self.cameras.values() for m in camera.discovery()]

    def removal(self, kind: str, name: str) -> list[Message]:
        """Empty retained messages that delete the first camera's line or zone ``name``."""
        return self.first.removal(kind, name)

    # ------------------------------------------------------------- leftovers

    def leftover(self, topic: str) -> Leftover | None:
        """What a retained topic an earlier run left (``MqttTopics.left_behind``) names that
        this run has not, and the messages that remove it (None: this run has it)."""
        place = self.topics.place(topic)
        if place is None:
            return None
        camera, kind, name = place
        ours = self.cameras.get(camera or "") if self.named else (None if camera else self.first)
        if ours is not None:
            had = ours.latest_lines if kind == "line" else ours.latest_zones
            if kind == "camera" or name in had:
                return None
            return Leftover(f"{kind} {name!r}{_of(camera)}", ours.removal(kind, name))
        try:
            gone = self._camera(camera)
        except ConfigError:
            return None  # not a name this device could have had
        if kind == "camera":
            moved = camera is None
            what = "the unnamed camera" if moved else f"camera {camera!r}"
            # A device that names no camera now has no entity of its own either.
            own = [] if self.named else cleared(c.topic for c in self.lookout.device_configs())
            return Leftover(what, [*own, *gone.removed()], moved=moved)
        return Leftover(f"{kind} {name!r}{_of(camera)}", gone.removal(kind, name))


def _of(camera: str | None) -> str:
    return f" of camera {camera!r}" if camera else ""


__all__ = [
    "EVENT_TYPES",
    "UNKNOWN_COUNT",
    "UNKNOWN_ZONE",
    "CameraScene",
    "Changes",
    "Leftover",
    "MqttState",
    "as_json",
    "retained",
]
