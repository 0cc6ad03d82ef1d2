"""One MQTT connection's life, once the broker took it and the device id is this process's.

On the connection: the presence, the whole state, ``online`` and the discovery
configs, then the backlog as it fills; beside that the subscriptions and the
reading (``mqtt/reader.py``). A failed publish, subscribe or read ends the
connection (its first error is what ``run`` returns, for the publisher to
reconnect). When the app ends: what it can of the backlog in half of
``shutdown_timeout_s``, then the goodbye, and a clean disconnect only once the
broker acknowledged all of it; otherwise the connection is dropped, so that the
broker fires the will. Either way what was not acknowledged goes back to the
backlog for the next connection.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable

import aiomqtt
import anyio

from device.outputs.mqtt.backlog import Backlog, Entry, Message
from device.outputs.mqtt.client import abort
from device.outputs.mqtt.health import LinkHealth
from device.outputs.mqtt.reader import BrokerReader
from device.outputs.mqtt.state import MqttState
from device.outputs.mqtt.window import Window
from live.util.signal import Wakeup

log = logging.getLogger("lookout.mqtt")


class Connection:
    """Sends, subscribes and reads on one connected client until it is lost or the app ends.

    ``messages`` says what an backlog entry is sent as, ``discovery`` the configs to
    announce; ``wakeup`` is set when the backlog has something new.
    """

    def __init__(
        self,
        client: aiomqtt.Client,
        *,
        state: MqttState,
        backlog: Backlog,
        window: Window,
        reader: BrokerReader,
        health: LinkHealth,
        wakeup: Wakeup,
        presence: Message,
        messages: Callable[[Entry], list[Message]],
        discovery: Callable[[], list[Message]],
        shutdown_timeout_s: float,
    ) -> None:
        self.client = client
        self.state = state
        self.backlog = backlog
        self.window = window
        self.reader = reader
        self.health = health
        self.wakeup = wakeup
        self.presence = presence
        self.messages = messages
        self.discovery = discovery
        self.shutdown_timeout_s = shutdown_timeout_s
        self._scope: anyio.CancelScope | None = None
        self._lost: list[aiomqtt.MqttError] = []

    async def run(self, stack: contextlib.AsyncExitStack) -> aiomqtt.MqttError | None:
        """Until the connection is lost (its first error is returned) or cancelled (the
        farewell; ``stack``, which holds the client, is closed only if it was said)."""
        client = self.client
        self.window.open(self._connection_lost)
        try:
            async with anyio.create_task_group() as outer:
                with anyio.CancelScope(shield=True):  # it starts at once, and must
                    ending = await outer.start(self.window.deliveries)
                try:
                    async with anyio.create_task_group() as tg:
                        self._scope = tg.cancel_scope
                        # Subscribing beside the reading: a subscribe waits for its
                        # answer, not for the connection; the reading notices at once
                        # that the connection dropped.
                        tg.start_soon(self._guarded, self.reader.subscribe)
                        tg.start_soon(self._guarded, self.reader.read)
                        tg.start_soon(self._guarded, self._send)
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
                            await abort(client)
                    raise
                finally:
                    ending.cancel()
        finally:
            self._scope = None
            # What the broker did not acknowledge goes again after the reconnect (state
            # groups need not: the next connect says the whole state).
            unacked = self.window.close()
            self.health.dropped(self.backlog.put_back(e for e in unacked if e.message is not None))
        return self._lost[0] if self._lost else None

    async def _guarded(self, part: Callable[[aiomqtt.Client], Awaitable[None]]) -> None:
        try:
            await part(self.client)
        except aiomqtt.MqttError as exc:
            self._connection_lost(exc)

    def _connection_lost(self, exc: aiomqtt.MqttError) -> None:
        self._lost.append(exc)
        if self._scope is not None:
            self._scope.cancel()

    async def _send(self, client: aiomqtt.Client) -> None:
        await self.window.hand(client, None, self.presence)
        # Before saying online: what the broker holds from before (an earlier run, a
        # count gone unknown) must not be taken as current by whoever subscribes next.
        self.backlog.discard(self.state.state_keys())
        for message in self.state.current():
            await self.window.hand(client, None, message)
        online = Message(self.state.topics.state_topic, b"online", 1, True)
        await self.window.hand(client, None, online)
        for message in self.discovery():
            await self.window.hand(client, None, message)
        while True:
            entry = self.backlog.take()
            if entry is None:
                self.health.caught_up()
                await self.wakeup.wait()
                continue
            for message in self.messages(entry):
                await self.window.hand(client, entry, message)

    async def _farewell(self, client: aiomqtt.Client) -> bool:
        """The backlog for half the time allowed, then the goodbye; True once the broker has
        acknowledged all of it (within ``shutdown_timeout_s`` in all)."""
        start = anyio.current_time()
        # The counts die with the process, and the goodbye says the final totals: their
        # queued values are superseded.
        self.backlog.discard(self.state.state_keys())
        with anyio.CancelScope(deadline=start + self.shutdown_timeout_s / 2):
            while (entry := self.backlog.take()) is not None:
                try:
                    # Only events and single retained messages are left: one message each.
                    for message in self.messages(entry):
                        await self.window.hand(client, entry, message)
                except anyio.get_cancelled_exc_class():
                    self.backlog.put_back([entry])  # never handed: waiting for the window
                    raise
        with anyio.CancelScope(deadline=start + self.shutdown_timeout_s):
            for message in self.state.goodbye(self.window.sent):
                await self.window.hand(client, None, message)
            await self.window.all_acked()
            return True
        log.info("MQTT: the broker did not acknowledge the goodbye in time")
        return False


__all__ = ["Connection"]
