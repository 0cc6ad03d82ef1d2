"""tools/look.py: vision on demand, through the real google-genai SDK against the fake Live server.

What the model is shown and what it is told name one frame; the image goes once, as realtime
video, before the call's answer; the bound, privacy and an unknown frame send none.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import cv2
import numpy as np
import pytest
from google.genai import types

from device.app.parts import offers_look, system_instruction
from device.app.wiring import build_app
from device.config import build
from device.outputs.page.render import BOX_COLOR
from device.outputs.telemetry import Telemetry
from device.vision.percept import CurrentPercept, Percept
from live.config import ReconnectPolicy, SessionConfig
from live.events import Usage
from live.model import LiveSetup
from live.requests import LiveRequestQueue
from live.session import Runner
from live.tool import ToolContext
from live.util.clock import FakeClock, MonotonicClock
from models.gemini.model import GeminiLiveModel, GeminiOptions
from tests.datafiles import data_file
from tests.fakelive import (
    FakeLiveServer,
    FunctionResponseRecord,
    ToolCallSpec,
    b64decode_any,
    client_for,
    get_field,
    get_path,
)
from tests.fakelive import LiveConnection as FakeConnection
from tests.faults.live_runs import WatchedLog
from tests.ops.support import FakeApp
from tests.ops.test_telemetry import metrics
from tests.percepts import make_percept
from tools.function_tool import FunctionTool
from tools.look import MAX_SIDE, PRIVACY, SENT, Look, picture

TEXT_MODEL = "gemini-live-2.5-flash-preview"
BOX = (300.0, 150.0, 420.0, 470.0)  # a person's box in vtest.avi's 768x576 pixels


def sample_frame(index: int = 40) -> np.ndarray:
    capture = cv2.VideoCapture(str(data_file("vtest.avi")))
    try:
        capture.set(cv2.CAP_PROP_POS_FRAMES, index)
        ok, image = capture.read()
    finally:
        capture.release()
    assert ok, "vtest.avi did not decode"
    return image


def big_percept(seq: int = 7, t: float = 3.5) -> Percept:
    """A real frame at twice its size (1536x1152), one counted person boxed."""
    image = cv2.resize(sample_frame(), None, fx=2.0, fy=2.0)
    box = [v * 2 for v in BOX]
    return make_percept([box], seq=seq, t=t, image=image, source="vtest.avi")


class Shown:
    """A ``ToolContext.show`` that records what it was given."""

    def __init__(self, ok: bool = True) -> None:
        self.ok = ok
        self.blobs: list[types.Blob] = []

    def __call__(self, blob: types.Blob) -> bool:
        self.blobs.append(blob)
        return self.ok


def context(clock: Any, show: Shown) -> ToolContext:
    return ToolContext(call_id="c", function_name="look", clock=clock, show=show)


def decode(data: bytes | None) -> np.ndarray:
    assert data is not None
    image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    assert image is not None, "not a JPEG"
    return image


def box_colour_at_left_edge(image: np.ndarray, box: list[float]) -> bool:
    """The pixels down the middle of the box's left edge are the box colour (JPEG-close)."""
    height, width = image.shape[:2]
    x = round(box[0] * width)
    y1, y2 = round(box[1] * height), round(box[3] * height)
    column = image[y1 + (y2 - y1) // 3 : y2 - (y2 - y1) // 3, x].astype(int)
    close = np.abs(column - np.array(BOX_COLOR)).max(axis=1) <= 40
    return bool(close.mean() > 0.9)


# --------------------------------------------------------------------------------------------
# The tool on its own


def test_picture_is_scaled_to_768_with_the_boxes_drawn() -> None:
    percept = big_percept()
    shot = picture(percept)
    image = decode(shot.jpeg)
    assert max(image.shape[:2]) == MAX_SIDE == max(shot.width, shot.height)
    assert (image.shape[1], image.shape[0]) == (shot.width, shot.height) == (768, 576)
    assert box_colour_at_left_edge(image, [BOX[0] / 768, BOX[1] / 576, BOX[2] / 768, BOX[3] / 576])
    # The frame the pipeline holds is never drawn on.
    assert not box_colour_at_left_edge(
        percept.frame.image, [BOX[0] / 768, BOX[1] / 576, BOX[2] / 768, BOX[3] / 576]
    )


@pytest.mark.anyio
async def test_the_bound_is_a_sliding_minute_on_the_calls_clock() -> None:
    clock, shown = FakeClock(100.0), Shown()
    look = Look(current=big_percept, per_minute=2)
    first = await look.look(context(clock, shown), question="what is she wearing?")
    assert first["status"] == "ok" and first["image"] == SENT
    assert first["question"] == "what is she wearing?"
    assert first["frame"] == {"seq": 7, "index": 7, "t": 3.5, "source": "vtest.avi"}
    assert first["people"] == 1 and first["size"] == [768, 576]
    assert first["boxes"] == [
        {
            "id": 1,
            "box": [round(v, 3) for v in (300 / 768, 150 / 576, 420 / 768, 470 / 576)],
            "seen": True,
        }
    ]
    clock.advance(20)
    assert (await look.look(context(clock, shown)))["looks_left"] == 0
    clock.advance(20)
    refused = await look.look(context(clock, shown))
    assert refused["status"] == "refused" and refused["retry_in_s"] == 20
    assert "at most 2" in refused["reason"] and "look again in 20 s" in refused["reason"]
    assert len(shown.blobs) == 2
    clock.advance(20)  # the first look is a minute old now
    assert (await look.look(context(clock, shown)))["status"] == "ok"
    assert len(shown.blobs) == 3
    assert look.outcomes == {"sent": 3, "refused_rate": 1}


@pytest.mark.anyio
async def test_privacy_unknown_and_no_model_send_nothing() -> None:
    clock, shown = FakeClock(), Shown()
    private = Look(current=big_percept, privacy=True)
    refused = await private.look(context(clock, shown))
    assert refused == {"status": "refused", "reason": PRIVACY}
    unknown = await Look(current=lambda: None, why_unknown=lambda: "camera down").look(
        context(clock, shown)
    )
    assert unknown == {"status": "unknown", "reason": "camera down"}
    stale = Look(current=lambda: dataclasses.replace(make_percept([]), count=None))
    assert (await stale.look(context(clock, shown)))["status"] == "unknown"
    assert shown.blobs == []
    # A device call (or no model): the picture is made, nothing goes, the answer says so
    # and the look does not count against the bound.
    device = Look(current=big_percept, per_minute=1)
    for _ in range(2):
        answer = await device.look(context(clock, Shown(ok=False)))
        assert answer["image"].startswith("not sent") and answer["looks_left"] == 1


def test_privacy_or_zero_offers_no_look_and_the_instruction_says_when_to_look() -> None:
    def config(**flags: Any) -> Any:
        return build({"model": "local", **flags}, environ={}, system_config=Path("/nonexistent"))

    assert offers_look(config())
    assert "call look" in system_instruction(config())
    assert "count_people is cheaper" in system_instruction(config())
    for flags in ({"privacy": True}, {"look_per_minute": 0}):
        assert not offers_look(config(**flags))
        assert "look" not in system_instruction(config(**flags)).replace("Lookout", "")


# --------------------------------------------------------------------------------------------
# Through the SDK, on the wire


class Shifted(MonotonicClock):
    """The monotonic clock, moved on by hand (the look bound's minute, without waiting)."""

    def __init__(self) -> None:
        self.offset = 0.0

    def now(self) -> float:
        return super().now() + self.offset


@contextlib.asynccontextmanager
async def session(
    srv: FakeLiveServer,
    look: Look,
    config: SessionConfig | None = None,
    clock: Any = None,
    log: WatchedLog | None = None,
    options: GeminiOptions | None = None,
) -> AsyncIterator[Any]:
    model = GeminiLiveModel(options or GeminiOptions(TEXT_MODEL), client=client_for(srv))
    config = config or SessionConfig(reconnect=ReconnectPolicy(stable_after_s=0.0))
    on_event = log.record if log is not None else None
    runner = Runner(model, [FunctionTool(look.look)], config, clock=clock, on_event=on_event)
    async with runner.run_live(LiveRequestQueue()) as live:
        await srv.wait_connection(1)
        with anyio.fail_after(10):
            await live.wait_model_connected()
        yield live


async def call(srv: FakeLiveServer, **args: Any) -> FunctionResponseRecord:
    (call_id,) = await srv.send_tool_call(ToolCallSpec("look", args))
    return await srv.wait_function_response(call_id)


def wire_order(conn: FakeConnection, call_id: str | None) -> list[str]:
    """The client's messages after the setup, as ``image`` and ``answer`` (for this call)."""
    out = []
    for message in conn.messages:
        if any((r.mime_type or "").startswith("image/") for r in message.realtime_inputs()):
            out.append("image")
        if any(r.id == call_id for r in message.function_responses()):
            out.append("answer")
    return out


@pytest.mark.anyio
async def test_a_look_is_one_image_then_its_answer_naming_that_frame(
    srv: FakeLiveServer,
) -> None:
    clock = Shifted()
    look = Look(current=big_percept, per_minute=1)
    async with session(srv, look, clock=clock):
        conn = await srv.wait_connection(1)
        answer = await call(srv, question="who is on the left?")
        images = conn.frames()
        assert len(images) == 1 and images[0].kind == "video"
        assert images[0].mime_type == "image/jpeg"
        assert wire_order(conn, answer.id) == ["image", "answer"]
        body = answer.response
        assert body["status"] == "ok" and body["image"] == SENT
        assert body["frame"]["seq"] == 7 and body["frame"]["t"] == 3.5 and body["people"] == 1
        assert body["question"] == "who is on the left?"
        image = decode(images[0].data)
        assert max(image.shape[:2]) <= MAX_SIDE and list(image.shape[1::-1]) == body["size"]
        assert box_colour_at_left_edge(image, body["boxes"][0]["box"])
        # Over the bound: refused, and no second image.
        again = await call(srv)
        assert again.response["status"] == "refused" and "look again in" in again.response["reason"]
        clock.offset += 61  # a minute on: it may look again
        third = await call(srv)
        assert third.response["status"] == "ok"
        assert len(conn.frames()) == 2
        assert wire_order(conn, third.id)[-2:] == ["image", "answer"]
    coverage = get_path(conn.setup, "realtime_input_config", "turn_coverage")
    assert coverage == "TURN_INCLUDES_ALL_INPUT"
    assert look.outcomes == {"sent": 2, "refused_rate": 1}


@pytest.mark.anyio
async def test_no_frame_yet_is_unknown_and_privacy_sends_nothing(srv: FakeLiveServer) -> None:
    look = Look(current=lambda: None, why_unknown=lambda: "no frame yet")
    async with session(srv, look):
        conn = await srv.wait_connection(1)
        answer = await call(srv)
        assert answer.response == {"status": "unknown", "reason": "no frame yet"}
        # The session's own guard: in privacy mode a call's image never goes, even from a
        # tool that would show one.
        look.current = big_percept
    async with session(srv, look, SessionConfig(privacy=True)):
        conn2 = await srv.wait_connection(2)
        answer = await call(srv)
        assert answer.response["image"].startswith("not sent")
    assert conn.frames() == [] and conn2.frames() == []


@pytest.mark.anyio
async def test_usage_by_modality_reaches_the_stats_and_metrics(srv: FakeLiveServer) -> None:
    log = WatchedLog()
    async with session(srv, Look(), log=log) as live:
        details = [
            {"modality": "IMAGE", "tokenCount": 258},
            {"modality": "TEXT", "tokenCount": 40},
        ]
        # Two turns, the first reported twice (each report the turn so far): each turn counts
        # once.
        for turn in range(2):
            for _ in range(2 - turn):
                await srv.send_usage_metadata(
                    {
                        "promptTokenCount": 298,
                        "totalTokenCount": 310,
                        "promptTokensDetails": details,
                    }
                )
            await srv.send_turn_complete()
        await srv.send_text("ok")
        # The text comes after both turns: the session has taken in every report by then.
        await log.wait(lambda events: [e for e in events if e.type == "model_text"])
        by = dict(live.stats.usage_prompt_by_modality)
        total = live.stats.usage_total_tokens
    assert [e.prompt_by_modality for e in log.of(Usage)] == [{"IMAGE": 258, "TEXT": 40}] * 3
    assert by == {"IMAGE": 516, "TEXT": 80}
    assert total == 620
    app = FakeApp()
    assert app.session is not None
    app.session.stats.usage_prompt_by_modality.update(by)
    app.looks.update({"sent": 3, "refused_rate": 1})
    values = metrics(Telemetry(app))
    modality = "lookout_model_prompt_tokens_by_modality_total"
    assert values[(modality, (("modality", "IMAGE"),))] == 516
    assert values[(modality, (("modality", "TEXT"),))] == 80
    assert values[("lookout_looks_total", (("outcome", "sent"),))] == 3
    assert values[("lookout_looks_total", (("outcome", "refused_privacy"),))] == 0


# --------------------------------------------------------------------------------------------
# The device: perception's real percepts, the real tool wiring


@contextlib.asynccontextmanager
async def device(srv: FakeLiveServer, tmp_path: Path, **flags: Any) -> AsyncIterator[Any]:
    settings = {
        "source": str(data_file("vtest.avi")),
        "model": "local",
        "pace": "realtime",
        "loop": True,
        "device_id": "look-test",
        **flags,
    }
    config = build(settings, environ={}, system_config=tmp_path / "none.toml")
    model = GeminiLiveModel(GeminiOptions(TEXT_MODEL), client=client_for(srv))
    app = build_app(config, out=io.StringIO(), model=model, operations=False)
    percepts = Percepts(app.perception.current)
    app.bus.on_percept(percepts)
    async with anyio.create_task_group() as tg:
        tg.start_soon(app.run)
        try:
            yield percepts
        finally:
            app.request_stop()


class Percepts:
    """Perception's percepts as they come, with a wait woken by each one."""

    def __init__(self, current: CurrentPercept) -> None:
        self.current = current
        self._changed = anyio.Event()

    def __call__(self, percept: Percept) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def seen(self, what: Callable[[Percept], bool]) -> None:
        """Until perception's current percept is one ``what`` likes."""
        with anyio.fail_after(30):
            while (p := self.current()) is None or not what(p):
                await self._changed.wait()


@pytest.mark.anyio
async def test_the_device_shows_its_newest_percept(srv: FakeLiveServer, tmp_path: Path) -> None:
    async with device(srv, tmp_path) as percepts:
        conn = await srv.wait_connection(1)
        assert conn.declaration("look") is not None
        await percepts.seen(lambda p: bool(p.people))
        answer = await call(srv)
        body = answer.response
        assert body["status"] == "ok" and body["people"] == len(body["boxes"]) >= 1
        assert wire_order(conn, answer.id) == ["image", "answer"]
        image = decode(conn.frames()[0].data)
        assert list(image.shape[1::-1]) == body["size"]
        assert any(box_colour_at_left_edge(image, b["box"]) for b in body["boxes"] if b["seen"])
    assert json.dumps(body)  # the answer is plain JSON


@pytest.mark.anyio
async def test_under_privacy_the_device_offers_no_look(srv: FakeLiveServer, tmp_path: Path) -> None:
    async with device(srv, tmp_path, privacy=True) as percepts:
        conn = await srv.wait_connection(1)
        assert conn.declaration("look") is None
        await percepts.seen(lambda p: True)
        answer = await call(srv)
        assert answer.response["status"] == "error" and "Unknown tool" in answer.response["error"]
    assert conn.frames() == []


def test_turn_coverage_and_push_to_talk_fit_in_one_realtime_input_config() -> None:
    options = GeminiOptions(TEXT_MODEL, push_to_talk=True)
    config = options.connect_config(LiveSetup()).realtime_input_config
    assert config is not None
    assert config.turn_coverage == types.TurnCoverage.TURN_INCLUDES_ALL_INPUT
    assert config.automatic_activity_detection is not None
    assert config.automatic_activity_detection.disabled is True
    plain = GeminiOptions(TEXT_MODEL).connect_config(LiveSetup()).realtime_input_config
    assert plain is not None and plain.automatic_activity_detection is None


@pytest.mark.anyio
async def test_a_family_that_reads_images_in_answers_gets_the_look_in_its_parts(
    srv: FakeLiveServer,
) -> None:
    # GeminiOptions(image_parts=True): the image rides in the call's FunctionResponse
    # parts (google-genai >= 2.32 serialises them); off by default, realtime video instead.
    look = Look(current=big_percept, per_minute=4)
    async with session(srv, look, options=GeminiOptions(TEXT_MODEL, image_parts=True)):
        conn = await srv.wait_connection(1)
        answer = await call(srv, question="what is she wearing?")
        assert conn.frames() == []  # no realtime video
        (message,) = [m for m in conn.messages if m.function_responses()]
        (response,) = get_field(message.body, "function_responses")
        (part,) = get_field(response, "parts")
        image = decode(b64decode_any(get_path(part, "inline_data", "data")))
        assert max(image.shape[:2]) <= MAX_SIDE
        assert get_path(part, "inline_data", "mime_type") == "image/jpeg"
        assert answer.response["status"] == "ok"
