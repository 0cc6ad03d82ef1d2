"""MQTT against a real Mosquitto broker started by the test (Debian's mosquitto).

Without mosquitto the broker tests skip, except under CI=1/true, where they fail.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from device.config import ConfigError
from device.events import CountChanged, SourceStateEvent
from device.outputs.mqtt.publisher import MqttPublisher
from device.outputs.mqtt.settings import MqttSettings, parse_mqtt
from device.outputs.mqtt.state import UNKNOWN_COUNT
from live.events import ModelAudio, ModelText
from tests.datafiles import REPO_ROOT, data_file
from tests.ops.support import Broker, Received, Subscriber

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def count(n: int, t: float = 1.0) -> CountChanged:
    return CountChanged(t=t, count=n, previous=None, raw=n, t_media=t)


def publisher(broker: Broker, device_id: str, **options: Any) -> MqttPublisher:
    options.setdefault("backoff_s", (0.05, 0.3))
    return MqttPublisher(parse_mqtt(broker.url), device_id=device_id, model="local", **options)


def live_counts(messages: list[Received], topic: str) -> list[int]:
    """Counts delivered as they happened (not replayed as retained), repeats folded.

    QoS 1 is at-least-once: a message whose acknowledgement was lost comes twice.
    """
    values: list[int] = []
    for m in messages:
        if m.topic == topic and not m.retain and m.payload:
            value = json.loads(m.payload)["count"]
            if value is None:
                continue  # unknown (the end of a run), not a count
            if not values or values[-1] != value:
                values.append(value)
    return values


def has(
    topic: str, payload: bytes | None = None, *, retained: bool | None = None
) -> Callable[[list[Received]], bool]:
    def check(messages: list[Received]) -> bool:
        return any(
            m.topic == topic
            and (payload is None or m.payload == payload)
            and (retained is None or m.retain == retained)
            for m in messages
        )

    return check


async def wait(
    subscriber: Subscriber, predicate: Callable[[list[Received]], bool], what: str
) -> None:
    # The subscriber blocks on a condition; wait in a thread so the publisher keeps running.
    await anyio.to_thread.run_sync(lambda: subscriber.wait_for(predicate, what))


def test_parse_mqtt() -> None:
    assert parse_mqtt("mqtt://broker") == MqttSettings("broker", 1883)
    assert parse_mqtt("mqtts://broker") == MqttSettings("broker", 8883, tls=True)
    settings = parse_mqtt("mqtt://cam%40site:p%3Ass@10.1.2.3:1884")
    assert (settings.host, settings.port, settings.username) == ("10.1.2.3", 1884, "cam@site")
    assert settings.password == "p:ss" and "p:ss" not in repr(settings) + str(settings)
    for bad in ("broker:1883", "http://broker", "mqtt://", "mqtt://b:x", "mqtt://b/topic"):
        with pytest.raises(ConfigError, match="mqtt: "):
            parse_mqtt(bad)


def test_queue_is_bounded_but_the_latest_count_is_kept() -> None:
    said: list[str] = []
    pub = MqttPublisher(
        MqttSettings("127.0.0.1", 1), device_id="cam", max_queue=5, announce=said.append
    )
    for n in range(20):
        pub.write(count(n, t=float(n)))
    pub.write(ModelAudio(mime_type="audio/pcm", size=3, data=b"abc"))  # never published
    # 20 count events went in: the 5 newest wait, 15 were dropped (counted, said once).
    # The count itself is state: one place in the queue, holding the newest value.
    assert pub.backlog.events == 5 and pub.dropped == 15
    assert len([line for line in said if "dropping the oldest" in line]) == 1, said
    assert pub.problems() == ["MQTT: 15 events dropped"]
    assert pub.latest_count is not None
    assert json.loads(pub.latest_count.payload)["count"] == 19 and pub.latest_count.retain
    (state,) = [entry for entry in pub.backlog if not entry.event]
    count_now, counting = pub._messages(state)
    assert json.loads(count_now.payload)["count"] == 19 and counting.payload == b"online"


def test_discovery_configs_follow_home_assistant_conventions() -> None:
    pub = MqttPublisher(MqttSettings("b"), device_id="door", model="local", version="0.1.0")
    sensor, occupancy = pub.topics.discovery()
    assert sensor.topic == "homeassistant/sensor/door_people/config" and sensor.retain
    assert occupancy.topic == "homeassistant/binary_sensor/door_occupancy/config"
    s, o = json.loads(sensor.payload), json.loads(occupancy.payload)
    for config in (s, o):
        assert config["state_topic"] == "lookout/door/count"
        # Available while the process is up *and* it knows the count.
        assert config["availability"] == [
            {"topic": "lookout/door/state"},
            {"topic": "lookout/door/counting"},
        ]
        assert config["availability_mode"] == "all"
        assert config["expire_after"] == 180  # 3 heartbeats of silence
        assert (config["payload_available"], config["payload_not_available"]) == (
            "online",
            "offline",
        )
        assert config["device"]["identifiers"] == ["lookout_door"]
    assert s["unique_id"] != o["unique_id"]
    # A payload without a number (unknown) is None, Home Assistant's unknown, not an error.
    assert s["value_template"] == (
        "{{ value_json.count if value_json is defined and value_json.count is number else None }}"
    )
    assert s["state_class"] == "measurement"
    assert o["device_class"] == "occupancy" and "value_json.count > 0" in o["value_template"]


async def test_count_state_and_discovery_are_retained_events_are_not(broker: Broker) -> None:
    live = Subscriber(broker.port, ["lookout/cam1/#"])
    pub = publisher(broker, "cam1")
    async with anyio.create_task_group() as tg:
        tg.start_soon(pub.serve)
        pub.write(SourceStateEvent(t=0.1, source="rtsp://u:pw@cam/1", state="running"))
        pub.write(count(3))
        pub.write(ModelText(t=1.2, text="3 people in view."))
        events_topic = "lookout/cam1/events"
        await wait(live, lambda ms: len([m for m in ms if m.topic == events_topic]) >= 3, "events")
        expected = {
            "lookout/cam1/instance",  # which process publishes as cam1 (one id, one process)
            "lookout/cam1/state",
            "lookout/cam1/counting",
            "lookout/cam1/count",
            "homeassistant/sensor/cam1_people/config",
            "homeassistant/binary_sensor/cam1_occupancy/config",
        }
        late = Subscriber(broker.port, ["lookout/cam1/#", "homeassistant/#"])
        # The broker sends a new subscriber the retained messages in a burst: all of them
        # (waiting for some was a race with the rest of the burst).
        await wait(late, lambda ms: expected <= {m.topic for m in ms if m.retain}, "retained")
        tg.cancel_scope.cancel()
    retained = {m.topic: m for m in late.messages if m.retain}
    assert set(retained) == expected
    assert retained["lookout/cam1/state"].payload == b"online"
    assert retained["lookout/cam1/counting"].payload == b"online"
    assert json.loads(retained["lookout/cam1/count"].payload)["count"] == 3
    events = [json.loads(m.payload) for m in live.on("lookout/cam1/events")]
    assert [e["type"] for e in events] == ["source_state", "count", "model_text"]
    assert events[0]["source"] == "rtsp://cam/1" and "time" in events[0]
    live.close()
    late.close()


async def test_clean_shutdown_says_offline_after_flushing(broker: Broker) -> None:
    live = Subscriber(broker.port, ["lookout/cam2/count", "lookout/cam2/events"])
    pub = publisher(broker, "cam2")
    async with anyio.create_task_group() as tg:
        tg.start_soon(pub.serve)
        with anyio.fail_after(10):
            await pub.wait_connected()
        pub.write(count(7))  # queued right before the end: the event is still delivered
        tg.cancel_scope.cancel()
    live.wait_for(
        lambda ms: any(m.topic.endswith("/events") and b'"count":7' in m.payload for m in ms),
        "the count event",
    )
    assert pub.undelivered() is None
    late = Subscriber(broker.port, ["lookout/cam2/#"])
    late.wait_for(has("lookout/cam2/state", b"offline", retained=True), "offline")
    late.wait_for(has("lookout/cam2/counting", b"offline", retained=True), "counting offline")
    # The count died with the process: nobody may read it later as current.
    assert [json.loads(m.payload)["count"] for m in late.on("lookout/cam2/count")] == [None]
    live.close()
    late.close()


def event_counts(messages: list[Received], topic: str) -> list[int]:
    """The count events delivered, repeats folded (QoS 1: a lost ack means twice)."""
    values: list[int] = []
    for m in messages:
        if m.topic == topic and json.loads(m.payload)["type"] == "count":
            value = json.loads(m.payload)["count"]
            if not values or values[-1] != value:
                values.append(value)
    return values


async def test_broker_restart_loses_no_count_change(broker: Broker) -> None:
    topic, events = "lookout/cam3/count", "lookout/cam3/events"
    # A persistent session, so the broker keeps what is published while we reconnect.
    watcher = Subscriber(broker.port, [topic, events], client_id="watcher-cam3", persistent=True)
    pub = publisher(broker, "cam3")
    async with anyio.create_task_group() as tg:
        tg.start_soon(pub.serve)
        pub.write(count(1))
        await wait(watcher, lambda ms: live_counts(ms, topic) == [1], "count 1")
        await anyio.to_thread.run_sync(broker.stop)
        pub.write(count(2))  # while the broker is down: queued, not lost
        pub.write(count(3))
        await anyio.to_thread.run_sync(broker.start)
        await wait(watcher, lambda ms: live_counts(ms, topic)[-1:] == [3], "the count 3")
        pub.write(count(4))
        await wait(watcher, lambda ms: live_counts(ms, topic)[-1:] == [4], "count 4")
        await wait(watcher, lambda ms: event_counts(ms, events)[-1:] == [4], "the event of 4")
        assert pub.stats.connects == 2
        tg.cancel_scope.cancel()
    # Every change is an event; the count topic is state (its newest value, retained).
    assert event_counts(watcher.messages, events) == [1, 2, 3, 4]
    assert live_counts(watcher.messages, topic) in ([1, 3, 4], [1, 2, 3, 4])
    watcher.close()


async def test_reconnect_republishes_the_latest_count_the_broker_lost(broker: Broker) -> None:
    pub = publisher(broker, "cam4")
    async with anyio.create_task_group() as tg:
        tg.start_soon(pub.serve)
        pub.write(count(5))
        first = Subscriber(broker.port, ["lookout/cam4/count"])
        await wait(first, has("lookout/cam4/count"), "count 5")
        first.close()
        # A broker that comes back without its retained messages (no persistence file).
        await anyio.to_thread.run_sync(broker.stop)
        for stale in broker.directory.glob("*.db"):
            stale.unlink()
        await anyio.to_thread.run_sync(broker.start)
        again = Subscriber(broker.port, ["lookout/cam4/count"])
        await wait(again, has("lookout/cam4/count"), "the count, published again")
        again.close()
        late = Subscriber(broker.port, ["lookout/cam4/count"])
        await wait(late, has("lookout/cam4/count", retained=True), "the retained count")
        assert json.loads(late.on("lookout/cam4/count")[0].payload)["count"] == 5
        late.close()
        tg.cancel_scope.cancel()
    assert pub.stats.connects == 2


def _lookout_mqtt(
    broker: Broker, tmp_path: Path, source: str, log: Path
) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k not in {"GEMINI_API_KEY", "GOOGLE_API_KEY"}}
    (tmp_path / "empty.toml").write_text("")  # not /etc/lookout/lookout.toml
    with log.open("ab") as out:
        return subprocess.Popen(
            [
                sys.executable, "-m", "device.cli", "run", "--model", "local",
                "--source", source,
                "--pace", "realtime", "--loop", "--no-http", "--mqtt", broker.url,
                "--device-id", "killtest", "--config", str(tmp_path / "empty.toml"),
            ],
            cwd=REPO_ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
        )  # fmt: skip


def _end(process: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> None:
    if process.poll() is None:
        process.send_signal(sig)
    try:
        process.wait(10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)


def _retained(port: int, topics: list[str], needed: set[str]) -> dict[str, bytes]:
    late = Subscriber(port, topics)
    try:
        late.wait_for(lambda ms: {m.topic for m in ms} >= needed, f"retained {sorted(needed)}")
        return {m.topic: m.payload for m in late.messages if m.retain}
    finally:
        late.close()


def test_a_killed_lookout_goes_unavailable_and_its_restart_never_serves_the_old_count(
    broker: Broker, tmp_path: Path
) -> None:
    base = "lookout/killtest"
    topics = [f"{base}/#", "homeassistant/+/+/config"]
    watch = Subscriber(broker.port, topics)
    log = tmp_path / "lookout.log"
    process = _lookout_mqtt(broker, tmp_path, str(data_file("vtest.avi")), log)
    try:
        try:
            watch.wait_for(
                lambda ms: (
                    has(f"{base}/state", b"online")(ms)
                    and has(f"{base}/counting", b"online")(ms)
                    and any(m.topic == f"{base}/count" and m.payload for m in ms)
                ),
                "online and a count",
                timeout=15,
            )
        except AssertionError as exc:
            hint = "(are the operations wired into `lookout run`?)"
            raise AssertionError(f"{exc} {hint}\nlookout output:\n{log.read_text()}") from None
        _end(process)
        watch.wait_for(has(f"{base}/state", b"offline"), "the last will")
    finally:
        _end(process)
    # A killed process cannot clear its count: the broker's will makes the sensors
    # unavailable (availability needs both topics online).
    configs = {
        "homeassistant/sensor/killtest_people/config",
        "homeassistant/binary_sensor/killtest_occupancy/config",
    }
    retained = _retained(broker.port, topics, {f"{base}/state", f"{base}/count", *configs})
    assert retained[f"{base}/state"] == b"offline"
    assert isinstance(json.loads(retained[f"{base}/count"])["count"], int)
    assert "homeassistant/sensor/killtest_people/config" in retained
    assert "homeassistant/binary_sensor/killtest_occupancy/config" in retained

    # Restarted with a camera that does not answer: online, but the count is unknown;
    # the last run's count is cleared, not served again.
    seen = len(watch.messages)
    camera = f"rtsp://127.0.0.1:{_closed_port()}/stream"
    process = _lookout_mqtt(broker, tmp_path, camera, log)
    try:
        watch.wait_for(
            lambda ms: (
                has(f"{base}/state", b"online")(ms[seen:])
                and has(f"{base}/counting", b"offline")(ms[seen:])
                and has(f"{base}/count", UNKNOWN_COUNT)(ms[seen:])
            ),
            "online, counting offline, count cleared",
            timeout=20,
        )
        retained = _retained(broker.port, topics, {f"{base}/state", f"{base}/counting", *configs})
        assert retained[f"{base}/state"] == b"online"
        assert retained[f"{base}/counting"] == b"offline"
        assert json.loads(retained[f"{base}/count"])["count"] is None, retained
        counts = [
            m
            for m in watch.messages[seen:]
            if m.topic == f"{base}/count" and m.payload and m.payload != UNKNOWN_COUNT
        ]
        assert counts == [], counts  # never said again, not even once
    finally:
        _end(process, signal.SIGTERM)
    watch.close()


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
