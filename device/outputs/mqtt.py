"""MQTT: how a fleet of devices reports to one place (and to Home Assistant).

Topics, for a device ``<id>``:

- ``lookout/<id>/state``   ``online`` (retained) while connected; ``offline`` (retained)
  on a clean shutdown, and as the broker-held last will when the process dies.
- ``lookout/<id>/counting`` ``online`` (retained) while the count is known, ``offline``
  while it is not (the camera is down, no usable frame, the process starting or
  stopping).
- ``lookout/<id>/count``   the people count, JSON, retained while it is known: a
  subscriber that connects later learns the current count at once; cleared (an
  empty retained message) when it becomes unknown and when the process starts,
  so a restarted device never serves the last run's count as current. While
  known it is republished every ``heartbeat_s`` (the sensors' ``expire_after``
  backstop depends on it).
- ``lookout/<id>/events``  selected events as JSON (counts, crossings, zone counts,
  dwells, source and model connection states, model text, stream starts and stops,
  errors).
- ``lookout/<id>/line/<name>/in`` and ``.../out`` (retained): the line's totals
  since the run started, a plain integer; 0 at start, republished with the count.
  ``.../crossing`` (not retained): ``{"event_type": "in"|"out", ...}`` per crossing.
- ``lookout/<id>/zone/<name>/people`` (retained while known): the zone's count as
  JSON (``people``, ``previous``, ``dwelling``, ``longest_s``); ``.../counting``
  is the zone's own availability, and both follow the rules of ``count`` and
  ``counting`` above. ``.../dwell`` (not retained): ``{"event_type": "dwell", ...}``
  when someone has stayed past the zone's dwell time.
- Home Assistant discovery configs (retained) under ``<discovery_prefix>/``,
  built by :mod:`device.outputs.ha_discovery` (which entities, and when each is
  available), sent at every connect and when Home Assistant comes back online.
  Entities of lines and zones an earlier run had but this one has not are
  removed (their retained topics are cleared).

The publisher is an event sink (``write`` only queues, it never waits) and an
App service that owns the connection. Messages wait in a bounded queue until
the broker acknowledges them (QoS 1), so a broker restart loses nothing that
was queued; if the queue overflows, the oldest messages go first, but the latest
count (and each line's totals and zone's count) is kept aside and republished
(retained) on every reconnect.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import ssl
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote, urlsplit

import aiomqtt
import anyio
from anyio.abc import TaskStatus

from device.app.config import ConfigError
from device.events import CountChanged, DwellPassed, LineCrossed, ZoneCount
from device.outputs.ha_discovery import EntityConfig, HomeAssistantDiscovery
from device.outputs.telemetry import AppView, strip_credentials
from live.backoff import Backoff
from live.clock import Clock, MonotonicClock
from live.events import Event
from live.redact import safe_url
from live.signal import Wakeup

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
_TOPIC_SAFE = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class MqttSettings:
    host: str
    port: int = 1883
    tls: bool = False
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    def __str__(self) -> str:
        scheme = "mqtts" if self.tls else "mqtt"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}"


def parse_mqtt(url: str) -> MqttSettings:
    """``mqtt://[user[:password]@]host[:port]`` (1883) or ``mqtts://...`` (TLS, 8883)."""
    shown = safe_url(url)
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        raise ConfigError(f"mqtt: expected mqtt://host[:port], not {shown!r}") from None
    if parts.scheme not in ("mqtt", "mqtts") or not parts.hostname:
        raise ConfigError(f"mqtt: expected mqtt://host[:port] or mqtts://..., not {shown!r}")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ConfigError(f"mqtt: the URL takes no path or query: {shown!r}")
    tls = parts.scheme == "mqtts"
    return MqttSettings(
        host=parts.hostname,
        port=port if port is not None else (8883 if tls else 1883),
        tls=tls,
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
    )


def check_device_id(device_id: str) -> str:
    if not _TOPIC_SAFE.fullmatch(device_id):
        raise ConfigError(
            f"device_id {device_id!r} cannot name MQTT topics: use letters, digits, - and _"
        )
    return device_id


def check_scene_name(kind: str, name: str) -> str:
    if not _TOPIC_SAFE.fullmatch(name):
        raise ConfigError(f"{kind} {name!r} cannot name MQTT topics: use letters, digits, - and _")
    return name


@dataclass(frozen=True)
class Message:
    topic: str
    payload: bytes
    qos: int = 1
    retain: bool = False


@dataclass
class MqttStats:
    connected: bool = False
    connects: int = 0
    published: int = 0
    dropped: int = 0
    queued: int = 0
    last_error: str = ""


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _json(data: dict[str, Any]) -> bytes:
    return json.dumps(data, separators=(",", ":")).encode()


def _retained(configs: Iterable[EntityConfig]) -> list[Message]:
    """Discovery configs as Home Assistant wants them: JSON, QoS 1, retained."""
    return [Message(config.topic, _json(config.config), 1, True) for config in configs]


class MqttPublisher:
    """Event sink + App service publishing one device's state to an MQTT broker."""

    def __init__(
        self,
        settings: MqttSettings,
        *,
        device_id: str,
        model: str = "",
        version: str = "",
        lines: Iterable[str] = (),
        zones: Iterable[str] = (),
        max_queue: int = 1000,
        keepalive_s: int = 30,
        timeout_s: float = 10.0,
        backoff_s: tuple[float, float] = (0.5, 10.0),
        shutdown_timeout_s: float = 2.0,
        heartbeat_s: float = 60.0,
        topic_prefix: str = "lookout",
        discovery_prefix: str = "homeassistant",
        clock: Clock | None = None,
    ) -> None:
        self.settings = settings
        self.device_id = check_device_id(device_id)
        self.model = model
        self.version = version
        self.max_queue = max_queue
        self.keepalive_s = keepalive_s
        self.timeout_s = timeout_s
        self.backoff_s = backoff_s
        self.shutdown_timeout_s = shutdown_timeout_s
        self.heartbeat_s = heartbeat_s
        self.clock: Clock = clock or MonotonicClock()
        self.discovery_prefix = discovery_prefix
        base = f"{topic_prefix}/{device_id}"
        self.base_topic = base
        self.state_topic = f"{base}/state"
        self.count_topic = f"{base}/count"
        self.counting_topic = f"{base}/counting"
        self.events_topic = f"{base}/events"
        self.client_id = f"lookout-{device_id}"
        self.ha_discovery = HomeAssistantDiscovery(
            self,
            device_id=self.device_id,
            model=model,
            version=version,
            heartbeat_s=heartbeat_s,
            prefix=discovery_prefix,
        )
        # Loading the CA store reads files: do it now, not on the event loop at each connect.
        self._tls = ssl.create_default_context() if settings.tls else None
        self.stats = MqttStats()
        self.latest_count: Message | None = None
        # Kept aside like latest_count: each line's retained totals (in, out), and each
        # zone's retained count (None while unknown).
        self.latest_lines: dict[str, tuple[Message, Message]] = {}
        self.latest_zones: dict[str, Message | None] = {}
        self._pending: deque[Message] = deque()
        self._wakeup = Wakeup()
        self._connected_event = Wakeup()
        self._outage = False
        self.add_scene(lines=lines, zones=zones)

    # ---------------------------------------------------------------- sink

    @property
    def connected(self) -> bool:
        return self.stats.connected

    @property
    def published(self) -> int:
        return self.stats.published

    @property
    def dropped(self) -> int:
        return self.stats.dropped

    @property
    def queued(self) -> int:
        return len(self._pending)

    def line_topic(self, name: str, leaf: str) -> str:
        return f"{self.base_topic}/line/{name}/{leaf}"

    def zone_topic(self, name: str, leaf: str) -> str:
        return f"{self.base_topic}/zone/{name}/{leaf}"

    def add_scene(self, *, lines: Iterable[str] = (), zones: Iterable[str] = ()) -> None:
        """Report these lines and zones too (their totals start at 0, their counts unknown)."""
        new: list[Message] = []
        for name in lines:
            if name not in self.latest_lines:
                check_scene_name("line", name)
                self.latest_lines[name] = self._totals(name, 0, 0)
                new += _retained(self.ha_discovery.line_configs(name))
                new += self.latest_lines[name]
        for name in zones:
            if name not in self.latest_zones:
                check_scene_name("zone", name)
                self.latest_zones[name] = None
                new += _retained(self.ha_discovery.zone_configs(name))
                new += self._zone_unknown(name)
        if self.stats.connected:
            # The connect already announced the others; Home Assistant must learn of these.
            for message in new:
                self._enqueue(message)

    def write(self, event: Event) -> None:
        if event.type not in EVENT_TYPES:
            return
        data = event.to_dict()
        if "source" in data and isinstance(data["source"], str):
            data["source"] = strip_credentials(data["source"])
        if isinstance(data.get("reason"), str):
            data["reason"] = strip_credentials(data["reason"])
        data["time"] = _now_iso()
        if isinstance(event, CountChanged):
            self._on_count(event, data)
        elif isinstance(event, LineCrossed):
            self._on_crossing(event)
        elif isinstance(event, ZoneCount):
            self._on_zone(event, data)
        elif isinstance(event, DwellPassed):
            self._on_dwell(event)
        self._enqueue(Message(self.events_topic, _json(data), qos=1, retain=False))

    def _on_count(self, event: CountChanged, data: dict[str, Any]) -> None:
        if event.count is None:
            # Unknown: the sensors go unavailable and no retained count is left standing.
            self.latest_count = None
            self._enqueue(self._counting())
            self._enqueue(Message(self.count_topic, b"", qos=1, retain=True))
            return
        count = {"count": event.count, "previous": event.previous, "t": data["t"],
                 "time": data["time"]}  # fmt: skip
        known_before = self.latest_count is not None
        self.latest_count = Message(self.count_topic, _json(count), qos=1, retain=True)
        self._enqueue(self.latest_count)
        if not known_before:
            self._enqueue(self._counting())

    def _counting(self) -> Message:
        """Whether the count is known, retained (Home Assistant's second availability)."""
        payload = b"online" if self.latest_count is not None else b"offline"
        return Message(self.counting_topic, payload, qos=1, retain=True)

    def _known(self, kind: str, name: str) -> bool:
        """Learn a name first seen in an event; False if it cannot name topics."""
        try:
            if kind == "line":
                self.add_scene(lines=[name])
            else:
                self.add_scene(zones=[name])
        except ConfigError as exc:
            log.warning("MQTT: not publishing %s: %s", kind, exc)
            return False
        return True

    def _totals(self, name: str, total_in: int, total_out: int) -> tuple[Message, Message]:
        return (
            Message(self.line_topic(name, "in"), str(total_in).encode(), 1, True),
            Message(self.line_topic(name, "out"), str(total_out).encode(), 1, True),
        )

    def _on_crossing(self, event: LineCrossed) -> None:
        if not self._known("line", event.line):
            return
        totals = self._totals(event.line, event.total_in, event.total_out)
        self.latest_lines[event.line] = totals
        for message in totals:
            self._enqueue(message)
        crossing = {"event_type": event.direction, "track": event.track,
                    "total_in": event.total_in, "total_out": event.total_out}  # fmt: skip
        self._enqueue(Message(self.line_topic(event.line, "crossing"), _json(crossing), 1, False))

    def _zone_counting(self, name: str, known: bool | None = None) -> Message:
        """Whether the zone's count is known: its sensors' second availability topic."""
        if known is None:
            known = self.latest_zones.get(name) is not None
        payload = b"online" if known else b"offline"
        return Message(self.zone_topic(name, "counting"), payload, qos=1, retain=True)

    def _zone_unknown(self, name: str, known: bool | None = None) -> list[Message]:
        # Unavailable first: Home Assistant must never read the empty payload as a value.
        return [
            self._zone_counting(name, known),
            Message(self.zone_topic(name, "people"), b"", qos=1, retain=True),
        ]

    def _on_zone(self, event: ZoneCount, data: dict[str, Any]) -> None:
        name = event.zone
        if not self._known("zone", name):
            return
        if event.people is None:
            self.latest_zones[name] = None
            for message in self._zone_unknown(name):
                self._enqueue(message)
            return
        state = {"people": event.people, "previous": event.previous, "dwelling": event.dwelling,
                 "longest_s": event.longest_s, "t": data["t"], "time": data["time"]}  # fmt: skip
        known_before = self.latest_zones.get(name) is not None
        latest = Message(self.zone_topic(name, "people"), _json(state), qos=1, retain=True)
        self.latest_zones[name] = latest
        self._enqueue(latest)
        if not known_before:
            self._enqueue(self._zone_counting(name))

    def _on_dwell(self, event: DwellPassed) -> None:
        if not self._known("zone", event.zone):
            return
        dwell = {"event_type": "dwell", "track": event.track, "seconds": event.seconds}
        self._enqueue(Message(self.zone_topic(event.zone, "dwell"), _json(dwell), 1, False))

    def _current(self, *, clear: bool) -> list[Message]:
        """The retained state as it is now, in an order that never shows an old or empty
        value as available: a known value before its ``online``, ``offline`` before a clear.

        ``clear``: also the empty messages that remove what is unknown now (at a
        connect, where the broker may hold an earlier run's values).
        """
        messages: list[Message] = []
        if self.latest_count is not None:
            messages += [self.latest_count, self._counting()]
        else:
            messages.append(self._counting())
            if clear:
                messages.append(Message(self.count_topic, b"", 1, True))
        for totals in self.latest_lines.values():
            messages += totals
        for name, latest in self.latest_zones.items():
            if latest is not None:
                messages += [latest, self._zone_counting(name)]
            elif clear:
                messages += self._zone_unknown(name)
            else:
                messages.append(self._zone_counting(name))
        return messages

    def close(self) -> None:
        """Sink close: the connection belongs to ``run``, which flushes on cancellation."""

    def _enqueue(self, message: Message) -> None:
        self._pending.append(message)
        while len(self._pending) > self.max_queue:
            self._pending.popleft()
            self.stats.dropped += 1
        self.stats.queued = len(self._pending)
        self._wakeup.set()

    # ----------------------------------------------------------- discovery

    def discovery(self) -> list[Message]:
        """Home Assistant MQTT discovery configs (retained)."""
        return _retained(self.ha_discovery.configs(self.latest_lines, self.latest_zones))

    def _removal(self, kind: str, name: str) -> list[Message]:
        """Empty retained messages that delete a line's or zone's entities and state."""
        leaves = ("in", "out") if kind == "line" else ("people", "counting")
        topic = self.line_topic if kind == "line" else self.zone_topic
        return [Message(t, b"", 1, True) for t in self.ha_discovery.config_topics(kind, name)] + [
            Message(topic(name, leaf), b"", 1, True) for leaf in leaves
        ]

    # ------------------------------------------------------------ service

    async def run(self, app: AppView, *, task_status: TaskStatus[None]) -> None:
        self.add_scene(lines=list(app.config.lines), zones=list(app.config.zones))
        # Started at once: the app must not wait for (or fail on) an absent broker.
        task_status.started()
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._heartbeat)
            await self.serve()

    async def _heartbeat(self) -> None:
        """Republish the known state now and then, so ``expire_after`` only fires on silence."""
        while True:
            await self.clock.sleep(self.heartbeat_s)
            waiting = {m.topic for m in self._pending}
            latest = [self.latest_count, *self.latest_zones.values()]
            for totals in self.latest_lines.values():
                latest += totals
            for message in latest:
                if message is not None and message.topic not in waiting:
                    self._enqueue(message)

    async def wait_connected(self) -> None:
        while not self.stats.connected:
            await self._connected_event.wait()

    async def serve(self) -> None:
        """Connect, publish, reconnect with backoff; returns only by cancellation."""
        backoff = Backoff(*self.backoff_s)
        failures = 0
        while True:
            try:
                await self._connection()
            except aiomqtt.MqttError as exc:
                reason = str(exc) or type(exc).__name__
                self.stats.last_error = reason
                if not self._outage:
                    # Once per outage: a broker away for an hour must not flood the log.
                    log.warning("MQTT broker %s: %s; reconnecting", self.settings, reason)
                    self._outage = True
            finally:
                if self.stats.connected:
                    failures = 0  # it was up: a new outage starts with a short wait
                self.stats.connected = False
            failures += 1
            await anyio.sleep(backoff.delay(failures))

    def _client(self) -> aiomqtt.Client:
        settings = self.settings
        return aiomqtt.Client(
            settings.host,
            settings.port,
            identifier=self.client_id,
            username=settings.username,
            password=settings.password,
            will=aiomqtt.Will(self.state_topic, b"offline", qos=1, retain=True),
            keepalive=self.keepalive_s,
            timeout=self.timeout_s,
            tls_context=self._tls,
        )

    async def _connection(self) -> None:
        lost: list[aiomqtt.MqttError] = []
        async with contextlib.AsyncExitStack() as stack:
            client = await stack.enter_async_context(self._client())
            self.stats.connected = True
            self.stats.connects += 1
            self._connected_event.set()
            if self._outage:
                log.warning("MQTT broker %s: connected again", self.settings)
                self._outage = False
            else:
                log.info("MQTT connected to %s as %s", self.settings, self.client_id)
            try:
                async with anyio.create_task_group() as tg:

                    async def guarded(part: Callable[[aiomqtt.Client], Awaitable[None]]) -> None:
                        try:
                            await part(client)
                        except aiomqtt.MqttError as exc:
                            lost.append(exc)
                            tg.cancel_scope.cancel()

                    tg.start_soon(guarded, self._watch)
                    tg.start_soon(guarded, self._send)
            except anyio.get_cancelled_exc_class():
                # The app is ending: deliver what is queued, say goodbye, and
                # disconnect cleanly (so the broker does not fire the will as well).
                with anyio.CancelScope(shield=True):
                    with anyio.move_on_after(self.shutdown_timeout_s):
                        await self._farewell(client)
                    with anyio.move_on_after(1.0):
                        await stack.aclose()
                raise
        if lost:
            raise lost[0]

    async def _watch(self, client: aiomqtt.Client) -> None:
        """Notices a lost connection (the iterator raises), Home Assistant restarts, and the
        lines and zones an earlier run left behind."""
        status = f"{self.discovery_prefix}/status"
        await client.subscribe(status, qos=1)
        # Every run leaves these retained for each of its lines and zones (totals
        # stay; a zone's counting says offline), so they name what an earlier run had.
        await client.subscribe(self.line_topic("+", "in"), qos=1)
        await client.subscribe(self.zone_topic("+", "counting"), qos=1)
        async for message in client.messages:
            payload = message.payload if isinstance(message.payload, bytes) else b""
            if message.topic.matches(status):
                if payload == b"online":
                    # Home Assistant came back: it wants the discovery configs and state again.
                    for item in self.discovery():
                        self._enqueue(item)
                    for item in self._current(clear=False):
                        self._enqueue(item)
                continue
            # Our own messages come back without the retain flag; retained ones are
            # what the broker held when we subscribed.
            if not message.retain or not payload:
                continue
            kind, name = message.topic.value.split("/")[-3:-1]
            known = self.latest_lines if kind == "line" else self.latest_zones
            if name not in known:
                log.info("MQTT: removing %s %r, which this run does not have", kind, name)
                for item in self._removal(kind, name):
                    self._enqueue(item)

    async def _publish(self, client: aiomqtt.Client, message: Message) -> None:
        await client.publish(message.topic, message.payload, qos=message.qos, retain=message.retain)
        self.stats.published += 1

    async def _send(self, client: aiomqtt.Client) -> None:
        # Before saying online: what the broker holds from before (an earlier run, a
        # count gone unknown) must not be taken as current by whoever subscribes next.
        for message in self._current(clear=True):
            # One still queued goes out in its turn; one the broker may have lost
            # (a restart without persistence) is said again.
            if not any(m is message for m in self._pending):
                await self._publish(client, message)
        await self._publish(client, Message(self.state_topic, b"online", 1, True))
        for message in self.discovery():
            await self._publish(client, message)
        while True:
            if not self._pending:
                await self._wakeup.wait()
                continue
            message = self._pending[0]
            await self._publish(client, message)
            # Removed only once acknowledged: a message in flight when the connection
            # drops is sent again after the reconnect.
            if self._pending and self._pending[0] is message:
                self._pending.popleft()
                self.stats.queued = len(self._pending)

    async def _farewell(self, client: aiomqtt.Client) -> None:
        while self._pending:
            message = self._pending[0]
            await self._publish(client, message)
            if self._pending and self._pending[0] is message:
                self._pending.popleft()
        self.stats.queued = len(self._pending)
        # The counts die with the process: nobody may take the last ones as current later.
        # (Line totals stay: they are what this run counted, and the next one resets them.)
        await self._publish(client, Message(self.counting_topic, b"offline", 1, True))
        await self._publish(client, Message(self.count_topic, b"", 1, True))
        for name in self.latest_zones:
            for message in self._zone_unknown(name, known=False):
                await self._publish(client, message)
        await self._publish(client, Message(self.state_topic, b"offline", 1, True))


__all__ = [
    "Message",
    "MqttPublisher",
    "MqttSettings",
    "MqttStats",
    "check_scene_name",
    "parse_mqtt",
]
