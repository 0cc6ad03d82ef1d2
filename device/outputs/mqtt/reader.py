"""What the MQTT broker tells the publisher: Home Assistant's restarts, and earlier runs.

Home Assistant saying ``online`` on its status topic wants the discovery configs
and the state again (``rediscover``), at most once per ``rediscover_s`` however
often it is said. The retained ``counting``, totals and zone states an earlier run
left name its cameras, lines and zones: those this run does not have are removed
from the broker; the unnamed camera's, on a device that names its cameras now, are
moved, which is said once (``say``).
Reading is also how a lost connection is noticed: the messages iterator raises.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import aiomqtt

from device.outputs.mqtt.backlog import Message
from device.outputs.mqtt.state import MqttState
from live.util.clock import Clock
from live.util.signal import Wakeup

log = logging.getLogger("lookout.mqtt")


class BrokerReader:
    """Subscribes on each connection and reads what comes; ``retain`` queues a retained
    message, ``rediscover`` queues the configs and the state again, ``say`` tells the user."""

    def __init__(
        self,
        state: MqttState,
        *,
        discovery_prefix: str,
        rediscover_s: float,
        clock: Clock,
        retain: Callable[[Message], None],
        rediscover: Callable[[], None],
        say: Callable[[str], None],
    ) -> None:
        self.state = state
        self.status_topic = f"{discovery_prefix}/status"
        self.rediscover_s = rediscover_s
        self.clock = clock
        self._retain = retain
        self._rediscover = rediscover
        self._say = say
        self._rediscover_wanted = False
        self._rediscover_asked = Wakeup()
        self._said_moved = False

    async def subscribe(self, client: aiomqtt.Client) -> None:
        await client.subscribe(self.status_topic, qos=1)
        # Every run leaves these retained for each of its cameras, lines and zones
        # (totals stay; a counting says offline), so they name what an earlier run had.
        await client.subscribe([(topic, 1) for topic in self.state.topics.left_behind()])

    async def read(self, client: aiomqtt.Client) -> None:
        """Notices a lost connection (the iterator raises), Home Assistant restarts, and the
        lines and zones an earlier run left behind."""
        async for message in client.messages:
            payload = message.payload if isinstance(message.payload, bytes) else b""
            if message.topic.matches(self.status_topic):
                if payload == b"online":
                    # Home Assistant came back: it wants the discovery configs and state again.
                    self._rediscover_wanted = True
                    self._rediscover_asked.set()
                continue
            # Our own messages come back without the retain flag; retained ones are
            # what the broker held when we subscribed.
            if (
                not message.retain
                or not payload
                or message.topic.matches(self.state.topics.presence_topic)
            ):
                continue
            left = self.state.leftover(message.topic.value)
            if left is None:
                continue
            if left.moved:
                self._moved()
            else:
                log.info("MQTT: removing %s, which this run does not have", left.what)
            for item in left.messages:
                self._retain(item)

    def _moved(self) -> None:
        if self._said_moved:
            return
        self._said_moved = True
        base = self.state.topics.base_topic
        self._say(
            f"MQTT: the cameras are named now: each one's topics are under {base}/<camera>/ "
            "and each is a Home Assistant device of its own; the unnamed camera's "
            f"({base}/count, its lines and zones) and its entities are removed"
        )

    async def rediscovery(self) -> None:
        """Home Assistant said ``online``: configs and state again, at most once per
        ``rediscover_s`` however often it is said (anyone may publish it, in a flood)."""
        while True:
            while not self._rediscover_wanted:
                await self._rediscover_asked.wait()
            self._rediscover_wanted = False
            self._rediscover()
            await self.clock.sleep(self.rediscover_s)


__all__ = ["BrokerReader"]
