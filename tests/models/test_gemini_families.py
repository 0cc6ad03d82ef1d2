"""Model families (models/gemini/families.py): the table, and each family's wire forms through
the real google-genai SDK against the fake Live server playing that family
(tests/fakelive/profiles.py). The fake reproduces what integrators reported; these tests show
Lookout's forms keep each family's session open and its model running, and that the fake
does break the forms a family cannot take."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, get_args

import anyio
import pytest
from google.genai import types

from device.config.values import ModelFamily
from live.config import PENDING_STATUS, EmitMode, ReconnectPolicy, SessionConfig
from live.events import ConnectionState
from live.input_stream import InputStream
from live.requests import LiveRequestQueue
from live.session import LiveSession, Runner
from models.gemini.families import FAMILIES, Backend, capabilities
from models.gemini.model import GeminiLiveModel, GeminiOptions
from models.gemini.wire_form import KICK
from tests.fakelive import (
    FakeLiveServer,
    FunctionResponseRecord,
    LiveEndpoint,
    TestCerts,
    ToolCallSpec,
    client_for,
)
from tests.fakelive.profiles import PROFILES
from tests.faults.live_runs import WatchedLog
from tools.function_tool import FunctionTool

# A model of each family, by the fake's profile of it.
MODELS = {
    "3.8": "gemini-3.8-live",
    "3.1": "gemini-3.1-flash-live-preview",
    "2.5": "gemini-live-2.5-flash-preview",
    "2.5-vertex": "gemini-2.5-flash-native-audio-preview-09-2025",
    "3.1-vertex": "gemini-3.1-flash-live-preview",
}


async def watch(stream: InputStream[Any]) -> AsyncIterator[dict[str, Any]]:
    """Report the number each camera frame carries."""
    async for request in stream:
        assert request.blob is not None
        yield {"frame": int((request.blob.data or b"0").decode())}


async def ping(text: str) -> dict[str, Any]:
    """Answer at once."""
    return {"pong": text}


# --------------------------------------------------------------------------------------------
# The table


def test_each_model_name_gets_its_family_and_an_unknown_one_the_safe_default() -> None:
    assert capabilities("gemini-3.8-live").family in ("3.8", "2.5")
    assert capabilities("models/gemini-3.1-flash-live-preview").family == "3.1"
    assert capabilities("gemini-2.5-flash-native-audio-preview-09-2025").family == "2.5"
    assert capabilities("gemini-live-2.5-flash-preview").family == "2.5"
    for unknown in ("gemini-2.0-flash-live-001", "gemini-9-live", "my-proxy-model"):
        safe = capabilities(unknown)
        assert safe.family == "safe"
        # The form every family takes: one answer per call, text after it, the kick.
        assert not safe.streams_as_responses and safe.realtime_text_only and safe.needs_kick
    # A configured family wins over the name.
    assert capabilities("gemini-3.8-live", family="3.1").family == "3.1"
    with pytest.raises(ValueError, match="unknown model family"):
        capabilities("gemini-3.8-live", family="4.0")
    with pytest.raises(ValueError, match="unknown model family"):
        GeminiOptions(family="4.0")


def test_vertex_takes_no_scheduling_will_continue_or_ids_on_any_family() -> None:
    for family in FAMILIES:
        row = capabilities("gemini-3.8-live", Backend.VERTEX, family)
        assert not (row.scheduling or row.will_continue or row.response_ids)
        assert not row.streams_as_responses and row.realtime_text_only
    assert capabilities("gemini-2.5-flash-native-audio", Backend.GEMINI_API).scheduling


def test_the_backend_is_the_clients(certs: TestCerts) -> None:
    endpoint = LiveEndpoint("127.0.0.1", 9, certs)  # nothing is connected to
    vertex = GeminiLiveModel(GeminiOptions(MODELS["3.8"]), client=endpoint.vertex_client())
    assert vertex.options.capabilities.backend is Backend.VERTEX
    assert not vertex.options.capabilities.scheduling
    gemini = GeminiLiveModel(GeminiOptions(MODELS["3.8"]), client=endpoint.client())
    assert gemini.options.capabilities.backend is Backend.GEMINI_API
    with pytest.raises(ValueError, match="vertex"):
        GeminiLiveModel(GeminiOptions(backend=Backend.VERTEX), client=endpoint.client())


def test_the_configuration_offers_exactly_the_tables_families() -> None:
    assert set(get_args(ModelFamily)) == {"auto", *FAMILIES}


# --------------------------------------------------------------------------------------------
# Against the fake, one family at a time


def emit_mode(options: GeminiOptions) -> EmitMode:
    """What device/app/parts.py:emit_mode chooses for the family."""
    if options.capabilities.streams_as_responses:
        return EmitMode.FUNCTION_RESPONSE
    return EmitMode.TEXT


@contextlib.asynccontextmanager
async def family_session(
    srv: FakeLiveServer,
    options: GeminiOptions,
    tools: Sequence[Any] = (watch, ping),
    mode: EmitMode | None = None,
) -> AsyncIterator[tuple[LiveSession, LiveRequestQueue[Any], WatchedLog]]:
    vertex = srv.profile.name.endswith("-vertex")
    client = srv.endpoint.vertex_client() if vertex else client_for(srv)
    model = GeminiLiveModel(options, client=client)
    config = SessionConfig(
        emit_mode=mode or emit_mode(model.options),
        reconnect=ReconnectPolicy(initial_backoff_s=0.01, max_backoff_s=0.05, stable_after_s=0),
        stop_timeout_s=2.0,
    )
    log = WatchedLog()
    queue: LiveRequestQueue[Any] = LiveRequestQueue()
    wrapped = [t if isinstance(t, FunctionTool) else FunctionTool(t) for t in tools]
    runner = Runner(model, wrapped, config, on_event=log.record)
    async with runner.run_live(queue) as session:
        with anyio.fail_after(10):
            await session.wait_model_connected()
        yield session, queue, log


def heard(srv: FakeLiveServer, text: str) -> Callable[[], bool]:
    """The model got ``text`` as realtime text."""
    return lambda: any(r.text == text for r in srv.connection(0).realtime_inputs())


def ran(srv: FakeLiveServer, times: int) -> Callable[[], bool]:
    """The model ran at least ``times`` times (the profile's rule)."""
    return lambda: len(srv.connection(0).runs) >= times


def answered(srv: FakeLiveServer, n: int) -> Callable[[], FunctionResponseRecord | None]:
    """The ``n``-th function response (Vertex's carry no call id to wait on)."""

    def nth() -> FunctionResponseRecord | None:
        responses = srv.connection(0).function_responses()
        return responses[n - 1] if len(responses) >= n else None

    return nth


def frame(queue: LiveRequestQueue[Any], n: int) -> None:
    queue.send_realtime(types.Blob(data=str(n).encode(), mime_type="image/jpeg"))


@pytest.mark.anyio
@pytest.mark.parametrize("family", sorted(MODELS))
async def test_a_streams_emissions_reach_each_family_in_the_form_it_takes(
    certs: TestCerts, family: str
) -> None:
    async with FakeLiveServer(certs=certs, profile=PROFILES[family]) as srv:
        options = GeminiOptions(MODELS[family])
        async with family_session(srv, options) as (_, queue, _log):
            [call_id] = await srv.send_tool_call(ToolCallSpec("watch", id="w1"))
            await srv.wait_for(answered(srv, 1))
            for n in (1, 2, 3):
                frame(queue, n)
                if family in ("3.8", "2.5"):
                    await srv.wait_function_response(call_id, count=1 + n)
                else:
                    await srv.wait_for(heard(srv, f'Function watch returned: {{"frame": {n}}}'))
            # The model ran after the call's answer: the family's own rule (a kick on 3.1).
            await srv.wait_for(lambda: srv.connection(0).runs)
        conn = srv.connection(0)
    assert len(srv.connections) == 1 and conn.close_code == 1000  # nothing closed it early
    responses = conn.function_responses()
    assert responses[0].response == {"status": PENDING_STATUS}
    declaration = conn.declaration("watch")
    assert declaration is not None
    if family in ("3.8", "2.5"):
        assert declaration["behavior"] == "NON_BLOCKING"
        assert responses[0].scheduling == "SILENT" and responses[0].will_continue is True
        assert [r.response for r in responses[1:]] == [{"frame": n} for n in (1, 2, 3)]
        assert all(r.scheduling == "WHEN_IDLE" for r in responses[1:])
        assert conn.runs[0] == "tool_response"
    elif family == "3.1":
        # One answer, nothing a synchronous family cannot take, then the emissions as text.
        assert "behavior" not in declaration
        assert len(responses) == 1 and responses[0].id == call_id
        assert "scheduling" not in responses[0].raw and "will_continue" not in responses[0].raw
        assert conn.client_contents() == []
        assert conn.runs[0] == "kick"
        kinds = [(m.kind, [r.text for r in m.realtime_inputs()]) for m in conn.messages[1:3]]
        assert kinds == [("tool_response", []), ("realtime_input", [KICK])]
    else:
        # Vertex: its endpoint, and one answer without what it refuses (scheduling closes
        # the session with 1007) or does not take; the emissions as realtime text.
        assert conn.vertex and conn.headers["authorization"].startswith("Bearer ")
        assert len(responses) == 1
        assert set(responses[0].raw) == {"name", "response"}
        assert conn.client_contents() == []
        # 3.1 on Vertex still needs its kick; 2.5 runs on the answer itself.
        assert conn.runs[0] == ("kick" if PROFILES[family].needs_kick else "tool_response")


@pytest.mark.anyio
@pytest.mark.parametrize("family", sorted(MODELS))
async def test_a_hundred_calls_in_a_row_each_answered_and_the_model_runs_after_each(
    certs: TestCerts, family: str
) -> None:
    async with (
        FakeLiveServer(certs=certs, profile=PROFILES[family]) as srv,
        family_session(srv, GeminiOptions(MODELS[family]), tools=(ping,)),
    ):
        start = time.monotonic()
        for n in range(1, 101):
            await srv.send_tool_call(ToolCallSpec("ping", {"text": str(n)}))
            response = await srv.wait_for(answered(srv, n))
            assert response.response == {"pong": str(n)}
            # A call the model is left silent after is a hang: wait for it to run.
            await srv.wait_for(ran(srv, n))
        elapsed = time.monotonic() - start
    assert len(srv.connections) == 1
    assert elapsed < 60  # about a second; generous for a shared CPU


# --------------------------------------------------------------------------------------------
# The fake reproduces each family: the forms a family cannot take break there


@pytest.mark.anyio
async def test_the_31_fake_closes_on_client_content_and_stays_silent_without_a_kick(
    certs: TestCerts,
) -> None:
    async with FakeLiveServer(certs=certs, profile="3.1") as srv:
        # 3.8's forms on a 3.1 model: the configured family wins over the name.
        options = GeminiOptions(MODELS["3.1"], family="3.8")
        async with family_session(srv, options) as (_session, queue, log):
            [call_id] = await srv.send_tool_call(ToolCallSpec("ping", {"text": "x"}))
            await srv.wait_function_response(call_id)
            queue.send_content("hello")  # typed text, as client content
            closed = await srv.wait_closed(connection=0)
            await log.wait(
                lambda events: [
                    e for e in events if isinstance(e, ConnectionState) and e.state == "connected"
                ][1:]
            )
    assert closed.runs == []  # the tool response alone never made it run
    assert closed.close_code == 1007 and "client content" in (closed.close_reason or "")


@pytest.mark.anyio
async def test_the_31_fake_never_completes_a_setup_with_affective_dialog(
    certs: TestCerts,
) -> None:
    async with FakeLiveServer(certs=certs, profile="3.1") as srv:
        client = client_for(srv)
        config = types.LiveConnectConfig(
            response_modalities=[types.Modality.AUDIO], enable_affective_dialog=True
        )
        with anyio.move_on_after(1) as waited:
            async with client.aio.live.connect(model=MODELS["3.1"], config=config):
                pass
        assert waited.cancelled_caught  # the SDK itself would wait for ever
        setup = srv.connection(0).setup
        assert setup is not None and "enableAffectiveDialog" in json.dumps(setup)
        # Lookout's own 3.1 setup asks for neither, and is answered.
        async with family_session(srv, GeminiOptions(MODELS["3.1"])):
            conn = await srv.wait_connection(2)
    assert conn.setup_completed
    assert "ffective" not in json.dumps(conn.setup) and "roactiv" not in json.dumps(conn.setup)


@pytest.mark.anyio
async def test_the_vertex_fake_closes_a_session_on_scheduling_which_the_sdk_sends_as_given(
    certs: TestCerts,
) -> None:
    async with FakeLiveServer(certs=certs, profile="2.5-vertex") as srv:
        client = srv.endpoint.vertex_client()
        config = types.LiveConnectConfig(response_modalities=[types.Modality.AUDIO])
        async with client.aio.live.connect(model=MODELS["2.5-vertex"], config=config) as session:
            silent = types.FunctionResponseScheduling.SILENT
            answer = types.FunctionResponse(name="ping", response={}, scheduling=silent)
            await session.send_tool_response(function_responses=[answer])
            closed = await srv.wait_closed(connection=0)
    assert closed.close_code == 1007 and 'Unknown name "scheduling"' in (closed.close_reason or "")


async def tally(minutes: int) -> dict[str, Any]:
    """A job: its ticket now, its result later."""
    return {"visitors": minutes * 2}


@pytest.mark.anyio
@pytest.mark.parametrize("family", ["3.8", "3.1"])
async def test_a_jobs_result_reaches_each_family_in_the_form_it_takes(
    certs: TestCerts, family: str
) -> None:
    job = FunctionTool(tally, long_running=True)
    async with (
        FakeLiveServer(certs=certs, profile=PROFILES[family]) as srv,
        family_session(srv, GeminiOptions(MODELS[family]), tools=(job,)),
    ):
        [call_id] = await srv.send_tool_call(ToolCallSpec("tally", {"minutes": 3}, id="j1"))
        if family == "3.8":
            result = await srv.wait_function_response(call_id, count=2)
            assert result.response["visitors"] == 6
        else:
            said = await srv.wait_for(
                lambda: [
                    text
                    for r in srv.connection(0).realtime_inputs()
                    if (text := r.text or "").startswith("Function tally returned: ")
                ]
            )
            assert json.loads(said[0].removeprefix("Function tally returned: "))["visitors"] == 6
        conn = srv.connection(0)
    [ticket, *rest] = conn.function_responses()
    assert ticket.response["status"] == "started"
    # A synchronous family gets one answer per call, never a second for the same id.
    assert len(rest) == (1 if family == "3.8" else 0)
    assert conn.close_code == 1000 and conn.client_contents() == []


@pytest.mark.anyio
async def test_a_session_set_for_responses_still_sends_a_31_model_one_answer_per_call(
    certs: TestCerts,
) -> None:
    """The adapter holds to the family whatever the session's emission mode: a library
    user's default SessionConfig must not get a 3.1 session closed or its calls muddled."""
    async with FakeLiveServer(certs=certs, profile="3.1") as srv:
        options = GeminiOptions(MODELS["3.1"])
        async with family_session(srv, options, mode=EmitMode.FUNCTION_RESPONSE) as (_, queue, _l):
            [call_id] = await srv.send_tool_call(ToolCallSpec("watch", id="w1"))
            await srv.wait_function_response(call_id)
            frame(queue, 7)
            await srv.wait_for(heard(srv, 'Function watch returned: {"frame": 7}'))
        conn = srv.connection(0)
    declaration = conn.declaration("watch")
    assert declaration is not None and "behavior" not in declaration
    [answer] = conn.function_responses()
    assert answer.id == call_id and answer.response == {"status": PENDING_STATUS}
    assert conn.close_code == 1000 and conn.client_contents() == []
