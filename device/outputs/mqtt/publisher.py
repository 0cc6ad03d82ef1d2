"""MQTT: how a fleet of devices reports to one place (and to Home Assistant).

What the topics are and what they hold: ``device/outputs/mqtt/topics.py``; what
they hold now, and what each event changes there: ``device/outputs/mqtt/state.py``.

The publisher is an event sink (``write`` only queues, it never waits) and an
App service that owns the connection. What waits for the broker is in an
:class:`~device.outputs.mqtt.backlog.Backlog`: state (the count, a line's totals, a
zone's count, retained configs) only at its newest value, events (the events
topic, crossings, dwells) every one, bounded; an event pushed out of a full queue
is counted and said. Up to ``max_inflight`` messages are in flight at once (QoS
1), so a broker 50 ms away is not one message per round trip; a message leaves
only once acknowledged, so a broker restart loses nothing that was queued.

A clean exit sends what it can of the backlog in half of ``shutdown_timeout_s``,
then the goodbye (the final line totals, the counts unknown, ``offline``), and
disconnects cleanly only once the broker acknowledged all of it; otherwise it
drops the connection so that the broker fires the will: the broker never says
``online`` after the process is gone. Events that never reached the broker are
counted, said on the console, in ``/healthz`` and ``/metrics``, and make
``lookout run`` exit 3 (``undelivered``), as an incomplete event log does.

Here: the sink, and the service that connects (the id check first) and reconnects
with backoff. Apart: one connection's life (sending, the farewell or the abort)
``mqtt/connection.py``, its in-flight window ``mqtt/window.py``, what the broker
says back ``mqtt/reader.py``, the topics ``mqtt/topics.py`` and what they hold now
``mqtt/state.py`` (each camera's ``mqtt/camera.py``), the queue ``mqtt/backlog.py``,
the id check ``mqtt/presence.py``, health ``mqtt/health.py``, settings
``mqtt/settings.py``, the event pictures ``mqtt/images.py``, the client ``mqtt/client.py``.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import Callable, Hashable, Iterable, Mapping
from pathlib import Path

import aiomqtt
import anyio
from aiomqtt.exceptions import MqttConnectError
from anyio.abc import TaskStatus

from device.outputs.mqtt.backlog import Backlog, Entry, Message
from device.outputs.mqtt.client import publishing_client
from device.outputs.mqtt.connection import Connection
from device.outputs.mqtt.health import LinkHealth, MqttStats, client_error, mqtt_reason
from device.outputs.mqtt.images import ImageFeed, image_removal
from device.outputs.mqtt.presence import Instance, Presence, held_instance
from device.outputs.mqtt.reader import BrokerReader
from device.outputs.mqtt.settings import MqttSettings
from device.outputs.mqtt.state import CameraScene, Changes, MqttState
from device.outputs.mqtt.window import Window
from live.events import Event
from live.util.backoff import Backoff
from live.util.clock import Clock, MonotonicClock
from live.util.signal import Wakeup


class _Yielded(Exception):
    """Another process holds this device id: leave without publishing anything."""


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
        max_inflight: int = 64,
        keepalive_s: int = 30,
        timeout_s: float = 10.0,
        backoff_s: tuple[float, float] = (0.5, 10.0),
        stable_s: float = 10.0,
        shutdown_timeout_s: float = 2.0,
        heartbeat_s: float = 60.0,
        rediscover_s: float = 10.0,
        topic_prefix: str = "lookout",
        discovery_prefix: str = "homeassistant",
        clock: Clock | None = None,
        announce: Callable[[str], None] | None = None,
        instance: Instance | None = None,
        pictures: Path | None = None,
        private: bool = False,
        cameras: Mapping[str, CameraScene] | None = None,
        area: str | None = None,
    ) -> None:
        """``pictures``: the ``--snapshots`` folder, whose pictures are published (image
        entities); ``private`` (``--privacy``): none is, and an earlier run's are cleared.
        ``cameras``: the device's named cameras, each with its own topics, lines and zones
        (None: it names none; its one camera's lines and zones are ``lines`` and ``zones``)."""
        self.settings = settings
        self.model = model
        self.version = version
        self.max_queue = max_queue
        self.max_inflight = max_inflight
        self.keepalive_s = keepalive_s
        self.timeout_s = timeout_s
        self.backoff_s = backoff_s
        self.shutdown_timeout_s = shutdown_timeout_s
        self.heartbeat_s = heartbeat_s
        self.clock: Clock = clock or MonotonicClock()
        self.state = MqttState(
            device_id=device_id,
            model=model,
            version=version,
            heartbeat_s=heartbeat_s,
            topic_prefix=topic_prefix,
            discovery_prefix=discovery_prefix,
            images=pictures is not None and not private,
            private=private,
            cameras=cameras,
            area=area,
        )
        pictured = any(camera.images for camera in self.state.cameras.values())
        self.images = ImageFeed(pictures, self.state) if pictures and pictured else None
        self.device_id = self.state.device_id
        self.state_topic = self.state.topics.state_topic
        self.presence_topic = self.state.topics.presence_topic
        self.client_id = f"lookout-{device_id}"
        self.presence = Presence(instance or Instance.this_process())
        # Loading the CA store reads files: do it now, not on the event loop at each connect.
        self._tls = ssl.create_default_context() if settings.tls else None
        self.health = LinkHealth(
            str(settings),
            client_id=self.client_id,
            device_id=self.device_id,
            max_queue=max_queue,
            stable_s=stable_s,
            clock=self.clock,
            announce=announce,
        )
        self.stats = self.health.stats
        self.backlog = Backlog(max_queue)
        self._wakeup = Wakeup()
        self._connected_event = Wakeup()
        self.reader = BrokerReader(
            self.state,
            discovery_prefix=discovery_prefix,
            rediscover_s=rediscover_s,
            clock=self.clock,
            retain=self._put_retained,
            rediscover=self._rediscover,
            say=self.health.say,
        )
        # Per connection: the window of unacknowledged messages, and what was handed over.
        self.window = Window(max_inflight, self.stats)
        self.add_scene(lines=lines, zones=zones)
        for name, scene in (cameras or {}).items():
            self.add_scene(camera=name, lines=scene.lines, zones=scene.zones)

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
        return len(self.backlog) + len(self.window)

    @property
    def topics(self) -> MqttState:
        """What the topics hold (its name from before cameras had topics of their own)."""
        return self.state

    @property
    def latest_count(self) -> Message | None:
        """The first camera's count (a device of one camera: its only)."""
        return self.state.first.latest_count

    def add_scene(
        self, *, camera: str | None = None, lines: Iterable[str] = (), zones: Iterable[str] = ()
    ) -> None:
        """Report these lines and zones of ``camera`` (None: the first) too (their totals
        start at 0, their counts unknown)."""
        self._apply(self.state.add_scene(camera=camera, lines=lines, zones=zones))

    def write(self, event: Event) -> None:
        self._apply(self.state.on_event(event))
        if self.images is not None:
            self.images.offer(event)  # read off the loop by ``serve``

    def _apply(self, changes: Changes) -> None:
        if self.stats.connected:
            # The connect already announced the others; Home Assistant must learn of these,
            # before their state: whoever has seen the state finds the entity there too.
            for message in changes.configs:
                self._put_retained(message)
        for key in changes.states:
            self._put_state(key)
        for message in changes.events:
            self._put_event(message)

    def close(self) -> None:
        """Sink close: the connection belongs to ``run``, which flushes on cancellation."""

    # -------------------------------------------------------------- the backlog

    def _put_event(self, message: Message) -> None:
        self.stats.events += 1
        self.health.dropped(self.backlog.put_event(message))
        self._wakeup.set()

    def _put_state(self, key: Hashable, force: bool = False) -> None:
        self.backlog.put_state(key, force=force)
        self._wakeup.set()

    def _put_retained(self, message: Message) -> None:
        self.backlog.put_state(("topic", message.topic), message)
        self._wakeup.set()

    def _messages(self, entry: Entry) -> list[Message]:
        """What an entry is sent as: its message, or its state group as it is now (without
        what the broker was given already on this connection, unless forced)."""
        if entry.message is not None:
            return [entry.message]
        messages = self.state.state(entry.key)
        if entry.force:
            return messages
        return [m for m in messages if self.window.sent.get(m.topic) != m.payload]

    def _rediscover(self) -> None:
        """Home Assistant came back: the configs and the whole state again."""
        if self.stats.connected:
            for message in self._discovery():
                self._put_retained(message)
            for key in self.state.state_keys():
                self._put_state(key, force=True)

    def _discovery(self) -> list[Message]:
        """The discovery configs, then, for a camera under privacy, the removal of any image
        entity and picture an earlier run left (no image of it may stay on the broker)."""
        return self.state.discovery() + image_removal(self.state)

    # ------------------------------------------------------------- health

    def problems(self) -> list[str]:
        """What is wrong with publishing now (the page and /healthz say it: degraded)."""
        return self.health.problems()

    def undelivered(self) -> str | None:
        """Why some events never reached the broker (None: every one did); at exit."""
        return self.health.undelivered()

    # ------------------------------------------------------------ service

    async def run(self, *, task_status: TaskStatus[None]) -> None:
        # Started at once: the app must not wait for (or fail on) an absent broker.
        task_status.started()
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._heartbeat)
            await self.serve()

    async def _heartbeat(self) -> None:
        """Republish the known state now and then, so ``expire_after`` only fires on silence."""
        while True:
            await self.clock.sleep(self.heartbeat_s)
            for key in self.state.known_keys():
                self._put_state(key, force=True)

    async def wait_connected(self) -> None:
        while not self.stats.connected:
            await self._connected_event.wait()

    async def serve(self) -> None:
        """Connect, publish, reconnect with backoff; returns only by cancellation."""
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self.reader.rediscovery)
                if self.images is not None:
                    tg.start_soon(self.images.run, self._put_retained)
                await self._reconnecting()
        finally:
            self._account_exit()

    async def _reconnecting(self) -> None:
        backoff = Backoff(*self.backoff_s)
        failures = 0
        while not self.stats.clash:
            try:
                await self._connection()
            except _Yielded:
                break
            except MqttConnectError as exc:
                self.health.refused(str(exc.rc) if exc.rc is not None else str(exc))
                failures = max(failures, 64)  # a refusal is not fixed by retrying sooner
            except aiomqtt.MqttError as exc:
                self.health.failed(mqtt_reason(exc))
            except Exception as exc:
                # Not the broker's doing: the client refused what it was given (a setting
                # the start checks did not foresee). Said once; the run goes on without it.
                self.health.failed(client_error(exc))
                failures = max(failures, 64)
            finally:
                if self.health.ended():
                    failures = 0  # it was up: a new outage starts with a short wait
            if self.health.flapping():
                failures = max(failures, 64)  # each try knocks the other client off: rarely
            failures += 1
            await anyio.sleep(backoff.delay(failures))
        self.stats.connected = False
        await anyio.sleep_forever()  # only cancellation ends a publisher

    async def _connection(self) -> None:
        async with contextlib.AsyncExitStack() as stack:
            client = await stack.enter_async_context(
                publishing_client(
                    self.settings,
                    client_id=self.client_id,
                    will=self.state_topic,
                    keepalive_s=self.keepalive_s,
                    timeout_s=self.timeout_s,
                    tls=self._tls,
                    max_inflight=self.max_inflight,
                )
            )
            self.health.made()
            held = await held_instance(
                client, self.presence_topic, self.presence.me, min(self.timeout_s, 5.0)
            )
            other = self.presence.check(held)
            if other is not None:
                self._yield_to(other)
                raise _Yielded
            self.health.up()
            self._connected_event.set()
            connection = Connection(
                client,
                state=self.state,
                backlog=self.backlog,
                window=self.window,
                reader=self.reader,
                health=self.health,
                wakeup=self._wakeup,
                presence=Message(self.presence_topic, self.presence.me.payload(), 1, True),
                messages=self._messages,
                discovery=self._discovery,
                shutdown_timeout_s=self.shutdown_timeout_s,
            )
            lost = await connection.run(stack)
        if lost is not None:
            raise lost

    def _yield_to(self, other: Instance) -> None:
        self.health.clash(
            f"MQTT off: another Lookout ({other.describe()}) publishes as device id "
            f"'{self.device_id}' on {self.settings}; give each device its own --device-id "
            "(device_id in the config file)"
        )

    def _account_exit(self) -> None:
        """The process ends: events still waiting will never go; counted and said."""
        self.health.lost_at_exit(self.backlog.clear_events())


__all__ = [
    "Message",
    "MqttPublisher",
    "MqttSettings",
    "MqttStats",
]
