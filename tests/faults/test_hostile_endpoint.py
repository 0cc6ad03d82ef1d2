"""Nothing a model endpoint sends may stop the device: unreadable messages.

The real google-genai SDK against the fake Live server over TLS (``tests/fakelive``), made
to send what no Live service should: frames that are not JSON, JSON that is not an
object, objects of the wrong shape, nesting that exhausts the recursion limit, messages
over the size limit, garbage in answer to the setup (``tests/fakelive/hostile.py``). Each
one ends that connection, never the session, which reconnects; a well-formed message of a
kind the SDK does not know is skipped. A real ``lookout run`` process meets them in
``test_hostile_endpoint_cli.py``.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import pytest
from google.genai import types

from live.events import ModelText
from live.model import ConnectionLost, LiveSetup, ModelSetupError
from models.gemini.model import GeminiLiveModel, GeminiOptions
from tests.fakelive import FakeLiveServer, ToolCallSpec, client_for
from tests.fakelive.hostile import AWKWARD_TEXT, NEWER_PROTOCOL, UNREADABLE
from tests.faults.live_runs import MODEL, quick, said, session_on

pytestmark = pytest.mark.anyio


# --------------------------------------------------------------------------------------------
# One bad frame: that connection ends, the session goes on and comes back


@pytest.mark.parametrize("name", list(UNREADABLE))
async def test_an_unreadable_message_ends_the_connection_not_the_session(
    srv: FakeLiveServer, name: str
) -> None:
    async with session_on(srv, quick()) as run:
        await srv.wait_connection(1)
        await srv.send(UNREADABLE[name])
        # The client hung up on it, and came back.
        await srv.wait_closed(connection=0)
        await srv.wait_connection(2)
        # The device works meanwhile and after; so does the model on the new connection.
        assert (await run.session.call_tool("ping", {"text": "device"})).ok
        [call_id] = await srv.send_tool_call(ToolCallSpec("ping", {"text": "m"}), connection=1)
        answer = await srv.wait_function_response(call_id)
        assert answer.response == {"pong": "m"}
        lost = await run.log.wait(lambda _: said(run.log, "disconnected"))
    assert run.session.failure is None
    reason = lost[0].reason
    assert reason and "\n" not in reason and len(reason) < 400
    if name != "oversized (2 MiB)":  # that one the websocket refuses itself (close 1009)
        assert "could not be read" in reason


@pytest.mark.parametrize("name", list(NEWER_PROTOCOL))
async def test_a_message_of_a_newer_protocol_is_skipped_and_the_connection_stays(
    srv: FakeLiveServer, name: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="lookout.gemini")
    async with session_on(srv, quick()) as run:
        await srv.wait_connection(1)
        await srv.send(NEWER_PROTOCOL[name])
        [call_id] = await srv.send_tool_call(ToolCallSpec("ping", {"text": "m"}))
        await srv.wait_function_response(call_id)
    assert len(srv.connections) == 1 and srv.connections[0].close_code == 1000
    assert not said(run.log, "disconnected")


@pytest.mark.parametrize("name", list(AWKWARD_TEXT))
async def test_awkward_model_text_is_model_text(srv: FakeLiveServer, name: str) -> None:
    async with session_on(srv, quick()) as run:
        await srv.wait_connection(1)
        await srv.send(AWKWARD_TEXT[name])
        texts = await run.log.wait(lambda ev: [e for e in ev if isinstance(e, ModelText)])
    assert texts[0].text and len(srv.connections) == 1
    # Whatever shows it (a UTF-8 console, file or socket) can write it.
    texts[0].text.encode("utf-8")


async def test_a_tool_call_with_lone_surrogates_is_answered_and_writable(
    srv: FakeLiveServer,
) -> None:
    async with session_on(srv, quick()) as run:
        await srv.wait_connection(1)
        # json.dumps writes a lone surrogate as the escape "\ud800", as a server may.
        await srv.send_tool_call({"name": "ping", "id": "s\ud800", "args": {"text": "a\udfff"}})
        answer = await srv.wait_for(lambda: srv.connection(0).function_responses())
    assert answer[0].response == {"pong": "a\ufffd"} and answer[0].id == "s\ufffd"
    for event in run.log.events:
        json.dumps(event.to_dict(), ensure_ascii=False).encode("utf-8")


async def test_bad_frames_one_after_another_never_end_the_session(srv: FakeLiveServer) -> None:
    """Every kind in turn on one session, each on the connection that follows the last."""
    names = list(UNREADABLE)
    async with session_on(srv, quick()) as run:
        for n, name in enumerate(names):
            await srv.wait_connection(n + 1, timeout=20)
            await srv.send(UNREADABLE[name], connection=n)
            await srv.wait_closed(connection=n)
        await srv.wait_connection(len(names) + 1, timeout=20)
        assert (await run.session.call_tool("ping", {"text": "still here"})).ok
    assert run.session.failure is None


# --------------------------------------------------------------------------------------------
# Garbage in answer to the setup: retried with back-off, not refused and not fatal


@pytest.mark.parametrize("name", list(UNREADABLE))
async def test_an_unreadable_answer_to_the_setup_is_a_retryable_loss(
    srv: FakeLiveServer, name: str
) -> None:
    srv.setup_complete = UNREADABLE[name]
    model = GeminiLiveModel(GeminiOptions(MODEL), client=client_for(srv))
    with pytest.raises(ConnectionLost) as info:
        await model.connect(LiveSetup())
    assert info.value.retryable
    assert "\n" not in info.value.reason and len(info.value.reason) < 400
    await srv.wait_closed(connection=0)


async def test_a_session_whose_setup_is_answered_with_garbage_keeps_trying(
    srv: FakeLiveServer,
) -> None:
    srv.setup_complete = b"[1]"
    async with session_on(srv, quick()) as run:
        await srv.wait_connection(3)
        assert (await run.session.call_tool("ping", {"text": "device"})).ok
        srv.setup_complete = {"setupComplete": {}}
        with anyio.fail_after(10):
            await run.session.wait_model_connected()
        unreachable = said(run.log, "unreachable")
    assert run.session.failure is None and not said(run.log, "refused")
    assert unreachable and "setup" in unreachable[0].reason


class UnsupportedSetup(GeminiLiveModel):
    """A setup the SDK refuses before anything is sent (a field Gemini API mode lacks)."""

    def connect_config(self, setup: LiveSetup) -> types.LiveConnectConfig:
        config = super().connect_config(setup)
        assert config.session_resumption is not None
        config.session_resumption.transparent = True
        return config


async def test_our_own_bad_setup_is_still_refused(srv: FakeLiveServer) -> None:
    model = UnsupportedSetup(GeminiOptions(MODEL), client=client_for(srv))
    with pytest.raises(ModelSetupError, match="bad setup"):
        await model.connect(LiveSetup())
    assert srv.connections == []  # refused here, not by the server


# --------------------------------------------------------------------------------------------
# An exception type nobody foresaw, from inside the SDK


class Surprise(Exception):
    """What a future SDK might raise on a frame (not a type anyone catches by name)."""


@pytest.mark.parametrize("where", ["receiving", "connecting"])
async def test_an_exception_nobody_foresaw_inside_the_sdk_is_a_lost_connection(
    srv: FakeLiveServer, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    from google.genai import live as sdk_live

    surprises = [Surprise("from deep inside")]

    def surprising(original: Any) -> Any:
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            if surprises:
                raise surprises.pop()
            return await original(*args, **kwargs)

        return wrapper

    if where == "receiving":
        monkeypatch.setattr(
            sdk_live.AsyncSession, "_receive", surprising(sdk_live.AsyncSession._receive)
        )
    else:
        monkeypatch.setattr(sdk_live, "_t_live_connect_config", surprising(
            sdk_live._t_live_connect_config
        ))  # fmt: skip
    async with session_on(srv, quick()) as run:
        with anyio.fail_after(10):
            await run.session.wait_model_connected()
        if where == "receiving":
            await srv.wait_connection(2)  # the first ended on the surprise; this one works
        [call_id] = await srv.send_tool_call(ToolCallSpec("ping", {"text": "m"}))
        await srv.wait_function_response(call_id)
    assert run.session.failure is None and not surprises
    failed = [e for e in said(run.log) if e.state in ("disconnected", "unreachable")]
    assert len(failed) == 1 and "Surprise: from deep inside" in failed[0].reason
