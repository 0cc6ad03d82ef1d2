"""MQTT: how a fleet of devices reports to one place (and to Home Assistant).

What the topics are and what they hold: ``device/outputs/mqtt_state.py``.

The publisher is an event sink (``write`` only queues, it never waits) and an
App service that owns the connection. What waits for the broker is in an
:class:`~device.outputs.mqtt_outbox.Outbox`: state (the count, a line's totals, a
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

Kept whole: one connection's life (connect, subscriptions,
reading, the in-flight window, the farewell or the abort) shares that
connection's client, its window and its cancel scopes; the parts with a job of
their own are apart (topics and state ``mqtt_state.py``, the queue
``mqtt_outbox.py``, the id check ``mqtt_presence.py``, health
``mqtt_health.py``, settings ``mqtt_settings.py``, the event pictures ``mqtt_images.py``).
"""

from __future__ import annotations

import contextlib
import logging
import re
import socket
import ssl
from collections.abc import Awaitable, Callable, Hashable, Iterable
from pathlib import Path

import aiomqtt
import anyio
from aiomqtt.exceptions import MqttConnectError
from anyio.abc import TaskGroup, TaskStatus

from device.outputs.mqtt_client import Client
from device.outputs.mqtt_health import LinkHealth, MqttStats
from device.outputs.mqtt_images import ImageFeed, image_removal
from device.outputs.mqtt_outbox import Entry, Message, Outbox
from device.outputs.mqtt_presence import Instance, Presence, held_instance
from device.outputs.mqtt_settings import MqttSettings
from device.outputs.mqtt_state import COUNT, Changes, MqttState
from live.backoff import Backoff
from live.clock import Clock, MonotonicClock
from live.events import Event
from live.signal import Wakeup

log = logging.getLogger("lookout.mqtt")
# aiomqtt's own log: answers to calls this publisher cancelled (at an exit, a lost
# connection) logged as errors with a traceback. What matters is said by the publisher.
client_log = logging.getLogger("lookout.mqtt.client")
client_log.setLevel(logging.CRITICAL)


def _reason(exc: BaseException) -> str:
    """An MQTT error as a reader wants it: what happened, not where aiomqtt noticed it."""
    text = str(exc)
    if text.startswith(("Disconnected during", "[code:7]")) or "Unexpected disconnection" in text:
        return "the connection was lost"  # paho's reason then is "Unspecified error"
    return re.sub(r"^\[code:\d+\] ", "", text).rstrip(".") or type(exc).__name__


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
    ) -> None:
        """``pictures``: the ``--snapshots`` folder, whose pictures are published (image
        entities); ``private`` (``--privacy``): none is, and an earlier run's are cleared."""
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
        self.rediscover_s = rediscover_s
        self.clock: Clock = clock or MonotonicClock()
        self.discovery_prefix = discovery_prefix
        self.topics = MqttState(
            device_id=device_id,
            model=model,
            version=version,
            heartbeat_s=heartbeat_s,
            topic_prefix=topic_prefix,
            discovery_prefix=discovery_prefix,
            images=pictures is not None and not private,
        )
        self.private = private
        self.images = (
            ImageFeed(pictures, self.topics) if pictures is not None and not private else None
        )
        self.device_id = self.topics.device_id
        self.state_topic = self.topics.state_topic
        self.presence_topic = self.topics.presence_topic
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
        self.outbox = Outbox(max_queue)
        self._wakeup = Wakeup()
        self._connected_event = Wakeup()
        self._rediscover_wanted = False
        self._rediscover = Wakeup()
        # Per connection: the window of unacknowledged messages, and what was handed over.
        self._window = anyio.Semaphore(max_inflight)
        self._inflight: dict[int, tuple[Entry | None, Message]] = {}
        self._serial = 0
        self._sent: dict[str, bytes] = {}
        self._acked = Wakeup()
        self._deliveries: TaskGroup | None = None
        self._connection_scope: anyio.CancelScope | None = None
        self._lost: list[aiomqtt.MqttError] = []
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
        return len(self.outbox) + len(self._inflight)

    @property
    def latest_count(self) -> Message | None:
        return self.topics.latest_count

    def add_scene(self, *, lines: Iterable[str] = (), zones: Iterable[str] = ()) -> None:
        """Report these lines and zones too (their totals start at 0, their counts unknown)."""
        self._apply(self.topics.add_scene(lines=lines, zones=zones))

    def write(self, event: Event) -> None:
        self._apply(self.topics.on_event(event))
        if self.images is not None:
            self.images.offer(event)  # read off the loop by ``serve``

    def _apply(self, changes: Changes) -> None:
        for key in changes.states:
            self._put_state(key)
        if self.stats.connected:
            # The connect already announced the others; Home Assistant must learn of these.
            for message in changes.configs:
                self._put_retained(message)
        for message in changes.events:
            self._put_event(message)

    def close(self) -> None:
        """Sink close: the connection belongs to ``run``, which flushes on cancellation."""

    # -------------------------------------------------------------- the outbox

    def _put_event(self, message: Message) -> None:
        self.stats.events += 1
        self.health.dropped(self.outbox.put_event(message))
        self._wakeup.set()

    def _put_state(self, key: Hashable, force: bool = False) -> None:
        self.outbox.put_state(key, force=force)
        self._wakeup.set()

    def _put_retained(self, message: Message) -> None:
        self.outbox.put_state(("topic", message.topic), message)
        self._wakeup.set()

    def _messages(self, entry: Entry) -> list[Message]:
        """What an entry is sent as: its message, or its state group as it is now (without
        what the broker was given already on this connection, unless forced)."""
        if entry.message is not None:
            return [entry.message]
        messages = self.topics.state(entry.key)
        if entry.force:
            return messages
        return [m for m in messages if self._sent.get(m.topic) != m.payload]

    async def _rediscovery(self) -> None:
        """Home Assistant said ``online``: configs and state again, at most once per
        ``rediscover_s`` however often it is said (anyone may publish it, in a flood)."""
        while True:
            while not self._rediscover_wanted:
                await self._rediscover.wait()
            self._rediscover_wanted = False
            if self.stats.connected:
                for message in self._discovery():
                    self._put_retained(message)
                for key in self.topics.state_keys():
                    self._put_state(key, force=True)
            await self.clock.sleep(self.rediscover_s)

    def _discovery(self) -> list[Message]:
        """The discovery configs; under privacy, then the removal of any image entity and
        picture an earlier run left (no image may stay on the broker)."""
        return self.topics.discovery() + (image_removal(self.topics) if self.private else [])

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
            if self.topics.latest_count is not None:
                self._put_state(COUNT, force=True)
            for name, latest in self.topics.latest_zones.items():
                if latest is not None:
                    self._put_state(("zone", name), force=True)
            for name in self.topics.latest_lines:
                self._put_state(("line", name), force=True)

    async def wait_connected(self) -> None:
        while not self.stats.connected:
            await self._connected_event.wait()

    async def serve(self) -> None:
        """Connect, publish, reconnect with backoff; returns only by cancellation."""
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._rediscovery)
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
                self.health.failed(_reason(exc))
            finally:
                if self.health.ended():
                    failures = 0  # it was up: a new outage starts with a short wait
            if self.health.flapping():
                failures = max(failures, 64)  # each try knocks the other client off: rarely
            failures += 1
            await anyio.sleep(backoff.delay(failures))
        self.stats.connected = False
        await anyio.sleep_forever()  # only cancellation ends a publisher

    def _client(self) -> aiomqtt.Client:
        settings = self.settings
        client = Client(
            settings.host,
            settings.port,
            identifier=self.client_id,
            username=settings.username,
            password=settings.password,
            will=aiomqtt.Will(self.state_topic, b"offline", qos=1, retain=True),
            keepalive=self.keepalive_s,
            timeout=self.timeout_s,
            tls_context=self._tls,
            max_inflight_messages=self.max_inflight,
            logger=client_log,
        )
        # A full window is how it should run, not a warning per message.
        client.pending_calls_threshold = self.max_inflight + 16
        return client

    async def _connection(self) -> None:
        self._lost = []
        async with contextlib.AsyncExitStack() as stack:
            client = await stack.enter_async_context(self._client())
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
            self._window = anyio.Semaphore(self.max_inflight)
            self._inflight = {}
            self._sent = {}
            try:
                async with anyio.create_task_group() as outer:
                    with anyio.CancelScope(shield=True):  # it starts at once, and must
                        deliveries, ending = await outer.start(self._delivery_group)
                    self._deliveries = deliveries
                    try:
                        async with anyio.create_task_group() as tg:
                            self._connection_scope = tg.cancel_scope
                            # Subscribing beside the reading: a subscribe waits for its
                            # answer, not for the connection; the reading notices at once
                            # that the connection dropped.
                            tg.start_soon(self._guarded, self._subscribe, client)
                            tg.start_soon(self._guarded, self._read, client)
                            tg.start_soon(self._guarded, self._send, client)
                    except anyio.get_cancelled_exc_class():
                        # The app is ending: deliver what it can, say goodbye, and disconnect
                        # cleanly only if the broker has the goodbye; else let it fire the will.
                        with anyio.CancelScope(shield=True):
                            said = await self._farewell(client)
                            ending.cancel()
                            if said:
                                with anyio.move_on_after(1.0):
                                    await stack.aclose()
                            else:
                                await self._abort(client)
                        raise
                    finally:
                        ending.cancel()
            finally:
                self._deliveries = None
                self._connection_scope = None
                # What the broker did not acknowledge goes again after the reconnect (state
                # groups need not: the next connect says the whole state).
                unacked = [e for e, _ in self._inflight.values() if e is not None]
                self._inflight = {}
                self.health.dropped(
                    self.outbox.put_back(e for e in unacked if e.message is not None)
                )
        if self._lost:
            raise self._lost[0]

    async def _delivery_group(
        self, *, task_status: TaskStatus[tuple[TaskGroup, anyio.CancelScope]]
    ) -> None:
        """The task group of the deliveries: it ends when its connection says so (after the
        goodbye), not when the app is cancelled, since their acknowledgements are what the
        goodbye waits for."""
        with anyio.CancelScope(shield=True) as scope:
            async with anyio.create_task_group() as tg:
                task_status.started((tg, scope))
                await anyio.sleep_forever()

    async def _guarded(
        self, part: Callable[[aiomqtt.Client], Awaitable[None]], client: aiomqtt.Client
    ) -> None:
        try:
            await part(client)
        except aiomqtt.MqttError as exc:
            self._connection_lost(exc)

    def _connection_lost(self, exc: aiomqtt.MqttError) -> None:
        self._lost.append(exc)
        if self._connection_scope is not None:
            self._connection_scope.cancel()

    def _yield_to(self, other: Instance) -> None:
        self.health.clash(
            f"MQTT off: another Lookout ({other.describe()}) publishes as device id "
            f"'{self.device_id}' on {self.settings}; give each device its own --device-id "
            "(device_id in the config file)"
        )

    async def _subscribe(self, client: aiomqtt.Client) -> None:
        await client.subscribe(f"{self.discovery_prefix}/status", qos=1)
        # Every run leaves these retained for each of its lines and zones (totals
        # stay; a zone's counting says offline), so they name what an earlier run had.
        await client.subscribe(self.topics.line_topic("+", "in"), qos=1)
        await client.subscribe(self.topics.zone_topic("+", "counting"), qos=1)

    async def _read(self, client: aiomqtt.Client) -> None:
        """Notices a lost connection (the iterator raises), Home Assistant restarts, and the
        lines and zones an earlier run left behind."""
        status = f"{self.discovery_prefix}/status"
        async for message in client.messages:
            payload = message.payload if isinstance(message.payload, bytes) else b""
            if message.topic.matches(status):
                if payload == b"online":
                    # Home Assistant came back: it wants the discovery configs and state again.
                    self._rediscover_wanted = True
                    self._rediscover.set()
                continue
            # Our own messages come back without the retain flag; retained ones are
            # what the broker held when we subscribed.
            if not message.retain or not payload or message.topic.matches(self.presence_topic):
                continue
            kind, name = message.topic.value.split("/")[-3:-1]
            known = self.topics.latest_lines if kind == "line" else self.topics.latest_zones
            if name not in known:
                log.info("MQTT: removing %s %r, which this run does not have", kind, name)
                for item in self.topics.removal(kind, name):
                    self._put_retained(item)

    # ------------------------------------------------------------ sending

    async def _hand(self, client: aiomqtt.Client, entry: Entry | None, message: Message) -> None:
        """Give a message to the broker once the window has room; its acknowledgement is
        awaited beside the others (several in flight: a far broker is not one per round trip).
        Tasks start in the order they are made, so the broker gets them in this order."""
        assert self._deliveries is not None
        await self._window.acquire()
        self._serial += 1
        self._inflight[self._serial] = (entry, message)
        self._sent[message.topic] = message.payload
        self._deliveries.start_soon(self._deliver, client, self._serial, message)

    async def _deliver(self, client: aiomqtt.Client, serial: int, message: Message) -> None:
        try:
            await client.publish(
                message.topic, message.payload, qos=message.qos, retain=message.retain
            )
        except aiomqtt.MqttError as exc:
            self._connection_lost(exc)
            return
        finally:
            self._window.release()
        # Removed only once acknowledged: a message in flight when the connection drops is
        # sent again after the reconnect.
        self._inflight.pop(serial, None)
        self.stats.published += 1
        if not self._inflight:
            self._acked.set()

    async def _send(self, client: aiomqtt.Client) -> None:
        presence = Message(self.presence_topic, self.presence.me.payload(), 1, True)
        await self._hand(client, None, presence)
        # Before saying online: what the broker holds from before (an earlier run, a
        # count gone unknown) must not be taken as current by whoever subscribes next.
        self.outbox.discard(self.topics.state_keys())
        for message in self.topics.current():
            await self._hand(client, None, message)
        await self._hand(client, None, Message(self.state_topic, b"online", 1, True))
        for message in self._discovery():
            await self._hand(client, None, message)
        while True:
            entry = self.outbox.take()
            if entry is None:
                self.health.caught_up()
                await self._wakeup.wait()
                continue
            for message in self._messages(entry):
                await self._hand(client, entry, message)

    async def _all_acked(self) -> None:
        while self._inflight:
            await self._acked.wait()

    async def _farewell(self, client: aiomqtt.Client) -> bool:
        """The backlog for half the time allowed, then the goodbye; True once the broker has
        acknowledged all of it (within ``shutdown_timeout_s`` in all)."""
        start = anyio.current_time()
        # The counts die with the process, and the goodbye says the final totals: their
        # queued values are superseded.
        self.outbox.discard(self.topics.state_keys())
        with anyio.CancelScope(deadline=start + self.shutdown_timeout_s / 2):
            while (entry := self.outbox.take()) is not None:
                try:
                    # Only events and single retained messages are left: one message each.
                    for message in self._messages(entry):
                        await self._hand(client, entry, message)
                except anyio.get_cancelled_exc_class():
                    self.outbox.put_back([entry])  # never handed: waiting for the window
                    raise
        with anyio.CancelScope(deadline=start + self.shutdown_timeout_s):
            for message in self.topics.goodbye(self._sent):
                await self._hand(client, None, message)
            await self._all_acked()
            return True
        log.info("MQTT: the broker did not acknowledge the goodbye in time")
        return False

    async def _abort(self, client: aiomqtt.Client) -> None:
        """Drop the connection without a DISCONNECT, so the broker fires the will (offline):
        a goodbye it may not have must not leave it saying online."""
        sock = client._client.socket()  # aiomqtt has no public abort; paho's socket() is public
        if isinstance(sock, socket.socket):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        # Collect the disconnection the client now reports (else asyncio logs it as unread).
        with anyio.move_on_after(1.0), contextlib.suppress(aiomqtt.MqttError):
            async for _ in client.messages:
                pass

    def _account_exit(self) -> None:
        """The process ends: events still waiting will never go; counted and said."""
        self.health.lost_at_exit(self.outbox.clear_events())


__all__ = [
    "Message",
    "MqttPublisher",
    "MqttSettings",
    "MqttStats",
]
