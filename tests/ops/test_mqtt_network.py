"""MQTT over a real network: a broker far away, two devices with one id, a flood, a refusal.

A real Mosquitto broker, reached through a TCP proxy that delays every byte (a
broker 50 ms away), and the real publisher. The scene's events are written
straight to the publisher (what perception would publish for 40 lines and 10
zones), so the test is about delivery, not detection.
"""

from __future__ import annotations

import asyncio
import gc
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import aiomqtt
import anyio
import pytest

from device.events import CountChanged, LineCrossed, ZoneCount
from device.outputs.mqtt.client import Client
from device.outputs.mqtt.publisher import MqttPublisher
from device.outputs.mqtt.settings import parse_mqtt
from device.outputs.mqtt.state import UNKNOWN_COUNT, UNKNOWN_ZONE
from live.events import Event
from tests.ops.apprun import running_app
from tests.ops.support import (
    LINES,
    ZONES,
    Broker,
    DelayProxy,
    Received,
    Scene,
    Subscriber,
    mosquitto_path,
    need_tool,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def publisher(
    url: str, device_id: str, said: list[str] | None = None, **options: Any
) -> MqttPublisher:
    options.setdefault("backoff_s", (0.05, 0.3))
    if said is not None:
        options["announce"] = said.append
    return MqttPublisher(parse_mqtt(url), device_id=device_id, model="local", **options)


async def play(pub: MqttPublisher, events: list[Event], seconds: float) -> None:
    """Write the events spread over ``seconds`` (a scene's pace, not a wait for anything)."""
    batches = max(1, int(seconds / 0.02))
    size = -(-len(events) // batches)
    for start in range(0, len(events), size):
        for event in events[start : start + size]:
            pub.write(event)
        await anyio.sleep(0.02)


def crossings_on(messages: list[Received]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (m.topic.split("/")[3], json.loads(m.payload))
        for m in messages
        if m.topic.endswith("/crossing")
    ]


async def wait(
    subscriber: Subscriber,
    predicate: Callable[[list[Received]], bool],
    what: str,
    timeout: float = 30,
) -> None:
    await anyio.to_thread.run_sync(lambda: subscriber.wait_for(predicate, what, timeout))


def retained(port: int, topics: list[str], sentinel: str) -> dict[str, bytes]:
    """What the broker holds now; the sentinel (known to be retained) is subscribed last, so
    once it came every other retained message has (Mosquitto answers in order)."""
    late = Subscriber(port, [*topics, sentinel])
    try:
        late.wait_for(lambda ms: any(m.topic == sentinel for m in ms), f"retained {sentinel}")
        return {m.topic: m.payload for m in late.messages if m.retain}
    finally:
        late.close()


def never_drops(pub: MqttPublisher) -> Callable[[list[Received]], bool]:
    """A wait that fails at the first drop instead of timing out much later."""

    def check(_: list[Received]) -> bool:
        if pub.dropped:
            raise AssertionError(f"the publisher dropped {pub.dropped} messages")
        return False

    return check


async def test_a_broker_50_ms_away_gets_every_crossing_of_40_lines_and_10_zones(
    broker: Broker,
) -> None:
    scene = Scene.busy()
    base = "lookout/far"
    watch = Subscriber(broker.port, [f"{base}/#"])
    said: list[str] = []
    with DelayProxy(broker.port, 0.05) as proxy:
        pub = publisher(proxy.url, "far", said, lines=LINES, zones=ZONES)
        async with anyio.create_task_group() as tg:
            tg.start_soon(pub.serve)
            with anyio.fail_after(10):
                await pub.wait_connected()
            # The scene's ~60 s, ten times as fast: the publisher must keep up or say so.
            await play(pub, scene.events, 6.0)
            events = len(scene.events)
            dropped = never_drops(pub)
            await wait(
                watch,
                lambda ms: (
                    dropped(ms)
                    or (
                        len(crossings_on(ms)) >= scene.crossings
                        and len([m for m in ms if m.topic == f"{base}/events"]) >= events
                    )
                ),
                "every crossing and every event",
                timeout=60,
            )
            assert pub.dropped == 0 and not said, said
            tg.cancel_scope.cancel()
    # Every crossing once, in order per line (no reconnect here, so no repeat).
    got = crossings_on(watch.messages)
    for line in LINES:
        sent = [e for e in scene.events if isinstance(e, LineCrossed) and e.line == line]
        assert [c["track"] for name, c in got if name == line] == [e.track for e in sent]
    topics = [f"{base}/line/{n}/{leaf}" for n in LINES for leaf in ("in", "out")]
    topics += [f"{base}/zone/{z}/people" for z in ZONES] + [f"{base}/count", f"{base}/counting"]
    held = retained(broker.port, topics, f"{base}/state")
    # The run's last totals stand (they are what it counted); its counts died with it.
    for line, (total_in, total_out) in scene.totals.items():
        assert (held[f"{base}/line/{line}/in"], held[f"{base}/line/{line}/out"]) == (
            str(total_in).encode(),
            str(total_out).encode(),
        ), line
    assert held[f"{base}/state"] == b"offline"
    assert held[f"{base}/counting"] == b"offline" and held[f"{base}/count"] == UNKNOWN_COUNT
    assert all(held.get(f"{base}/zone/{z}/people", UNKNOWN_ZONE) == UNKNOWN_ZONE for z in ZONES)
    watch.close()


async def test_a_clean_exit_with_a_backlog_leaves_the_broker_offline_and_cleared(
    broker: Broker,
) -> None:
    base = "lookout/late"
    said: list[str] = []
    with DelayProxy(broker.port, 0.05) as proxy:
        pub = publisher(proxy.url, "late", said, lines=["door"], zones=["queue"])
        async with anyio.create_task_group() as tg:
            tg.start_soon(pub.serve)
            with anyio.fail_after(10):
                await pub.wait_connected()
            pub.write(CountChanged(count=4, previous=None))
            pub.write(ZoneCount(zone="queue", people=2, previous=None, dwelling=0, longest_s=1.0))
            # More than a 100 ms round trip can deliver in the 2 s an exit may take.
            for track in range(1, 451):
                pub.write(LineCrossed(line="door", direction="in", track=track, t_media=0.0,
                                      total_in=track, total_out=0))  # fmt: skip
            tg.cancel_scope.cancel()
    topics = [f"{base}/count", f"{base}/counting", f"{base}/zone/queue/people"]
    held = retained(broker.port, [*topics, f"{base}/line/door/in"], f"{base}/state")
    # A subscriber connecting after the exit reads no online and no count (unknown).
    assert held[f"{base}/state"] == b"offline", held
    assert held[f"{base}/counting"] == b"offline"
    assert held[f"{base}/count"] == UNKNOWN_COUNT
    assert held[f"{base}/zone/queue/people"] == UNKNOWN_ZONE
    # The line's total is the last one: the newest total is sent before old events.
    assert held[f"{base}/line/door/in"] == b"450"
    # What did not go out is counted and said, not dropped without a word.
    lost = pub.undelivered()
    assert lost is not None and "did not reach" in lost, lost
    assert any("did not reach" in line for line in said), said


async def test_two_devices_with_one_id_say_so_and_do_not_flap(broker: Broker) -> None:
    said: dict[str, list[str]] = {"front": [], "back": []}
    clash = anyio.Event()

    def announcer(name: str) -> Callable[[str], None]:
        def announce(line: str) -> None:
            said[name].append(line)
            if "--device-id" in line:
                clash.set()

        return announce

    a = publisher(broker.url, "raspberrypi", lines=["front"], announce=announcer("front"))
    b = publisher(broker.url, "raspberrypi", lines=["back"], announce=announcer("back"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(a.serve)
        with anyio.fail_after(10):
            await a.wait_connected()
        tg.start_soon(b.serve)
        with anyio.fail_after(15):
            await clash.wait()
        # Give them what 2 s of flapping was (about 4 reconnects): they must stay put.
        connects = a.stats.connects + b.stats.connects
        await anyio.sleep(2.0)
        assert a.stats.connects + b.stats.connects - connects <= 1
        assert a.stats.connects + b.stats.connects <= 5
        loser, winner = (a, b) if a.stats.clash else (b, a)
        lines = said["front"] if loser is a else said["back"]
        assert not winner.stats.clash
        # One line, naming the id and what to do about it; the same in its health.
        clash_lines = [line for line in lines if "raspberrypi" in line and "--device-id" in line]
        assert len(clash_lines) == 1, lines
        assert any("--device-id" in p for p in loser.problems())
        assert winner.connected and not loser.connected
        tg.cancel_scope.cancel()


async def test_a_client_that_keeps_taking_the_client_id_is_said_and_waited_out(
    broker: Broker,
) -> None:
    """Another client with the same client id and no instance topic (an older Lookout, a
    copy of the configuration): each connect drops the other. Backing off bounds it."""
    kicker = Subscriber(broker.port, ["nothing/here"], client_id="lookout-kicked")
    said: list[str] = []
    flapping = anyio.Event()

    def announce(line: str) -> None:
        said.append(line)
        if "right after it was made" in line:
            flapping.set()

    pub = publisher(broker.url, "kicked", backoff_s=(0.05, 2.0), announce=announce)
    async with anyio.create_task_group() as tg:
        tg.start_soon(pub.serve)
        with anyio.fail_after(20):
            await flapping.wait()
        assert any("lookout-kicked" in p for p in pub.problems()), pub.problems()
        connects = pub.stats.connects
        await anyio.sleep(4.0)  # at 0.05 s between tries, that was 40 reconnects
        assert pub.stats.connects - connects <= 3
        tg.cancel_scope.cancel()
    # Said once, not once per round.
    assert len([line for line in said if "right after it was made" in line]) == 1, said
    kicker.close()


async def test_a_flood_of_home_assistant_online_loses_no_event(broker: Broker) -> None:
    base = "lookout/flood"
    watch = Subscriber(broker.port, [f"{base}/events", "homeassistant/+/+/config"])
    said: list[str] = []
    pub = publisher(broker.url, "flood", said, lines=["door"], zones=["queue"])
    flooder = Subscriber(broker.port, ["nothing/here"])
    async with anyio.create_task_group() as tg:
        tg.start_soon(pub.serve)
        with anyio.fail_after(10):
            await pub.wait_connected()

        def flood() -> None:
            for _ in range(5000):
                flooder.client.publish("homeassistant/status", b"online", qos=0)

        async with anyio.create_task_group() as inner:
            inner.start_soon(anyio.to_thread.run_sync, flood)
            for n in range(1, 501):
                pub.write(CountChanged(count=n % 7, previous=(n - 1) % 7))
                if n % 50 == 0:
                    await anyio.sleep(0.01)
        dropped = never_drops(pub)
        await wait(
            watch,
            lambda ms: dropped(ms) or len([m for m in ms if m.topic == f"{base}/events"]) >= 500,
            "every count event",
        )
        assert pub.dropped == 0
        tg.cancel_scope.cancel()
    configs = [m for m in watch.messages if m.topic.endswith("/config")]
    # The first announcement, and few more however many "online"s came (not one per online).
    per_round = len(pub.topics.discovery())
    assert len(configs) <= 4 * per_round, len(configs)
    flooder.close()
    watch.close()


@pytest.fixture
def guarded_broker(tmp_path: Path) -> Any:
    executable = need_tool(mosquitto_path(), "mosquitto", "mosquitto")
    directory = tmp_path / "guarded"
    directory.mkdir()
    running = Broker(executable, directory, users={"lookout": "right"})
    running.start()
    try:
        yield running
    finally:
        running.stop()


async def test_a_wrong_password_shows_in_healthz_and_the_exit_says_what_was_lost(
    guarded_broker: Broker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"mqtt://lookout:wrong@127.0.0.1:{guarded_broker.port}"
    async with running_app(tmp_path, mqtt=url, device_id="guarded") as running:
        async with aiohttp.ClientSession() as http:

            async def health() -> dict[str, Any]:
                # The reasons are on /api/state; /healthz (no token) says states only.
                async with http.get(running.url + "api/state") as response:
                    body: dict[str, Any] = (await response.json())["health"]
                    return body

            with anyio.fail_after(30):
                # A server over HTTP has nothing to wait on but its answers.
                while "refused" not in (body := await health())["reason"]:  # noqa: ASYNC110
                    await anyio.sleep(0.1)
            async with http.get(running.url + "healthz") as response:
                healthz = await response.json()
        assert body["status"] == "degraded"
        assert "not authori" in body["reason"].lower() or "password" in body["reason"].lower()
        assert "wrong" not in body["reason"]  # the password itself is never shown
        assert (healthz["status"], healthz["reason"]) == ("degraded", "MQTT failing")
        console = running.app.out.getvalue()  # type: ignore[attr-defined]
        assert len([line for line in console.splitlines() if "refused" in line]) == 1, console
    assert running.exit_code == 3
    err = capsys.readouterr().err
    assert "MQTT" in err and "did not reach" in err, err


async def test_a_disconnection_nobody_reads_any_more_is_not_an_unhandled_error() -> None:
    """paho may report a lost connection after the publisher gave it up (its goodbye
    unacknowledged at exit): that must not surface as "Future exception was never
    retrieved" at some later garbage collection (aiomqtt's own client does)."""
    reported: list[str] = []
    loop = asyncio.get_running_loop()
    before = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reported.append(context["message"]))
    try:
        for cls in (aiomqtt.Client, Client):
            client = cls("127.0.0.1", 1)
            client._disconnected.set_exception(aiomqtt.MqttCodeError(128, "gone"))
            client._disconnected = asyncio.Future()  # what a reconnect's __aenter__ does
            client._disconnected.set_exception(aiomqtt.MqttCodeError(128, "gone again"))
            await asyncio.sleep(0)
            del client
            gc.collect()
            await asyncio.sleep(0)
            if cls is aiomqtt.Client:  # the check can fail: the plain client is reported
                assert reported, "aiomqtt's own client no longer leaves it unread"
                reported.clear()
    finally:
        loop.set_exception_handler(before)
    assert reported == []
