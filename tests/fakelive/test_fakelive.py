"""The fake Gemini Live server, exercised with the real google-genai SDK over TLS.

These tests pin both the fake's behaviour and the SDK's wire behaviour that
``docs/gemini-live-wire.md`` documents (so an SDK upgrade that changes it fails here first).
"""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
import textwrap
from collections.abc import AsyncGenerator
from contextlib import aclosing
from pathlib import Path
from typing import cast

import anyio
import pytest
import websockets
from google import genai
from google.genai import errors, types
from websockets.asyncio.client import connect as ws_connect

from tests.fakelive import (
    FakeLiveServer,
    TestCerts,
    ToolCallSpec,
    b64decode_any,
    client_for,
    get_path,
)

MODEL = "gemini-live-2.5-flash-preview"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def client(srv: FakeLiveServer) -> genai.Client:
    return client_for(srv)


def lookout_like_config(handle: str | None = None) -> types.LiveConnectConfig:
    """Roughly what models/gemini/model.py will send: a streaming tool + stop_streaming."""
    return types.LiveConnectConfig(
        response_modalities=[types.Modality.TEXT],
        system_instruction="You watch a camera.",
        tools=[
            types.Tool(
                function_declarations=[
                    types.FunctionDeclaration(
                        name="count_people",
                        description="Stream the number of people in view.",
                        behavior=types.Behavior.NON_BLOCKING,
                        parameters_json_schema={"type": "object", "properties": {}},
                    ),
                    types.FunctionDeclaration(
                        name="stop_streaming",
                        description="Stop a streaming tool.",
                        parameters_json_schema={
                            "type": "object",
                            "properties": {"function_name": {"type": "string"}},
                            "required": ["function_name"],
                        },
                    ),
                ]
            )
        ],
        session_resumption=types.SessionResumptionConfig(handle=handle),
        context_window_compression=types.ContextWindowCompressionConfig(
            trigger_tokens=20000,
            sliding_window=types.SlidingWindow(target_tokens=10000),
        ),
        media_resolution=types.MediaResolution.MEDIA_RESOLUTION_LOW,
        output_audio_transcription=types.AudioTranscriptionConfig(),
    )


async def next_message(session: genai.live.AsyncSession) -> types.LiveServerMessage:
    """One server message (``receive()`` only ends at turnComplete, a tool call does not)."""
    # receive() is an async generator typed as AsyncIterator; close it instead of leaving it
    # to the garbage collector.
    stream = cast(AsyncGenerator[types.LiveServerMessage, None], session.receive())
    async with aclosing(stream) as it:
        return await anext(it)


async def whole_turn(session: genai.live.AsyncSession) -> list[types.LiveServerMessage]:
    return [m async for m in session.receive()]


# --------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_sdk_connects_over_tls_and_setup_is_recorded(
    srv: FakeLiveServer, client: genai.Client
) -> None:
    async with client.aio.live.connect(model=MODEL, config=lookout_like_config()) as session:
        assert session.setup_complete is not None
        conn = await srv.wait_connection(1)

    assert conn.version == "v1beta"
    assert conn.method == "BidiGenerateContent"
    assert conn.api_key == "fake-live-api-key"  # sent as a header, not in the URL
    assert "?" not in conn.path
    setup = conn.setup
    assert setup is not None
    assert setup["model"] == f"models/{MODEL}"
    assert get_path(setup, "generation_config", "response_modalities") == ["TEXT"]
    assert get_path(setup, "generation_config", "media_resolution") == "MEDIA_RESOLUTION_LOW"
    assert get_path(setup, "output_audio_transcription") == {}
    assert get_path(setup, "context_window_compression", "sliding_window", "target_tokens") == (
        10000
    )
    count = conn.declaration("count_people")
    assert count is not None and count["behavior"] == "NON_BLOCKING"
    stop = conn.declaration("stop_streaming")
    assert stop is not None and "behavior" not in stop
    # A fresh session asks for resumption updates without a handle.
    assert conn.resumption_requested and conn.resumption_handle is None
    # Leaving the context manager closes normally.
    closed = await srv.wait_closed()
    assert closed.close_code == 1000


@pytest.mark.anyio
async def test_sdk_default_api_version_is_v1(srv: FakeLiveServer) -> None:
    options = srv.endpoint.http_options()
    options.api_version = None  # what a Client without api_version / env gets
    plain = genai.Client(vertexai=False, api_key="k", http_options=options)
    async with plain.aio.live.connect(model=MODEL):
        conn = await srv.wait_connection(1)
    assert conn.version == "v1"


@pytest.mark.anyio
async def test_client_without_the_test_ca_is_refused(srv: FakeLiveServer) -> None:
    options = srv.endpoint.http_options()
    options.async_client_args = {"ssl": ssl.create_default_context(), "proxy": None}
    untrusting = genai.Client(vertexai=False, api_key="k", http_options=options)
    with pytest.raises(ssl.SSLCertVerificationError):
        async with untrusting.aio.live.connect(model=MODEL):
            pass
    assert srv.connections == []


@pytest.mark.anyio
async def test_tool_call_and_streaming_tool_responses(
    srv: FakeLiveServer, client: genai.Client
) -> None:
    async with client.aio.live.connect(model=MODEL, config=lookout_like_config()) as session:
        await srv.wait_connection(1)
        ids = await srv.send_tool_call(
            ToolCallSpec("count_people", id="c-1"),
            {"name": "stop_streaming", "args": {"function_name": "count_people"}},
        )
        assert ids[0] == "c-1" and ids[1].startswith("call-")

        msg = await next_message(session)
        assert msg.tool_call is not None and msg.tool_call.function_calls is not None
        calls = msg.tool_call.function_calls
        assert [(c.id, c.name) for c in calls] == [
            ("c-1", "count_people"),
            (ids[1], "stop_streaming"),
        ]
        assert calls[1].args == {"function_name": "count_people"}

        await session.send_tool_response(
            function_responses=types.FunctionResponse(
                id="c-1",
                name="count_people",
                response={"people": 2},
                will_continue=True,
                scheduling=types.FunctionResponseScheduling.WHEN_IDLE,
            )
        )
        await session.send_tool_response(
            function_responses=[
                types.FunctionResponse(
                    id="c-1",
                    name="count_people",
                    response={"status": "finished"},
                    will_continue=False,
                    scheduling=types.FunctionResponseScheduling.SILENT,
                )
            ]
        )
        first = await srv.wait_function_response("c-1")
        last = await srv.wait_function_response("c-1", count=2)

    assert (first.name, first.response, first.will_continue, first.scheduling) == (
        "count_people",
        {"people": 2},
        True,
        "WHEN_IDLE",
    )
    assert (last.response, last.will_continue, last.scheduling) == (
        {"status": "finished"},
        False,
        "SILENT",
    )
    assert first.t <= last.t
    # Pin the SDK's exact (mixed-case) keys so a change in its serialisation is noticed.
    assert json.loads(srv.connection().of_kind("tool_response")[0].raw) == {
        "tool_response": {
            "functionResponses": [
                {
                    "will_continue": True,
                    "scheduling": "WHEN_IDLE",
                    "id": "c-1",
                    "name": "count_people",
                    "response": {"people": 2},
                }
            ]
        }
    }


@pytest.mark.anyio
async def test_realtime_frames_text_and_client_content_are_recorded(
    srv: FakeLiveServer, client: genai.Client
) -> None:
    # Bytes chosen so URL-safe base64 contains both "-" and "_".
    jpeg = b"\xff\xd8\xff\xe0" + bytes(range(256)) + b"\xfb\xff\xbf\xff\xd9"
    async with client.aio.live.connect(model=MODEL, config=lookout_like_config()) as session:
        await srv.wait_connection(1)
        await session.send_realtime_input(video=types.Blob(data=jpeg, mime_type="image/jpeg"))
        await session.send_realtime_input(text="what do you see?")
        await session.send_client_content(
            turns=types.Content(
                role="user", parts=[types.Part(text="Function count_people returned: {}")]
            ),
            turn_complete=False,
        )
        await srv.wait_message("client_content")

    conn = srv.connection()
    assert [m.kind for m in conn.messages] == [
        "setup",
        "realtime_input",
        "realtime_input",
        "client_content",
    ]
    (frame,) = conn.frames()
    assert (frame.kind, frame.mime_type, frame.data) == ("video", "image/jpeg", jpeg)
    raw_video = json.loads(conn.messages[1].raw)["realtime_input"]["video"]
    assert set(raw_video) == {"data", "mime_type"}
    assert "-" in raw_video["data"] and "_" in raw_video["data"]
    assert [r.text for r in conn.realtime_inputs() if r.kind == "text"] == ["what do you see?"]
    (content,) = conn.client_contents()
    assert content.turn_complete is False
    assert content.texts() == ["Function count_people returned: {}"]
    times = [m.t for m in conn.messages]
    assert times == sorted(times)


def test_b64decode_accepts_both_alphabets_and_missing_padding() -> None:
    data = b"\xfb\xff\xbf\x00"
    assert b64decode_any("-_-_AA") == data
    assert b64decode_any("+/+/AA==") == data
    with pytest.raises(ValueError):
        b64decode_any("not base64!")


@pytest.mark.anyio
async def test_server_messages_reach_receive(srv: FakeLiveServer, client: genai.Client) -> None:
    async with client.aio.live.connect(model=MODEL, config=lookout_like_config()) as session:
        await srv.wait_connection(1)
        await srv.send_server_content(text="I see")
        await srv.send_output_transcription("I see two people")
        await srv.send_tool_call_cancellation(["c-1", "c-2"])
        await srv.send_usage_metadata({"totalTokenCount": 42})
        await srv.send_resumption_update("handle-1", resumable=True)
        await srv.send_go_away("5s")
        await srv.send_text("two people", turn_complete=True)
        turn = await whole_turn(session)

        # receive() stopped at turnComplete; the next call reads on.
        await srv.send_turn_complete()
        assert len(await whole_turn(session)) == 1

    assert turn[0].text == "I see"
    sc = turn[1].server_content
    assert sc is not None and sc.output_transcription is not None
    assert sc.output_transcription.text == "I see two people"
    assert turn[2].tool_call_cancellation is not None
    assert turn[2].tool_call_cancellation.ids == ["c-1", "c-2"]
    assert turn[3].usage_metadata is not None
    assert turn[3].usage_metadata.total_token_count == 42
    update = turn[4].session_resumption_update
    assert update is not None and (update.new_handle, update.resumable) == ("handle-1", True)
    assert turn[5].go_away is not None and turn[5].go_away.time_left == "5s"
    assert turn[6].text == "two people"
    assert turn[6].server_content is not None and turn[6].server_content.turn_complete
    assert len(turn) == 7


@pytest.mark.anyio
async def test_unknown_keys_only_message_raises_type_error(
    srv: FakeLiveServer, client: genai.Client
) -> None:
    async with client.aio.live.connect(model=MODEL) as session:
        await srv.wait_connection(1)
        await srv.send({"someFutureMessage": {"x": 1}})
        # SDK 3.6.1: no known key -> APIError.raise_error(None, ...) -> `400 <= None`.
        with pytest.raises(TypeError):
            await next_message(session)
        # The same, carrying a numeric "code", becomes a proper APIError subclass.
        await srv.send({"code": 503, "message": "overloaded"})
        with pytest.raises(errors.ServerError) as info:
            await next_message(session)
        assert info.value.code == 503
        await srv.send("{not json")
        with pytest.raises(ValueError, match="Failed to parse response"):
            await next_message(session)
        # A text frame works as well as the default binary one.
        await srv.send('{"serverContent": {"turnComplete": true}}')
        assert len(await whole_turn(session)) == 1
        # Unknown keys next to known ones are dropped silently.
        await srv.send({"serverContent": {"turnComplete": True}, "someFutureField": 1})
        assert len(await whole_turn(session)) == 1
        # None of these broke the connection.
        await srv.send_text("still here")
        assert (await whole_turn(session))[0].text == "still here"


@pytest.mark.anyio
@pytest.mark.parametrize("code", [1000, 1006, 1011])
async def test_close_makes_receive_raise_api_error(
    srv: FakeLiveServer, client: genai.Client, code: int
) -> None:
    async with client.aio.live.connect(model=MODEL) as session:
        await srv.wait_connection(1)
        closed = await srv.close_connection(code, "" if code == 1006 else f"bye {code}")
        with pytest.raises(errors.APIError) as info:
            await next_message(session)
        # Every close is a plain APIError (1xxx is neither 4xx nor 5xx) carrying the close
        # code; the reason is in .details, .status/.message are None.
        assert type(info.value) is errors.APIError
        assert info.value.code == code
        if code != 1006:
            assert info.value.details == f"bye {code}"
        # Receiving again raises the same again; sending raises websockets' exception.
        with pytest.raises(errors.APIError):
            await next_message(session)
        expected = (
            websockets.ConnectionClosedOK if code == 1000 else websockets.ConnectionClosedError
        )
        with pytest.raises(expected):
            await session.send_realtime_input(text="anyone?")
    assert closed.close_code == code


@pytest.mark.anyio
async def test_reconnect_with_resumption_handle(srv: FakeLiveServer, client: genai.Client) -> None:
    async with client.aio.live.connect(model=MODEL, config=lookout_like_config()) as session:
        await srv.wait_connection(1)
        await srv.send_resumption_update("resume-42")
        await srv.send_go_away("1s")
        handle = None
        with pytest.raises(errors.APIError):
            async for msg in session.receive():
                if msg.session_resumption_update is not None:
                    handle = msg.session_resumption_update.new_handle
                if msg.go_away is not None:
                    await srv.close_connection(1011, "going away")
    assert handle == "resume-42"

    config = lookout_like_config(handle=handle)
    async with client.aio.live.connect(model=MODEL, config=config):
        second = await srv.wait_connection(2)
    assert second.index == 1
    assert second.resumption_handle == "resume-42"
    assert second.setup is not None and second.setup["sessionResumption"] == {"handle": "resume-42"}
    assert srv.connections[0].resumption_handle is None
    assert srv.connections[0].close_code == 1011


@pytest.mark.anyio
async def test_server_that_never_answers_setup(certs: TestCerts) -> None:
    async with FakeLiveServer(certs=certs, answer_setup=False) as srv:
        client = client_for(srv)
        connected = False

        async def connect() -> None:
            nonlocal connected
            async with client.aio.live.connect(model=MODEL):
                connected = True

        async with anyio.create_task_group() as tg:
            tg.start_soon(connect)
            conn = await srv.wait_connection(1)  # setup received, never answered
            assert conn.setup is not None and not conn.setup_completed and conn.sent == []
            tg.cancel_scope.cancel()  # a client-side connect timeout would do this
        assert not connected
        await srv.wait_closed()


@pytest.mark.anyio
async def test_setup_refused_with_close_code(certs: TestCerts) -> None:
    async with FakeLiveServer(certs=certs, setup_close_code=1011) as srv:
        with pytest.raises(errors.APIError) as info:
            async with client_for(srv).aio.live.connect(model=MODEL):
                pass
        assert info.value.code == 1011
        srv.setup_close_code = None
        async with client_for(srv).aio.live.connect(model=MODEL) as session:
            assert session.setup_complete is not None


@pytest.mark.anyio
async def test_unknown_path_or_version_is_closed(srv: FakeLiveServer, certs: TestCerts) -> None:
    with pytest.raises(errors.APIError) as info:
        async with client_for(srv, api_version="v9").aio.live.connect(model=MODEL):
            pass
    assert info.value.code == 1008

    uri = f"wss://127.0.0.1:{srv.port}/ws/something.Else"
    async with ws_connect(uri, ssl=certs.client_ssl_context(), proxy=None) as ws:
        await ws.send(json.dumps({"setup": {"model": "models/x"}}))
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await ws.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
    assert srv.connections == []
    assert len(srv.rejected_paths) == 2


# --------------------------------------------------------------------------------------------
# Thread mode + environment variables: how `lookout run` in a subprocess is pointed at the fake.

SUBPROCESS_CLIENT = textwrap.dedent(
    """
    import asyncio
    from google import genai
    from google.genai import types

    async def main():
        client = genai.Client()  # everything from the environment
        async with client.aio.live.connect(model="m") as session:
            await session.send_realtime_input(text="hello from a subprocess")
            async for msg in session.receive():
                if msg.tool_call:
                    call = msg.tool_call.function_calls[0]
                    await session.send_tool_response(function_responses=types.FunctionResponse(
                        id=call.id, name=call.name, response={"ok": True}))
                    break
        print("done")

    asyncio.run(main())
    """
)


def test_env_route_in_a_subprocess_against_the_threaded_server(
    certs: TestCerts, tmp_path: Path
) -> None:
    with FakeLiveServer.run_in_thread(certs=certs) as srv:
        env = srv.subprocess_env(api_version="v1alpha", api_key="env-key")
        assert env["GOOGLE_GEMINI_BASE_URL"] == srv.base_url
        assert env["SSL_CERT_FILE"] == str(certs.ca_path)
        proc = subprocess.Popen(
            [sys.executable, "-c", SUBPROCESS_CLIENT],
            env=env,
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            conn = srv.wait_connection(1, timeout=30)
            srv.wait_message("realtime_input", timeout=10)
            (call_id,) = srv.send_tool_call(ToolCallSpec("count_people"))
            response = srv.wait_function_response(call_id, timeout=10)
            out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 0, err
        assert out.strip() == "done"
        assert (conn.version, conn.api_key) == ("v1alpha", "env-key")
        assert response.response == {"ok": True}
        assert srv.wait_closed().close_code == 1000
