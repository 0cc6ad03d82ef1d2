"""The in-flight window of one MQTT connection: messages handed to the broker, acknowledged.

Up to ``size`` messages are in flight at once (QoS 1), so a broker 50 ms away is
not one message per round trip; each is kept until the broker acknowledges it, so
what a dropped connection leaves unacknowledged can go again after the reconnect.
The window also remembers what this connection handed over (``sent``): the
publisher leaves out a state the broker already has, and the goodbye says only
what changed. What waits before the window is the publisher's
:class:`~device.outputs.mqtt.backlog.Backlog`.
"""

from __future__ import annotations

from collections.abc import Callable

import aiomqtt
import anyio
from anyio.abc import TaskGroup, TaskStatus

from device.outputs.mqtt.backlog import Entry, Message
from device.outputs.mqtt.health import MqttStats
from live.util.signal import Wakeup


class Window:
    """One connection's messages in flight, counted in ``stats`` once acknowledged."""

    def __init__(self, size: int, stats: MqttStats) -> None:
        self.size = size
        self.stats = stats
        self._lost: Callable[[aiomqtt.MqttError], None] = lambda exc: None
        self._slots = anyio.Semaphore(size)
        self.inflight: dict[int, tuple[Entry | None, Message]] = {}
        self._serial = 0
        self.sent: dict[str, bytes] = {}
        self._acked = Wakeup()
        self._deliveries: TaskGroup | None = None

    def __len__(self) -> int:
        return len(self.inflight)

    def open(self, lost: Callable[[aiomqtt.MqttError], None]) -> None:
        """A new connection: the whole window free, nothing handed over on it yet; ``lost``
        is told when a publish fails (the connection is gone)."""
        self._lost = lost
        self._slots = anyio.Semaphore(self.size)
        self.inflight = {}
        self.sent = {}

    def close(self) -> list[Entry]:
        """The connection ended: the entries whose messages the broker did not acknowledge."""
        self._deliveries = None
        unacked = [e for e, _ in self.inflight.values() if e is not None]
        self.inflight = {}
        return unacked

    async def deliveries(self, *, task_status: TaskStatus[anyio.CancelScope]) -> None:
        """The task group of the deliveries: it ends when its connection says so (after the
        goodbye), not when the app is cancelled, since their acknowledgements are what the
        goodbye waits for."""
        with anyio.CancelScope(shield=True) as scope:
            async with anyio.create_task_group() as tg:
                self._deliveries = tg
                task_status.started(scope)
                await anyio.sleep_forever()

    async def hand(self, client: aiomqtt.Client, entry: Entry | None, message: Message) -> None:
        """Give a message to the broker once the window has room; its acknowledgement is
        awaited beside the others (several in flight: a far broker is not one per round trip).
        Tasks start in the order they are made, so the broker gets them in this order."""
        assert self._deliveries is not None
        await self._slots.acquire()
        self._serial += 1
        self.inflight[self._serial] = (entry, message)
        self.sent[message.topic] = message.payload
        self._deliveries.start_soon(self._deliver, client, self._serial, message)

    async def _deliver(self, client: aiomqtt.Client, serial: int, message: Message) -> None:
        try:
            await client.publish(
                message.topic, message.payload, qos=message.qos, retain=message.retain
            )
        except aiomqtt.MqttError as exc:
            self._lost(exc)
            return
        finally:
            self._slots.release()
        # Removed only once acknowledged: a message in flight when the connection drops is
        # sent again after the reconnect.
        self.inflight.pop(serial, None)
        self.stats.published += 1
        if not self.inflight:
            self._acked.set()

    async def all_acked(self) -> None:
        while self.inflight:
            await self._acked.wait()


__all__ = ["Window"]
