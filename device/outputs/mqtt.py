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
- ``lookout/<id>/events``  selected events as JSON (counts, source and model
  connection states, model text, stream starts and stops, errors).
- Home Assistant discovery (retained): a people sensor and an occupancy binary
  sensor, available only while both the state and the counting topics say
  ``online``, and expiring after ``3 * heartbeat_s`` without an update.

The publisher is an event sink (``write`` only queues, it never waits) and an
App service that owns the connection. Messages wait in a bounded queue until
the broker acknowledges them (QoS 1), so a broker restart loses nothing that
was queued; if the queue overflows, the oldest messages go first, but the latest
count is kept aside and republished (retained) on every reconnect.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import ssl
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote, urlsplit

import aiomqtt
import anyio
from anyio.abc import TaskStatus

from device.app.config import ConfigError
from device.events import CountChanged
from device.outputs.telemetry import AppView, strip_credentials
from live.backoff import Backoff
from live.clock import Clock, MonotonicClock
from live.events import Event
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
    shown = strip_credentials(url)
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


class MqttPublisher:
    """Event sink + App service publishing one device's state to an MQTT broker."""

    def __init__(
        self,
        settings: MqttSettings,
        *,
        device_id: str,
        model: str = "",
        version: str = "",
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
        self.state_topic = f"{base}/state"
        self.count_topic = f"{base}/count"
        self.counting_topic = f"{base}/counting"
        self.events_topic = f"{base}/events"
        self.client_id = f"lookout-{device_id}"
        # Loading the CA store reads files: do it now, not on the event loop at each connect.
        self._tls = ssl.create_default_context() if settings.tls else None
        self.stats = MqttStats()
        self.latest_count: Message | None = None
        self._pending: deque[Message] = deque()
        self._wakeup = Wakeup()
        self._connected_event = Wakeup()
        self._outage = False

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
        device = {
            "identifiers": [f"lookout_{self.device_id}"],
            "name": f"Lookout {self.device_id}",
            "manufacturer": "Lookout",
            "model": f"Lookout edge vision agent ({self.model})" if self.model else "Lookout",
            "sw_version": self.version or None,
        }
        common: dict[str, Any] = {
            "state_topic": self.count_topic,
            # Both must say online: the process is up, and it knows the count.
            "availability": [{"topic": self.state_topic}, {"topic": self.counting_topic}],
            "availability_mode": "all",
            "payload_available": "online",
            "payload_not_available": "offline",
            # A backstop for a device that vanished without its last will reaching anyone.
            "expire_after": round(3 * self.heartbeat_s),
            "device": {k: v for k, v in device.items() if v is not None},
        }
        sensor = {
            "name": "People",
            "unique_id": f"lookout_{self.device_id}_people",
            "value_template": "{{ value_json.count }}",
            "json_attributes_topic": self.count_topic,
            "unit_of_measurement": "people",
            "state_class": "measurement",
            "icon": "mdi:account-group",
            **common,
        }
        occupancy = {
            "name": "Occupancy",
            "unique_id": f"lookout_{self.device_id}_occupancy",
            "device_class": "occupancy",
            "value_template": "{{ 'ON' if value_json.count > 0 else 'OFF' }}",
            "payload_on": "ON",
            "payload_off": "OFF",
            **common,
        }
        prefix = self.discovery_prefix
        return [
            Message(f"{prefix}/sensor/{self.device_id}_people/config", _json(sensor), 1, True),
            Message(
                f"{prefix}/binary_sensor/{self.device_id}_occupancy/config",
                _json(occupancy),
                1,
                True,
            ),
        ]

    # ------------------------------------------------------------ service

    async def run(self, app: AppView, *, task_status: TaskStatus[None]) -> None:
        # Started at once: the app must not wait for (or fail on) an absent broker.
        task_status.started()
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._heartbeat)
            await self.serve()

    async def _heartbeat(self) -> None:
        """Republish a known count now and then, so ``expire_after`` only fires on silence."""
        while True:
            await self.clock.sleep(self.heartbeat_s)
            latest = self.latest_count
            if latest is not None and not any(m.topic == self.count_topic for m in self._pending):
                self._enqueue(latest)

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
        """Notices a lost connection (the iterator raises) and Home Assistant restarts."""
        await client.subscribe(f"{self.discovery_prefix}/status", qos=1)
        async for message in client.messages:
            if bytes(message.payload or b"") == b"online":
                # Home Assistant came back: it wants the discovery configs and state again.
                for item in self.discovery():
                    self._enqueue(item)
                self._enqueue(self._counting())
                if self.latest_count is not None:
                    self._enqueue(self.latest_count)

    async def _publish(self, client: aiomqtt.Client, message: Message) -> None:
        await client.publish(message.topic, message.payload, qos=message.qos, retain=message.retain)
        self.stats.published += 1

    async def _send(self, client: aiomqtt.Client) -> None:
        await self._publish(client, Message(self.state_topic, b"online", 1, True))
        for message in self.discovery():
            await self._publish(client, message)
        await self._publish(client, self._counting())
        latest = self.latest_count
        if latest is None:
            # A retained count from before (an earlier run, a count gone unknown) must
            # not be taken as current by whoever subscribes next.
            await self._publish(client, Message(self.count_topic, b"", 1, True))
        elif not any(m is latest for m in self._pending):
            # The broker may have lost it (restart without persistence): say it again.
            await self._publish(client, latest)
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
        # The count dies with the process: nobody may take the last one as current later.
        await self._publish(client, Message(self.counting_topic, b"offline", 1, True))
        await self._publish(client, Message(self.count_topic, b"", 1, True))
        await self._publish(client, Message(self.state_topic, b"offline", 1, True))


__all__ = ["Message", "MqttPublisher", "MqttSettings", "MqttStats", "parse_mqtt"]
