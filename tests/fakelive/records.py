"""What the Live fake saw: each connection and the client messages on it, as recorded.

A :class:`ClientMessage` keeps the frame as it arrived and reads it on demand (realtime
inputs, client content, function responses), so a test asserts on what the SDK really sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.server import ServerConnection

from .tokens import token_of
from .wire import b64decode_any, get_field, get_path, snake_case

__all__ = [
    "ClientContent",
    "ClientMessage",
    "FunctionResponseRecord",
    "LiveConnection",
    "RealtimeInput",
    "SentMessage",
]


@dataclass(frozen=True)
class RealtimeInput:
    """One item of a ``realtime_input`` message."""

    connection: int
    t: float
    kind: str
    """``video``, ``audio``, ``media``, ``media_chunks``, ``text``, ``activity_start``,
    ``activity_end`` or ``audio_stream_end`` (the snake-cased wire key)."""
    data: bytes | None = None
    mime_type: str | None = None
    text: str | None = None


@dataclass(frozen=True)
class ClientContent:
    """A ``client_content`` message: turns (raw wire dicts) and ``turn_complete``."""

    connection: int
    t: float
    turns: list[dict[str, Any]]
    turn_complete: bool | None

    def texts(self) -> list[str]:
        """Every text part of every turn, in order."""
        out: list[str] = []
        for turn in self.turns:
            for part in get_field(turn, "parts", []) or []:
                text = get_field(part, "text")
                if isinstance(text, str):
                    out.append(text)
        return out


@dataclass(frozen=True)
class FunctionResponseRecord:
    """One entry of a ``tool_response`` message."""

    connection: int
    t: float
    id: str | None
    name: str | None
    response: Any
    will_continue: bool | None
    scheduling: str | None
    raw: dict[str, Any]


@dataclass(frozen=True)
class ClientMessage:
    """One message the client sent, as it arrived."""

    connection: int
    seq: int
    """Order of arrival across all connections of the server (0-based)."""
    t: float
    """``time.monotonic()`` at arrival."""
    raw: str | bytes
    data: Any
    """Parsed JSON, or ``None`` when the frame was not JSON."""

    @property
    def kind(self) -> str:
        """The snake-cased top-level key: ``setup``, ``realtime_input``, ``client_content``,
        ``tool_response``, ... (``"invalid"`` for non-JSON, ``"empty"`` for ``{}``)."""
        if not isinstance(self.data, Mapping):
            return "invalid"
        if not self.data:
            return "empty"
        return snake_case(next(iter(self.data)))

    @property
    def body(self) -> Any:
        """The value under the top-level key."""
        if not isinstance(self.data, Mapping) or not self.data:
            return None
        return next(iter(self.data.values()))

    def realtime_inputs(self) -> list[RealtimeInput]:
        if self.kind != "realtime_input" or not isinstance(self.body, Mapping):
            return []
        out: list[RealtimeInput] = []
        for key, value in self.body.items():
            kind = snake_case(key)
            if kind in ("video", "audio", "media") and isinstance(value, Mapping):
                out.append(self._blob(kind, value))
            elif kind == "media_chunks" and isinstance(value, list):
                out.extend(self._blob(kind, v) for v in value if isinstance(v, Mapping))
            elif kind == "text":
                out.append(RealtimeInput(self.connection, self.t, kind, text=str(value)))
            else:
                out.append(RealtimeInput(self.connection, self.t, kind))
        return out

    def _blob(self, kind: str, blob: Mapping[str, Any]) -> RealtimeInput:
        data = get_field(blob, "data")
        return RealtimeInput(
            self.connection,
            self.t,
            kind,
            data=b64decode_any(data) if isinstance(data, str | bytes) else None,
            mime_type=get_field(blob, "mime_type"),
        )

    def client_content(self) -> ClientContent | None:
        if self.kind != "client_content" or not isinstance(self.body, Mapping):
            return None
        turns = get_field(self.body, "turns", []) or []
        return ClientContent(
            self.connection, self.t, list(turns), get_field(self.body, "turn_complete")
        )

    def function_responses(self) -> list[FunctionResponseRecord]:
        if self.kind != "tool_response" or not isinstance(self.body, Mapping):
            return []
        return [
            FunctionResponseRecord(
                connection=self.connection,
                t=self.t,
                id=get_field(r, "id"),
                name=get_field(r, "name"),
                response=get_field(r, "response"),
                will_continue=get_field(r, "will_continue"),
                scheduling=get_field(r, "scheduling"),
                raw=dict(r),
            )
            for r in get_field(self.body, "function_responses", []) or []
            if isinstance(r, Mapping)
        ]


@dataclass(frozen=True)
class SentMessage:
    """One message the fake sent to the client (for ordering/timing assertions)."""

    connection: int
    t: float
    payload: Any


@dataclass
class LiveConnection:
    """One accepted WebSocket connection and everything that happened on it.

    Mutated only by the server's event loop; from another thread treat it as a snapshot.
    """

    index: int
    path: str
    """The raw request path (query string included)."""
    version: str
    method: str
    headers: dict[str, str]
    """Request headers, lower-cased names."""
    opened_at: float
    messages: list[ClientMessage] = field(default_factory=list)
    sent: list[SentMessage] = field(default_factory=list)
    setup: dict[str, Any] | None = None
    setup_completed: bool = False
    """True once the fake has sent its ``setupComplete`` answer."""
    closed_at: float | None = None
    close_code: int | None = None
    close_reason: str | None = None
    runs: list[str] = field(default_factory=list)
    """Each time the model ran (its profile's rule; ``tool_response`` or ``kick``)."""
    awaiting_kick: bool = False
    """A tool response arrived and the profile waits for a realtime input to run."""
    _ws: ServerConnection | None = field(default=None, repr=False, compare=False)

    @property
    def api_key(self) -> str | None:
        return self.headers.get("x-goog-api-key")

    @property
    def token(self) -> str | None:
        """The ephemeral token of ``Authorization: Token …``, if any."""
        return token_of(self.headers)

    @property
    def vertex(self) -> bool:
        """The client came to Vertex AI's endpoint (``…aiplatform…LlmBidiService…``)."""
        return ".aiplatform." in self.path

    @property
    def closed(self) -> bool:
        return self.closed_at is not None

    @property
    def resumption_requested(self) -> bool:
        """The setup carried ``sessionResumption`` (with or without a handle)."""
        return get_field(self.setup, "session_resumption") is not None

    @property
    def resumption_handle(self) -> str | None:
        """``setup.sessionResumption.handle``: set when the client resumes a session."""
        handle = get_path(self.setup, "session_resumption", "handle")
        return handle if isinstance(handle, str) else None

    def function_declarations(self) -> list[dict[str, Any]]:
        """All ``functionDeclarations`` of all tools in the setup (raw wire dicts)."""
        out: list[dict[str, Any]] = []
        for tool in get_field(self.setup, "tools", []) or []:
            out.extend(get_field(tool, "function_declarations", []) or [])
        return out

    def declaration(self, name: str) -> dict[str, Any] | None:
        return next((d for d in self.function_declarations() if d.get("name") == name), None)

    def of_kind(self, kind: str) -> list[ClientMessage]:
        return [m for m in self.messages if m.kind == kind]

    def realtime_inputs(self) -> list[RealtimeInput]:
        return [r for m in self.messages for r in m.realtime_inputs()]

    def frames(self, mime_prefix: str = "image/") -> list[RealtimeInput]:
        """Realtime blobs whose MIME type starts with ``mime_prefix`` (video frames by default)."""
        return [
            r
            for r in self.realtime_inputs()
            if r.data is not None and (r.mime_type or "").startswith(mime_prefix)
        ]

    def client_contents(self) -> list[ClientContent]:
        return [c for m in self.messages if (c := m.client_content()) is not None]

    def function_responses(self) -> list[FunctionResponseRecord]:
        return [r for m in self.messages for r in m.function_responses()]
