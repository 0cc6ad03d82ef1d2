"""The operations outputs on the real App: the wiring, and no secret in any response."""

from __future__ import annotations

import io
from pathlib import Path

import aiohttp
import anyio
import pytest

from device.app.run import App
from device.app.wiring import build_app
from device.config import ConfigError, build
from device.events import CountChanged
from device.outputs.mqtt.publisher import MqttPublisher
from device.outputs.page.server import StatusServer
from device.outputs.telemetry import Telemetry
from tests.datafiles import data_file
from tests.ops.apprun import running_app
from tests.percepts import make_percept

pytestmark = pytest.mark.anyio
API_KEY = "AIzaMARKERc0ffee0123456789abcdefXYZ"
TOKEN = "tok-MARKER-5e1f"


def make_app(tmp_path: Path, **flags: object) -> App:
    settings = {"source": str(data_file("vtest.avi")), "model": "local", **flags}
    config = build(settings, environ={}, system_config=tmp_path / "none.toml")
    return build_app(config, out=io.StringIO())


async def test_the_wiring_adds_what_the_config_asks_for(tmp_path: Path) -> None:
    app = make_app(
        tmp_path,
        http="127.0.0.1:0",
        mqtt="mqtt://127.0.0.1:1",
        device_id="cam-1",
        lines=["door=0.5,0.0,0.5,1.0"],
    )
    ops = app.operations
    assert isinstance(ops.server, StatusServer) and isinstance(ops.mqtt, MqttPublisher)
    assert isinstance(ops.telemetry, Telemetry) and ops.telemetry.mqtt is ops.mqtt
    assert ops.telemetry.device is app.state  # the read-only view, not the app
    assert ops.services == [ops.mqtt, ops.server]
    assert ops.telemetry.http is ops.server.connections  # the server counts, /metrics reads
    assert list(ops.mqtt.topics.latest_lines) == ["door"]  # the configured lines, at once
    # Each output subscribed to the app's bus: a count reaches them all, once (the page
    # keeps the percept's, MQTT says the change).
    app.bus.publish(CountChanged(count=3, previous=None, raw=3, t_media=1.0))
    app.bus.percept(make_percept(count=3))
    assert ops.telemetry.count == 3 and ops.mqtt.latest_count is not None
    assert ops.server.port > 0  # bound already: a taken port fails before the run
    ops.server.close()

    quiet = make_app(tmp_path, http="")
    assert quiet.operations.services == [] and quiet.operations.telemetry is None


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"http": "nonsense"}, "--http expected HOST:PORT"),
        ({"http": "", "mqtt": "http://broker"}, "--mqtt must be mqtt://host"),
        ({"http": "", "mqtt": "mqtt://u:s3cret@b:1883/x"}, "--mqtt takes no path"),
        ({"http": "", "mqtt": "mqtt://b", "device_id": "a/b"}, "cannot name MQTT topics"),
    ],
)
async def test_bad_settings_are_one_line_config_errors(
    tmp_path: Path, flags: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        make_app(tmp_path, **flags)
    assert "\n" not in str(info.value) and "s3cret" not in str(info.value)


async def test_no_response_contains_the_api_key_or_token(tmp_path: Path) -> None:
    environ = {"GEMINI_API_KEY": API_KEY}
    async with running_app(tmp_path, environ, http_token=TOKEN) as run:
        assert run.app.config.model.api_key == API_KEY and run.app.config.model_name() == "local"
        telemetry = run.ops.telemetry
        assert telemetry is not None
        with anyio.fail_after(20):
            while telemetry.count is None or telemetry.frame_seq == 0:
                await telemetry.state_changes.wait(telemetry.state_changes.version)
        base = run.url.rstrip("/")
        bodies: list[bytes] = []
        auth = {"Authorization": f"Bearer {TOKEN}"}
        async with aiohttp.ClientSession() as http:
            paths = ["/", "/static/app.js", "/static/app.css", "/healthz", "/metrics"]
            paths += ["/snapshot.jpg", "/api/state", "/nope", f"/?token={API_KEY}"]
            for headers in ({}, auth):
                for path in paths:
                    async with http.get(base + path, headers=headers) as response:
                        bodies.append(await response.read())
                        bodies.append(str(dict(response.headers)).encode())
                for stream in ("/events", "/stream.mjpg"):
                    async with http.get(base + stream, headers=headers) as response:
                        bodies.append(str(dict(response.headers)).encode())
                        if response.status == 200:
                            bodies.append(await response.content.read(4096))
                        else:
                            bodies.append(await response.read())
                for stop in ({"function_name": "nope"}, {"function_name": "count_people"}):
                    url = base + "/api/streams/stop"
                    async with http.post(url, json=stop, headers=headers) as response:
                        bodies.append(await response.read())
        assert len(bodies) > 40
        for body in bodies:
            assert API_KEY.encode() not in body and TOKEN.encode() not in body
        output = run.app.out.getvalue()  # type: ignore[attr-defined]
        assert f"status page: {run.url}" in output and TOKEN not in output
