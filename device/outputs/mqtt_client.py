"""aiomqtt's client, minus one race: a socket closed between a publish and its write.

paho asks for write readiness on every publish; aiomqtt 2.5 schedules
``add_writer(fileno)`` with the descriptor number taken at that moment. When the
broker closes the connection in between (a connection taken over, a broker that
goes away while several messages are in flight), the scheduled call finds the
descriptor closed and asyncio reports ``OSError: Bad file descriptor`` with a
traceback, or, if the number was reused by the reconnect, watches the wrong
socket. Here the registration looks at the socket when it runs, as Home
Assistant's MQTT client does, and skips a socket paho has closed.
"""

from __future__ import annotations

from typing import Any

import aiomqtt
import paho.mqtt.client as mqtt
from aiomqtt.types import PahoSocket


class Client(aiomqtt.Client):
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


__all__ = ["Client"]
