"""What a session reports: one dataclass per kind of event.

Every event has a stable ``type`` string and ``t`` (seconds since the session
started). ``to_dict`` gives the JSON-ready form used by every sink (console,
JSON lines, SQLite, MQTT); keep field names stable, people parse them.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar


def jsonable(value: Any) -> Any:
    """Best-effort conversion to plain JSON types (numpy scalars, tuples, enums)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    item = getattr(value, "item", None)
    if callable(item):
        try:
            return jsonable(item())
        except (TypeError, ValueError):
            pass
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return jsonable(tolist())
    enum_value = getattr(value, "value", None)
    if enum_value is not None and isinstance(enum_value, str | int):
        return enum_value
    return str(value)


@dataclass(frozen=True, kw_only=True)
class Event:
    type: ClassVar[str] = "event"
    t: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"type": self.type, "t": round(self.t, 4)}
        for f in dataclasses.fields(self):
            if f.name == "t" or not f.repr:
                continue
            data[f.name] = jsonable(getattr(self, f.name))
        return data

    @property
    def call_id(self) -> str | None:
        """The tool call an event belongs to (events about a call carry it as ``id``)."""
        value = getattr(self, "id", None)
        return value if isinstance(value, str) else None


@dataclass(frozen=True, kw_only=True)
class ModelText(Event):
    type: ClassVar[str] = "model_text"
    text: str
    # A restatement of what the device said itself (``ModelTextOut.narration``); not logged.
    narration: bool = field(default=False, repr=False)


@dataclass(frozen=True, kw_only=True)
class Transcript(Event):
    type: ClassVar[str] = "transcript"
    text: str
    direction: str = "output"


@dataclass(frozen=True, kw_only=True)
class ModelAudio(Event):
    """Audio from the model; bytes are kept for a player but never logged."""

    type: ClassVar[str] = "model_audio"
    mime_type: str
    size: int
    data: bytes = field(default=b"", repr=False)


@dataclass(frozen=True, kw_only=True)
class TurnComplete(Event):
    type: ClassVar[str] = "turn_complete"


@dataclass(frozen=True, kw_only=True)
class Interrupted(Event):
    """The user barged in; the model dropped what it was saying."""

    type: ClassVar[str] = "interrupted"


@dataclass(frozen=True, kw_only=True)
class ToolCall(Event):
    type: ClassVar[str] = "tool_call"
    id: str
    name: str
    args: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class ToolResult(Event):
    """The answer to a call: a regular tool's result, or a streaming call's pending status."""

    type: ClassVar[str] = "tool_result"
    id: str
    name: str
    response: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class Emission(Event):
    """One emission of a stream; ``to_model`` False for a device call (recorded only)."""

    type: ClassVar[str] = "emission"
    id: str
    name: str
    payload: dict[str, Any]
    seq: int
    final: bool = False
    to_model: bool = True


@dataclass(frozen=True, kw_only=True)
class StreamStarted(Event):
    type: ClassVar[str] = "stream_started"
    id: str
    name: str
    args: dict[str, Any]
    by: str = "model"  # who called it: the model, or the device (page, console)


@dataclass(frozen=True, kw_only=True)
class StreamStopped(Event):
    type: ClassVar[str] = "stream_stopped"
    id: str
    name: str
    reason: str
    emissions: int
    frames_received: int = 0
    frames_dropped: int = 0


@dataclass(frozen=True, kw_only=True)
class ConnectionState(Event):
    """The model connection changed.

    ``state``: ``connecting`` (an attempt starts; ``reconnecting`` after a lost
    connection), ``connected``, ``disconnected`` (lost; ``code`` and ``reason``
    say why), ``unreachable`` (an attempt failed, ``retry_in_s`` says when the
    next one is), ``refused`` (the model refused the setup; retried much later),
    ``go_away`` (the server asked us to reconnect), ``failed`` (given up: only
    when the model is required) and ``closed``.
    """

    type: ClassVar[str] = "connection"
    state: str
    attempt: int = 0
    code: int | None = None
    reason: str = ""
    model: str = ""
    retry_in_s: float | None = None


@dataclass(frozen=True, kw_only=True)
class Usage(Event):
    type: ClassVar[str] = "usage"
    prompt_tokens: int = 0
    response_tokens: int = 0
    total_tokens: int = 0
    prompt_by_modality: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class BudgetState(Event):
    """The spending cap's state changed (``live/link/budget.py``).

    ``state``: ``normal``, ``saving`` (past 80 % of a limit: no frames, no looks) or
    ``capped`` (at a limit: emissions to the model at most one a minute); ``limit``
    says which limit (``hour``, ``session``; empty when normal).
    """

    type: ClassVar[str] = "budget"
    state: str
    limit: str = ""
    hour_used: int = 0
    hour_limit: int | None = None
    session_used: int = 0
    session_limit: int | None = None
    message: str = ""


@dataclass(frozen=True, kw_only=True)
class ErrorEvent(Event):
    type: ClassVar[str] = "error"
    message: str
    where: str = ""
    id: str | None = None


@dataclass(frozen=True, kw_only=True)
class JobUpdate(Event):
    """A long-running job changed state: started, succeeded, failed, cancelled."""

    type: ClassVar[str] = "job"
    id: str  # the call that started the job
    job_id: str
    name: str
    state: str
    result: dict[str, Any] | None = None
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class JobProgress(Event):
    """How far a job has come; for people (console, log, status page), never for the model."""

    type: ClassVar[str] = "job_progress"
    id: str
    job_id: str
    name: str
    fraction: float | None
    message: str = ""


@dataclass(frozen=True, kw_only=True)
class UserText(Event):
    """What a person asked (request-response mode)."""

    type: ClassVar[str] = "user_text"
    text: str


def from_model(event: object) -> Event | None:
    """What the session reports of something the model said (None: nothing to report).

    Tool calls and cancellations are the session's to handle, not to report here.
    """
    from live import model as m

    if isinstance(event, m.ModelTextOut):
        return ModelText(text=event.text, narration=event.narration)
    if isinstance(event, m.ModelTranscriptOut):
        return Transcript(text=event.text, direction=event.direction)
    if isinstance(event, m.ModelAudioOut):
        return ModelAudio(mime_type=event.mime_type, size=len(event.data), data=event.data)
    if isinstance(event, m.ModelTurnComplete):
        return TurnComplete()
    if isinstance(event, m.ModelInterrupted):
        return Interrupted()
    if isinstance(event, m.ModelUsage):
        return Usage(
            prompt_tokens=event.prompt_tokens,
            response_tokens=event.response_tokens,
            total_tokens=event.total_tokens,
            prompt_by_modality=dict(event.prompt_by_modality),
        )
    return None
