"""aiomqtt's client, minus two races around a connection that ends, plus the abort it lacks.

A disconnection nobody waits for any more: when the publisher gives a
connection up (the app is leaving and the broker never acknowledged the
goodbye, or it already reconnects), paho may report the disconnection after
the last reader has gone, and asyncio then logs "Future exception was never
retrieved" with a traceback at some later garbage collection (a test runner
fails the test it lands in). Every ``_disconnected`` future is marked as read
when it completes; the readers that still wait on it get the exception as
before, and the publisher learns of a lost connection from its own reads.

A socket closed between a publish and its write:

paho asks for write readiness on every publish; aiomqtt 2.5 schedules
``add_writer(fileno)`` with the descriptor number taken at that moment. When the
broker closes the connection in between (a connection taken over, a broker that
goes away while several messages are in flight), the scheduled call finds the
descriptor closed and asyncio reports ``OSError: Bad file descriptor`` with a
traceback, or, if the number was reused by the reconnect, watches the wrong
socket. Here the registration looks at the socket when it runs, as Home
Assistant's MQTT client does, and skips a socket paho has closed.

An abort: the connection dropped without a DISCONNECT, so that the broker fires the
will (``abort``). The publisher's client as its settings make it: ``publishing_client``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from typing import Any

import aiomqtt
import anyio
import paho.mqtt.client as mqtt
from aiomqtt.types import PahoSocket

from device.outputs.mqtt.settings import MqttSettings

# aiomqtt's own log: answers to calls this publisher cancelled (at an exit, a lost
# connection) logged as errors with a traceback. What matters is said by the publisher.
client_log = logging.getLogger("lookout.mqtt.client")
client_log.setLevel(logging.CRITICAL)


def _mark_read(future: asyncio.Future[None]) -> None:
    if not future.cancelled():
        future.exception()


class Client(aiomqtt.Client):
    def __setattr__(self, name: str, value: Any) -> None:
        if name == "_disconnected" and isinstance(value, asyncio.Future):
            value.add_done_callback(_mark_read)
        super().__setattr__(name, value)

    def _on_socket_register_write(
        self, client: mqtt.Client, userdata: Any, sock: PahoSocket
    ) -> None:
        def writable() -> None:
            # As aiomqtt's own: a failed write means the connection broke.
            try:
                client.loop_write()
            except Exception as exc:
                if not self._disconnected.done():
                    self._disconnected.set_exception(exc)

        def register() -> None:
            fileno = sock.fileno()
            if fileno >= 0 and client.socket() is sock:
                self._loop.add_writer(fileno, writable)

        # paho may call this from the thread that connects: only the loop may register.
        self._loop.call_soon_threadsafe(register)


def publishing_client(
    settings: MqttSettings,
    *,
    client_id: str,
    will: str,
    keepalive_s: int,
    timeout_s: float,
    tls: ssl.SSLContext | None,
    max_inflight: int,
) -> Client:
    """A client for the publisher: its last will ``offline``, retained, on ``will``."""
    client = Client(
        settings.host,
        settings.port,
        identifier=client_id,
        username=settings.username,
        password=settings.password,
        will=aiomqtt.Will(will, b"offline", qos=1, retain=True),
        keepalive=keepalive_s,
        timeout=timeout_s,
        tls_context=tls,
        max_inflight_messages=max_inflight,
        logger=client_log,
    )
    # A full window is how it should run, not a warning per message.
    client.pending_calls_threshold = max_inflight + 16
    return client


async def abort(client: aiomqtt.Client) -> None:
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


__all__ = ["Client", "abort", "client_log", "publishing_client"]
