"""The MQTT topics of one device: their names, and what each holds.

This is what subscribers and Home Assistant read; ``MqttTopics`` names the topics,
``device/outputs/mqtt_state.py:MqttState`` (a ``MqttTopics``) keeps what they hold now
and makes the messages, and ``device/outputs/mqtt.py`` delivers them.

Topics, for a device ``<id>``:

- ``lookout/<id>/state``   ``online`` (retained) while connected; ``offline`` (retained)
  on a clean shutdown, and as the broker-held last will when the process dies.
- ``lookout/<id>/counting`` ``online`` (retained) while the count is known, ``offline``
  while it is not (the camera is down, no usable frame, the process starting or
  stopping).
- ``lookout/<id>/count``   the people count, JSON, retained: a subscriber that
  connects later learns the current count at once; ``{"count": null}`` when it
  becomes unknown, when the process starts and when it ends, so a restarted device
  never serves the last run's count as current. Never an empty payload: Home
  Assistant reads this topic as JSON (the sensors' templates and attributes), and an
  empty one is a template error and "Erroneous JSON" in its log at each start, outage
  and exit; ``counting: offline`` says the unknown, the null only keeps the value true. While
  known it is republished every ``heartbeat_s`` (the sensors' ``expire_after``
  backstop depends on it).
- ``lookout/<id>/events``  selected events as JSON (counts, crossings, zone counts,
  dwells, source and model connection states, model text, stream starts and stops,
  errors).
- ``lookout/<id>/line/<name>/in`` and ``.../out`` (retained): the line's totals
  since the run started, a plain integer; 0 at start, republished with the count.
  ``.../crossing`` (not retained): ``{"event_type": "in"|"out", ...}`` per crossing.
- ``lookout/<id>/zone/<name>/people`` (retained): the zone's count as
  JSON (``people``, ``previous``, ``dwelling``, ``longest_s``); ``.../counting``
  is the zone's own availability, and both follow the rules of ``count`` and
  ``counting`` above (``{"people": null, "dwelling": null}`` while unknown).
  ``.../dwell`` (not retained): ``{"event_type": "dwell", ...}``
  when someone has stayed past the zone's dwell time.
- ``.../line/<name>/image``, ``.../zone/<name>/image``, ``.../count/image`` (retained):
  the event pictures (``--snapshots``), sent by :mod:`device.outputs.mqtt_images`.
- ``lookout/<id>/instance`` (retained): which process publishes as ``<id>`` (see
  :mod:`device.outputs.mqtt_presence`: two devices with one id are found and one
  stops, instead of knocking each other off the broker twice a second).
- Home Assistant discovery configs (retained) under ``<discovery_prefix>/``,
  built by :mod:`device.outputs.ha_discovery` (which entities, and when each is
  available), sent at every connect and when Home Assistant comes back online
  (at most once per ``rediscover_s``: anyone can publish ``online`` there).
  Entities of lines and zones an earlier run had but this one has not are
  removed (their retained topics are cleared).
"""

from __future__ import annotations

from device.outputs.mqtt_settings import check_device_id


class MqttTopics:
    """The topic names of device ``device_id`` under ``topic_prefix``."""

    def __init__(self, *, device_id: str, topic_prefix: str = "lookout") -> None:
        self.device_id = check_device_id(device_id)
        base = f"{topic_prefix}/{device_id}"
        self.base_topic = base
        self.state_topic = f"{base}/state"
        self.count_topic = f"{base}/count"
        self.counting_topic = f"{base}/counting"
        self.events_topic = f"{base}/events"
        self.presence_topic = f"{base}/instance"

    def line_topic(self, name: str, leaf: str) -> str:
        return f"{self.base_topic}/line/{name}/{leaf}"

    def zone_topic(self, name: str, leaf: str) -> str:
        return f"{self.base_topic}/zone/{name}/{leaf}"


__all__ = ["MqttTopics"]
