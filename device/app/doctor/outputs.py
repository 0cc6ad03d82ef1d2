"""``lookout doctor``'s checks of the outputs a configuration asks for.

Each configured output is tried as the run would use it: the MQTT broker is connected
to and asked to take an MQTT CONNECT (a port that answers is not yet a broker that lets
this device in), the status page's address is bound (and let go), the event logs' files
are checked as ``lookout run`` checks them. What fails is one ``[FAIL]`` line with why.
"""

from __future__ import annotations

import errno
import socket
import ssl
import struct
from collections.abc import Callable

from device.config import Config, ConfigError

OK, WARN, FAIL = "ok", "warn", "FAIL"
MQTT_TIMEOUT_S = 3.0  # a broker on a LAN answers in milliseconds; a dead host never does

Say = Callable[[str, str, str], None]  # status, what, detail

# MQTT 3.1.1 CONNACK return codes (section 3.2.2.3).
_REFUSED = {
    1: "unacceptable protocol version",
    2: "client id rejected",
    3: "server unavailable",
    4: "bad user name or password",
    5: "not authorised",
}


def _utf8(text: str) -> bytes:
    data = text.encode()
    return struct.pack("!H", len(data)) + data


def _connect_packet(client_id: str, username: str | None, password: str | None) -> bytes:
    flags = 0x02  # clean session
    payload = _utf8(client_id)
    if username is not None:
        flags |= 0x80
        payload += _utf8(username)
        if password is not None:
            flags |= 0x40
            payload += _utf8(password)
    body = _utf8("MQTT") + bytes([4, flags]) + struct.pack("!H", 10) + payload
    length, encoded = len(body), b""
    while True:  # the remaining length, 7 bits a byte
        byte, length = length % 128, length // 128
        encoded += bytes([byte | (0x80 if length else 0)])
        if not length:
            break
    return b"\x10" + encoded + body


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the broker closed the connection without an answer")
        data += chunk
    return data


def mqtt_handshake(url: str, device_id: str, timeout_s: float = MQTT_TIMEOUT_S) -> str:
    """What the broker at ``url`` answered to a CONNECT; raises OSError or ConfigError."""
    from device.outputs.mqtt.settings import parse_mqtt

    settings = parse_mqtt(url)
    with socket.create_connection((settings.host, settings.port), timeout=timeout_s) as raw:
        sock: socket.socket = raw
        if settings.tls:
            sock = ssl.create_default_context().wrap_socket(raw, server_hostname=settings.host)
        # Its own client id: the running device's connection must not be taken over.
        packet = _connect_packet(f"{device_id}-doctor", settings.username, settings.password)
        sock.sendall(packet)
        answer = _read_exactly(sock, 4)
        if answer[0] != 0x20:
            raise ConnectionError("it answered, but not as an MQTT broker")
        if answer[3] != 0:
            raise ConnectionError(
                f"it refused the connection: {_REFUSED.get(answer[3], f'code {answer[3]}')}"
            )
        sock.sendall(b"\xe0\x00")  # DISCONNECT: a clean goodbye
    return f"{settings}: connected (MQTT CONNECT accepted)"


def check_mqtt(config: Config, say: Say) -> str:
    url = config.outputs.mqtt
    if not url:
        return OK
    from live.util.redact import safe_url

    try:
        detail = mqtt_handshake(url, config.device.device_id)
    except ConfigError as exc:
        say(FAIL, "mqtt", str(exc))
        return FAIL
    except TimeoutError:
        say(FAIL, "mqtt", f"{safe_url(url)}: no answer within {MQTT_TIMEOUT_S:g} s")
        return FAIL
    except (OSError, ssl.SSLError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        say(FAIL, "mqtt", f"{safe_url(url)}: unreachable: {reason}")
        return FAIL
    say(OK, "mqtt", detail)
    return OK


def check_http(config: Config, say: Say) -> str:
    spec = config.outputs.http
    if not spec:
        return OK
    from device.outputs.page.http_address import parse_http

    try:
        address = parse_http(spec)
        family = socket.AF_INET6 if ":" in address.host else socket.AF_INET
        with socket.create_server((address.host, address.port), family=family):
            pass  # bound and let go: lookout run can have it
    except ConfigError as exc:
        say(FAIL, "status page", str(exc))
        return FAIL
    except OSError as exc:
        given = config.given("http")
        in_use = (
            "in use by another program"
            if exc.errno == errno.EADDRINUSE
            else exc.strerror or str(exc)
        )
        if given is None and exc.errno == errno.EADDRINUSE:
            # The default address is the one that may move: the run takes the next port.
            say(WARN, "status page", f"{address}: {in_use}; lookout run will take the next "
                "free port (give --http to choose one)")  # fmt: skip
            return WARN
        say(FAIL, "status page", f"{address} ({given or '--http'}): {in_use}")
        return FAIL
    say(OK, "status page", f"{address}: free to listen on")
    return OK


def check_logs(config: Config, say: Say) -> list[str]:
    from device.config.paths import check_writable_file

    results = []
    for name, path, what in (
        ("events", config.outputs.events, "file"),
        ("db", config.outputs.db, "database file"),
    ):
        if path is None:
            continue
        try:
            check_writable_file(name, path, what)
        except ConfigError as exc:
            say(FAIL, name, str(exc))
            results.append(FAIL)
            continue
        say(OK, name, f"{path}: writable")
        results.append(OK)
    return results


def check_outputs(config: Config, say: Say) -> list[str]:
    """Every output ``config`` asks for, each a line; their statuses."""
    return [check_mqtt(config, say), check_http(config, say), *check_logs(config, say)]


__all__ = ["MQTT_TIMEOUT_S", "check_outputs", "mqtt_handshake"]
