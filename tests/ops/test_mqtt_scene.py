"""MQTT and Home Assistant for named lines and zones, against a real Mosquitto broker."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from device.config import Config, ConfigError, LineSpec, ZoneSpec
from device.events import CountChanged, DwellPassed, LineCrossed, SceneChanged, ZoneCount
from device.outputs.mqtt.ha_discovery import value
from device.outputs.mqtt.publisher import MqttPublisher
from device.outputs.mqtt.settings import MqttSettings, parse_mqtt
from device.outputs.mqtt.state import UNKNOWN_ZONE
from live.util.clock import FakeClock
from tests.ops.support import Broker, Received, Subscriber

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

LINE = "lookout/{id}/line/door"
ZONE = "lookout/{id}/zone/queue"


def publisher(broker: Broker, device_id: str, **options: Any) -> MqttPublisher:
    options.setdefault("backoff_s", (0.05, 0.3))
    options.setdefault("lines", ["door"])
    options.setdefault("zones", ["queue"])
    return MqttPublisher(parse_mqtt(broker.url), device_id=device_id, model="local", **options)


def crossing(direction: str, total_in: int, total_out: int, track: int = 7) -> LineCrossed:
    return LineCrossed(
        line="door",
        direction=direction,
        track=track,
        t_media=2.0,
        total_in=total_in,
        total_out=total_out,
    )


def zone(people: int | None, previous: int | None, dwelling: int = 0) -> ZoneCount:
    return ZoneCount(
        zone="queue",
        people=people,
        previous=previous,
        dwelling=dwelling,
        longest_s=4.5 if people else 0.0,
        t_media=3.0,
    )


def last(messages: list[Received], topic: str) -> Received | None:
    found = [m for m in messages if m.topic == topic]
    return found[-1] if found else None


def last_is(topic: str, payload: bytes) -> Callable[[list[Received]], bool]:
    def check(messages: list[Received]) -> bool:
        message = last(messages, topic)
        return message is not None and message.payload == payload

    return check


def retained(port: int, topics: list[str], sentinel: str) -> dict[str, bytes]:
    """What the broker holds for ``topics``, read by a subscriber that connects now.

    The sentinel (a topic known to be retained) is subscribed last in the same
    request: Mosquitto sends each subscription's retained messages in order, so
    once the sentinel's has come, every other has.
    """
    late = Subscriber(port, [*topics, sentinel])
    try:
        late.wait_for(lambda ms: any(m.topic == sentinel for m in ms), f"retained {sentinel}")
        return {m.topic: m.payload for m in late.messages if m.retain}
    finally:
        late.close()


async def wait(
    subscriber: Subscriber, predicate: Callable[[list[Received]], bool], what: str
) -> None:
    # The subscriber blocks on a condition; wait in a thread so the publisher keeps running.
    await anyio.to_thread.run_sync(lambda: subscriber.wait_for(predicate, what))


def test_discovery_of_a_line_and_a_zone() -> None:
    pub = MqttPublisher(MqttSettings("b"), device_id="shop", lines=["door"], zones=["queue"])
    configs = {m.topic: json.loads(m.payload) for m in pub.topics.discovery()}
    assert all(m.retain for m in pub.topics.discovery())
    prefix = "homeassistant"
    line_in = configs[f"{prefix}/sensor/shop_line_door_in/config"]
    line_out = configs[f"{prefix}/sensor/shop_line_door_out/config"]
    crossed = configs[f"{prefix}/event/shop_line_door_crossing/config"]
    people = configs[f"{prefix}/sensor/shop_zone_queue_people/config"]
    occupied = configs[f"{prefix}/binary_sensor/shop_zone_queue_occupancy/config"]
    dwelling = configs[f"{prefix}/sensor/shop_zone_queue_dwelling/config"]
    dwell = configs[f"{prefix}/event/shop_zone_queue_dwell/config"]
    assert len(configs) == 2 + 3 + 4  # the people sensor and occupancy, then the scene's

    assert (line_in["state_topic"], line_out["state_topic"]) == (
        "lookout/shop/line/door/in",
        "lookout/shop/line/door/out",
    )
    zone_available = [
        {"topic": "lookout/shop/state"},
        {"topic": "lookout/shop/zone/queue/counting"},
    ]
    for config in (line_in, line_out):
        assert config["state_class"] == "total_increasing"
        assert config["unit_of_measurement"] == "people"
        # A total stays true while the camera is down: only the process decides.
        assert config["availability"] == [{"topic": "lookout/shop/state"}]
    for config in (people, occupied, dwelling):
        assert config["state_topic"] == "lookout/shop/zone/queue/people"
        # The people sensor's rules, with the zone's own "counting" topic.
        assert config["availability"] == zone_available
    for config in (line_in, line_out, people, occupied, dwelling):
        assert config["availability_mode"] == "all"
        assert config["expire_after"] == 180
    for config in (crossed, dwell):
        assert "expire_after" not in config  # events keep no state to expire
        assert config["availability_mode"] == "all"
    assert crossed["availability"] == [{"topic": "lookout/shop/state"}]
    assert dwell["availability"] == zone_available
    assert crossed["event_types"] == ["in", "out"]
    assert crossed["state_topic"] == "lookout/shop/line/door/crossing"
    assert dwell["event_types"] == ["dwell"]
    assert dwell["state_topic"] == "lookout/shop/zone/queue/dwell"
    assert people["value_template"] == value("people")
    assert people["state_class"] == "measurement"
    assert dwelling["value_template"] == value("dwelling")
    assert occupied["device_class"] == "occupancy"
    assert "value_json.people > 0" in occupied["value_template"]
    assert (occupied["payload_on"], occupied["payload_off"]) == ("ON", "OFF")

    everything = list(configs.values())
    assert len({c["unique_id"] for c in everything}) == len(everything)
    assert all(c["device"]["identifiers"] == ["lookout_shop"] for c in everything)
    assert all(c["payload_available"] == "online" for c in everything)


def test_names_that_cannot_name_topics_are_refused() -> None:
    with pytest.raises(ConfigError, match="line 'a/b' cannot name MQTT topics"):
        MqttPublisher(MqttSettings("b"), device_id="shop", lines=["a/b"])
    pub = MqttPublisher(MqttSettings("b"), device_id="shop")
    pub.write(ZoneCount(zone="a+b", people=1, previous=0, dwelling=0, longest_s=0.0))
    # Only the event itself goes out; no topic is made of the name.
    assert [e.message.topic for e in pub.backlog if e.message] == ["lookout/shop/events"]
    assert len(pub.backlog) == 1


async def test_start_publishes_zero_totals_and_unknown_zones_before_online(broker: Broker) -> None:
    base_line, base_zone = LINE.format(id="s1"), ZONE.format(id="s1")
    watch = Subscriber(broker.port, ["lookout/s1/#", "homeassistant/#"])
    pub = publisher(broker, "s1")
    async with anyio.create_task_group() as tg:
        tg.start_soon(pub.serve)
        await wait(watch, lambda ms: len([m for m in ms if "/config" in m.topic]) >= 9, "configs")
        said = [(m.topic, m.payload) for m in watch.messages]
        online = said.index(("lookout/s1/state", b"online"))
        # Nothing an earlier run left can be read as current once the device says online.
        for early in [
            (f"{base_line}/in", b"0"),
            (f"{base_line}/out", b"0"),
            (f"{base_zone}/counting", b"offline"),
            (f"{base_zone}/people", UNKNOWN_ZONE),
        ]:
            assert said.index(early) < online, said
        held = retained(
            broker.port,
            [f"{base_line}/in", f"{base_line}/out", f"{base_zone}/people", f"{base_zone}/counting"],
            "homeassistant/event/s1_zone_queue_dwell/config",
        )
        tg.cancel_scope.cancel()
    assert held[f"{base_line}/in"] == b"0" and held[f"{base_line}/out"] == b"0"
    assert held[f"{base_zone}/counting"] == b"offline"
    assert held[f"{base_zone}/people"] == UNKNOWN_ZONE
    watch.close()


async def test_crossings_update_the_retained_totals_and_fire_the_event(broker: Broker) -> None:
    base = LINE.format(id="s2")
    watch = Subscriber(broker.port, [f"{base}/#"])
    pub = publisher(broker, "s2")
    async with anyio.create_task_group() as tg:
        tg.start_soon(pub.serve)
        pub.write(crossing("in", 1, 0, track=3))
        pub.write(crossing("in", 2, 0, track=4))
        pub.write(crossing("out", 2, 1, track=3))
        await wait(watch, last_is(f"{base}/out", b"1"), "out total 1")
        await wait(
            watch,
            lambda ms: len([m for m in ms if m.topic.endswith("/crossing")]) >= 3,
            "three crossing events",
        )
        held = retained(broker.port, [f"{base}/crossing", f"{base}/in"], f"{base}/out")
        tg.cancel_scope.cancel()
    assert held == {f"{base}/in": b"2", f"{base}/out": b"1"}  # the crossing events are not kept
    events = [json.loads(m.payload) for m in watch.on(f"{base}/crossing")]
    assert events == [
        {"event_type": "in", "track": 3, "total_in": 1, "total_out": 0},
        {"event_type": "in", "track": 4, "total_in": 2, "total_out": 0},
        {"event_type": "out", "track": 3, "total_in": 2, "total_out": 1},
    ]
    assert not any(m.retain for m in watch.on(f"{base}/crossing"))
    watch.close()


async def test_zone_count_feeds_the_sensors_and_unknown_makes_them_unavailable(
    broker: Broker,
) -> None:
    base = ZONE.format(id="s3")
    watch = Subscriber(broker.port, [f"{base}/#"])
    pub = publisher(broker, "s3")
    async with anyio.create_task_group() as tg:
        tg.start_soon(pub.serve)
        pub.write(zone(0, None))
        pub.write(zone(2, 0, dwelling=1))
        await wait(watch, last_is(f"{base}/counting", b"online"), "zone counting online")
        await wait(
            watch,
            lambda ms: (
                (m := last(ms, f"{base}/people")) is not None
                and bool(m.payload)
                and json.loads(m.payload)["people"] == 2
            ),
            "2 people in the zone",
        )
        held = retained(broker.port, [f"{base}/people"], f"{base}/counting")
        state = json.loads(held[f"{base}/people"])
        # What the people, dwelling and occupancy templates read.
        assert (state["people"], state["dwelling"], state["previous"]) == (2, 1, 0)
        assert state["longest_s"] == 4.5 and "time" in state
        assert held[f"{base}/counting"] == b"online"

        seen = len(watch.messages)
        pub.write(zone(None, 2))  # the source went down
        await wait(
            watch, lambda ms: last_is(f"{base}/people", UNKNOWN_ZONE)(ms[seen:]), "zone unknown"
        )
        gone = [(m.topic, m.payload) for m in watch.messages[seen:]]
        # Unavailable first: Home Assistant never shows the null as a value.
        assert gone.index((f"{base}/counting", b"offline")) < gone.index(
            (f"{base}/people", UNKNOWN_ZONE)
        )
        held = retained(broker.port, [f"{base}/people"], f"{base}/counting")
        # No count left standing: only the unknown, readable as JSON.
        assert held == {f"{base}/counting": b"offline", f"{base}/people": UNKNOWN_ZONE}

        pub.write(zone(1, None))  # back, with a fresh count
        await wait(watch, last_is(f"{base}/counting", b"online"), "zone available again")
        tg.cancel_scope.cancel()
    back = [
        json.loads(m.payload)["people"]
        for m in watch.messages[seen:]
        if m.topic == f"{base}/people" and m.payload
    ]
    assert [people for people in back if people is not None] == [1]
    watch.close()


async def test_dwell_fires_the_event_entity(broker: Broker) -> None:
    base = ZONE.format(id="s4")
    watch = Subscriber(broker.port, [f"{base}/dwell", "lookout/s4/events"])
    pub = publisher(broker, "s4")
    async with anyio.create_task_group() as tg:
        tg.start_soon(pub.serve)
        pub.write(zone(1, 0))
        pub.write(DwellPassed(zone="queue", track=11, seconds=30.5, t_media=40.0))
        await wait(watch, lambda ms: any(m.topic == f"{base}/dwell" for m in ms), "a dwell")
        await wait(
            watch,
            lambda ms: len([m for m in ms if m.topic.endswith("/events")]) >= 2,
            "the zone and dwell events",
        )
        held = retained(broker.port, [f"{base}/dwell"], "lookout/s4/state")
        tg.cancel_scope.cancel()
    (dwell,) = watch.on(f"{base}/dwell")
    assert json.loads(dwell.payload) == {"event_type": "dwell", "track": 11, "seconds": 30.5}
    assert not dwell.retain and f"{base}/dwell" not in held
    events = [json.loads(m.payload) for m in watch.on("lookout/s4/events")]
    assert [e["type"] for e in events] == ["zone", "dwell"]
    watch.close()


async def test_clean_shutdown_clears_zones_and_keeps_line_totals(broker: Broker) -> None:
    line, zone_base = LINE.format(id="s5"), ZONE.format(id="s5")
    pub = publisher(broker, "s5")
    async with anyio.create_task_group() as tg:
        tg.start_soon(pub.serve)
        with anyio.fail_after(10):
            await pub.wait_connected()
        pub.write(crossing("in", 4, 0))
        pub.write(zone(3, None))
        tg.cancel_scope.cancel()
    topics = [f"{line}/in", f"{line}/out", f"{zone_base}/people", f"{zone_base}/counting"]
    held = retained(broker.port, topics, "lookout/s5/state")
    assert held["lookout/s5/state"] == b"offline"
    assert held[f"{zone_base}/counting"] == b"offline"
    assert held[f"{zone_base}/people"] == UNKNOWN_ZONE
    # What this run counted; the next run says 0 before it says online.
    assert (held[f"{line}/in"], held[f"{line}/out"]) == (b"4", b"0")


async def test_the_app_config_names_the_lines_and_zones(broker: Broker) -> None:
    config = Config.of(
        device_id="s6",
        model="local",
        lines={"gate": LineSpec(points=((0.5, 0.0), (0.5, 1.0)))},
        zones={"till": ZoneSpec(points=((0, 0), (0.5, 0), (0.5, 0.5)), dwell=20)},
    )
    watch = Subscriber(broker.port, ["homeassistant/#"])
    pub = MqttPublisher(
        parse_mqtt(broker.url),
        device_id="s6",
        lines=list(config.scene.lines),
        zones=list(config.scene.zones),
        backoff_s=(0.05, 0.3),
    )
    async with anyio.create_task_group() as tg:
        await tg.start(pub.run)
        await wait(
            watch,
            lambda ms: (
                {
                    "homeassistant/sensor/s6_line_gate_in/config",
                    "homeassistant/binary_sensor/s6_zone_till_occupancy/config",
                }
                <= {m.topic for m in ms}
            ),
            "the gate's and the till's configs",
        )
        tg.cancel_scope.cancel()
    watch.close()


async def test_lines_and_zones_an_earlier_run_had_are_removed(broker: Broker) -> None:
    old_line, old_zone = "lookout/s7/line/old", "lookout/s7/zone/gone"
    stale = {
        f"{old_line}/in": b"5",
        f"{old_line}/out": b"2",
        f"{old_zone}/counting": b"online",  # a killed run: its last will only said state
        f"{old_zone}/people": b'{"people":3}',
        "homeassistant/sensor/s7_line_old_in/config": b"{}",
        "homeassistant/binary_sensor/s7_zone_gone_occupancy/config": b"{}",
    }
    seed = Subscriber(broker.port, list(stale))
    for topic, payload in stale.items():
        seed.client.publish(topic, payload, qos=1, retain=True)
    seed.wait_for(lambda ms: {m.topic for m in ms} >= set(stale), "the stale topics stored")
    seed.close()

    watch = Subscriber(broker.port, list(stale))
    watch.wait_for(lambda ms: len(ms) >= len(stale), "the stale topics, retained")
    pub = publisher(broker, "s7")  # has "door" and "queue" only
    async with anyio.create_task_group() as tg:
        tg.start_soon(pub.serve)
        await wait(
            watch,
            lambda ms: all(last_is(topic, b"")(ms) for topic in stale),
            "the stale topics cleared",
        )
        held = retained(broker.port, list(stale), f"{LINE.format(id='s7')}/in")
        tg.cancel_scope.cancel()
    assert set(held) == {f"{LINE.format(id='s7')}/in"}, held
    watch.close()


async def test_home_assistant_restart_gets_the_scene_again(broker: Broker) -> None:
    base = ZONE.format(id="s8")
    config_topic = "homeassistant/sensor/s8_zone_queue_people/config"
    zone_topic = f"{base}/people"

    def has_config(messages: list[Received]) -> bool:
        return any(m.topic == config_topic for m in messages)

    watch = Subscriber(broker.port, [config_topic, f"{base}/people", f"{LINE.format(id='s8')}/in"])
    pub = publisher(broker, "s8")
    async with anyio.create_task_group() as tg:
        tg.start_soon(pub.serve)
        pub.write(zone(2, None))
        await wait(
            watch,
            lambda ms: has_config(ms) and any(m.payload for m in ms if m.topic == zone_topic),
            "config and zone",
        )
        seen = len(watch.messages)
        ha = Subscriber(broker.port, ["homeassistant/status"])
        ha.client.publish("homeassistant/status", b"online", qos=1)
        await wait(
            watch,
            lambda ms: (
                {m.topic for m in ms[seen:]}
                >= {config_topic, f"{base}/people", f"{LINE.format(id='s8')}/in"}
            ),
            "configs and state again",
        )
        ha.close()
        tg.cancel_scope.cancel()
    watch.close()


async def test_heartbeat_republishes_totals_and_zone_counts() -> None:
    clock = FakeClock()
    pub = MqttPublisher(
        MqttSettings("127.0.0.1", 1),
        device_id="hb",
        lines=["door"],
        zones=["queue", "empty"],
        heartbeat_s=60.0,
        clock=clock,
    )
    pub.write(CountChanged(count=1, previous=None))
    pub.write(crossing("in", 1, 0))
    pub.write(zone(2, None))
    while pub.backlog.take() is not None:  # as if all of it had been delivered
        pass
    async with anyio.create_task_group() as tg:
        tg.start_soon(pub._heartbeat)
        await clock.run_for(60.0)
        tg.cancel_scope.cancel()
    sent = [m for entry in pub.backlog for m in pub._messages(entry)]
    # Said again even though the broker has them: expire_after counts from the last one.
    assert [m.topic for m in sent] == [
        "lookout/hb/count",
        "lookout/hb/counting",
        "lookout/hb/zone/queue/people",  # "empty" is unknown: nothing to keep alive
        "lookout/hb/zone/queue/counting",
        "lookout/hb/line/door/in",
        "lookout/hb/line/door/out",
    ]
    assert all(m.retain for m in sent)


def edited(changes: list[tuple[str, str, str, str]]) -> SceneChanged:
    """The scene event of an edit on the page: ``(kind, name, how, was)`` each."""
    return SceneChanged(
        lines={"entrance": [[0.5, 0.9], [0.5, 0.1]]},
        zones={"till": {"points": [[0.1, 0.1], [0.4, 0.1], [0.4, 0.4]], "dwell": 30.0}},
        changes=[{"kind": k, "name": n, "how": h, "was": w, "said": ""} for k, n, h, w in changes],
        revision=1,
    )


async def test_an_edit_on_the_page_moves_renames_and_removes_home_assistant_entities(
    broker: Broker,
) -> None:
    base = "lookout/s9"
    watch = Subscriber(broker.port, [f"{base}/#", "homeassistant/#"])
    pub = publisher(broker, "s9")  # door and queue
    discovery = pub.topics.ha_discovery
    async with anyio.create_task_group() as tg:
        tg.start_soon(pub.serve)
        pub.write(crossing("in", 1, 0))
        pub.write(zone(2, 0))
        await wait(watch, last_is(f"{base}/line/door/in", b"1"), "door: 1 in")
        pub.write(
            edited(
                [
                    ("line", "entrance", "renamed", "door"),
                    ("zone", "queue", "removed", ""),
                    ("zone", "till", "added", ""),
                ]
            )
        )
        gone = [
            f"{base}/line/door/in",
            f"{base}/line/door/out",
            f"{base}/zone/queue/people",
            f"{base}/zone/queue/counting",
            *discovery.config_topics("line", "door"),
            *discovery.config_topics("zone", "queue"),
        ]
        await wait(
            watch,
            lambda ms: (
                all(last_is(t, b"")(ms) for t in gone)
                and last_is(f"{base}/line/entrance/in", b"1")(ms)
                and last_is(f"{base}/zone/till/counting", b"offline")(ms)
            ),
            "the old entities deleted, the renamed line's total carried, the new zone unknown",
        )
        new_configs = [*discovery.config_topics("line", "entrance"),
                       *discovery.config_topics("zone", "till")]  # fmt: skip
        held = retained(broker.port, [*gone, *new_configs], f"{base}/line/entrance/in")
        tg.cancel_scope.cancel()
    assert not set(gone) & set(held), held
    assert set(new_configs) <= set(held)
    config = json.loads(held[discovery.config_topics("line", "entrance")[0]])
    assert "entrance" in config["name"].lower() or "entrance" in config["state_topic"]
    watch.close()
