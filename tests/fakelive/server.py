"""A scriptable fake of the Gemini Live WebSocket endpoint, served over TLS.

The point is to run the *unmodified* ``google-genai`` SDK against something we control, so the
fake speaks the wire protocol the SDK speaks (see ``docs/gemini-live-wire.md``) and nothing more:

* it accepts ``/ws/google.ai.generativelanguage.{version}.GenerativeService.BidiGenerateContent``
  and closes anything else with 1008;
* it answers the first client message (``setup``) with ``{"setupComplete": {}}`` (or stays
  silent / closes, for connect-failure tests);
* it records every client message with its ``time.monotonic()`` arrival time, per connection;
* the test scripts what the "model" says (tool calls, cancellations, text, transcripts,
  resumption updates, GoAway, usage, raw JSON) and how the connection ends (1000, 1011, an
  abrupt drop that the client sees as 1006, ...).

Waiting is event driven: every recorded message, connection, close and server send wakes the
``wait_*`` helpers, so tests never sleep for a fixed time.

Two ways to run it:

* in the test's own event loop: ``async with FakeLiveServer() as srv: ...``;
* in a background thread with its own loop, for a client in a subprocess (``lookout run``):
  ``with FakeLiveServer.run_in_thread() as srv: ...`` gives a :class:`ThreadedFakeLiveServer`
  whose methods are plain blocking calls.

The server is one cohesive thing and stays one module (over the usual ~400 lines): its
lifecycle, the wire protocol it answers, what a test scripts it to say and the waits on what
it saw all read and write the same per-connection state. What it records (``records.py``),
how a client finds it (``endpoint.py``), the tolerant JSON reading (``wire.py``) and the
thread mode (``threaded.py``) live beside it; their names are importable from here too.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import re
import shutil
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from google import genai
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from .certs import TestCerts, make_test_certs
from .endpoint import DEFAULT_API_KEY, DEFAULT_API_VERSION, LiveEndpoint, client_for
from .profiles import PROFILES, Profile, react, setup_hangs
from .records import (
    ClientContent,
    ClientMessage,
    FunctionResponseRecord,
    LiveConnection,
    RealtimeInput,
    SentMessage,
)
from .threaded import ThreadedFakeLiveServer, ThreadedServer
from .tokens import TOKEN_REFUSED_CODE, EphemeralToken, new_token, refusal
from .wire import b64decode_any, get_field, get_path

__all__ = [
    "DEFAULT_API_KEY",
    "DEFAULT_API_VERSION",
    "DEFAULT_VERSIONS",
    "AfterSetup",
    "ClientContent",
    "ClientMessage",
    "FakeLiveServer",
    "FunctionResponseRecord",
    "LiveConnection",
    "LiveEndpoint",
    "Profile",
    "RealtimeInput",
    "SentMessage",
    "ThreadedFakeLiveServer",
    "ThreadedServer",
    "ToolCallSpec",
    "b64decode_any",
    "client_for",
    "get_field",
    "get_path",
]

T = TypeVar("T")

Frame = Mapping[str, Any] | str | bytes
# What the fake sends after each setup: frames, or a function of the connection giving them.
AfterSetup = Sequence[Frame] | Callable[[LiveConnection], Sequence[Frame]]

# Versions the SDK can be configured to use. google-genai 3.6.1 defaults to "v1" for the Gemini
# API (GOOGLE_AI_API_DEFAULT_VERSION); the public Live docs use "v1beta"; ephemeral tokens need
# "v1alpha"; Vertex AI defaults to "v1beta1". Accept them all and record which one arrived.
DEFAULT_VERSIONS: tuple[str, ...] = ("v1", "v1alpha", "v1beta", "v1beta1")

_PATH_RE = re.compile(
    r"^/ws/google\.ai\.generativelanguage\.(?P<version>[A-Za-z0-9]+)"
    r"\.GenerativeService\.(?P<method>BidiGenerateContent(?:Constrained)?)$"
)
# Vertex AI's Live endpoint (the SDK with vertexai=True, a project and a location).
_VERTEX_PATH_RE = re.compile(
    r"^/ws/google\.cloud\.aiplatform\.(?P<version>[A-Za-z0-9]+)"
    r"\.LlmBidiService/(?P<method>BidiGenerateContent)$"
)

# Close codes that may not be sent in a close frame (RFC 6455 §7.4.1); asking for one of them
# means "drop the TCP connection", which is what the client reports as 1006.
_ABRUPT_CODES = frozenset({1005, 1006, 1015})


@dataclass(frozen=True)
class ToolCallSpec:
    """One function call for :meth:`FakeLiveServer.send_tool_call`; ``id`` is generated if None."""

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None


class FakeLiveServer:
    """The fake Live endpoint, running in the current event loop (asyncio).

    Options (attributes, so a test may change them between connections):

    * ``answer_setup``: send ``setup_complete`` after the setup message (default True); False
      leaves the client waiting forever in ``connect()``.
    * ``setup_close_code``: if set, close the connection with this code instead of answering the
      setup (``connect()`` then raises ``APIError`` with that code; 1006 drops the TCP link).
    * ``setup_complete``: the payload of the answer (default ``{"setupComplete": {}}``); a str
      or bytes is sent as it is (a text or binary frame), for answers no JSON dict can be.
    * ``after_setup``: frames sent right after the answer to every setup (as :meth:`send` takes
      them), or a function of the connection that returns them: a server that says GoAway, or
      something unreadable, straight after each setup (see ``tests/fakelive/hostile.py``).
    * ``binary_frames``: send JSON in binary frames (default), as the real service does (browser
      clients get Blobs); the SDK reads both (``recv(decode=False)`` then ``json.loads``).
      ``send(str)`` always uses a text frame.
    * ``profile``: how a model family treats the client (``tests/fakelive/profiles.py``: 1007
      on mid-session client content, a setup left unanswered, the kick, refused fields), a
      :class:`Profile` or a name in ``PROFILES``; the default is plain.
    """

    def __init__(
        self,
        *,
        certs: TestCerts | None = None,
        host: str = "127.0.0.1",
        versions: Collection[str] = DEFAULT_VERSIONS,
        answer_setup: bool = True,
        setup_close_code: int | None = None,
        setup_complete: Mapping[str, Any] | str | bytes | None = None,
        after_setup: AfterSetup = (),
        binary_frames: bool = True,
        max_message_size: int = 16 * 2**20,
        profile: Profile | str = "plain",
    ) -> None:
        self.profile = PROFILES[profile] if isinstance(profile, str) else profile
        self._certs = certs
        self._host = host
        self.versions = frozenset(versions)
        self.answer_setup = answer_setup
        self.setup_close_code = setup_close_code
        self.setup_complete: Mapping[str, Any] | str | bytes = (
            setup_complete if setup_complete is not None else {"setupComplete": {}}
        )
        self.after_setup: AfterSetup = after_setup
        self.binary_frames = binary_frames
        self._max_message_size = max_message_size
        self.connections: list[LiveConnection] = []
        self.rejected_paths: list[str] = []
        # Ephemeral tokens issued (tests/fakelive/tokens.py), by name.
        self.tokens: dict[str, EphemeralToken] = {}
        self._seq = itertools.count()
        self._call_ids = itertools.count(1)
        self._server: Server | None = None
        self._endpoint: LiveEndpoint | None = None
        self._own_cert_dir: Path | None = None
        # Replaced on every change; waiters hold the instance they saw, so none misses a wake-up.
        self._changed_event = asyncio.Event()

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> LiveEndpoint:
        if self._server is not None:
            raise RuntimeError("already started")
        certs = self._certs
        if certs is None:
            # Pass certs= (e.g. from a session fixture) to share one set across servers.
            certs = make_test_certs()
            self._own_cert_dir = certs.directory
        self._changed_event = asyncio.Event()
        self._server = await serve(
            self._handle,
            self._host,
            0,
            ssl=certs.server_ssl_context(),
            max_size=self._max_message_size,
            # Bound teardown when a client (e.g. a killed subprocess) never answers our close.
            close_timeout=2,
        )
        port = self._server.sockets[0].getsockname()[1]
        self._endpoint = LiveEndpoint(self._host, port, certs)
        return self._endpoint

    async def stop(self) -> None:
        if self._server is None:
            return
        # 1001 "going away" to whoever is still connected, like a real server shutting down.
        self._server.close(close_connections=True)
        await self._server.wait_closed()
        self._server = None
        if self._own_cert_dir is not None:
            shutil.rmtree(self._own_cert_dir, ignore_errors=True)
            self._own_cert_dir = None

    async def __aenter__(self) -> FakeLiveServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def endpoint(self) -> LiveEndpoint:
        if self._endpoint is None:
            raise RuntimeError("server not started")
        return self._endpoint

    @property
    def port(self) -> int:
        return self.endpoint.port

    @property
    def base_url(self) -> str:
        return self.endpoint.base_url

    def client(
        self, *, api_version: str = DEFAULT_API_VERSION, api_key: str = DEFAULT_API_KEY
    ) -> genai.Client:
        return self.endpoint.client(api_version=api_version, api_key=api_key)

    def env(
        self, *, api_version: str = DEFAULT_API_VERSION, api_key: str = DEFAULT_API_KEY
    ) -> dict[str, str]:
        return self.endpoint.env(api_version=api_version, api_key=api_key)

    @property
    def messages(self) -> list[ClientMessage]:
        """Every client message of every connection, in arrival order."""
        return sorted((m for c in self.connections for m in c.messages), key=lambda m: m.seq)

    @classmethod
    @contextlib.contextmanager
    def run_in_thread(cls, **options: Any) -> Iterator[ThreadedFakeLiveServer]:
        """Run a fake in a background thread with its own event loop (for subprocess clients).

        ``options`` are :class:`FakeLiveServer` constructor arguments.
        """
        threaded = ThreadedFakeLiveServer(cls(**options))
        threaded.start()
        try:
            yield threaded
        finally:
            threaded.stop()

    # -- connection handling -----------------------------------------------------------------

    def _changed(self) -> None:
        self._changed_event.set()
        self._changed_event = asyncio.Event()

    async def _handle(self, ws: ServerConnection) -> None:
        raw_path = ws.request.path if ws.request is not None else ""
        # The SDK builds the URL by string concatenation; tolerate "//ws" from a base URL with a
        # trailing slash (recorded raw in .path so a test can still assert on it).
        path = re.sub(r"/{2,}", "/", raw_path.split("?", 1)[0])
        match = _PATH_RE.match(path) or _VERTEX_PATH_RE.match(path)
        if match is None or match["version"] not in self.versions:
            self.rejected_paths.append(raw_path)
            self._changed()
            # Close only after the client's first message: the SDK sends setup right after the
            # handshake, and closing before that would race its send (ConnectionClosedError)
            # against its recv (APIError(1008)). Waiting makes the outcome deterministic.
            with contextlib.suppress(ConnectionClosed):
                await ws.recv()
            await ws.close(1008, f"fake live: unknown path {path}")
            return

        conn = LiveConnection(
            index=len(self.connections),
            path=raw_path,
            version=match["version"],
            method=match["method"],
            headers={k.lower(): v for k, v in ws.request.headers.raw_items()}
            if ws.request is not None
            else {},
            opened_at=time.monotonic(),
            _ws=ws,
        )
        self.connections.append(conn)
        self._changed()
        try:
            async for raw in ws:
                msg = self._record(conn, raw)
                if len(conn.messages) == 1:
                    await self._on_first_message(conn, msg)
                else:
                    await self._as_profiled(conn, msg)
        except ConnectionClosed:
            pass  # how it closed is recorded below
        finally:
            conn.closed_at = time.monotonic()
            conn.close_code = ws.close_code
            conn.close_reason = ws.close_reason
            self._changed()

    def _record(self, conn: LiveConnection, raw: str | bytes) -> ClientMessage:
        try:
            data: Any = json.loads(raw)
        except ValueError:
            data = None
        msg = ClientMessage(conn.index, next(self._seq), time.monotonic(), raw, data)
        conn.messages.append(msg)
        self._changed()
        return msg

    async def _on_first_message(self, conn: LiveConnection, msg: ClientMessage) -> None:
        ws = conn._ws
        assert ws is not None
        if msg.kind != "setup" or not isinstance(msg.body, Mapping):
            # The real service requires setup first; refuse like a protocol error would.
            await ws.close(1007, "fake live: first message must be setup")
            return
        conn.setup = dict(msg.body)
        self._changed()
        refused = refusal(
            self.tokens, conn.method, conn.version, conn.token, conn.resumption_handle is not None
        )
        if refused is not None:
            await self._close(conn, TOKEN_REFUSED_CODE, f"fake live: {refused}")
            return
        if conn.token is not None and conn.resumption_handle is None:
            self.tokens[conn.token].used += 1  # a new session spends a use; resuming does not
        if self.setup_close_code is not None:
            await self._close(conn, self.setup_close_code, "fake live: setup refused")
        elif setup_hangs(self.profile, conn.setup):
            return  # the family never answers this setup; the client waits for ever
        elif self.answer_setup:
            answer = self.setup_complete
            await self._send(conn, answer if isinstance(answer, str | bytes) else dict(answer))
            conn.setup_completed = True
            self._changed()
            script = self.after_setup
            for frame in script(conn) if callable(script) else script:
                await self._send(conn, frame)

    async def _as_profiled(self, conn: LiveConnection, msg: ClientMessage) -> None:
        """The profile's answer to one message after the setup: a close, or a model run."""
        reaction = react(self.profile, conn, msg)
        if reaction.run is not None:
            conn.runs.append(reaction.run)
            self._changed()
        if reaction.close is not None:
            await self._close(conn, *reaction.close)

    # -- ephemeral tokens ------------------------------------------------------------------------

    def issue_token(self, *, ttl_s: float = 1800.0, uses: int = 1) -> str:
        """A new ephemeral token this fake accepts for ``ttl_s`` seconds and ``uses`` new
        sessions (a resumed session spends none)."""
        token = new_token(ttl_s=ttl_s, uses=uses)
        self.tokens[token.name] = token
        return token.name

    def expire_token(self, name: str) -> None:
        """Make a token expired from now on."""
        self.tokens[name].expires_at = time.monotonic()

    # -- scripting: what the "model" says --------------------------------------------------------

    def connection(self, index: int | None = None) -> LiveConnection:
        """Connection ``index`` (0-based), or the most recent one when None."""
        conn = self._maybe_connection(index)
        if conn is None:
            raise LookupError(f"fake live: no connection {index if index is not None else ''}")
        return conn

    def _maybe_connection(self, index: int | None) -> LiveConnection | None:
        if index is None:
            return self.connections[-1] if self.connections else None
        return (
            self.connections[index]
            if -len(self.connections) <= index < len(self.connections)
            else None
        )

    async def _send(self, conn: LiveConnection, payload: Any) -> None:
        ws = conn._ws
        assert ws is not None
        frame: str | bytes
        if isinstance(payload, str | bytes):
            frame = payload  # str -> text frame, bytes -> binary frame, as given
        else:
            frame = json.dumps(payload)
            if self.binary_frames:
                frame = frame.encode()
        await ws.send(frame)
        conn.sent.append(SentMessage(conn.index, time.monotonic(), payload))
        self._changed()

    async def send(
        self, payload: Mapping[str, Any] | str | bytes, *, connection: int | None = None
    ) -> None:
        """Send anything: a dict (JSON-encoded), or a raw str/bytes frame as is (malformed JSON,
        unknown keys, ...)."""
        await self._send(self.connection(connection), payload)

    async def send_tool_call(
        self, *calls: ToolCallSpec | Mapping[str, Any], connection: int | None = None
    ) -> list[str]:
        """``toolCall`` with one or more function calls; returns their ids (generated when
        missing, ``call-1``, ``call-2``, ... unique per server)."""
        wire: list[dict[str, Any]] = []
        for call in calls:
            if isinstance(call, ToolCallSpec):
                item: dict[str, Any] = {"name": call.name, "args": dict(call.args), "id": call.id}
            else:
                item = dict(call)
            if not item.get("id"):
                item["id"] = f"call-{next(self._call_ids)}"
            wire.append(item)
        await self.send({"toolCall": {"functionCalls": wire}}, connection=connection)
        return [w["id"] for w in wire]

    async def send_tool_call_cancellation(
        self, ids: Sequence[str], *, connection: int | None = None
    ) -> None:
        await self.send({"toolCallCancellation": {"ids": list(ids)}}, connection=connection)

    async def send_server_content(
        self,
        *,
        text: str | Sequence[str] | None = None,
        turn_complete: bool = False,
        generation_complete: bool = False,
        interrupted: bool = False,
        output_transcription: str | None = None,
        input_transcription: str | None = None,
        audio: bytes | None = None,
        audio_rate: int = 24000,
        connection: int | None = None,
    ) -> None:
        """One ``serverContent`` message; only the given parts are included. ``audio`` is
        PCM16 the model says (an ``inlineData`` part, ``audio/pcm;rate=audio_rate``)."""
        content: dict[str, Any] = {}
        parts: list[dict[str, Any]] = []
        if text is not None:
            texts = [text] if isinstance(text, str) else list(text)
            parts.extend({"text": t} for t in texts)
        if audio is not None:
            data = base64.b64encode(audio).decode("ascii")
            mime = f"audio/pcm;rate={audio_rate}"
            parts.append({"inlineData": {"mimeType": mime, "data": data}})
        if parts:
            content["modelTurn"] = {"role": "model", "parts": parts}
        if output_transcription is not None:
            content["outputTranscription"] = {"text": output_transcription}
        if input_transcription is not None:
            content["inputTranscription"] = {"text": input_transcription}
        if interrupted:
            content["interrupted"] = True
        if generation_complete:
            content["generationComplete"] = True
        if turn_complete:
            content["turnComplete"] = True
        await self.send({"serverContent": content}, connection=connection)

    async def send_text(
        self, text: str, *, turn_complete: bool = True, connection: int | None = None
    ) -> None:
        """Model text; by default also ends the turn (which ends one ``session.receive()``)."""
        await self.send_server_content(
            text=text, turn_complete=turn_complete, connection=connection
        )

    async def send_turn_complete(self, *, connection: int | None = None) -> None:
        await self.send_server_content(turn_complete=True, connection=connection)

    async def send_output_transcription(self, text: str, *, connection: int | None = None) -> None:
        await self.send_server_content(output_transcription=text, connection=connection)

    async def send_resumption_update(
        self,
        new_handle: str | None,
        *,
        resumable: bool = True,
        last_consumed_client_message_index: int | None = None,
        connection: int | None = None,
    ) -> None:
        update: dict[str, Any] = {"resumable": resumable}
        if new_handle is not None:
            update["newHandle"] = new_handle
        if last_consumed_client_message_index is not None:
            # int64 is a JSON string in protobuf JSON.
            update["lastConsumedClientMessageIndex"] = str(last_consumed_client_message_index)
        await self.send({"sessionResumptionUpdate": update}, connection=connection)

    async def send_go_away(self, time_left: str = "10s", *, connection: int | None = None) -> None:
        """``goAway``; ``time_left`` is a protobuf Duration string ("10s", "0.5s")."""
        await self.send({"goAway": {"timeLeft": time_left}}, connection=connection)

    async def send_usage_metadata(
        self, usage: Mapping[str, Any] | None = None, *, connection: int | None = None
    ) -> None:
        await self.send(
            {"usageMetadata": dict(usage) if usage is not None else {"totalTokenCount": 1}},
            connection=connection,
        )

    async def close_connection(
        self, code: int = 1000, reason: str = "", *, connection: int | None = None
    ) -> LiveConnection:
        """Close a connection with ``code``; 1006 (or 1005/1015) drops TCP without a close frame,
        which the SDK reports as ``APIError(1006)``. Returns once the connection is closed."""
        conn = self.connection(connection)
        await self._close(conn, code, reason)
        return await self.wait_closed(connection=conn.index)

    async def drop_connection(self, *, connection: int | None = None) -> LiveConnection:
        """Abrupt network drop (client sees 1006)."""
        return await self.close_connection(1006, connection=connection)

    async def _close(self, conn: LiveConnection, code: int, reason: str) -> None:
        ws = conn._ws
        assert ws is not None
        if code in _ABRUPT_CODES:
            ws.transport.abort()
        else:
            await ws.close(code, reason)

    # -- waiting -----------------------------------------------------------------------------
    # The waits take ``timeout=`` themselves (hence the ASYNC109 waivers) because on expiry they
    # report what the fake did see, which an outer ``asyncio.timeout`` could not.

    async def wait_for(
        self,
        predicate: Callable[[], T | None],
        *,
        timeout: float = 5.0,
    ) -> T:
        """Wait until ``predicate()`` is truthy and return its value.

        Re-evaluated after every recorded event (connection, client message, server send,
        close), never by polling. Raises ``TimeoutError`` with a summary of what did happen.
        """
        try:
            async with asyncio.timeout(timeout):
                while True:
                    event = self._changed_event
                    value = predicate()
                    if value:
                        return value
                    await event.wait()
        except TimeoutError:
            raise TimeoutError(
                f"fake live: condition not met within {timeout}s; {self.describe()}"
            ) from None

    async def wait_connection(
        self,
        n: int = 1,
        *,
        timeout: float = 5.0,
    ) -> LiveConnection:
        """Wait for the ``n``-th (1-based) connection to be set up: ``setupComplete`` sent, or
        the setup received when the fake does not answer. Returns that connection."""

        def ready() -> LiveConnection | None:
            if len(self.connections) < n:
                return None
            conn = self.connections[n - 1]
            if conn.setup_completed or (conn.setup is not None and not self.answer_setup):
                return conn
            return None

        return await self.wait_for(ready, timeout=timeout)

    async def wait_message(
        self,
        kind: str,
        *,
        connection: int | None = None,
        count: int = 1,
        where: Callable[[ClientMessage], bool] | None = None,
        timeout: float = 5.0,
    ) -> ClientMessage:
        """Wait until ``count`` messages of ``kind`` (snake-case, e.g. ``"tool_response"``)
        matching ``where`` were received, on ``connection`` or on any connection when None.
        Returns the ``count``-th one."""

        def found() -> ClientMessage | None:
            if connection is None:
                source = self.messages
            else:
                conn = self._maybe_connection(connection)
                source = conn.messages if conn is not None else []
            hits = [m for m in source if m.kind == kind and (where is None or where(m))]
            return hits[count - 1] if len(hits) >= count else None

        return await self.wait_for(found, timeout=timeout)

    async def wait_function_response(
        self,
        call_id: str,
        *,
        count: int = 1,
        timeout: float = 5.0,
    ) -> FunctionResponseRecord:
        """Wait for the ``count``-th function response for ``call_id`` (any connection)."""

        def found() -> FunctionResponseRecord | None:
            hits = [r for c in self.connections for r in c.function_responses() if r.id == call_id]
            hits.sort(key=lambda r: r.t)
            return hits[count - 1] if len(hits) >= count else None

        return await self.wait_for(found, timeout=timeout)

    async def wait_closed(
        self,
        *,
        connection: int | None = None,
        timeout: float = 5.0,
    ) -> LiveConnection:
        """Wait until connection ``connection`` (default: the latest one, waiting for a first
        one if there is none yet) is closed."""

        def closed() -> LiveConnection | None:
            conn = self._maybe_connection(connection)
            return conn if conn is not None and conn.closed else None

        return await self.wait_for(closed, timeout=timeout)

    def describe(self) -> str:
        """A one-line summary for failure messages."""
        parts = [f"{len(self.connections)} connection(s)"]
        for c in self.connections:
            kinds = [m.kind for m in c.messages]
            setup = "done" if c.setup_completed else ("received" if c.setup else "none")
            closed = c.close_code if c.closed else "no"
            parts.append(
                f"#{c.index} {c.version} setup={setup} msgs={len(kinds)}"
                f" last={kinds[-8:]} closed={closed}"
            )
        if self.rejected_paths:
            parts.append(f"rejected={self.rejected_paths}")
        return "; ".join(parts)
