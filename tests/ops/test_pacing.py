"""Answering in turn (device/outputs/page/pacing.py) and bodies made once per change
(device/outputs/page/bodies.py): the parts that keep readers of the page from costing the count.

End to end, with the real device and hundreds of readers: test_page_load.py.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest
from aiohttp import web

from device.outputs.page.bodies import SharedBody
from device.outputs.page.pacing import RequestPacing
from device.outputs.page.rate import Pacer
from live.util.clock import FakeClock

pytestmark = pytest.mark.anyio


def test_a_burst_is_answered_at_once_then_turns_come_at_the_rate() -> None:
    clock = FakeClock()
    pacer = Pacer(10.0, 3, monotonic=clock.now)
    waits = [pacer.reserve() for _ in range(6)]
    assert waits == pytest.approx([0, 0, 0, 0.1, 0.2, 0.3])
    assert pacer.backlog_s() == pytest.approx(0.4)
    clock.advance(0.25)
    assert pacer.reserve() == pytest.approx(0.15)  # still in turn behind the others


def test_a_turn_too_far_off_is_not_taken() -> None:
    clock = FakeClock()
    pacer = Pacer(10.0, 1, monotonic=clock.now)
    assert [pacer.reserve(0.25) for _ in range(3)] == pytest.approx([0, 0.1, 0.2])
    assert pacer.reserve(0.25) is None
    assert pacer.reserve(0.25) is None  # a refusal takes no turn: the backlog is the same
    assert pacer.backlog_s() == pytest.approx(0.3)


def test_a_quiet_spell_gives_the_burst_back() -> None:
    clock = FakeClock()
    pacer = Pacer(10.0, 4, monotonic=clock.now)
    for _ in range(8):
        pacer.reserve()
    clock.advance(60)
    assert [pacer.reserve() for _ in range(4)] == [0, 0, 0, 0]
    assert pacer.reserve() == pytest.approx(0.1)


def test_a_pacer_needs_a_rate_and_a_burst() -> None:
    with pytest.raises(ValueError):
        Pacer(0, 1)
    with pytest.raises(ValueError):
        Pacer(1, 0)


def test_a_body_is_made_again_only_after_a_change_or_when_old() -> None:
    clock = FakeClock()
    version = [0]
    made: list[int] = []

    def make() -> bytes:
        made.append(version[0])
        return f"v{version[0]}".encode()

    body = SharedBody(make, lambda: version[0], max_age_s=0.25, monotonic=clock.now)
    assert [body.get() for _ in range(100)] == [b"v0"] * 100
    assert made == [0]
    version[0] = 1  # the device changed: the next reader sees it
    assert body.get() == b"v1"
    clock.advance(0.1)
    assert body.get() == b"v1"
    clock.advance(0.2)  # nothing changed, but what moves with time alone must move on
    assert body.get() == b"v1"
    assert made == [0, 1, 1]
    assert body.made == 3


@asynccontextmanager
async def paced_server(pacing: RequestPacing) -> AsyncIterator[int]:
    async def answer(request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    app = web.Application(middlewares=[pacing.pace])
    app.router.add_get("/api/state", answer)
    app.router.add_get("/healthz", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    sock = socket.create_server(("127.0.0.1", 0))
    site = web.SockSite(runner, sock)
    await site.start()
    try:
        yield sock.getsockname()[1]
    finally:
        await runner.cleanup()


def ask(port: int, path: str) -> tuple[int, str]:
    """One request on its own connection: (status, Retry-After or '')."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head = data.split(b"\r\n\r\n", 1)[0].decode().split("\r\n")
    fields = dict(line.split(": ", 1) for line in head[1:])
    return int(head[0].split()[1]), fields.get("Retry-After", "")


async def test_readers_past_the_rate_wait_their_turn_or_are_told_when_to_come_back() -> None:
    # A clock that does not move: the turns depend only on the order of asking, however
    # slowly this machine gets the requests through.
    clock = FakeClock()
    pacing = RequestPacing(rate_per_s=10, burst=2, max_wait_s=0.3, monotonic=clock.now)
    async with paced_server(pacing) as port:
        answers: list[tuple[int, str]] = []

        async def one() -> None:
            answers.append(await anyio.to_thread.run_sync(ask, port, "/api/state"))

        async with anyio.create_task_group() as group:
            for _ in range(7):
                group.start_soon(one)
        statuses = sorted(status for status, _ in answers)
        # 2 at once, 3 in turn within 0.3 s, and the rest told to come back.
        assert statuses == [200] * 5 + [429] * 2
        assert {after for status, after in answers if status == 429} == {"1"}
        assert (pacing.stats.waited, pacing.stats.refused) == (3, 2)
        # A monitor's probe has a lane of its own: it does not wait behind the readers.
        assert await anyio.to_thread.run_sync(ask, port, "/healthz") == (200, "")
