"""What the runtime says to a model, in small types of its own.

The session, the tools and the turn runner build these (a frame's ``Blob``, a
``FunctionResponse`` for a call, the ``FunctionDeclaration`` of a tool, user
``Content``); the offline model reads them as they are, and the Gemini adapter
turns them into google-genai's types at its edge (``models/gemini/sdk_form.py``).
So a run with the local model never imports google-genai, the second it takes to load.

The names, fields and enum values are google-genai's (the subset Lookout uses), so
code that reads one reads the other: ``part.text``, ``declaration.parameters.properties``,
``Type.STRING == types.Type.STRING``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class Scheduling(enum.StrEnum):
    """When the model takes a function response (google-genai ``FunctionResponseScheduling``)."""

    SCHEDULING_UNSPECIFIED = "SCHEDULING_UNSPECIFIED"
    SILENT = "SILENT"
    WHEN_IDLE = "WHEN_IDLE"
    INTERRUPT = "INTERRUPT"


class Type(enum.StrEnum):
    """A schema's type (google-genai ``Type``)."""

    TYPE_UNSPECIFIED = "TYPE_UNSPECIFIED"
    STRING = "STRING"
    NUMBER = "NUMBER"
    INTEGER = "INTEGER"
    BOOLEAN = "BOOLEAN"
    ARRAY = "ARRAY"
    OBJECT = "OBJECT"
    NULL = "NULL"


class Behavior(enum.StrEnum):
    """Whether the model waits for a function's answer (google-genai ``Behavior``)."""

    UNSPECIFIED = "UNSPECIFIED"
    BLOCKING = "BLOCKING"
    NON_BLOCKING = "NON_BLOCKING"


@dataclass(frozen=True)
class Blob:
    """Media: a camera frame, an image a tool shows, a chunk of microphone audio."""

    data: bytes
    mime_type: str


@dataclass(frozen=True)
class FunctionCall:
    id: str | None = None
    name: str | None = None
    args: dict[str, Any] | None = None


@dataclass(frozen=True)
class FunctionResponse:
    """An answer (or a stream's emission) for one call id."""

    id: str | None = None
    name: str | None = None
    response: dict[str, Any] | None = None
    will_continue: bool | None = None
    scheduling: Scheduling | None = None


@dataclass(frozen=True)
class Part:
    text: str | None = None
    thought: bool | None = None  # the text is the model's thinking, not what it said
    function_call: FunctionCall | None = None
    function_response: FunctionResponse | None = None


@dataclass(frozen=True)
class Content:
    """One message of a conversation.

    ``sdk`` is the message in the form a model adapter made it (a Gemini reply, with its
    thought signatures), which that adapter sends back as it is; ``parts`` say what the
    runtime and the other models read of it.
    """

    role: str | None = None
    parts: list[Part] = field(default_factory=list)
    sdk: Any = field(default=None, compare=False, repr=False)


@dataclass
class Schema:
    """A parameter's schema; built up field by field (``tools/declaration.py``)."""

    type: Type | None = None
    description: str | None = None
    enum: list[str] | None = None
    items: Schema | None = None
    properties: dict[str, Schema] | None = None
    required: list[str] | None = None
    nullable: bool | None = None
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    min_items: int | None = None
    max_items: int | None = None


@dataclass(frozen=True)
class FunctionDeclaration:
    """What the model is told of a tool."""

    name: str | None = None
    description: str | None = None
    parameters: Schema | None = None
    behavior: Behavior | None = None


def user_text(text: str) -> Content:
    """Text from the user's side of the conversation."""
    return Content(role="user", parts=[Part(text=text)])


__all__ = [
    "Behavior",
    "Blob",
    "Content",
    "FunctionCall",
    "FunctionDeclaration",
    "FunctionResponse",
    "Part",
    "Scheduling",
    "Schema",
    "Type",
    "user_text",
]
