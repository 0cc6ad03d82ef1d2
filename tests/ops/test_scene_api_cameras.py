"""``GET``/``PUT /api/scene/<camera>`` on the real app with two cameras (the sample video
through the real detector, twice): an edit names its camera, is applied to that camera's
perception alone, is recorded as that camera's ``scene`` event, and is written into that
camera's own table of the config file, where the next start reads it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest

from device.config import build
from tests.datafiles import data_file
from tests.ops.apprun import RunningApp, running_app

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
POST = {"points": [[0.5, 0.9], [0.5, 0.1]]}


def config_text() -> str:
    video = data_file("vtest.avi")
    return (
        "# the shop: two cameras (this comment stays)\n\n"
        f'[cameras.door]\nsource = "{video}"\n\n'
        f'[cameras.till]\nsource = "{video}"\ndetect_fps = 2\n'
    )


async def call(
    run: RunningApp, method: str, path: str, body: Any = None
) -> tuple[int, dict[str, Any]]:
    async with (
        aiohttp.ClientSession() as http,
        http.request(method, run.url + path, json=body) as response,
    ):
        if response.content_type != "application/json":
            return response.status, {"text": await response.text()}
        return response.status, await response.json()


async def state_after_frames(run: RunningApp, camera: str, frames: int) -> dict[str, Any]:
    """The page's state once ``camera`` has shown ``frames`` more frames (its perception
    has had them since)."""
    _, state = await call(run, "GET", "api/state")
    seen = state["cameras"][camera]["frame_seq"]
    with anyio.fail_after(20):
        while state["cameras"][camera]["frame_seq"] < seen + frames:
            await anyio.sleep(0.1)
            _, state = await call(run, "GET", "api/state")
    return state


async def test_a_line_put_on_one_camera_counts_there_alone_and_is_saved_in_its_table(
    tmp_path: Path,
) -> None:
    config = tmp_path / "lookout.toml"
    config.write_text(config_text())
    async with running_app(tmp_path, config_path=config) as run:
        status, door = await call(run, "GET", "api/scene")  # the first camera's
        assert status == 200 and door["camera"] == "door"
        status, till = await call(run, "GET", "api/scene/till")
        assert status == 200 and till["camera"] == "till" and till["lines"] == {}
        status, missing = await call(run, "GET", "api/scene/porch")
        assert status == 404
        assert missing["error"] == "no camera named 'porch' (cameras: door, till)"
        status, missing = await call(run, "PUT", "api/scene/porch", {"lines": {"post": POST}})
        assert status == 404

        body = {"revision": till["revision"], "lines": {"post": POST}}
        status, answer = await call(run, "PUT", "api/scene/till", body)
        assert status == 200, answer
        assert answer["saved"] == str(config) and answer["changes"][0]["said"] == "line post added"
        state = await state_after_frames(run, "till", 3)
        assert list(state["cameras"]["till"]["lines"]) == ["post"]
        assert state["cameras"]["door"]["lines"] == {} and state["lines"] == {}
        assert (await call(run, "GET", "api/scene"))[1]["lines"] == {}  # door's is untouched
        # Till was asked for 2 detections a second: a line does not change a rate that was set.
        assert state["cameras"]["till"]["perception"]["detect_fps"] == 2
    scenes = [e for e in run.events() if e["type"] == "scene"]
    assert [(s["camera"], list(s["lines"])) for s in scenes] == [("till", ["post"])]
    text = config.read_text()
    assert text.startswith(config_text()) and "[cameras.till.lines.post]" in text
    again = build({}, config_path=config, environ={}, system_config=tmp_path / "none.toml")
    assert list(again.camera("till").scene.lines) == ["post"]
    assert again.camera("door").scene.lines == {} and again.scene.lines == {}
