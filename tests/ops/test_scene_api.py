"""``GET``/``PUT /api/scene`` on the real app: the sample video through the real detector.

A script (or the page) draws a line on a running device: it counts crossings on it from
the next frame, records a ``scene`` event, and writes it into the config file the device
was started with; a rename keeps the totals; a mistake gets the command line's own
one-line error; an edit made against an old revision is refused; without a file (or a
read-only one) the TOML is offered and the device still applies the edit.
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest

from device.app.scene.allowance import Allowance
from device.config import ConfigError, build
from tests.ops.apprun import RunningApp, running_app

pytestmark = [pytest.mark.anyio]
POST = {"points": [[0.5, 0.9], [0.5, 0.1]]}  # upwards through the plaza: in = to the right
CONFIG = "# the plaza camera\ndetect_fps = 5  # lines need it\n"


async def put(run: RunningApp, body: Any, token: str | None = None) -> tuple[int, dict[str, Any]]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    url = run.url + "api/scene"
    async with aiohttp.ClientSession() as http, http.put(url, json=body, headers=headers) as r:
        if r.content_type != "application/json":
            return r.status, {"text": await r.text()}
        return r.status, await r.json()


async def get(run: RunningApp, path: str = "api/scene") -> dict[str, Any]:
    async with aiohttp.ClientSession() as http, http.get(run.url + path) as response:
        assert response.status == 200
        result: dict[str, Any] = await response.json()
        return result


async def crossings(run: RunningApp, line: str, at_least: int, timeout: float = 40) -> list[Any]:
    with anyio.fail_after(timeout):
        while True:
            found = [e for e in run.events() if e["type"] == "crossing" and e["line"] == line]
            if len(found) >= at_least:
                return found
            await anyio.sleep(0.2)


@pytest.mark.slow
async def test_a_line_put_on_a_running_device_counts_is_saved_and_keeps_its_totals_renamed(
    tmp_path: Path,
) -> None:
    config = tmp_path / "lookout.toml"
    config.write_text(CONFIG)
    async with running_app(tmp_path, config_path=config, pace="fast") as run:
        before = await get(run)
        assert before["lines"] == {} and before["file"] == str(config)
        status, answer = await put(run, {"revision": before["revision"], "lines": {"post": POST}})
        assert status == 200, answer
        assert answer["saved"] == str(config) and answer["revision"] == 1
        assert [c["how"] for c in answer["changes"]] == ["added"]
        first = await crossings(run, "post", 2)
        # Renamed: the totals go on from where they were, under the new name.
        status, answer = await put(run, {"revision": 1, "lines": {"door": {**POST, "was": "post"}}})
        assert status == 200, answer
        assert answer["changes"][0]["said"] == "line post renamed to door"
        renamed = await crossings(run, "door", 1)
        totals_then = max(e["total_in"] + e["total_out"] for e in await crossings(run, "post", 2))
        assert renamed[0]["total_in"] + renamed[0]["total_out"] == totals_then + 1
        state = await get(run, "api/state")
        assert "post" not in state["lines"] and "door" in state["lines"]
        # A stale edit (made against revision 1) is refused, not merged.
        status, answer = await put(run, {"revision": 1, "lines": {}})
        assert status == 409 and "revision 2" in answer["error"]
    console = run.app.out.getvalue()
    assert f"lines and zones edited: line post added (saved to {config})" in console
    assert "lines and zones edited: line post renamed to door" in console
    assert "totals: line door " in console and "line post " not in console.split("totals:")[-1]
    events = run.events()
    scenes = [e for e in events if e["type"] == "scene"]
    assert [s["revision"] for s in scenes] == [1, 2]
    assert scenes[0]["lines"] == {"post": POST["points"]} and scenes[0]["saved"] == str(config)
    # The crossings on the new line come after its scene event in the log.
    assert events.index(scenes[0]) < events.index(first[0])
    # The local model watches what is drawn, as it does what is configured: a watch for
    # the new line, and for it again under its new name (the old watch said it was gone).
    watches = [
        (e["args"].get("name"), events.index(e))
        for e in events
        if e["type"] == "tool_call" and e["name"] == "watch_line"
    ]
    assert [name for name, _ in watches] == ["post", "door"], watches
    assert watches[0][1] > events.index(scenes[0]) and watches[1][1] > events.index(scenes[1])
    gone = [e for e in events if e["type"] == "emission" and e.get("payload", {}).get("removed")]
    assert gone and gone[0]["payload"]["line"] == "post"
    text = config.read_text()
    assert text.startswith(CONFIG) and "[lines.door]" in text
    again = build({}, config_path=config, environ={}, system_config=tmp_path / "none.toml")
    assert list(again.scene.lines) == ["door"]
    assert again.scene.lines["door"].points == ((0.5, 0.9), (0.5, 0.1))


BAD_LINES = [
    "door=1.2,0,0,1",
    "door=0.5,0.5,0.5,0.5",
    "do or=0.1,0.1,0.9,0.9",
]
BAD_ZONES = ["z=0.1,0.1,0.2,0.2", "z=0.1,0.1,0.1,0.1,0.1,0.1"]


def cli_error(flag: str, value: str) -> str:
    with pytest.raises(ConfigError) as caught:
        build({flag: [value]}, environ={}, system_config=Path("/nonexistent.toml"))
    return str(caught.value)


def as_table(value: str) -> dict[str, Any]:
    name, _, numbers = value.partition("=")
    xs = [float(v) for v in numbers.split(",")]
    return {name: {"points": [xs[i : i + 2] for i in range(0, len(xs), 2)]}}


async def test_mistakes_get_the_command_lines_one_line_errors_and_change_nothing(
    tmp_path: Path,
) -> None:
    config = tmp_path / "lookout.toml"
    config.write_text(CONFIG)
    async with running_app(tmp_path, config_path=config, lines=["post=0.5,0.9,0.5,0.1"]) as run:
        for value in BAD_LINES:
            status, answer = await put(run, {"lines": as_table(value)})
            assert status == 400
            assert answer["error"] == cli_error("lines", value).replace("--line ", "line ", 1)
        for value in BAD_ZONES:
            status, answer = await put(run, {"zones": as_table(value)})
            assert status == 400
            assert answer["error"] == cli_error("zones", value).replace("--zone ", "zone ", 1)
        for body, said in [
            ({"lines": [1, 2]}, "lines must be an object"),
            ({"lines": {"a": 3}}, "line a: must be an object with points"),
            ({"lines": {"a": {**POST, "was": 5}}}, "was must be the name it had"),
            ({"line": {}}, "unknown field 'line'"),
            ({"lines": {f"l{i}": POST for i in range(40)}}, "at most 32 lines"),
            # A type error anywhere is the client's mistake, said as such: never a 409.
            ({"revision": "0"}, 'revision must be the whole number GET /api/scene gave, not "0"'),
            ({"revision": True}, "revision must be the whole number GET /api/scene gave, not true"),
            ({"revision": 0.0}, "revision must be the whole number GET /api/scene gave, not 0.0"),
            ({"revision": -1}, "revision must be the whole number GET /api/scene gave, not -1"),
            ({"lines": None}, "lines must be an object of lines by name, not null"),
            ({"lines": {"a": [0.1, 0.2]}}, "line a: must be an object with points, not an array"),
            ({"lines": {"a": {"points": [["0.5", 0.9], [0.5, 0.1]]}}}, "line a: point 1 must"),
            ({"lines": {"a": {"points": "0.5,0.9,0.5,0.1"}}}, "line a needs exactly two points"),
            ({"zones": {"z": {"points": [[0, 0], [1, 0], [1, 1]], "dwell": "20"}}}, "dwell must"),
        ]:
            status, answer = await put(run, body)
            assert status == 400 and said in answer["error"], answer
        scene = await get(run)
        assert scene["revision"] == 0 and list(scene["lines"]) == ["post"]
    assert config.read_text() == CONFIG
    assert not [e for e in run.events() if e["type"] == "scene"]


async def test_without_a_writable_config_file_the_edit_applies_and_the_toml_is_offered(
    tmp_path: Path,
) -> None:
    async with running_app(tmp_path, http_token="s3cret-token-for-tests") as run:
        status, _ = await put(run, {"lines": {"post": POST}})
        assert status == 401  # the same token as every other route
        status, answer = await put(run, {"lines": {"post": POST}}, token="s3cret-token-for-tests")
        assert status == 200 and answer["saved"] == ""
        assert "started without a configuration file" in answer["not_saved"]
        assert "[lines.post]" in answer["toml"]
        written = tmp_path / "copied.toml"
        written.write_text(answer["toml"])
        copied = build({}, config_path=written, environ={}, system_config=tmp_path / "none.toml")
        assert list(copied.scene.lines) == ["post"]
    read_only = tmp_path / "ro.toml"
    read_only.write_text(CONFIG)
    read_only.chmod(stat.S_IRUSR)
    async with running_app(tmp_path, config_path=read_only) as run:
        status, answer = await put(
            run, {"zones": {"lawn": {"points": [[0, 0.5], [1, 0.5], [1, 1]]}}}
        )
        assert status == 200 and answer["saved"] == ""
        assert answer["not_saved"] == f"cannot write {read_only}: the file is read-only"
        assert "lawn" in (await get(run, "api/state"))["zones"]
        assert read_only.read_text() == CONFIG
        # Writable again: the next edit saves what the unsaved one changed too.
        read_only.chmod(0o644)
        status, answer = await put(
            run, {"lines": {"door": POST}, "zones": (await get(run))["zones"]}
        )
        assert status == 200 and answer["saved"] == str(read_only), answer
    again = build({}, config_path=read_only, environ={}, system_config=tmp_path / "none.toml")
    assert list(again.scene.lines) == ["door"] and list(again.scene.zones) == ["lawn"]
    assert read_only.read_text().startswith(CONFIG)
    scene = [e for e in run.events() if e["type"] == "scene"]
    assert scene and scene[-2]["not_saved"].endswith("the file is read-only")


@pytest.mark.slow
async def test_a_line_drawn_after_the_start_can_be_watched_without_a_restart(
    tmp_path: Path,
) -> None:
    """A device started with no lines, its page on: watch_line is there from the start
    (the model's tools are fixed for a session), refuses a line not drawn yet naming what
    is, and watches the line once it is drawn (a device call: the model's own path)."""
    async with running_app(tmp_path, pace="fast") as run:
        session = run.app.session
        names = [d.name for d in session.declarations()]
        assert "watch_line" in names and "watch_zone" in names
        early = await session.call_tool("watch_line", {"name": "post"})
        assert not early.ok
        assert "no lines yet: one can be drawn on the device's status page" in str(
            early.response["error"]
        )
        status, answer = await put(run, {"lines": {"post": POST}})
        assert status == 200, answer
        await crossings(run, "post", 1)  # drawn, and counting
        call = await session.call_tool("watch_line", {"name": "post"})
        assert call.ok, call.response
        with anyio.fail_after(40):
            while True:
                said = [
                    e["payload"] for e in run.events()
                    if e["type"] == "emission" and e["id"] == call.call_id
                ]  # fmt: skip
                if said:
                    break
                await anyio.sleep(0.2)
        assert said[0]["line"] == "post" and said[0]["in"] + said[0]["out"] >= 1
        wrong = await session.call_tool("watch_line", {"name": "door"})
        assert "no line named 'door' (lines now: post)" in str(wrong.response["error"])


async def test_edits_may_log_only_so_much_an_hour(tmp_path: Path) -> None:
    """Each edit logs the whole scene (up to ~50 KB): a client looping on PUT would grow
    the logs without end; past the hour's allowance an edit is refused, and said when."""
    now = [0.0]
    async with running_app(tmp_path) as run:
        editor = run.app.state.scene
        assert editor is not None
        editor.allowance = Allowance(per_hour=1000, clock=lambda: now[0])
        status, _ = await put(run, {"lines": {"a": POST}})
        assert status == 200
        status, answer = await put(run, {"lines": {"b": POST}})
        assert status == 429 and answer["error"].startswith("too many scene edits: each is "), (
            answer
        )
        assert answer["error"].endswith("try again in 3600 s")
        now[0] += 3600
        status, _ = await put(run, {"lines": {"b": POST}})
        assert status == 200
        assert list((await get(run))["lines"]) == ["b"]
    assert [e["revision"] for e in run.events() if e["type"] == "scene"] == [1, 2]
