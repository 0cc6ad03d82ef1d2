"""The LiveModel protocol: what the session needs from a live model connection.

Outbound messages and inbound model events are small dataclasses so that the
session logic is the same for Gemini Live, the offline local model and the
scripted test model; adapters translate them to and from their wire format
(what they carry is ``live/wire.py``'s).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from live.wire import Blob, Content, FunctionDeclaration, FunctionResponse

# --- what the session sends -------------------------------------------------


@dataclass(frozen=True)
class SendContent:
    content: Content
    turn_complete: bool


@dataclass(frozen=True)
class SendRealtime:
    """Realtime media: a camera frame, or (``call_id`` set) an image a tool call showed the
    model (``ToolContext.show``), which belongs with that call's answer."""

    blob: Blob
    call_id: str | None = None


@dataclass(frozen=True)
class SendText:
    """Realtime text (typed or transcribed user input)."""

    text: str


@dataclass(frozen=True)
class SendToolResponse:
    responses: tuple[FunctionResponse, ...]

    @property
    def will_continue(self) -> bool:
        return any(bool(r.will_continue) for r in self.responses)


@dataclass(frozen=True)
class SendActivity:
    start: bool


Outbound = SendContent | SendRealtime | SendText | SendToolResponse | SendActivity


# --- what a model connection yields -----------------------------------------


@dataclass(frozen=True)
class FunctionCallRequest:
    id: str
    name: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelToolCall:
    calls: tuple[FunctionCallRequest, ...]


@dataclass(frozen=True)
class ModelToolCancellation:
    ids: tuple[str, ...]


@dataclass(frozen=True)
class ModelTextOut:
    text: str
    # The model only restates what the device already said (the offline model's sentence
    # for a count change): a console that printed the change does not print it again.
    narration: bool = False


@dataclass(frozen=True)
class ModelTranscriptOut:
    text: str
    direction: str = "output"


@dataclass(frozen=True)
class ModelAudioOut:
    data: bytes
    mime_type: str


@dataclass(frozen=True)
class ModelTurnComplete:
    pass


@dataclass(frozen=True)
class ModelInterrupted:
    pass


@dataclass(frozen=True)
class ModelGoAway:
    time_left_s: float | None = None


@dataclass(frozen=True)
class ModelResumptionUpdate:
    handle: str | None
    resumable: bool


@dataclass(frozen=True)
class ModelUsage:
    prompt_tokens: int = 0
    response_tokens: int = 0
    total_tokens: int = 0
    # Prompt tokens by modality ("TEXT", "IMAGE", "AUDIO", ...) where the model says them.
    prompt_by_modality: tuple[tuple[str, int], ...] = ()


ModelEvent = (
    ModelToolCall
    | ModelToolCancellation
    | ModelTextOut
    | ModelTranscriptOut
    | ModelAudioOut
    | ModelTurnComplete
    | ModelInterrupted
    | ModelGoAway
    | ModelResumptionUpdate
    | ModelUsage
)


class ConnectionLost(Exception):
    """The model connection dropped; the session may reconnect.

    ``code`` is the WebSocket close code where known (1000, 1006, 1011...).
    ``retryable`` False means reconnecting cannot help (bad key, bad setup).
    """

    def __init__(self, reason: str, *, code: int | None = None, retryable: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code
        self.retryable = retryable


class ModelSetupError(Exception):
    """The model refused the session setup; reconnecting will not help."""


@dataclass(frozen=True)
class LiveSetup:
    """Everything a model needs to open (or resume) a session."""

    tools: Sequence[FunctionDeclaration] = ()
    system_instruction: str | None = None
    resumption_handle: str | None = None


class LiveConnection(Protocol):
    async def send(self, message: Outbound) -> None:
        """Send one message; raises ConnectionLost if the connection is gone."""
        ...

    def receive(self) -> AsyncIterator[ModelEvent]:
        """Model events until the connection closes (then raises ConnectionLost)."""
        ...

    async def close(self) -> None: ...


class LiveModel(Protocol):
    name: str

    async def connect(self, setup: LiveSetup) -> LiveConnection: ...
