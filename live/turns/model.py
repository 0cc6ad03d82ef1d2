"""The request-response model protocol: one request in, one reply out.

Where a ``LiveModel`` holds a connection open and streams, a ``TurnModel`` is
asked once per step of a turn: the whole conversation so far (as ``live/wire.py``
``Content``), the system instruction and the function declarations go in; the
model's text and/or function calls come back. ``TurnRunner`` (live/turns/conversation.py)
drives it; ``models/gemini/turns.py`` implements it over
``client.aio.models.generate_content`` and ``models/local/turns.py`` offline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from live import wire
from live.model import FunctionCallRequest, ModelUsage


@dataclass(frozen=True)
class TurnRequest:
    contents: tuple[wire.Content, ...]
    declarations: tuple[wire.FunctionDeclaration, ...] = ()
    system_instruction: str | None = None

    def function_responses(self) -> list[wire.FunctionResponse]:
        """Every FunctionResponse in the history, oldest first."""
        return [r for content in self.contents for r in _responses_in(content)]

    def last_function_responses(self) -> list[wire.FunctionResponse]:
        """The FunctionResponses of the newest content (what the model is answering now)."""
        return _responses_in(self.contents[-1]) if self.contents else []


def _responses_in(content: wire.Content) -> list[wire.FunctionResponse]:
    return [p.function_response for p in content.parts or [] if p.function_response is not None]


@dataclass(frozen=True)
class TurnReply:
    """What the model said in one step.

    ``calls`` keep the model's own call ids; an id is ``""`` when the model gave
    none (the Gemini REST API may omit it), and the runner then assigns one.
    ``content`` is the model's message exactly as it should go back into the
    history (it may carry parts the runtime does not interpret, such as thought
    signatures); when ``None`` the runner rebuilds it from ``text`` and ``calls``.
    """

    text: str = ""
    calls: tuple[FunctionCallRequest, ...] = ()
    usage: ModelUsage | None = None
    content: wire.Content | None = field(default=None, compare=False)


class TurnModelError(Exception):
    """The model could not answer (network, quota, refused request); says why in one line."""

    def __init__(self, message: str, *, retryable: bool = False, unreachable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable
        # The model could not be reached at all (no network, no route, DNS): an offline
        # fallback can answer instead; a refusal or a quota cannot be worked around so.
        self.unreachable = unreachable


class TurnModel(Protocol):
    name: str

    async def generate(self, request: TurnRequest) -> TurnReply:
        """One model step; raises TurnModelError when the model cannot answer."""
        ...
