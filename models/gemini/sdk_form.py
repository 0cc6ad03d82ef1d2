"""The runtime's own wire types (``live/wire.py``) as google-genai's, at the adapter's edge.

Each function takes the runtime's value, or google-genai's own (a test's, a reply the
adapter made and the history kept), which passes as it is. Only the fields that are set
are given, so the SDK serialises exactly what it did when the runtime built its types.
"""

from __future__ import annotations

from typing import Any

from google.genai import types

from live import wire


def _set(**fields: Any) -> dict[str, Any]:
    return {name: value for name, value in fields.items() if value is not None}


def _scheduling(value: wire.Scheduling | None) -> types.FunctionResponseScheduling | None:
    return None if value is None else types.FunctionResponseScheduling(value.value)


def _type(value: wire.Type | None) -> types.Type | None:
    return None if value is None else types.Type(value.value)


def _behavior(value: wire.Behavior | None) -> types.Behavior | None:
    return None if value is None else types.Behavior(value.value)


def blob(value: wire.Blob | types.Blob) -> types.Blob:
    if isinstance(value, types.Blob):
        return value
    return types.Blob(data=value.data, mime_type=value.mime_type)


def function_response(
    value: wire.FunctionResponse | types.FunctionResponse,
) -> types.FunctionResponse:
    if isinstance(value, types.FunctionResponse):
        return value
    return types.FunctionResponse(
        **_set(
            id=value.id,
            name=value.name,
            response=value.response,
            will_continue=value.will_continue,
            scheduling=_scheduling(value.scheduling),
        )
    )


def function_call(value: wire.FunctionCall) -> types.FunctionCall:
    return types.FunctionCall(**_set(id=value.id, name=value.name, args=value.args))


def part(value: wire.Part | types.Part) -> types.Part:
    if isinstance(value, types.Part):
        return value
    return types.Part(
        **_set(
            text=value.text,
            thought=value.thought,
            function_call=None
            if value.function_call is None
            else function_call(value.function_call),
            function_response=(
                None
                if value.function_response is None
                else function_response(value.function_response)
            ),
        )
    )


def content(value: wire.Content | types.Content) -> types.Content:
    if isinstance(value, types.Content):
        return value
    if isinstance(value.sdk, types.Content):
        return value.sdk  # the model's own message, sent back as it came
    return types.Content(role=value.role, parts=[part(p) for p in value.parts])


def schema(value: wire.Schema | types.Schema) -> types.Schema:
    if isinstance(value, types.Schema):
        return value
    return types.Schema(
        **_set(
            type=_type(value.type),
            description=value.description,
            enum=value.enum,
            items=None if value.items is None else schema(value.items),
            properties=(
                None
                if value.properties is None
                else {name: schema(s) for name, s in value.properties.items()}
            ),
            required=value.required,
            nullable=value.nullable,
            minimum=value.minimum,
            maximum=value.maximum,
            min_length=value.min_length,
            max_length=value.max_length,
            pattern=value.pattern,
            min_items=value.min_items,
            max_items=value.max_items,
        )
    )


def declaration(
    value: wire.FunctionDeclaration | types.FunctionDeclaration,
) -> types.FunctionDeclaration:
    if isinstance(value, types.FunctionDeclaration):
        return value
    return types.FunctionDeclaration(
        **_set(
            name=value.name,
            description=value.description,
            parameters=None if value.parameters is None else schema(value.parameters),
            behavior=_behavior(value.behavior),
        )
    )


def reply_content(value: types.Content) -> wire.Content:
    """A model's reply as the runtime keeps it: what it reads of it, and the reply itself."""
    parts = [
        wire.Part(
            text=p.text,
            thought=p.thought,
            function_call=None
            if p.function_call is None
            else wire.FunctionCall(
                id=p.function_call.id, name=p.function_call.name, args=p.function_call.args
            ),
        )
        for p in value.parts or []
    ]
    return wire.Content(role=value.role, parts=parts, sdk=value)


__all__ = [
    "blob",
    "content",
    "declaration",
    "function_call",
    "function_response",
    "part",
    "reply_content",
    "schema",
]
