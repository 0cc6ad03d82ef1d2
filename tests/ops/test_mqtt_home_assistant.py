"""What Home Assistant makes of every state a device publishes, through a real Mosquitto.

A subscriber records the discovery configs and every message on the topics they point
at while a device starts (count unknown), counts, loses its camera, counts again and
exits. Each payload is then read as Home Assistant reads it: the entity's
``value_template`` rendered (by a small evaluator of the templates' JSON access, with
Home Assistant's rule that ``value_json`` is defined only for a JSON payload, and an
undefined name or a comparison with null being a template error in its log), and a
``json_attributes_topic`` payload parsed as a JSON object ("Erroneous JSON" otherwise).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from device.events import CountChanged, SourceStateEvent, ZoneCount
from device.outputs.mqtt.publisher import MqttPublisher
from device.outputs.mqtt.settings import parse_mqtt
from tests.ops.support import Broker, Received, Subscriber

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


class Logged(Exception):
    """What Home Assistant would log instead of setting the state."""


_UNDEFINED = object()


def _get(value_json: Any, key: str) -> Any:
    if value_json is _UNDEFINED:
        raise Logged("'value_json' is undefined")
    if not isinstance(value_json, dict) or key not in value_json:
        raise Logged(f"'dict object' has no attribute '{key}'")
    return value_json[key]


def _number(value_json: Any, key: str) -> bool:
    return (
        isinstance(value_json, dict)
        and isinstance(value_json.get(key), int | float)
        and not isinstance(value_json.get(key), bool)
    )


def render(template: str, payload: bytes) -> str:
    """``template`` rendered on ``payload`` as Home Assistant's MQTT entities do: the
    subset of Jinja the discovery templates use (attribute access on ``value_json``,
    ``is defined``, ``is number``, conditionals, comparisons)."""
    match = re.fullmatch(r"\{\{(.*)\}\}", template.strip())
    assert match, template
    expression = re.sub(r"value_json\.(\w+) is number", r"_number(value_json, '\1')", match[1])
    expression = expression.replace("value_json is defined", "(value_json is not _UNDEFINED)")
    expression = re.sub(r"value_json\.(\w+)", r"_get(value_json, '\1')", expression)
    try:
        value_json: Any = json.loads(payload)
    except ValueError:
        value_json = _UNDEFINED
    names = {"value_json": value_json, "_get": _get, "_number": _number, "_UNDEFINED": _UNDEFINED}
    try:
        result = eval(expression, {"__builtins__": {}}, names)
    except TypeError as exc:  # e.g. None > 0
        raise Logged(str(exc)) from None
    return "None" if result is None else str(result)


def what_home_assistant_logs(messages: list[Received]) -> list[str]:
    """Each state payload Home Assistant would log an error or warning for."""
    configs = [
        json.loads(m.payload)
        for m in messages
        if m.topic.startswith("homeassistant/") and m.topic.endswith("/config") and m.payload
    ]
    problems: list[str] = []
    for config in configs:
        binary = config.get("payload_on") is not None
        for m in messages:
            if m.topic == config.get("json_attributes_topic"):
                try:
                    if not isinstance(json.loads(m.payload), dict):
                        raise ValueError
                except ValueError:
                    problems.append(f"{config['name']}: Erroneous JSON: {m.payload!r}")
            if m.topic != config.get("state_topic") or "value_template" not in config:
                continue
            try:
                state = render(config["value_template"], m.payload)
            except Logged as exc:
                problems.append(f"{config['name']}: template error on {m.payload!r}: {exc}")
                continue
            valid = ("ON", "OFF", "None") if binary else None
            if (valid and state not in valid) or (
                not valid and not re.fullmatch(r"\d+|None", state)
            ):
                problems.append(f"{config['name']}: state {state!r} from {m.payload!r}")
    return problems


def test_the_evaluator_tells_what_home_assistant_would_log() -> None:
    # The templates as they were: an empty payload (a cleared count) is an error.
    with pytest.raises(Logged):
        render("{{ value_json.count }}", b"")
    with pytest.raises(Logged):
        render("{{ 'ON' if value_json.count > 0 else 'OFF' }}", b'{"count": null}')
    assert render("{{ 'ON' if value_json.count > 0 else 'OFF' }}", b'{"count": 2}') == "ON"


async def test_home_assistant_logs_nothing_at_start_outage_and_exit(broker: Broker) -> None:
    watch = Subscriber(broker.port, ["lookout/ha1/#", "homeassistant/#"])
    pub = MqttPublisher(parse_mqtt(broker.url), device_id="ha1", model="local",
                        zones=["queue"], backoff_s=(0.05, 0.3))  # fmt: skip

    def zone(people: int | None, previous: int | None) -> ZoneCount:
        return ZoneCount(zone="queue", people=people, previous=previous,
                         dwelling=1 if people else 0, longest_s=0.0, t_media=1.0)  # fmt: skip

    def seen(topic: str, n: int) -> None:
        watch.wait_for(lambda ms: len([m for m in ms if m.topic == topic]) >= n, topic)

    count = "lookout/ha1/count"
    async with anyio.create_task_group() as tg:
        tg.start_soon(pub.serve)
        with anyio.fail_after(10):
            await pub.wait_connected()
        await anyio.to_thread.run_sync(seen, count, 1)  # start: the count is not known yet
        pub.write(SourceStateEvent(t=0.5, source="cam", state="running"))
        pub.write(CountChanged(t=1.0, count=2, previous=None, raw=2, t_media=1.0))
        pub.write(zone(1, None))
        await anyio.to_thread.run_sync(seen, count, 2)
        # An outage: the camera is gone, the count and the zone unknown.
        pub.write(CountChanged(t=2.0, count=None, previous=2, reason="camera reconnecting"))
        pub.write(zone(None, 1))
        await anyio.to_thread.run_sync(seen, count, 3)
        pub.write(CountChanged(t=3.0, count=0, previous=None, raw=0, t_media=3.0))
        pub.write(zone(0, None))
        await anyio.to_thread.run_sync(seen, count, 4)
        tg.cancel_scope.cancel()  # exit
    watch.wait_for(
        lambda ms: any(m.topic == "lookout/ha1/state" and m.payload == b"offline" for m in ms),
        "offline",
    )
    messages = list(watch.messages)
    watch.close()
    states = [m.payload for m in messages if m.topic == count]
    assert len(states) >= 5, states  # start, 2, outage, 0, exit
    assert what_home_assistant_logs(messages) == []
    # The unknown is said by availability; the value only stays readable JSON.
    assert json.loads(states[0])["count"] is None and json.loads(states[-1])["count"] is None


def test_each_camera_suggests_its_area_to_home_assistant_and_the_device_its_own() -> None:
    """``area`` (the device's, or a camera's own table's): every entity's device block says
    ``suggested_area``, so a fleet's cameras land in their rooms; none set, none said."""
    from device.outputs.mqtt.camera import CameraScene
    from device.outputs.mqtt.state import MqttState

    state = MqttState(
        device_id="shop-door",
        area="Shop floor",
        cameras={"door": CameraScene(area="Entrance"), "till": CameraScene()},
    )
    areas: dict[str, set[str | None]] = {}
    for message in state.discovery():
        if not message.payload:
            continue
        device = json.loads(message.payload)["device"]
        areas.setdefault(device["name"], set()).add(device.get("suggested_area"))
    assert areas == {
        "Lookout shop-door": {"Shop floor"},
        "Lookout shop-door door": {"Entrance"},
        "Lookout shop-door till": {"Shop floor"},
    }
    plain = MqttState(device_id="porch")
    assert all(
        "suggested_area" not in json.loads(m.payload)["device"]
        for m in plain.discovery()
        if m.payload
    )


def test_the_area_settings_reach_mqtt_a_camera_s_table_over_the_device_s(
    tmp_path: Path,
) -> None:
    from device.app.operations import mqtt_cameras
    from device.config import build

    config_file = tmp_path / "lookout.toml"
    config_file.write_text(
        '[device]\narea = "Shop floor"\n\n'
        '[cameras.door]\nsource = "0"\narea = "Entrance"\n\n[cameras.till]\nsource = "1"\n'
    )
    config = build({}, config_path=config_file, environ={}, system_config=tmp_path / "none")
    assert config.device.area == "Shop floor"
    cameras = mqtt_cameras(config)
    assert cameras is not None
    assert (cameras["door"].area, cameras["till"].area) == ("Entrance", "Shop floor")
