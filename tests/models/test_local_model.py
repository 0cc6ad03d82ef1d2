"""models/local/model.py: the offline model answers any configuration at start-up.

It calls ``count_people`` and one ``watch_line``/``watch_zone`` per configured name as soon
as it connects; a fixed-size buffer for those calls made a configuration of 255 lines and
zones crash the device at start (WouldBlock, 254 worked).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from google.genai import types

from live.model import LiveSetup, ModelResumptionUpdate, ModelToolCall
from models.local.model import COUNT_TOOL, LocalModel
from tests.cli import lookout
from tests.datafiles import data_file


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def watch_declaration(tool: str, names: list[str]) -> types.FunctionDeclaration:
    return types.FunctionDeclaration(
        name=tool,
        parameters=types.Schema(
            type=types.Type.OBJECT,
            properties={"name": types.Schema(type=types.Type.STRING, enum=names)},
        ),
    )


@pytest.mark.anyio
@pytest.mark.parametrize("scene", [254, 255, 5_000])
async def test_every_line_and_zone_is_watched_from_the_start(scene: int) -> None:
    lines = [f"line{i}" for i in range(scene // 2)]
    zones = [f"zone{i}" for i in range(scene - len(lines))]
    setup = LiveSetup(
        tools=(
            types.FunctionDeclaration(name=COUNT_TOOL),
            watch_declaration("watch_line", lines),
            watch_declaration("watch_zone", zones),
        )
    )
    conn = await LocalModel().connect(setup)
    calls = []
    with anyio.fail_after(10):
        async for event in conn.receive():
            if isinstance(event, ModelToolCall):
                calls.extend(event.calls)
            elif isinstance(event, ModelResumptionUpdate):
                break
    await conn.close()
    assert [c.name for c in calls] == [COUNT_TOOL] + ["watch_line"] * len(lines) + [
        "watch_zone"
    ] * len(zones)
    assert [c.args["name"] for c in calls[1:]] == lines + zones


@pytest.mark.slow
def test_a_run_with_300_lines_and_zones_starts_counts_and_ends(tmp_path: Path) -> None:
    config = tmp_path / "scene.toml"
    tables = [
        f"[lines.l{i}]\npoints = [[0.1, {0.1 + i / 400:.4f}], [0.9, 0.5]]" for i in range(150)
    ]
    tables += [
        f"[zones.z{i}]\npoints = [[0.1, 0.1], [0.9, {0.2 + i / 400:.4f}], [0.1, 0.9]]"
        for i in range(150)
    ]
    config.write_text("\n".join(tables) + "\n")
    events_path = tmp_path / "events.jsonl"
    result = lookout(
        "run", "--config", str(config), "--source", str(data_file("vtest.avi")),
        # With the status page on, the watch tools take any name (no enum): the local
        # model is told the configured ones.
        "--model", "local", "--http", "127.0.0.1:0", "--duration", "3",
        "--events", str(events_path),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    events = read_jsonl(events_path)
    calls = [e["name"] for e in events if e["type"] == "tool_call"]
    assert calls.count("watch_line") == 150 and calls.count("watch_zone") == 150
    assert calls.count("count_people") == 1
    assert any(e["type"] == "count" for e in events)
