"""Home Assistant MQTT discovery: which entities a device's MQTT topics become in Home Assistant.

This module only builds the discovery configs. Each one is a topic under
``<prefix>/<component>/<device_id>_<object_id>/config`` (``<device_id>_<camera>_<object_id>``
for a named camera's) plus the JSON-ready
config that tells Home Assistant which topics an entity reads. It does not
connect, publish or encode: :mod:`device.outputs.mqtt.publisher` owns the topics these
configs point at, and sends the configs as retained messages. Keeping the
discovery schema here means the publisher's topic and connection logic can be
read without Home Assistant's details in the way, and the reverse.

Each camera is a Home Assistant device of its own when the cameras are named
(identifiers ``lookout_<id>_<camera>``, named "Lookout <id> <camera>", linked to the
Lookout device ``lookout_<id>`` by ``via_device``), which then has one entity of its
own: whether the device is online (``device_configs``). A device that names no camera
is one Home Assistant device, ``lookout_<id>``, with its camera's entities, as before.

The entities, for a camera:

- a people sensor and an occupancy binary sensor, available only while both the
  state and the counting topics say ``online``, and expiring after
  ``3 * heartbeat_s`` without an update;
- per line, an in and an out sensor (``total_increasing``, available while the
  state is online, because a total stays true while the camera is down) and a
  crossing event entity;
- per zone, a people, an occupancy and a dwelling sensor (available while the
  state and the zone's counting topic say online) and a dwell event entity;
- with pictures (``--snapshots``, never under ``--privacy``), an ``image`` entity of the
  last count change, of each line's last crossing and of each zone's last dwell (JPEG
  bytes on a retained topic; available while the state is online: the last picture
  stays what it was while the camera is down, as a line's totals do).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol


def value(key: str) -> str:
    """A template of the number ``key`` of a JSON state, ``None`` (Home Assistant's
    unknown) when the payload is not JSON or the number is null, never a template error."""
    return f"{{{{ value_json.{key} if {_known(key)} else None }}}}"


def occupied(key: str) -> str:
    """ON while the number ``key`` is above 0, OFF at 0, ``None`` (unknown) otherwise."""
    return f"{{{{ ('ON' if value_json.{key} > 0 else 'OFF') if {_known(key)} else None }}}}"


def _known(key: str) -> str:
    return f"value_json is defined and value_json.{key} is number"


class Topics(Protocol):
    """The state topics the entities read, named by whoever publishes them."""

    @property
    def state_topic(self) -> str: ...

    @property
    def count_topic(self) -> str: ...

    @property
    def counting_topic(self) -> str: ...

    def line_topic(self, name: str, leaf: str) -> str: ...

    def zone_topic(self, name: str, leaf: str) -> str: ...


def image_topic(topics: Topics, of: str, name: str = "") -> str:
    """Where an image entity reads the picture of the last event of kind ``of`` (a line's
    crossing, a zone's dwell, a count change): beside that line's, zone's or count's topics
    (``device/outputs/mqtt/images.py`` publishes there)."""
    if of == "crossing":
        return topics.line_topic(name, "image")
    if of == "dwell":
        return topics.zone_topic(name, "image")
    return f"{topics.count_topic}/image"


@dataclass(frozen=True)
class EntityConfig:
    """One discovery config: where it goes, and what it says (not yet encoded)."""

    topic: str
    config: dict[str, Any]


class HomeAssistantDiscovery:
    """Discovery configs for one camera's people count, lines and zones (and the Lookout
    device's own entity)."""

    def __init__(
        self,
        topics: Topics,
        *,
        device_id: str,
        model: str = "",
        version: str = "",
        heartbeat_s: float = 60.0,
        prefix: str = "homeassistant",
        images: bool = False,
        camera: str | None = None,
        area: str | None = None,
    ) -> None:
        """``images``: the device writes pictures (an image entity for each event kind);
        ``camera``: the entities are this named camera's (None: the unnamed camera's,
        which are the device's own); ``area``: the Home Assistant area suggested for them."""
        self.topics = topics
        self.area = area
        self.images = images
        self.device_id = device_id
        self.camera = camera
        # What names its entities: their unique ids, object ids and Home Assistant device.
        self.key = device_id if camera is None else f"{device_id}_{camera}"
        self.model = model
        self.version = version
        self.heartbeat_s = heartbeat_s
        self.prefix = prefix

    def device(self) -> dict[str, Any]:
        """The device block every entity shares, so Home Assistant groups them: the
        Lookout device's, or a named camera's, linked to it."""
        device = {
            "identifiers": [f"lookout_{self.key}"],
            "name": " ".join(["Lookout", self.device_id, *([self.camera] if self.camera else [])]),
            "manufacturer": "Lookout",
            "model": f"Lookout edge vision agent ({self.model})" if self.model else "Lookout",
            "sw_version": self.version or None,
            "via_device": f"lookout_{self.device_id}" if self.camera else None,
            "suggested_area": self.area,
        }
        return {k: v for k, v in device.items() if v is not None}

    def device_configs(self) -> list[EntityConfig]:
        """The Lookout device's own entity, when its cameras are devices of their own (this
        one made with no camera): Home Assistant links a camera to it (``via_device``) only
        once it exists, which takes an entity. Whether the device is online: never
        unavailable, it is what the others' availability reads."""
        online = {
            "name": "Online",
            "unique_id": f"lookout_{self.key}_online",
            "state_topic": self.topics.state_topic,
            "device_class": "connectivity",
            "payload_on": "online",
            "payload_off": "offline",
            "entity_category": "diagnostic",
            "device": self.device(),
        }
        return [self._config("binary_sensor", "online", online)]

    def _available(self, *topics: str, expires: bool = True) -> dict[str, Any]:
        """Availability: every one of ``topics`` must say online."""
        common: dict[str, Any] = {
            "availability": [{"topic": topic} for topic in topics],
            "availability_mode": "all",
            "payload_available": "online",
            "payload_not_available": "offline",
            "device": self.device(),
        }
        if expires:
            # A backstop for a device that vanished without its last will reaching anyone.
            common["expire_after"] = round(3 * self.heartbeat_s)
        return common

    def _config(self, component: str, object_id: str, config: dict[str, Any]) -> EntityConfig:
        topic = f"{self.prefix}/{component}/{self.key}_{object_id}/config"
        return EntityConfig(topic, config)

    def configs(self, lines: Iterable[str] = (), zones: Iterable[str] = ()) -> list[EntityConfig]:
        """Every config: the device's people and occupancy, then each line's and zone's."""
        topics = self.topics
        common: dict[str, Any] = {
            "state_topic": topics.count_topic,
            # Both must say online: the process is up, and it knows the count.
            **self._available(topics.state_topic, topics.counting_topic),
        }
        sensor = {
            "name": "People",
            "unique_id": f"lookout_{self.key}_people",
            "value_template": value("count"),
            "json_attributes_topic": topics.count_topic,
            "unit_of_measurement": "people",
            "state_class": "measurement",
            "icon": "mdi:account-group",
            **common,
        }
        occupancy = {
            "name": "Occupancy",
            "unique_id": f"lookout_{self.key}_occupancy",
            "device_class": "occupancy",
            "value_template": occupied("count"),
            "payload_on": "ON",
            "payload_off": "OFF",
            **common,
        }
        configs = [
            self._config("sensor", "people", sensor),
            self._config("binary_sensor", "occupancy", occupancy),
        ]
        if self.images:
            configs.append(self.image_config("count", "", "Last count change"))
        for name in lines:
            configs += self.line_configs(name)
        for name in zones:
            configs += self.zone_configs(name)
        return configs

    def line_configs(self, name: str) -> list[EntityConfig]:
        """A line's in and out totals and its crossing event."""
        topics = self.topics
        # A total stays true while the camera is down (crossings are not lost, only
        # unseen), so only the process's state decides whether it is available.
        available = self._available(topics.state_topic)
        uid = f"lookout_{self.key}_line_{name}"
        icons = {"in": "mdi:account-arrow-right", "out": "mdi:account-arrow-left"}
        totals = [
            self._config(
                "sensor",
                f"line_{name}_{direction}",
                {
                    "name": f"{name} {direction}",
                    "unique_id": f"{uid}_{direction}",
                    "state_topic": topics.line_topic(name, direction),
                    "unit_of_measurement": "people",
                    # Home Assistant reads a drop (a restart's 0) as a reset, not a loss.
                    "state_class": "total_increasing",
                    "icon": icon,
                    **available,
                },
            )
            for direction, icon in icons.items()
        ]
        crossing = {
            "name": f"{name} crossing",
            "unique_id": f"{uid}_crossing",
            "state_topic": topics.line_topic(name, "crossing"),
            "event_types": ["in", "out"],
            "icon": "mdi:swap-horizontal",
            **self._available(topics.state_topic, expires=False),
        }
        configs = [*totals, self._config("event", f"line_{name}_crossing", crossing)]
        if self.images:
            configs.append(self.image_config("crossing", name, f"{name} last crossing"))
        return configs

    def image_config(self, of: str, name: str, title: str) -> EntityConfig:
        """The picture of the last event of a kind (``of``) at a line or zone (``name``)."""
        object_id = {"crossing": f"line_{name}_image", "dwell": f"zone_{name}_image"}.get(
            of, "count_image"
        )
        image = {
            "name": title,
            "unique_id": f"lookout_{self.key}_{object_id}",
            "image_topic": image_topic(self.topics, of, name),
            "content_type": "image/jpeg",  # raw JPEG bytes (no image_encoding: not base64)
            "icon": "mdi:image",
            # Image entities keep no expiry: the last picture is true until the next one.
            **self._available(self.topics.state_topic, expires=False),
        }
        return self._config("image", object_id, image)

    def zone_configs(self, name: str) -> list[EntityConfig]:
        """A zone's people, occupancy and dwelling sensors and its dwell event."""
        topics = self.topics
        counting = topics.zone_topic(name, "counting")
        # The same rules as the people sensor, with the zone's own "counting" topic.
        available = self._available(topics.state_topic, counting)
        uid = f"lookout_{self.key}_zone_{name}"
        state_topic = topics.zone_topic(name, "people")
        people = {
            "name": f"{name} people",
            "unique_id": f"{uid}_people",
            "state_topic": state_topic,
            "value_template": value("people"),
            "json_attributes_topic": state_topic,
            "unit_of_measurement": "people",
            "state_class": "measurement",
            "icon": "mdi:account-group",
            **available,
        }
        occupancy = {
            "name": f"{name} occupancy",
            "unique_id": f"{uid}_occupancy",
            "state_topic": state_topic,
            "device_class": "occupancy",
            "value_template": occupied("people"),
            "payload_on": "ON",
            "payload_off": "OFF",
            **available,
        }
        dwelling = {
            "name": f"{name} dwelling",
            "unique_id": f"{uid}_dwelling",
            "state_topic": state_topic,
            "value_template": value("dwelling"),
            "unit_of_measurement": "people",
            "state_class": "measurement",
            "icon": "mdi:account-clock",
            **available,
        }
        dwell = {
            "name": f"{name} dwell",
            "unique_id": f"{uid}_dwell",
            "state_topic": topics.zone_topic(name, "dwell"),
            "event_types": ["dwell"],
            "icon": "mdi:timer-sand",
            # Event entities keep no state, so there is nothing to expire.
            **self._available(topics.state_topic, counting, expires=False),
        }
        configs = [
            self._config("sensor", f"zone_{name}_people", people),
            self._config("binary_sensor", f"zone_{name}_occupancy", occupancy),
            self._config("sensor", f"zone_{name}_dwelling", dwelling),
            self._config("event", f"zone_{name}_dwell", dwell),
        ]
        if self.images:
            configs.append(self.image_config("dwell", name, f"{name} last dwell"))
        return configs

    def config_topics(self, kind: str, name: str, *, any_run: bool = False) -> list[str]:
        """The config topics of a ``"line"``'s or ``"zone"``'s entities (``"camera"``: the
        count's own); ``any_run``: also its image entity when this run has none (to remove
        what an earlier run left)."""
        if kind == "camera":
            configs, of = self.configs(), "count"
        else:
            configs = self.line_configs(name) if kind == "line" else self.zone_configs(name)
            of = "crossing" if kind == "line" else "dwell"
        topics = [config.topic for config in configs]
        image = self.image_config(of, name, "").topic
        return [*topics, image] if any_run and image not in topics else topics


__all__ = ["EntityConfig", "HomeAssistantDiscovery", "Topics", "image_topic", "occupied", "value"]
