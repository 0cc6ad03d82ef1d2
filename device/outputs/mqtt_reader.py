"""What the MQTT broker tells the publisher: Home Assistant's restarts, and earlier runs.

Home Assistant saying ``online`` on its status topic wants the discovery configs
and the state again (``rediscover``), at most once per ``rediscover_s`` however
often it is said. The retained totals and zone states an earlier run left name
its lines and zones: those this run does not have are removed from the broker.
Reading is also how a lost connection is noticed: the messages iterator raises.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import aiomqtt

from device.outputs.mqtt_outbox import Message
from device.outputs.mqtt_state import MqttState
from live.clock import Clock
from live.signal import Wakeup

log = logging.getLogger("lookout.mqtt")


class BrokerReader:
    """Subscribes on each connection and reads what comes; ``retain`` queues a retained
    message, ``rediscover`` queues the configs and the state again."""

    def __init__(
        self,
        topics: MqttState,
        *,
        discovery_prefix: str,
        rediscover_s: float,
        clock: Clock,
        retain: Callable[[Message], None],
        rediscover: Callable[[], None],
    ) -> None:
        self.topics = topics
        self.status_topic = f"{discovery_prefix}/status"
        self.rediscover_s = rediscover_s
        self.clock = clock
        self._retain = retain
        self._rediscover = rediscover
        self._rediscover_wanted = False
        self._rediscover_asked = Wakeup()

    async def subscribe(self, client: aiomqtt.Client) -> None:
        await client.subscribe(self.status_topic, qos=1)
        # Every run leaves these retained for each of its lines and zones (totals
        # stay; a zone's counting says offline), so they name what an earlier run had.
        await client.subscribe(self.topics.line_topic("+", "in"), qos=1)
        await client.subscribe(self.topics.zone_topic("+", "counting"), qos=1)

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
                or message.topic.matches(self.topics.presence_topic)
            ):
                continue
            kind, name = message.topic.value.split("/")[-3:-1]
            known = self.topics.latest_lines if kind == "line" else self.topics.latest_zones
            if name not in known:
                log.info("MQTT: removing %s %r, which this run does not have", kind, name)
                for item in self.topics.removal(kind, name):
                    self._retain(item)

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
