"""What one camera's MQTT topics hold now, and what its events change there.

``CameraState`` keeps a camera's state groups (its count and ``counting``, each
line's totals, each zone's count and ``counting``), which the backlog sends at
their newest value, and turns the camera's events into messages: the groups they
change and the crossings and dwells, sent every one. Its topics are its
``CameraTopics`` (``device/outputs/mqtt/topics.py``), its Home Assistant entities
its ``HomeAssistantDiscovery``. The device's state, its cameras and its own
topics, is ``device/outputs/mqtt/state.py:MqttState``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from device.config.errors import ConfigError
from device.events import CountChanged, DwellPassed, LineCrossed, SceneChanged, ZoneCount
from device.outputs.mqtt.backlog import Message
from device.outputs.mqtt.ha_discovery import EntityConfig, HomeAssistantDiscovery, image_topic
from device.outputs.mqtt.settings import check_scene_name
from device.outputs.mqtt.topics import CameraTopics
from live.events import Event

log = logging.getLogger("lookout.mqtt")

# The count's and a zone's value while unknown: JSON with the keys Home Assistant's
# templates read (an empty payload is not JSON; see ``device/outputs/mqtt/topics.py``).
UNKNOWN_COUNT = b'{"count":null}'
UNKNOWN_ZONE = b'{"people":null,"dwelling":null}'


def as_json(data: dict[str, Any]) -> bytes:
    return json.dumps(data, separators=(",", ":")).encode()


def retained(configs: Iterable[EntityConfig]) -> list[Message]:
    """Discovery configs as Home Assistant wants them: JSON, QoS 1, retained."""
    return [Message(config.topic, as_json(config.config), 1, True) for config in configs]


def cleared(topics: Iterable[str]) -> list[Message]:
    """Empty retained messages: what deletes a retained topic (and a discovery config's
    entity)."""
    return [Message(topic, b"", 1, True) for topic in topics]


@dataclass
class Changes:
    """What one event or scene change asks the publisher to send."""

    states: list[Hashable] = field(default_factory=list)  # state groups, at their newest
    events: list[Message] = field(default_factory=list)  # sent every one
    configs: list[Message] = field(default_factory=list)  # new discovery configs (retained)


@dataclass(frozen=True)
class CameraScene:
    """What a camera reports from the start: its lines and zones; ``private``: it sends
    no pictures (``privacy`` in its settings), and an earlier run's are cleared."""

    lines: tuple[str, ...] = ()
    zones: tuple[str, ...] = ()
    private: bool = False
    area: str | None = None  # the Home Assistant area suggested for it


class CameraState:
    """One camera's topics, what they hold now, and the messages they are sent as."""

    def __init__(
        self,
        name: str,
        topics: CameraTopics,
        discovery: HomeAssistantDiscovery,
        *,
        private: bool = False,
    ) -> None:
        self.name = name
        self.topics = topics
        self.ha_discovery = discovery
        self.private = private
        self.count_key: Hashable = ("count", name)
        self.latest_count: Message | None = None
        # Each line's retained totals (in, out), and each zone's retained count (None
        # while unknown): what the state groups in the backlog are sent as.
        self.latest_lines: dict[str, tuple[Message, Message]] = {}
        self.latest_zones: dict[str, Message | None] = {}

    @property
    def images(self) -> bool:
        """Its pictures are published: an image entity of each kind."""
        return self.ha_discovery.images

    def key(self, kind: str, name: str) -> Hashable:
        return (kind, self.name, name)

    # ------------------------------------------------------------ changes

    def add_scene(self, *, lines: Iterable[str] = (), zones: Iterable[str] = ()) -> Changes:
        """Report these lines and zones too (their totals start at 0, their counts unknown)."""
        changes = Changes()
        for name in lines:
            if name not in self.latest_lines:
                check_scene_name("line", name)
                self.latest_lines[name] = self._totals(name, 0, 0)
                changes.configs += retained(self.ha_discovery.line_configs(name))
                changes.states.append(self.key("line", name))
        for name in zones:
            if name not in self.latest_zones:
                check_scene_name("zone", name)
                self.latest_zones[name] = None
                changes.configs += retained(self.ha_discovery.zone_configs(name))
                changes.states.append(self.key("zone", name))
        return changes

    def on_event(self, event: Event, data: dict[str, Any], changes: Changes) -> None:
        """What one of this camera's events changes (``data``: the event as published)."""
        if isinstance(event, CountChanged):
            self._on_count(event, data, changes)
        elif isinstance(event, LineCrossed):
            self._on_crossing(event, changes)
        elif isinstance(event, ZoneCount):
            self._on_zone(event, data, changes)
        elif isinstance(event, DwellPassed):
            self._on_dwell(event, changes)

    def on_scene(self, event: SceneChanged, changes: Changes) -> None:
        """Lines and zones edited: the entities of removed ones are deleted, a renamed one
        moves to its new topics with its values, a moved one starts at 0 (or unknown).

        The deletions go out with the discovery configs (only while connected: after a
        reconnect, ``mqtt/reader.py`` deletes what the broker still holds of names this run
        no longer has)."""
        for change in event.changes:
            kind, name, how = change["kind"], change["name"], change["how"]
            if how == "dwell":
                continue
            if how == "removed":
                self._forget(kind, name, changes)
                continue
            was, kept = event.before(kind, name)
            if was == name and not kept and self._reset(kind, name):
                changes.states.append(self.key(kind, name))  # moved: same entities, afresh
                continue
            carried = self._forget(kind, was, changes) if was else None
            added = self.add_scene(**{f"{kind}s": [name]})
            changes.configs += added.configs
            if kept and carried is not None:
                self._carry(kind, name, carried)
            changes.states.append(self.key(kind, name))

    def _reset(self, kind: str, name: str) -> bool:
        if kind == "line" and name in self.latest_lines:
            self.latest_lines[name] = self._totals(name, 0, 0)
            return True
        if kind == "zone" and name in self.latest_zones:
            self.latest_zones[name] = None
            return True
        return False

    def _forget(self, kind: str, name: str, changes: Changes) -> Any:
        """Stop reporting ``name``; what it had (None: nothing)."""
        latest: Mapping[str, Any] = self.latest_lines if kind == "line" else self.latest_zones
        if name not in latest:
            return None
        had = self.latest_lines.pop(name) if kind == "line" else self.latest_zones.pop(name)
        changes.configs += self.removal(kind, name)
        return had

    def _carry(self, kind: str, name: str, had: Any) -> None:
        if kind == "line":
            (total_in, total_out) = (int(m.payload) for m in had)
            self.latest_lines[name] = self._totals(name, total_in, total_out)
        elif had is not None:
            topic = self.topics.zone_topic(name, "people")
            self.latest_zones[name] = Message(topic, had.payload, had.qos, had.retain)

    def _on_count(self, event: CountChanged, data: dict[str, Any], changes: Changes) -> None:
        if event.count is None:
            # Unknown: the sensors go unavailable and no retained count is left standing.
            self.latest_count = None
        else:
            count = {"count": event.count, "previous": event.previous, "t": data["t"],
                     "time": data["time"]}  # fmt: skip
            self.latest_count = Message(self.topics.count_topic, as_json(count), 1, True)
        changes.states.append(self.count_key)

    def _known(self, kind: str, name: str, changes: Changes) -> bool:
        """Learn a name first seen in an event; False if it cannot name topics."""
        try:
            added = self.add_scene(lines=[name]) if kind == "line" else self.add_scene(zones=[name])
        except ConfigError as exc:
            log.warning("MQTT: not publishing %s: %s", kind, exc)
            return False
        changes.states += added.states
        changes.configs += added.configs
        return True

    def _totals(self, name: str, total_in: int, total_out: int) -> tuple[Message, Message]:
        return (
            Message(self.topics.line_topic(name, "in"), str(total_in).encode(), 1, True),
            Message(self.topics.line_topic(name, "out"), str(total_out).encode(), 1, True),
        )

    def _on_crossing(self, event: LineCrossed, changes: Changes) -> None:
        if not self._known("line", event.line, changes):
            return
        self.latest_lines[event.line] = self._totals(event.line, event.total_in, event.total_out)
        changes.states.append(self.key("line", event.line))
        crossing = {"event_type": event.direction, "track": event.track,
                    "total_in": event.total_in, "total_out": event.total_out}  # fmt: skip
        topic = self.topics.line_topic(event.line, "crossing")
        changes.events.append(Message(topic, as_json(crossing), 1, False))

    def _on_zone(self, event: ZoneCount, data: dict[str, Any], changes: Changes) -> None:
        name = event.zone
        if not self._known("zone", name, changes):
            return
        if event.people is None:
            self.latest_zones[name] = None
        else:
            state = {"people": event.people, "previous": event.previous,
                     "dwelling": event.dwelling, "longest_s": event.longest_s, "t": data["t"],
                     "time": data["time"]}  # fmt: skip
            topic = self.topics.zone_topic(name, "people")
            self.latest_zones[name] = Message(topic, as_json(state), 1, True)
        changes.states.append(self.key("zone", name))

    def _on_dwell(self, event: DwellPassed, changes: Changes) -> None:
        if not self._known("zone", event.zone, changes):
            return
        dwell = {"event_type": "dwell", "track": event.track, "seconds": event.seconds}
        topic = self.topics.zone_topic(event.zone, "dwell")
        changes.events.append(Message(topic, as_json(dwell), 1, False))

    # -------------------------------------------------------------- state

    def count_state(self) -> list[Message]:
        """The count and its ``counting``, in the order that never shows an old or empty
        value as available: a known value before its ``online``, ``offline`` before a clear."""
        if self.latest_count is not None:
            return [self.latest_count, Message(self.topics.counting_topic, b"online", 1, True)]
        return self.count_unknown()

    def count_unknown(self) -> list[Message]:
        return [
            Message(self.topics.counting_topic, b"offline", 1, True),
            Message(self.topics.count_topic, UNKNOWN_COUNT, 1, True),
        ]

    def zone_unknown(self, name: str) -> list[Message]:
        # Unavailable first: Home Assistant must never show the null as a value.
        return [
            Message(self.topics.zone_topic(name, "counting"), b"offline", 1, True),
            Message(self.topics.zone_topic(name, "people"), UNKNOWN_ZONE, qos=1, retain=True),
        ]

    def _zone_state(self, name: str) -> list[Message]:
        latest = self.latest_zones.get(name)
        if latest is None:
            return self.zone_unknown(name)
        return [latest, Message(self.topics.zone_topic(name, "counting"), b"online", 1, True)]

    def state(self, key: Hashable) -> list[Message]:
        """What one of its state groups is sent as, now."""
        if key == self.count_key:
            return self.count_state()
        assert isinstance(key, tuple)
        kind, _, name = key
        if kind == "line":
            # A line removed while its state waited in the backlog: nothing to send.
            return list(self.latest_lines.get(name, ()))
        if name not in self.latest_zones:
            return []
        return self._zone_state(name)

    def state_keys(self) -> list[Hashable]:
        return [self.count_key, *(self.key("line", n) for n in self.latest_lines),
                *(self.key("zone", n) for n in self.latest_zones)]  # fmt: skip

    def known_keys(self) -> list[Hashable]:
        """The groups whose value is known (what a heartbeat says again): the count and the
        zones while known, the line totals always."""
        known = [self.count_key] if self.latest_count is not None else []
        zones = [self.key("zone", n) for n, z in self.latest_zones.items() if z is not None]
        return [*known, *zones, *(self.key("line", n) for n in self.latest_lines)]

    def goodbye(self, sent: Mapping[str, bytes]) -> list[Message]:
        """Its final state: the counts unknown first (nobody may take the last ones as
        current later), then the line totals this run counted that the broker lacks
        (``sent``: topic -> payload it has)."""
        messages = self.count_unknown()
        for name in self.latest_zones:
            messages += self.zone_unknown(name)
        return messages + [
            m
            for totals in self.latest_lines.values()
            for m in totals
            if sent.get(m.topic) != m.payload
        ]

    def discovery(self) -> list[Message]:
        """Its Home Assistant discovery configs (retained)."""
        return retained(self.ha_discovery.configs(self.latest_lines, self.latest_zones))

    def removal(self, kind: str, name: str) -> list[Message]:
        """Empty retained messages that delete a line's or zone's entities and state."""
        leaves = ("in", "out", "image") if kind == "line" else ("people", "counting", "image")
        topic = self.topics.line_topic if kind == "line" else self.topics.zone_topic
        configs = self.ha_discovery.config_topics(kind, name, any_run=True)
        return cleared([*configs, *(topic(name, leaf) for leaf in leaves)])

    def removed(self) -> list[Message]:
        """Empty retained messages that delete the camera's own entities (its people,
        occupancy and picture) and its count (a camera an earlier run had)."""
        configs = self.ha_discovery.config_topics("camera", "", any_run=True)
        topics = self.topics
        return cleared([*configs, topics.counting_topic, topics.count_topic,
                        image_topic(topics, "count")])  # fmt: skip


__all__ = [
    "UNKNOWN_COUNT",
    "UNKNOWN_ZONE",
    "CameraScene",
    "CameraState",
    "Changes",
    "as_json",
    "cleared",
    "retained",
]
