"""The status server under load and attack: real sockets on loopback, a fake app behind.

Connection caps, idle sockets, slow viewers, malformed requests, Host checks on
every bind, and the token redirect. Loops are bounded; waits are for events
(a socket closed, a response), never fixed sleeps.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import anyio
import pytest

from device.events import CountChanged
from device.log_limit import RepeatFilter
from device.outputs.page.connection_guard import BUSY, cap_for_limit
from device.outputs.page.host_check import HostPolicy
from device.outputs.page.http_address import HttpAddress, same_site
from device.outputs.page.server import StatusServer
from device.outputs.telemetry import Telemetry
from tests.ops.support import FakeApp, perceived

pytestmark = pytest.mark.anyio


@contextlib.asynccontextmanager
async def serving(
    address: HttpAddress | None = None, **options: Any
) -> AsyncIterator[tuple[StatusServer, Telemetry, int]]:
    telemetry = Telemetry(FakeApp())
    perceived(telemetry, CountChanged(t=1.0, count=2, previous=None, raw=2, t_media=1.0))
    server = StatusServer(telemetry, address or HttpAddress("127.0.0.1", 0), **options)
    server.listen()
    async with anyio.create_task_group() as tg:
        await tg.start(server.run)
        try:
            yield server, telemetry, server.port
        finally:
            tg.cancel_scope.cancel()


@contextlib.contextmanager
def idle_sockets(port: int, n: int) -> Iterator[list[socket.socket]]:
    """``n`` connections that never send a byte."""
    opened = []
    try:
        for _ in range(n):
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            opened.append(sock)
        yield opened
    finally:
        for sock in opened:
            sock.close()


def read_all(sock: socket.socket, timeout: float = 10) -> bytes:
    """Everything until the server closes (bounded by ``timeout``)."""
    sock.settimeout(timeout)
    data = b""
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(65536):
            data += chunk
    return data


def get(port: int, path: str = "/healthz", host: str = "127.0.0.1", **headers: str) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        lines = [f"GET {path} HTTP/1.1", f"Host: {host}", "Connection: close"]
        lines += [f"{k.replace('_', '-')}: {v}" for k, v in headers.items()]
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        return read_all(sock)


def status_of(response: bytes) -> int:
    return int(response.split(b" ", 2)[1])


# ------------------------------------------------------------------- connections


async def test_connections_past_the_cap_get_503_and_the_rest_keep_working() -> None:
    async with serving(max_connections=10, head_timeout_s=30) as (server, _, port):
        with idle_sockets(port, 10):
            await wait_for(server, lambda: server.connections.open == 10)
            refused = await anyio.to_thread.run_sync(get, port, "/api/state")
            assert refused == BUSY
            assert server.connections.refused == 1
            # A monitor is still told the device's health, not "503" for a full page.
            probe = await anyio.to_thread.run_sync(get, port, "/healthz")
            assert status_of(probe) == 200, probe
            assert server.connections.refused == 1
        # They closed: room again, at once.
        await wait_for(server, lambda: server.connections.open == 0)
        assert status_of(await anyio.to_thread.run_sync(get, port)) == 200


async def test_a_socket_that_sends_no_request_is_closed_after_the_head_timeout() -> None:
    async with serving(head_timeout_s=0.3) as (server, _, port):
        with idle_sockets(port, 3) as sockets:
            # Slowloris too: half a request head, then nothing.
            sockets[1].sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            started = time.monotonic()
            closed = [await anyio.to_thread.run_sync(read_all, s) for s in sockets]
            assert closed == [b"", b"", b""]  # closed without an answer
            assert time.monotonic() - started < 5
        assert server.connections.timed_out == 3
        await wait_for(server, lambda: server.connections.open == 0)


async def test_a_request_body_that_trickles_in_is_answered_408_and_closed() -> None:
    """A slow POST: the head in time, then the body a byte now and then. Without a token
    the body is read (with one, 401 comes first): it must not hold the connection."""
    async with serving(body_timeout_s=0.4, max_connections=8) as (server, _, port):
        with idle_sockets(port, 6) as sockets:
            for sock in sockets:
                sock.sendall(
                    b"POST /api/streams/stop HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
                )
            started = time.monotonic()
            answers = [await anyio.to_thread.run_sync(read_all, s) for s in sockets]
            assert all(status_of(a) == 408 for a in answers), answers
            assert b"too slowly" in answers[0]
            assert time.monotonic() - started < 5
        await wait_for(server, lambda: server.connections.open == 0)
        assert status_of(await anyio.to_thread.run_sync(get, port)) == 200


async def test_the_cap_leaves_descriptors_for_the_camera_and_the_logs() -> None:
    assert cap_for_limit(200, soft_limit=1024) == 200
    assert cap_for_limit(1000, soft_limit=1024) == (1024 - 128) // 2
    assert cap_for_limit(200, soft_limit=256) == 64
    assert cap_for_limit(200, soft_limit=100) == 8


async def test_viewers_past_their_cap_get_503() -> None:
    async with (
        serving(max_viewers=2) as (_, _, port),
        aiohttp.ClientSession() as http,
    ):
        base = f"http://127.0.0.1:{port}"
        first = await http.get(base + "/events")
        second = await http.get(base + "/events")
        third = await http.get(base + "/events")
        assert (first.status, second.status, third.status) == (200, 200, 503)
        assert "too many viewers" in await third.text()
        first.close()
        second.close()
        third.close()


async def test_an_mjpeg_viewer_during_a_camera_outage_is_let_go() -> None:
    # No frame ever comes: the handler must not wait for one for ever.
    async with serving(mjpeg_idle_s=0.3) as (server, _, port):
        started = time.monotonic()
        answer = await anyio.to_thread.run_sync(get, port, "/stream.mjpg")
        assert status_of(answer) == 200 and time.monotonic() - started < 5
        await wait_for(server, lambda: not server._streams)


# -------------------------------------------------------------- bad requests


async def test_malformed_requests_get_4xx_and_no_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    async with serving() as (_, _, port), aiohttp.ClientSession() as http:
        huge = await anyio.to_thread.run_sync(
            lambda: get(port, "/api/state", X_Filler="a" * 20_000)
        )
        assert status_of(huge) in (400, 431)
        base = f"http://127.0.0.1:{port}/api/streams/stop"
        nested = "[" * 30_000 + "]" * 30_000
        for body, expected in ((nested, 400), ('{"function_name": ', 400), ("x" * 70_000, 413)):
            async with http.post(
                base, data=body, headers={"Content-Type": "application/json"}
            ) as response:
                assert response.status == expected, body[:40]
    logged = "\n".join(r.getMessage() + (r.exc_text or "") for r in caplog.records)
    assert "Traceback" not in logged and "RecursionError" not in logged


# ---------------------------------------------------------------- exposure


async def test_every_bind_checks_the_host_header() -> None:
    token = "tok-5b1e9c"
    bearer = f"Bearer {token}"
    async with serving(HttpAddress("0.0.0.0", 0), token=token) as (_, _, port):
        for host, expected in (
            ("evil.example", 421),  # DNS rebinding, even with the victim's credentials
            (f"evil.example:{port}", 421),
            ("127.0.0.1", 200),
            ("192.168.1.20:8765", 200),  # an address literal: no rebinding possible
            (f"{socket.gethostname()}.local", 200),
        ):
            answer = await anyio.to_thread.run_sync(
                lambda h=host: get(port, "/api/state", host=h, Authorization=bearer)
            )
            assert status_of(answer) == expected, host


def test_host_policy_names() -> None:
    lan = HostPolicy.for_bind(False, ["cam.example.com"])
    assert lan.allows("cam.example.com:443") and lan.allows("CAM.example.com.")
    assert lan.allows("[fe80::1]:8765") and lan.allows("10.0.0.7")
    assert not lan.allows("other.example.com") and not lan.allows("")
    local = HostPolicy.for_bind(True)
    assert local.allows("localhost:8765") and local.allows("[::1]")
    assert not local.allows("10.0.0.7") and not local.allows("evil.example")


def test_the_token_redirect_stays_on_this_site() -> None:
    assert same_site("//evil.example/", {}) == "/evil.example/"
    assert same_site("/\\evil.example", {}) == "/evil.example"
    assert same_site("/", {"a": "1"}) == "/?a=1"
    assert same_site("/api/state", {}) == "/api/state"


async def test_the_token_redirect_of_a_double_slash_path_is_same_site() -> None:
    token = "tok-77aa01"
    async with serving(token=token) as (_, _, port):
        answer = await anyio.to_thread.run_sync(lambda: get(port, f"//evil.example/?token={token}"))
    head = answer.split(b"\r\n\r\n", 1)[0].decode()
    assert status_of(answer) == 303
    location = next(line for line in head.splitlines() if line.lower().startswith("location:"))
    assert location.split(":", 1)[1].strip() == "/evil.example/"


# ------------------------------------------------------------- log flooding


def test_repeated_log_lines_are_said_once_per_interval_with_a_count() -> None:
    now = [0.0]
    repeat = RepeatFilter(interval_s=60, now=lambda: now[0])
    logger = logging.getLogger("test.flood")

    def record(message: str, *args: object) -> logging.LogRecord:
        return logger.makeRecord(logger.name, logging.WARNING, __file__, 1, message, args, None)

    passed = [r for r in (record("open failed: %s", i) for i in range(500)) if repeat.filter(r)]
    assert len(passed) == 1
    assert repeat.filter(record("another kind"))  # kinds are counted apart
    now[0] = 61.0
    later = record("open failed: %s", 501)
    assert repeat.filter(later)
    assert later.getMessage() == "open failed: 501 (499 more like this in the last 60 s)"


async def wait_for(server: StatusServer, predicate: Any, timeout: float = 10) -> None:
    with anyio.fail_after(timeout):
        while not predicate():
            await server.connections.changed.wait()
