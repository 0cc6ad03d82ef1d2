"""The MQTT topics of one device and of each of its cameras: their names, and what each holds.

This is what subscribers and Home Assistant read; ``MqttTopics`` names the device's
topics and gives each camera its ``CameraTopics``, ``device/outputs/mqtt/state.py:MqttState``
(which has them) keeps what they hold now, and ``device/outputs/mqtt/publisher.py`` delivers them.

Where a camera's topics are: a device that names no camera has one, ``main``, whose
topics are the device's own (``lookout/<id>/count``...), exactly as before cameras had
names. A device that names its cameras (``[cameras.door]``, ``--source door=...``) has
each camera's under its name: ``lookout/<id>/door/count``, ``lookout/<id>/door/line/post/in``.

Topics of the device ``<id>``:

- ``lookout/<id>/state``   ``online`` (retained) while connected; ``offline`` (retained)
  on a clean shutdown, and as the broker-held last will when the process dies.
- ``lookout/<id>/events``  the device's own events as JSON (model connection states,
  model text, stream starts and stops, errors); with one unnamed camera, its events too.
- ``lookout/<id>/instance`` (retained): which process publishes as ``<id>`` (see
  :mod:`device.outputs.mqtt.presence`: two devices with one id are found and one
  stops, instead of knocking each other off the broker twice a second).

Topics of a camera, under ``<cam>`` = ``lookout/<id>`` (unnamed) or ``lookout/<id>/<camera>``:

- ``<cam>/counting`` ``online`` (retained) while the camera's count is known, ``offline``
  while it is not (its source is down or ended, no usable frame, the process starting
  or stopping). One camera's source failing takes only its own ``counting`` offline.
- ``<cam>/count``   the people count, JSON, retained: a subscriber that
  connects later learns the current count at once; ``{"count": null}`` when it
  becomes unknown, when the process starts and when it ends, so a restarted device
  never serves the last run's count as current. Never an empty payload: Home
  Assistant reads this topic as JSON (the sensors' templates and attributes), and an
  empty one is a template error and "Erroneous JSON" in its log at each start, outage
  and exit; ``counting: offline`` says the unknown, the null only keeps the value true. While
  known it is republished every ``heartbeat_s`` (the sensors' ``expire_after``
  backstop depends on it).
- ``<cam>/events`` (named cameras) the camera's events as JSON (counts, crossings,
  zone counts, dwells, source states, capture stats), each with its ``camera``.
- ``<cam>/line/<name>/in`` and ``.../out`` (retained): the line's totals
  since the run started, a plain integer; 0 at start, republished with the count.
  ``.../crossing`` (not retained): ``{"event_type": "in"|"out", ...}`` per crossing.
- ``<cam>/zone/<name>/people`` (retained): the zone's count as
  JSON (``people``, ``previous``, ``dwelling``, ``longest_s``); ``.../counting``
  is the zone's own availability, and both follow the rules of ``count`` and
  ``counting`` above (``{"people": null, "dwelling": null}`` while unknown).
  ``.../dwell`` (not retained): ``{"event_type": "dwell", ...}``
  when someone has stayed past the zone's dwell time.
- ``<cam>/line/<name>/image``, ``<cam>/zone/<name>/image``, ``<cam>/count/image``
  (retained): the event pictures (``--snapshots``), sent by :mod:`device.outputs.mqtt.images`.

Home Assistant discovery configs (retained) under ``<discovery_prefix>/``, built by
:mod:`device.outputs.mqtt.ha_discovery` (which entities, and when each is available), are
sent at every connect and when Home Assistant comes back online (at most once per
``rediscover_s``: anyone can publish ``online`` there). Entities of cameras, lines
and zones an earlier run had but this one has not are removed (their retained topics
are cleared): a device that names its cameras for the first time moves its one
camera's topics and entities once, and says so.
"""

from __future__ import annotations

from device.outputs.mqtt.settings import check_device_id, check_scene_name


class CameraTopics:
    """The topic names of one camera (``camera`` None: the unnamed one, at the device's
    level), with the device's ``state_topic`` its entities' availability also reads."""

    def __init__(self, base: str, *, state_topic: str, camera: str | None = None) -> None:
        self.camera = camera
        self.base_topic = base
        self.state_topic = state_topic
        self.count_topic = f"{base}/count"
        self.counting_topic = f"{base}/counting"
        self.events_topic = f"{base}/events"

    def line_topic(self, name: str, leaf: str) -> str:
        return f"{self.base_topic}/line/{name}/{leaf}"

    def zone_topic(self, name: str, leaf: str) -> str:
        return f"{self.base_topic}/zone/{name}/{leaf}"


class MqttTopics:
    """The topic names of device ``device_id`` under ``topic_prefix``."""

    def __init__(self, *, device_id: str, topic_prefix: str = "lookout") -> None:
        self.device_id = check_device_id(device_id)
        base = f"{topic_prefix}/{device_id}"
        self.base_topic = base
        self.state_topic = f"{base}/state"
        self.events_topic = f"{base}/events"
        self.presence_topic = f"{base}/instance"

    def camera(self, name: str | None) -> CameraTopics:
        """Camera ``name``'s topics, under its name (None: the unnamed camera's, which are
        the device's own)."""
        if name is None:
            return CameraTopics(self.base_topic, state_topic=self.state_topic)
        check_scene_name("camera", name)
        return CameraTopics(f"{self.base_topic}/{name}", state_topic=self.state_topic, camera=name)

    def left_behind(self) -> list[str]:
        """What every run leaves retained for its cameras, lines and zones, in either layout
        (a camera's ``counting``, a line's ``in``, a zone's ``counting``): subscribed to at
        each connect, they name what an earlier run had."""
        base = self.base_topic
        unnamed = [f"{base}/counting", f"{base}/line/+/in", f"{base}/zone/+/counting"]
        return [*unnamed, *(t.replace(base, f"{base}/+", 1) for t in unnamed)]

    def place(self, topic: str) -> tuple[str | None, str, str] | None:
        """What a topic of ``left_behind`` names: its camera (None: the unnamed one), its kind
        (``camera``, ``line``, ``zone``) and name ("" for a camera); None: none of those."""
        parts = topic.removeprefix(f"{self.base_topic}/").split("/")
        camera: str | None = None
        if len(parts) in (2, 4):
            camera, parts = parts[0], parts[1:]
        if parts == ["counting"]:
            return camera, "camera", ""
        if len(parts) == 3 and (parts[0], parts[2]) in {("line", "in"), ("zone", "counting")}:
            return camera, parts[0], parts[1]
        return None


__all__ = ["CameraTopics", "MqttTopics"]
