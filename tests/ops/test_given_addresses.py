"""An address the user gave is where the output is, or the run is refused: never moved.

Only the default status page address (nobody asked for it) may move to a free port, and
it says so. Given the default's own value on purpose (a reverse proxy or a Prometheus
scraper points at it), by a flag, a config file or ``LOOKOUT_HTTP``, it stays put.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from device.app.operations import DEFAULT_HTTP, build_operations
from device.bus import EventBus
from device.config import Config, ConfigError, build
from live.util.clock import FakeClock
from tests.ops.support import FakeApp

HOST, PORT = DEFAULT_HTTP.rsplit(":", 1)


@pytest.fixture
def default_taken() -> Iterator[None]:
    with socket.socket() as taken:
        try:
            taken.bind((HOST, int(PORT)))
            taken.listen()
        except OSError:
            pass  # someone else holds it already: the same situation
        yield


def _operations(config: Config) -> tuple[list[str], object]:
    said: list[str] = []
    clock = FakeClock()
    ops = build_operations(config, FakeApp(config=config), EventBus(clock), clock, said.append)
    return said, ops


def _given_ways(tmp_path: Path) -> dict[str, Config]:
    toml = tmp_path / "cfg.toml"
    toml.write_text(f'http = "{DEFAULT_HTTP}"\n')
    empty: dict[str, str] = {}
    none = tmp_path / "none.toml"
    return {
        "--http": build({"http": DEFAULT_HTTP}, environ=empty, system_config=none),
        f"{toml}: http": build({}, config_path=toml, environ=empty),
        "LOOKOUT_HTTP": build({}, environ={"LOOKOUT_HTTP": DEFAULT_HTTP}, system_config=none),
    }


@pytest.mark.usefixtures("default_taken")
def test_the_default_address_given_by_the_user_is_refused_when_taken(tmp_path: Path) -> None:
    for spelled, config in _given_ways(tmp_path).items():
        with pytest.raises(ConfigError) as info:
            _operations(config)
        line = str(info.value)
        assert "\n" not in line
        assert DEFAULT_HTTP in line and "in use" in line and spelled in line, line


@pytest.mark.usefixtures("default_taken")
def test_only_the_default_nobody_gave_moves_and_says_so(tmp_path: Path) -> None:
    config = build({}, environ={}, system_config=tmp_path / "none.toml")
    assert config.given("http") is None
    _, ops = _operations(config)
    server = ops.server  # type: ignore[attr-defined]
    try:
        assert server is not None and server.port != int(PORT)
        assert f"({DEFAULT_HTTP} was in use)" in server.note
    finally:
        server.close()


def test_a_setting_records_where_the_user_gave_it(tmp_path: Path) -> None:
    toml = tmp_path / "cfg.toml"
    toml.write_text('mqtt = "mqtt://127.0.0.1:1883"\nhttp = "127.0.0.1:9000"\n')
    config = build({"http": "127.0.0.1:9001"}, config_path=toml, environ={})
    assert config.given("http") == "--http"  # the flag over the file
    assert config.given("mqtt") == f"{toml}: mqtt"
    assert config.given("detect_fps") is None
    # A copy with an update (the token read from its file) keeps what was given.
    assert config.model_copy(update={"detect_fps": 3}).given("mqtt") == f"{toml}: mqtt"
