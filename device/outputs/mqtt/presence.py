"""One device id, one process: who publishes as a device id, and whether someone else does too.

Two processes with one device id (every Raspberry Pi is called ``raspberrypi``)
share one MQTT client id, so the broker drops each when the other connects: they
knock each other off twice a second, and their retained values alternate. Each
process therefore says who it is, retained on ``lookout/<id>/instance`` (a random
id per process, the host name, the pid, when it started), and reads what is
there at every connect before it publishes anything.

The rule (``Presence.check``): at the first connect, whatever is there is an
earlier run's (a restart, a killed process) and is taken over. At a later
connect, an instance that is neither ours nor the one we took over means another
process connected with this id while we were away: we stop, and say so. Only one
side ever stops: it stops before it writes, so the other finds its own instance
(or the one it took over) at its next connect. The process that connected last
keeps the id, whatever the order of their reconnects.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

import aiomqtt
import anyio

log = logging.getLogger("lookout.mqtt")


@dataclass(frozen=True)
class Instance:
    """One process publishing as a device id."""

    id: str
    host: str = ""
    pid: int = 0
    since: str = ""

    @classmethod
    def this_process(cls) -> Instance:
        since = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        return cls(uuid.uuid4().hex[:12], socket.gethostname(), os.getpid(), since)

    def payload(self) -> bytes:
        data = {"instance": self.id, "host": self.host, "pid": self.pid, "since": self.since}
        return json.dumps(data, separators=(",", ":")).encode()

    @classmethod
    def parse(cls, payload: bytes) -> Instance | None:
        """The instance a retained payload names (None: empty, or not one of ours)."""
        try:
            data = json.loads(payload)
        except ValueError:
            return None
        if not isinstance(data, dict) or not isinstance(data.get("instance"), str):
            return None
        pid = data.get("pid")
        return cls(
            data["instance"],
            str(data.get("host", "")),
            pid if isinstance(pid, int) else 0,
            str(data.get("since", "")),
        )

    def describe(self) -> str:
        parts = [f"host {self.host}" if self.host else "", f"pid {self.pid}" if self.pid else ""]
        if self.since:
            parts.append(f"since {self.since}")
        return ", ".join(p for p in parts if p) or f"instance {self.id}"


class Presence:
    """Whether another process took this device id since we first connected."""

    def __init__(self, me: Instance) -> None:
        self.me = me
        self.checked = False  # the first connect's check is done
        self.predecessor: str | None = None  # the instance found then (an earlier run's)

    def check(self, held: Instance | None) -> Instance | None:
        """The other process, if ``held`` (what the broker holds at this connect) is one.

        Only the first connect may take over what it finds: an instance that is neither
        ours nor that one was written by a process connected since. Two processes can
        never each find the other at their first connect (each writes only after its
        check), so one of them always sees the other later, and stops.
        """
        first, self.checked = not self.checked, True
        if held is None or held.id == self.me.id:
            return None
        if first:
            self.predecessor = held.id
            return None
        if held.id == self.predecessor:
            return None  # a broker restored from an older save: that one is the earlier run
        return held


async def held_instance(
    client: aiomqtt.Client, topic: str, me: Instance, timeout_s: float
) -> Instance | None:
    """The instance the broker holds for this device id, read before publishing anything.

    A probe published after subscribing comes back after every retained message of
    the subscription (Mosquitto sends them in order), so it says when all are in.
    Messages are read from the start: that is also how a connection dropped in the
    meantime is noticed (a subscribe waits for its answer, not for the connection).
    """
    probe = b'{"probe":"' + me.id.encode() + b'"}'
    held: Instance | None = None
    lost: list[aiomqtt.MqttError] = []
    async with anyio.create_task_group() as tg:
        tg.cancel_scope.deadline = anyio.current_time() + timeout_s

        async def ask() -> None:
            try:
                await client.subscribe(topic, qos=1)
                await client.publish(topic, probe, qos=1, retain=False)
            except aiomqtt.MqttError as exc:
                lost.append(exc)
                tg.cancel_scope.cancel()

        async def listen() -> None:
            nonlocal held
            try:
                async for message in client.messages:
                    payload = message.payload if isinstance(message.payload, bytes) else b""
                    if not message.topic.matches(topic):
                        continue
                    if message.retain:
                        held = Instance.parse(payload)
                    elif payload == probe:
                        tg.cancel_scope.cancel()
                        return
            except aiomqtt.MqttError as exc:
                lost.append(exc)
                tg.cancel_scope.cancel()

        tg.start_soon(ask)
        tg.start_soon(listen)
    if lost:
        raise lost[0]
    if tg.cancel_scope.cancelled_caught and anyio.current_time() >= tg.cancel_scope.deadline:
        log.info("MQTT: no answer to the presence probe on %s", topic)
    return held


__all__ = ["Instance", "Presence", "held_instance"]
