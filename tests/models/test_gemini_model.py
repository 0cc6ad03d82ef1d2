"""models/gemini/model.py: the real google-genai SDK against the fake Live server over TLS.

Most tests run the whole runtime (``live.Runner``) on a ``GeminiLiveModel`` and script the
fake as the model; the rest drive a ``GeminiConnection`` directly. Every wait is on an
event (a message at the fake, an event in the session's log), never a fixed sleep.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import pytest
from google.genai import types

from live.config import PENDING_STATUS, EmitMode, ReconnectPolicy, SessionConfig
from live.events import (
    ConnectionState,
    Emission,
    Event,
    Interrupted,
    ModelText,
    StreamStopped,
    Transcript,
    TurnComplete,
    Usage,
)
from live.input_stream import InputStream
from live.model import (
    ConnectionLost,
    FunctionCallRequest,
    LiveSetup,
    ModelAudioOut,
    ModelEvent,
    ModelGoAway,
    ModelInterrupted,
    ModelResumptionUpdate,
    ModelSetupError,
    ModelTextOut,
    ModelToolCall,
    ModelToolCancellation,
    ModelTranscriptOut,
    ModelTurnComplete,
    ModelUsage,
    SendActivity,
    SendContent,
    SendRealtime,
    SendText,
    SendToolResponse,
)
from live.requests import LiveRequestQueue
from live.session import LiveSession, Runner
from models.gemini.model import (
    GeminiConnection,
    GeminiLiveModel,
    GeminiOptions,
    MissingApiKey,
    api_key_from_env,
    default_modalities,
    parse_duration,
    resolve_api_version,
)
from tests.fakelive import (
    ClientMessage,
    FakeLiveServer,
    FunctionResponseRecord,
    TestCerts,
    ToolCallSpec,
    client_for,
    get_field,
    get_path,
)
from tests.fakelive import LiveConnection as FakeConnection
from tests.faults.live_runs import WatchedLog
from tools.function_tool import FunctionTool

T = TypeVar("T")

TEXT_MODEL = "gemini-live-2.5-flash-preview"
# Matches none of live.util.redact's patterns, so only the model's own redaction can hide it.
SECRET_KEY = "sekrit-0123456789-abcdef"


# --------------------------------------------------------------------------------------------
# Tools and frames


def jpeg(n: int) -> bytes:
    """A JPEG-framed blob carrying ``n``; every byte value appears, so a base64 alphabet
    mix-up (the SDK sends URL-safe) would corrupt it."""
    return b"\xff\xd8\xff\xe0" + bytes(range(256)) + f"#{n}#".encode() + b"\xff\xd9"


def frame_number(data: bytes | None) -> int:
    assert data is not None
    return int(data.rsplit(b"#", 2)[1])


async def watch(stream: InputStream) -> AsyncIterator[dict[str, Any]]:
    """Report the number each camera frame carries."""
    async for request in stream:
        assert request.blob is not None
        yield {"frame": frame_number(request.blob.data)}


async def ping(text: str) -> dict[str, Any]:
    """Answer at once."""
    return {"pong": text}


# --------------------------------------------------------------------------------------------
# Fixtures and helpers


@dataclass
class Run:
    srv: FakeLiveServer
    queue: LiveRequestQueue
    session: LiveSession
    log: WatchedLog

    def frame(self, n: int) -> None:
        blob = types.Blob(data=jpeg(n), mime_type="image/jpeg")
        self.queue.send_realtime(blob)

    async def call(self, *calls: ToolCallSpec, connection: int | None = None) -> list[str]:
        """Call tools as the model; return once each call got its first answer."""
        ids = await self.srv.send_tool_call(*calls, connection=connection)
        for call_id in ids:
            await self.srv.wait_function_response(call_id)
        return ids

    async def frame_seen(self, n: int, call_id: str) -> FunctionResponseRecord:
        """Send frame ``n``; wait until the model got the emission for it on ``call_id``.

        (Alone, or as the newest of emissions merged while the model was away.)
        """
        self.frame(n)
        return await self.srv.wait_for(
            lambda: next(
                (r for r in responses(self.srv, call_id) if r.response.get("frame") == n), None
            )
        )


def responses(srv: FakeLiveServer, call_id: str) -> list[FunctionResponseRecord]:
    """Function responses for ``call_id`` across all connections, in arrival order."""
    hits = [r for c in srv.connections for r in c.function_responses() if r.id == call_id]
    return sorted(hits, key=lambda r: r.t)


def fast_reconnect(**kwargs: Any) -> ReconnectPolicy:
    """Quick retries, and every connection counts as one that lasted: these tests are about
    what crosses a reconnect (back-off for flapping: tests/faults/test_flapping_model.py)."""
    kwargs.setdefault("stable_after_s", 0.0)
    return ReconnectPolicy(initial_backoff_s=0.01, max_backoff_s=0.05, **kwargs)


@contextlib.asynccontextmanager
async def running(
    srv: FakeLiveServer,
    config: SessionConfig | None = None,
    *,
    tools: Sequence[Any] = (watch, ping),
    options: GeminiOptions | None = None,
    model: GeminiLiveModel | None = None,
) -> AsyncIterator[Run]:
    model = model or GeminiLiveModel(options or GeminiOptions(TEXT_MODEL), client=client_for(srv))
    config = config or SessionConfig(reconnect=fast_reconnect(), stop_timeout_s=2.0)
    log = WatchedLog()
    queue = LiveRequestQueue()
    runner = Runner(model, [FunctionTool(t) for t in tools], config, on_event=log.record)
    async with runner.run_live(queue) as session:
        await srv.wait_connection(1)
        if config.reconnect.max_attempts is None:
            with anyio.fail_after(10):
                await session.wait_model_connected()
        yield Run(srv, queue, session, log)


def decl(conn: FakeConnection, name: str) -> dict[str, Any]:
    declaration = conn.declaration(name)
    assert declaration is not None, f"{name} not declared"
    return declaration


# --------------------------------------------------------------------------------------------
# Pure helpers


def test_api_key_from_env_follows_the_sdk_precedence() -> None:
    assert api_key_from_env({}) is None
    assert api_key_from_env({"GEMINI_API_KEY": " g "}) == "g"
    assert api_key_from_env({"GOOGLE_API_KEY": "o", "GEMINI_API_KEY": "g"}) == "o"
    assert api_key_from_env({"GOOGLE_API_KEY": "", "GEMINI_API_KEY": "g"}) == "g"


def test_api_version_and_modalities_rules() -> None:
    assert resolve_api_version(None, {}) == "v1beta"
    assert resolve_api_version(None, {"GOOGLE_GENAI_API_VERSION": "v1alpha"}) == "v1alpha"
    assert resolve_api_version(None, {"GOOGLE_GENAI_API_VERSION": "beta"}) == "v1beta"
    assert resolve_api_version("v1", {"GOOGLE_GENAI_API_VERSION": "v1alpha"}) == "v1"
    assert default_modalities("gemini-3.8-live") == ("AUDIO",)
    assert default_modalities("gemini-2.5-flash-native-audio-preview-09-2025") == ("AUDIO",)
    assert default_modalities("gemini-live-2.5-flash-preview") == ("TEXT",)
    assert default_modalities("gemini-2.0-flash-live-001") == ("TEXT",)
    assert default_modalities("my-proxy-model-1") == ("AUDIO",)
    assert default_modalities("models/gemini-1.5-pro") == ("TEXT",)
    assert GeminiOptions("x-2.0", response_modalities=("text",)).modalities == ("TEXT",)
    with pytest.raises(ValueError, match="modalities"):
        GeminiOptions(response_modalities=("VIDEO",))
    with pytest.raises(ValueError, match="media resolution"):
        GeminiOptions(media_resolution="ULTRA")


def test_parse_duration() -> None:
    assert parse_duration("10s") == 10.0
    assert parse_duration("0.5s") == 0.5
    assert parse_duration(3) == 3.0
    assert parse_duration({"seconds": 2, "nanos": 500_000_000}) == 2.5
    assert parse_duration("soon") is None
    assert parse_duration(None) is None


def test_missing_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    with pytest.raises(MissingApiKey, match="GEMINI_API_KEY"):
        GeminiLiveModel(GeminiOptions())


# --------------------------------------------------------------------------------------------
# 1. Setup


@pytest.mark.anyio
async def test_setup_declares_streaming_tool_and_session_features(srv: FakeLiveServer) -> None:
    config = SessionConfig(system_instruction="You watch a camera.")
    async with running(srv, config, options=GeminiOptions(voice="Kore")) as run:
        conn = await srv.wait_connection(1)
        assert run.session.connection_state == "connected"
    setup = conn.setup
    assert setup is not None
    assert conn.version == "v1beta"
    assert setup["model"] == "models/gemini-3.8-live"
    # The default model is a 3.x one: AUDIO, with the transcription that gives us text.
    assert get_path(setup, "generation_config", "response_modalities") == ["AUDIO"]
    assert get_path(setup, "output_audio_transcription") == {}
    voice = ("generation_config", "speech_config", "voice_config", "prebuilt_voice_config")
    assert get_path(setup, *voice, "voice_name") == "Kore"
    assert get_path(setup, "generation_config", "media_resolution") == "MEDIA_RESOLUTION_LOW"
    assert get_path(setup, "context_window_compression", "sliding_window") == {}
    assert conn.resumption_requested and conn.resumption_handle is None
    assert get_path(setup, "system_instruction", "parts") == [{"text": "You watch a camera."}]
    watch_decl = decl(conn, "watch")
    assert watch_decl["behavior"] == "NON_BLOCKING"
    # The InputStream parameter is injected by the session, never shown to the model.
    assert "stream" not in json.dumps(watch_decl)
    stop = decl(conn, "stop_streaming")
    assert "behavior" not in stop
    assert "function_name" in json.dumps(stop)
    assert "behavior" not in decl(conn, "ping")


@pytest.mark.anyio
async def test_setup_text_model_options(srv: FakeLiveServer) -> None:
    options = GeminiOptions(
        TEXT_MODEL, context_compression=False, media_resolution="MEDIUM", api_version="v1alpha"
    )
    async with running(srv, options=options):
        conn = await srv.wait_connection(1)
    setup = conn.setup
    assert setup is not None
    # An explicit api_version overrides the given client's for each connection.
    assert conn.version == "v1alpha"
    assert get_path(setup, "generation_config", "response_modalities") == ["TEXT"]
    assert get_path(setup, "output_audio_transcription") is None
    assert get_path(setup, "generation_config", "media_resolution") == "MEDIA_RESOLUTION_MEDIUM"
    assert get_path(setup, "context_window_compression") is None
    assert conn.resumption_requested


@pytest.mark.anyio
async def test_client_from_environment_honours_sdk_variables(
    srv: FakeLiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GOOGLE_GEMINI_BASE_URL + SSL_CERT_FILE (+ no proxy) are the only route to the fake:
    # if the model built its client any other way, TLS or the address would fail.
    for name in srv.endpoint.subprocess_env({}).keys() | {"GOOGLE_API_KEY", "SSL_CERT_DIR"}:
        monkeypatch.delenv(name, raising=False)
    for name, value in srv.env(api_version="v1alpha", api_key=SECRET_KEY).items():
        monkeypatch.setenv(name, value)
    model = GeminiLiveModel(GeminiOptions(TEXT_MODEL, voice="Puck"))
    conn = await model.connect(LiveSetup())
    try:
        fake = await srv.wait_connection(1)
    finally:
        await conn.close()
    assert fake.version == "v1alpha"  # GOOGLE_GENAI_API_VERSION honoured
    assert fake.api_key == SECRET_KEY
    assert "?" not in fake.path
    # TEXT model: the voice is not sent (it only applies to audio answers).
    assert get_field(fake.setup, "generation_config").get("speechConfig") is None


# --------------------------------------------------------------------------------------------
# 2, 3. Tool calls and emissions


@pytest.mark.anyio
@pytest.mark.parametrize(
    "scheduling",
    [None, types.FunctionResponseScheduling.INTERRUPT],
    ids=["default", "interrupt"],
)
async def test_streaming_call_answers_pending_then_one_response_per_emission(
    srv: FakeLiveServer, scheduling: types.FunctionResponseScheduling | None
) -> None:
    config = SessionConfig(reconnect=fast_reconnect())
    if scheduling is not None:
        config = SessionConfig(reconnect=fast_reconnect(), scheduling=scheduling)
    expected = scheduling.value if scheduling is not None else "WHEN_IDLE"
    async with running(srv, config) as run:
        [call_id] = await run.call(ToolCallSpec("watch", id="fc-1"))
        for n in (1, 2, 3):
            await run.frame_seen(n, call_id)
        got = responses(srv, call_id)
    pending, *emissions = got
    assert (pending.name, pending.response) == ("watch", {"status": PENDING_STATUS})
    assert (pending.will_continue, pending.scheduling) == (True, "SILENT")
    assert [e.response for e in emissions[:3]] == [{"frame": 1}, {"frame": 2}, {"frame": 3}]
    for e in emissions[:3]:
        assert (e.id, e.name, e.will_continue, e.scheduling) == (
            "fc-1",
            "watch",
            True,
            expected,
        )
    # Every emission went out as its own tool_response message.
    assert all(len(m.function_responses()) == 1 for m in srv.connection(0).of_kind("tool_response"))


@pytest.mark.anyio
async def test_several_calls_in_one_message_are_all_answered(srv: FakeLiveServer) -> None:
    async with running(srv) as run:
        ids = await srv.send_tool_call(
            ToolCallSpec("watch", id="a"),
            ToolCallSpec("watch", id="b"),
            ToolCallSpec("ping", {"text": "hi"}, id="c"),
        )
        assert ids == ["a", "b", "c"]
        first = {i: await srv.wait_function_response(i) for i in ids}
        assert first["a"].response == first["b"].response == {"status": PENDING_STATUS}
        assert first["c"].response == {"pong": "hi"}
        assert first["c"].will_continue is None
        # Both calls of the streaming tool run, each with its own input stream.
        run.frame(7)
        await srv.wait_function_response("a", count=2)
        await srv.wait_function_response("b", count=2)
    assert responses(srv, "a")[1].response == responses(srv, "b")[1].response == {"frame": 7}
    calls = run.log.of_type("tool_call")
    assert sorted(e.call_id or "" for e in calls) == ["a", "b", "c"]


# --------------------------------------------------------------------------------------------
# 4. Stopping


@pytest.mark.anyio
async def test_stop_streaming_exact_and_misspelled_names(srv: FakeLiveServer) -> None:
    async with running(srv) as run:
        [call_id] = await run.call(ToolCallSpec("watch", id="w1"))
        await run.frame_seen(1, call_id)

        [wrong] = await run.call(ToolCallSpec("stop_streaming", {"function_name": "wach"}))
        answer = responses(srv, wrong)[0].response
        assert answer["status"] == "No active streaming function named wach"
        assert answer["running"] == [{"name": "watch", "id": "w1"}]

        [right] = await run.call(ToolCallSpec("stop_streaming", {"function_name": "watch"}))
        answer = responses(srv, right)[0].response
        assert answer["status"] == "Successfully stopped streaming function watch"
        assert [s["id"] for s in answer["stopped"]] == ["w1"]
        # The stream's final word came before the stop's answer, and nothing after it.
        final = responses(srv, call_id)[-1]
        assert final.response == {"status": "stopped", "reason": "stop_streaming"}
        assert final.will_continue is False
        assert final.t <= responses(srv, right)[0].t
        run.frame(2)
        [again] = await run.call(ToolCallSpec("watch", id="w2"))
        await run.frame_seen(3, again)
    assert responses(srv, "w1")[-1] == final


@pytest.mark.anyio
async def test_tool_call_cancellation_stops_the_stream(srv: FakeLiveServer) -> None:
    async with running(srv) as run:
        [first] = await run.call(ToolCallSpec("watch", id="c1"))
        await run.frame_seen(1, first)
        before = len(responses(srv, first))
        await srv.send_tool_call_cancellation([first])
        await run.log.wait(
            lambda events: any(isinstance(e, StreamStopped) and e.id == first for e in events)
        )
        # A second stream sees the next frames; the cancelled one must not.
        [second] = await run.call(ToolCallSpec("watch", id="c2"))
        await run.frame_seen(2, second)
        await run.frame_seen(3, second)
    assert len(responses(srv, first)) == before
    stopped = [e for e in run.log.of(StreamStopped) if e.id == first]
    assert stopped[0].reason == "cancelled by model"


# --------------------------------------------------------------------------------------------
# 5. Reconnects


@pytest.mark.anyio
async def test_go_away_and_1011_reconnect_with_handle_and_lose_nothing(
    srv: FakeLiveServer,
) -> None:
    async with running(srv) as run:
        [call_id] = await run.call(ToolCallSpec("watch", id="s1"))
        await run.frame_seen(1, call_id)
        await srv.send_resumption_update("handle-A", resumable=True)
        # Not resumable: must not replace handle-A.
        await srv.send_resumption_update("handle-X", resumable=False)
        await srv.send_go_away("5s")
        # Emitted while the session reacts to GoAway: delivered on one connection or the other.
        run.frame(2)
        second = await srv.wait_connection(2)
        assert second.resumption_handle == "handle-A"
        await run.frame_seen(3, call_id)

        await srv.send_resumption_update("handle-B", resumable=True, connection=1)
        # The session reads in order: once a later call is answered, handle-B is known.
        await run.call(ToolCallSpec("ping", {"text": "sync"}), connection=1)
        assert run.session.resumption_handle == "handle-B"
        await srv.close_connection(1011, "internal error", connection=1)
        # Emitted after the server closed, before the client reconnected.
        run.frame(4)
        third = await srv.wait_connection(3)
        assert third.resumption_handle == "handle-B"
        await run.frame_seen(5, call_id)
        assert run.session.stats.reconnects == 2

    got = [r.response for r in responses(srv, call_id)[1:] if "frame" in r.response]
    logged = [e.payload for e in run.log.of(Emission) if e.id == call_id and not e.final]
    assert logged == [{"frame": n} for n in (1, 2, 3, 4, 5)]
    # In order and never twice across the three connections; what came while the model
    # was away arrives as one emission that says how many updates it stands for.
    frames = [r["frame"] for r in got]
    assert frames == sorted(set(frames)) and frames[-1] == 5
    assert sum(r.get("while_away", {}).get("updates", 1) for r in got) == 5
    assert {r.connection for r in responses(srv, call_id)} >= {0, 1, 2}
    assert all(r.will_continue for r in responses(srv, call_id))
    states = [e.state for e in run.log.of(ConnectionState)]
    assert "go_away" in states and states.count("connected") == 3
    codes = [e.code for e in run.log.of(ConnectionState) if e.state == "disconnected"]
    assert codes[-1] == 1011


@pytest.mark.anyio
async def test_abrupt_drop_reconnects(srv: FakeLiveServer) -> None:
    async with running(srv) as run:
        [call_id] = await run.call(ToolCallSpec("watch", id="d1"))
        await run.frame_seen(1, call_id)
        # Resumable: the call goes on across the drop (a fresh session would end it).
        await srv.send_resumption_update("handle-D")
        await run.call(ToolCallSpec("ping", {"text": "sync"}))
        await srv.drop_connection()
        second = await srv.wait_connection(2)
        assert second.resumption_handle == "handle-D"
        await run.frame_seen(2, call_id)
    codes = [e.code for e in run.log.of(ConnectionState) if e.state == "disconnected"]
    assert codes == [1006]


# --------------------------------------------------------------------------------------------
# 6. Frames to the model


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("forward", "privacy", "expected"),
    [(False, False, False), (True, False, True), (True, True, False)],
    ids=["default", "forward", "privacy"],
)
async def test_frames_reach_the_model_only_when_asked(
    srv: FakeLiveServer, forward: bool, privacy: bool, expected: bool
) -> None:
    config = SessionConfig(send_frames=forward, privacy=privacy, model_frame_interval_s=0.0)
    async with running(srv, config) as run:
        [call_id] = await run.call(ToolCallSpec("watch", id="f1"))
        for n in (1, 2, 3):
            await run.frame_seen(n, call_id)
            if expected:
                # One at a time: the model lane is latest-wins, a burst would be thinned.
                await srv.wait_message("realtime_input", count=n)
    frames = srv.connection(0).frames()
    if not expected:
        assert frames == []
        assert srv.connection(0).of_kind("realtime_input") == []
        return
    assert [f.data for f in frames] == [jpeg(n) for n in (1, 2, 3)]
    assert {(f.kind, f.mime_type) for f in frames} == {("video", "image/jpeg")}


# --------------------------------------------------------------------------------------------
# 7. Text mode


@pytest.mark.anyio
async def test_text_mode_sends_emissions_as_content_without_turn_complete(
    srv: FakeLiveServer,
) -> None:
    config = SessionConfig(emit_mode=EmitMode.TEXT)
    async with running(srv, config) as run:
        assert "behavior" not in decl(srv.connection(0), "watch")
        [call_id] = await run.call(ToolCallSpec("watch", id="t1"))
        run.frame(4)
        message = await srv.wait_message("client_content")
    pending = responses(srv, call_id)
    assert [r.response for r in pending] == [{"status": PENDING_STATUS}]
    assert pending[0].will_continue is None
    content = message.client_content()
    assert content is not None
    assert content.turn_complete is False
    assert content.texts() == ['Function watch returned: {"frame": 4}']


# --------------------------------------------------------------------------------------------
# 8. Messages the SDK cannot read


@pytest.mark.anyio
async def test_messages_of_a_newer_protocol_are_skipped(
    srv: FakeLiveServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="lookout.gemini")
    async with running(srv) as run:
        await srv.send({"somethingNew": {"x": 1}})  # unknown keys only: TypeError in the SDK
        await srv.send({"code": "not-a-number"})  # unknown keys again, odd code
        [call_id] = await run.call(ToolCallSpec("watch", id="m1"))
        await run.frame_seen(1, call_id)
        assert len(srv.connections) == 1
    skipped = [r for r in caplog.records if "could not read" in r.getMessage()]
    assert len(skipped) == 2
    assert all(r.levelno == logging.WARNING and "\n" not in r.getMessage() for r in skipped)


@pytest.mark.anyio
async def test_an_unreadable_message_ends_the_connection_and_the_stream_goes_on(
    srv: FakeLiveServer,
) -> None:
    """Not JSON is the server breaking the protocol: that connection ends, the session
    resumes on the next one (tests/faults/test_hostile_endpoint.py tries every kind)."""
    async with running(srv) as run:
        [call_id] = await run.call(ToolCallSpec("watch", id="m2"))
        await run.frame_seen(1, call_id)
        await srv.send_resumption_update("h-1")
        await srv.send("{not json")
        second = await srv.wait_connection(2)
        assert second.resumption_handle == "h-1"
        await run.frame_seen(2, call_id)
    [lost] = [e for e in run.log.of(ConnectionState) if e.state == "disconnected"]
    assert "could not be read (not JSON)" in lost.reason


# --------------------------------------------------------------------------------------------
# 9. Setup failures


@pytest.mark.anyio
async def test_setup_refused_with_1008_ends_a_required_session_at_once(srv: FakeLiveServer) -> None:
    srv.setup_close_code = 1008
    model = GeminiLiveModel(GeminiOptions(TEXT_MODEL), client=client_for(srv))
    config = SessionConfig(reconnect=fast_reconnect(max_attempts=6))
    start = time.monotonic()
    async with Runner(model, [], config).run_live(LiveRequestQueue()) as session:
        await session.wait_finished()
    assert time.monotonic() - start < 2.0
    assert session.failure is not None
    assert "refused" in session.failure and "1008" in session.failure
    assert len(srv.connections) == 1  # not retried


@pytest.mark.anyio
async def test_setup_refused_without_a_required_model_keeps_the_session_and_waits(
    srv: FakeLiveServer,
) -> None:
    srv.setup_close_code = 1008
    log = WatchedLog()
    model = GeminiLiveModel(GeminiOptions(TEXT_MODEL), client=client_for(srv))
    runner = Runner(model, [FunctionTool(ping)], SessionConfig(), on_event=log.record)
    async with runner.run_live(LiveRequestQueue()) as session:
        refused = await log.wait(
            lambda events: [
                e for e in events if isinstance(e, ConnectionState) and e.state == "refused"
            ]
        )
        # The session works on: a device call answers while the model says no.
        call = await session.call_tool("ping", {"text": "hi"})
        assert call.ok and session.failure is None
    assert "1008" in refused[0].reason and refused[0].retry_in_s == 300.0
    assert len(srv.connections) == 1  # the next try is minutes away, not a loop


@pytest.mark.anyio
async def test_setup_answered_with_something_else_is_refused(srv: FakeLiveServer) -> None:
    srv.setup_complete = {"error": {"code": 400, "message": "bad setup"}}
    async with running(srv, SessionConfig(reconnect=fast_reconnect(max_attempts=3))) as run:
        await run.session.wait_finished()
    assert run.session.failure is not None and "did not confirm" in run.session.failure
    closed = await srv.wait_closed()
    assert closed.close_code == 1000


@pytest.mark.anyio
async def test_setup_never_answered_times_out_and_closes(srv: FakeLiveServer) -> None:
    srv.answer_setup = False
    config = SessionConfig(reconnect=ReconnectPolicy(connect_timeout_s=0.5, max_attempts=1))
    start = time.monotonic()
    async with running(srv, config) as run:
        await run.session.wait_finished()
    assert run.session.failure is not None
    assert "no answer to setup within 0.5 s" in run.session.failure
    assert 0.5 <= time.monotonic() - start < 10  # not waiting for ever; generous for a busy CPU
    # Cancelling the SDK's connect left nothing open.
    await srv.wait_closed(connection=0)


@pytest.mark.anyio
async def test_connection_refused_is_retryable(certs: TestCerts) -> None:
    async with FakeLiveServer(certs=certs) as gone:
        client = client_for(gone)
    model = GeminiLiveModel(GeminiOptions(TEXT_MODEL), client=client)
    with pytest.raises(ConnectionLost) as info:
        await model.connect(LiveSetup())
    assert info.value.retryable


# --------------------------------------------------------------------------------------------
# 10. The key stays secret


class KeyQuotingFake(FakeLiveServer):
    """Refuses every setup with a close reason that quotes the key, as a careless proxy might."""

    async def _on_first_message(self, conn: FakeConnection, msg: ClientMessage) -> None:
        conn.setup = dict(msg.body)
        assert conn._ws is not None
        await conn._ws.close(1007, f"API key {conn.api_key} not valid")


def assert_secret_absent(events: Sequence[Event], records: Sequence[logging.LogRecord]) -> None:
    for event in events:
        assert SECRET_KEY not in json.dumps(event.to_dict(), default=str), event
    formatter = logging.Formatter()
    for record in records:
        # The fake's own server logs its request headers; only the client side is ours.
        if record.name.startswith("websockets.server"):
            continue
        assert SECRET_KEY not in formatter.format(record), record.name


@pytest.mark.anyio
async def test_api_key_never_in_events_or_logs(
    srv: FakeLiveServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    for name in ("GOOGLE_API_KEY", "SSL_CERT_DIR", "HTTPS_PROXY", "https_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in srv.env(api_key=SECRET_KEY).items():
        monkeypatch.setenv(name, value)
    # No secrets configured in the session: the model must redact on its own.
    config = SessionConfig(reconnect=fast_reconnect(max_attempts=2))
    model = GeminiLiveModel(GeminiOptions(TEXT_MODEL))
    async with running(srv, config, model=model) as run:
        await srv.close_connection(1011, f"quota exceeded for key {SECRET_KEY}")
        await srv.wait_connection(2)
        # An in-band error with an HTTP code: permission denied will not get better.
        await srv.send(
            {"code": 403, "message": f"API key {SECRET_KEY} not valid", "status": "DENIED"}
        )
        await run.session.wait_finished()
        failure = run.session.failure
    assert failure is not None and "not valid" in failure and "***" in failure
    assert len(srv.connections) == 2
    # The error paths were taken and reported, redacted.
    reasons = [e.reason for e in run.log.of(ConnectionState) if e.reason]
    assert any("quota exceeded for key ***" in r for r in reasons)
    assert any(e.type == "error" for e in run.log.events)
    # websockets logs request headers at DEBUG; the model hands it a redacting logger.
    client_lines = [r.getMessage() for r in caplog.records if r.name == "websockets.client"]
    assert "> x-goog-api-key: ***" in client_lines
    assert_secret_absent(run.log.events, caplog.records)


@pytest.mark.anyio
async def test_api_key_not_in_setup_refusal(
    certs: TestCerts, caplog: pytest.LogCaptureFixture
) -> None:
    # A client the caller built keeps its own websockets logger, which prints request headers
    # at DEBUG; only a client the model builds gets the redacting one (tested above).
    caplog.set_level(logging.INFO)
    caplog.set_level(logging.DEBUG, logger="lookout")
    caplog.set_level(logging.DEBUG, logger="google_genai")
    log = WatchedLog()
    async with KeyQuotingFake(certs=certs) as fake:
        model = GeminiLiveModel(
            GeminiOptions(TEXT_MODEL), client=client_for(fake, api_key=SECRET_KEY)
        )
        config = SessionConfig(reconnect=ReconnectPolicy(max_attempts=3))
        runner = Runner(model, [FunctionTool(watch)], config, on_event=log.record)
        async with runner.run_live(LiveRequestQueue()) as session:
            await session.wait_finished()
    message = str(session.failure)
    assert "1007" in message and "API key *** not valid" in message
    assert SECRET_KEY not in message
    assert_secret_absent(log.events, caplog.records)


# --------------------------------------------------------------------------------------------
# 11. What the model says


@pytest.mark.anyio
async def test_model_text_transcripts_and_usage_become_events(srv: FakeLiveServer) -> None:
    async with running(srv) as run:
        await srv.send_server_content(input_transcription="how many?")
        await srv.send_server_content(text=["Two ", "people."], output_transcription="Two people.")
        await srv.send_server_content(interrupted=True)
        await srv.send_usage_metadata(
            {"promptTokenCount": 10, "responseTokenCount": 5, "totalTokenCount": 15}
        )
        await srv.send_turn_complete()
        await srv.send_text("Next turn.")
        await run.log.wait(lambda events: len([e for e in events if e.type == "turn_complete"]) > 1)
    texts = [e.text for e in run.log.of(ModelText)]
    assert texts == ["Two ", "people.", "Next turn."]
    transcripts = [(e.direction, e.text) for e in run.log.of(Transcript)]
    assert transcripts == [("input", "how many?"), ("output", "Two people.")]
    usage = run.log.of(Usage)
    assert [(u.prompt_tokens, u.response_tokens, u.total_tokens) for u in usage] == [(10, 5, 15)]
    assert len(run.log.of(Interrupted)) == 1
    assert len(run.log.of(TurnComplete)) == 2
    assert run.session.stats.usage_total_tokens == 15


# --------------------------------------------------------------------------------------------
# The connection on its own


@contextlib.asynccontextmanager
async def open_connection(srv: FakeLiveServer) -> AsyncIterator[GeminiConnection]:
    model = GeminiLiveModel(GeminiOptions(TEXT_MODEL), client=client_for(srv))
    with anyio.fail_after(5):
        conn = await model.connect(LiveSetup())
    try:
        yield conn
    finally:
        await conn.close()


async def take(conn: GeminiConnection, n: int) -> list[ModelEvent]:
    out: list[ModelEvent] = []
    with anyio.fail_after(5):
        async with contextlib.aclosing(conn.receive()) as events:
            async for event in events:
                out.append(event)
                if len(out) == n:
                    break
    return out


@pytest.mark.anyio
async def test_receive_maps_every_server_message(srv: FakeLiveServer) -> None:
    audio = bytes(range(200))
    async with open_connection(srv) as conn:
        await srv.send(
            {
                "serverContent": {
                    "modelTurn": {
                        "parts": [
                            {"text": "thinking...", "thought": True},
                            {"text": "hi"},
                            {
                                "inlineData": {
                                    "mimeType": "audio/pcm;rate=24000",
                                    "data": base64.b64encode(audio).decode(),
                                }
                            },
                        ]
                    },
                    "turnComplete": True,
                }
            }
        )
        await srv.send_tool_call(
            ToolCallSpec("watch", id="x1"), ToolCallSpec("ping", {"text": "a"}, id="x2")
        )
        await srv.send_tool_call_cancellation(["x1"])
        # A resumption update and GoAway in one message: GoAway must come last.
        await srv.send(
            {
                "goAway": {"timeLeft": "2.5s"},
                "sessionResumptionUpdate": {"newHandle": "h9", "resumable": True},
                "usageMetadata": {"totalTokenCount": 3},
            }
        )
        events = await take(conn, 8)
    assert events == [
        ModelTextOut("hi"),
        ModelAudioOut(audio, "audio/pcm;rate=24000"),
        ModelTurnComplete(),
        ModelToolCall(
            (
                FunctionCallRequest("x1", "watch", {}),
                FunctionCallRequest("x2", "ping", {"text": "a"}),
            )
        ),
        ModelToolCancellation(("x1",)),
        ModelResumptionUpdate("h9", True),
        ModelUsage(total_tokens=3),
        ModelGoAway(2.5),
    ]
    assert ModelInterrupted() not in events and ModelTranscriptOut("") not in events


@pytest.mark.anyio
async def test_send_maps_each_outbound_message(srv: FakeLiveServer) -> None:
    async with open_connection(srv) as conn:
        fake = await srv.wait_connection(1)
        pcm = types.Blob(data=b"\x00\x01" * 8, mime_type="audio/pcm;rate=16000")
        await conn.send(SendRealtime(pcm))
        await conn.send(SendText("hello"))
        await conn.send(SendActivity(start=True))
        await conn.send(SendActivity(start=False))
        await conn.send(SendContent(types.Content(role="user", parts=[types.Part(text="q")]), True))
        response = types.FunctionResponse(id="i", name="n", response={"a": 1}, will_continue=True)
        await conn.send(SendToolResponse((response,)))
        with pytest.raises(ValueError, match="text/plain"):
            await conn.send(SendRealtime(types.Blob(data=b"x", mime_type="text/plain")))
        await srv.wait_message("tool_response")
    inputs = fake.realtime_inputs()
    assert [(i.kind, i.mime_type, i.data, i.text) for i in inputs] == [
        ("audio", "audio/pcm;rate=16000", pcm.data, None),
        ("text", None, None, "hello"),
        ("activity_start", None, None, None),
        ("activity_end", None, None, None),
    ]
    [content] = fake.client_contents()
    assert (content.texts(), content.turn_complete) == (["q"], True)
    [record] = fake.function_responses()
    assert (record.id, record.response, record.will_continue) == ("i", {"a": 1}, True)
    # Never the deprecated forms.
    assert not any(
        "media_chunks" in str(m.raw) or "mediaChunks" in str(m.raw) for m in fake.messages
    )


@pytest.mark.anyio
async def test_server_close_1000_is_connection_lost_and_send_fails(srv: FakeLiveServer) -> None:
    async with open_connection(srv) as conn:
        await srv.wait_connection(1)
        await srv.close_connection(1000, "bye")
        with pytest.raises(ConnectionLost) as info:
            await take(conn, 1)
        assert info.value.code == 1000 and info.value.retryable
        with pytest.raises(ConnectionLost) as sent:
            await conn.send(SendText("late"))
        assert sent.value.code == 1000


@pytest.mark.anyio
async def test_close_ends_receive_normally_and_is_idempotent(srv: FakeLiveServer) -> None:
    async with open_connection(srv) as conn:
        fake = await srv.wait_connection(1)
        events: list[ModelEvent] = []
        turn_done = anyio.Event()

        async def reader() -> None:
            async with contextlib.aclosing(conn.receive()) as stream:
                async for event in stream:
                    events.append(event)
                    if isinstance(event, ModelTurnComplete):
                        turn_done.set()

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(reader)
                await srv.send_text("before close")
                await turn_done.wait()
                # The reader is blocked in the SDK's recv again; it must end by itself,
                # without ConnectionLost.
                await conn.close()
        await conn.close()
        with pytest.raises(ConnectionLost):
            await conn.send(SendText("after close"))
    closed = await srv.wait_closed()
    assert closed.close_code == 1000
    assert events == [ModelTextOut("before close"), ModelTurnComplete()]
    assert fake.closed


@pytest.mark.anyio
async def test_setup_refusal_is_not_retryable(srv: FakeLiveServer) -> None:
    srv.setup_close_code = 1007
    model = GeminiLiveModel(GeminiOptions(TEXT_MODEL), client=client_for(srv))
    with pytest.raises(ModelSetupError, match="1007"):
        await model.connect(LiveSetup())
    srv.setup_close_code = 1011
    with pytest.raises(ConnectionLost) as info:
        await model.connect(LiveSetup())
    assert info.value.code == 1011 and info.value.retryable
