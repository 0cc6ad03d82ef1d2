"""The runtime's wire types reach google-genai whole: every field set, nothing added."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Literal

from google.genai import types
from pydantic import Field

from live import wire
from models.gemini import sdk_form
from tools.function_tool import FunctionTool


def _plain(value: Any) -> Any:
    """A runtime value as JSON would have it: enums by value, no unset (None) fields."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: _plain(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if f.compare and getattr(value, f.name) is not None
        }
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, wire.Scheduling | wire.Type | wire.Behavior):
        return value.value
    return value


def _dumped(value: Any) -> Any:
    return value.model_dump(mode="json", exclude_none=True)


async def _tool(
    n: Annotated[int, Field(ge=1, le=9, description="how many")],
    names: list[str],
    side: Literal["left", "right"] = "left",
    note: Annotated[str, Field(min_length=2, max_length=8, pattern="^[a-z]+$")] | None = None,
) -> dict[str, Any]:
    """Does a thing.

    Args:
        names: who.
    """
    return {}


def test_a_tool_declaration_comes_through_with_every_field() -> None:
    declaration = FunctionTool(_tool, name="tool", long_running=True).declaration()
    assert declaration.parameters is not None and declaration.behavior is not None
    converted = sdk_form.declaration(declaration)
    assert isinstance(converted, types.FunctionDeclaration)
    assert converted.behavior == types.Behavior.NON_BLOCKING
    assert _dumped(converted) == _plain(declaration)
    properties = _dumped(converted)["parameters"]["properties"]
    assert properties["n"] == {"type": "INTEGER", "minimum": 1.0, "maximum": 9.0,
                               "description": "how many"}  # fmt: skip
    assert properties["note"]["pattern"] == "^[a-z]+$" and properties["note"]["nullable"]


def test_every_schema_field_is_copied() -> None:
    full = wire.Schema(**{f.name: _sample(f.name) for f in dataclasses.fields(wire.Schema)})
    assert _dumped(sdk_form.schema(full)) == _plain(full)


def _sample(name: str) -> Any:
    return {
        "type": wire.Type.ARRAY,
        "description": "d",
        "enum": ["a"],
        "items": wire.Schema(type=wire.Type.STRING),
        "properties": {"p": wire.Schema(type=wire.Type.NUMBER)},
        "required": ["p"],
        "nullable": True,
        "minimum": 1.0,
        "maximum": 2.0,
        "min_length": 1,
        "max_length": 3,
        "pattern": "x",
        "min_items": 1,
        "max_items": 4,
    }[name]


def test_messages_come_through_with_every_field() -> None:
    response = wire.FunctionResponse(
        id="c-1",
        name="count_people",
        response={"people": 2},
        will_continue=True,
        scheduling=wire.Scheduling.SILENT,
    )
    converted = sdk_form.function_response(response)
    assert converted.scheduling is types.FunctionResponseScheduling.SILENT
    assert _dumped(converted) == _plain(response)
    content = wire.Content(
        role="user",
        parts=[
            wire.Part(text="hello"),
            wire.Part(text="hmm", thought=True),
            wire.Part(function_call=wire.FunctionCall(id="c-2", name="look", args={"a": 1})),
            wire.Part(function_response=response),
        ],
    )
    assert _dumped(sdk_form.content(content)) == _plain(content)
    blob = wire.Blob(data=b"\xff\xd8", mime_type="image/jpeg")
    assert sdk_form.blob(blob) == types.Blob(data=b"\xff\xd8", mime_type="image/jpeg")


def test_the_sdks_own_values_pass_as_they_are() -> None:
    blob = types.Blob(data=b"x", mime_type="audio/pcm;rate=16000")
    content = types.Content(role="user", parts=[types.Part(text="q")])
    response = types.FunctionResponse(id="i", name="n", response={})
    declaration = types.FunctionDeclaration(name="n")
    assert sdk_form.blob(blob) is blob
    assert sdk_form.content(content) is content
    assert sdk_form.function_response(response) is response
    assert sdk_form.declaration(declaration) is declaration


def test_a_reply_goes_back_as_the_sdk_read_it() -> None:
    reply = types.Content(
        role="model",
        parts=[
            types.Part(text="thinking", thought=True, thought_signature=b"sig"),
            types.Part(function_call=types.FunctionCall(id="f", name="look", args={})),
        ],
    )
    kept = sdk_form.reply_content(reply)
    assert kept.role == "model"
    assert [(p.text, p.thought) for p in kept.parts] == [("thinking", True), (None, None)]
    assert kept.parts[1].function_call == wire.FunctionCall(id="f", name="look", args={})
    assert sdk_form.content(kept) is reply
