"""Fixtures of the operations tests: a Mosquitto broker and the Chromium binary."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ops.support import CHROMIUM, Broker, mosquitto_path, need_tool


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    executable = need_tool(mosquitto_path(), "mosquitto", "mosquitto")
    directory = tmp_path / "broker"
    directory.mkdir()
    running = Broker(executable, directory)
    running.start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def chromium() -> Path:
    return need_tool(CHROMIUM, "chromium", "chromium")
