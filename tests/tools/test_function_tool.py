"""Declarations built from signatures; hidden parameters; argument checking."""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, Literal

import pytest
from google.genai import types

from live import InputStream, ToolArgumentError, ToolContext
from tools import FunctionTool, is_streaming_callable


async def watch(
    stream: InputStream, ctx: ToolContext, min_change: int = 1, label: str | None = None
) -> AsyncIterator[dict[str, Any]]:
    """Watch the camera and report changes.

    Args:
        min_change: smallest change worth reporting.
        label: optional tag for the report.
    """
    yield {}


def test_declaration_hides_runtime_parameters_and_marks_streaming_non_blocking() -> None:
    tool = FunctionTool(watch)
    decl = tool.declaration()
    assert decl.name == "watch"
    assert decl.description == "Watch the camera and report changes."
    assert decl.behavior == types.Behavior.NON_BLOCKING
    assert decl.parameters is not None and decl.parameters.properties is not None
    assert set(decl.parameters.properties) == {"min_change", "label"}
    assert decl.parameters.properties["min_change"].type == types.Type.INTEGER
    assert (
        decl.parameters.properties["min_change"].description == "smallest change worth reporting."
    )
    assert decl.parameters.properties["label"].nullable is True
    assert decl.parameters.required is None
    assert tool.is_streaming and tool.consumes_input


def test_hidden_parameters_are_found_by_type_not_by_name() -> None:
    async def f(
        frames: InputStream, c: ToolContext, input_stream: int
    ) -> AsyncIterator[dict[str, Any]]:
        """A parameter *named* input_stream is an ordinary argument."""
        yield {}

    tool = FunctionTool(f)
    decl = tool.declaration()
    assert decl.parameters is not None and decl.parameters.properties is not None
    assert list(decl.parameters.properties) == ["input_stream"]
    assert decl.parameters.required == ["input_stream"]


def test_optional_input_stream_is_still_hidden() -> None:
    async def f(stream: InputStream | None = None) -> AsyncIterator[dict[str, Any]]:
        """Works with or without input."""
        yield {}

    tool = FunctionTool(f)
    assert tool.declaration().parameters is None
    assert tool.consumes_input


class Watcher:
    async def watch(self, stream: InputStream) -> AsyncGenerator[dict[str, Any], None]:
        """A bound method."""
        yield {}

    async def __call__(self, ctx: ToolContext):  # type: ignore[no-untyped-def]
        """A callable object with no return annotation at all."""
        yield {}


async def wrong_annotation(stream: InputStream) -> dict[str, Any]:  # type: ignore[misc]
    """Annotated as returning a dict, but it is an async generator."""
    yield {}


def regular(x: int) -> int:
    """Not streaming."""
    return x


async def coroutine(x: int) -> int:
    """Not streaming either."""
    return x


@pytest.mark.parametrize(
    ("func", "streaming"),
    [
        (Watcher().watch, True),
        (Watcher(), True),
        (functools.partial(watch, min_change=2), True),
        (wrong_annotation, True),
        (regular, False),
        (coroutine, False),
    ],
)
def test_streaming_detection(func: Any, streaming: bool) -> None:
    assert is_streaming_callable(func) is streaming
    tool = FunctionTool(func, name="t")
    assert tool.is_streaming is streaming
    assert (tool.declaration().behavior == types.Behavior.NON_BLOCKING) is streaming


def test_string_annotations_that_do_not_resolve_still_hide_by_type_name() -> None:
    async def f(stream: InputStream, other: Undefined) -> AsyncIterator[dict[str, Any]]:  # type: ignore[name-defined] # noqa: F821
        """Forward references that cannot be resolved."""
        yield {}

    tool = FunctionTool(f)
    assert tool.consumes_input
    decl = tool.declaration()
    assert decl.parameters is not None and decl.parameters.properties is not None
    assert list(decl.parameters.properties) == ["other"]


def schema_tool() -> FunctionTool:
    def configure(
        threshold: float,
        region: list[list[float]] | None = None,
        mode: Literal["fast", "accurate"] = "fast",
        every: int = 1,
        verbose: bool = False,
    ) -> dict[str, Any]:
        """Configure counting."""
        return {}

    return FunctionTool(configure)


def test_schema_for_common_types() -> None:
    decl = schema_tool().declaration()
    assert decl.parameters is not None and decl.parameters.properties is not None
    props = decl.parameters.properties
    assert props["threshold"].type == types.Type.NUMBER
    assert props["region"].type == types.Type.ARRAY
    assert props["region"].items is not None and props["region"].items.type == types.Type.ARRAY
    assert props["mode"].enum == ["fast", "accurate"]
    assert props["verbose"].type == types.Type.BOOLEAN
    assert decl.parameters.required == ["threshold"]
    assert decl.behavior is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "missing required argument(s) threshold"),
        ({"threshold": "high"}, "threshold must be a number, got str 'high'"),
        ({"threshold": 0.5, "every": 1.5}, "every must be an integer"),
        ({"threshold": 0.5, "every": True}, "every must be an integer"),
        ({"threshold": 0.5, "mode": "slow"}, "mode must be one of fast, accurate"),
        ({"threshold": 0.5, "region": [[0.1, "x"]]}, "region[0][1] must be a number"),
        ({"threshold": 0.5, "region": "everywhere"}, "region must be a list"),
        ({"threshold": 0.5, "colour": "red"}, "unknown argument(s) 'colour'"),
        ({"threshold": float("nan")}, "threshold must be a finite number"),
        ({"threshold": None}, "threshold must not be null"),
    ],
)
def test_bad_arguments_get_a_clear_message(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolArgumentError) as info:
        schema_tool().validate(args)
    assert message in str(info.value)
    assert str(info.value).startswith("configure: ")


def test_good_arguments_are_converted() -> None:
    checked = schema_tool().validate({"threshold": 1, "every": 2.0, "region": [[0, 1]]})
    assert checked == {"threshold": 1.0, "every": 2, "region": [[0.0, 1.0]]}
    assert isinstance(checked["every"], int) and isinstance(checked["threshold"], float)


def test_unsupported_parameter_type_fails_at_construction() -> None:
    def f(x: complex) -> None:
        """Complex numbers have no schema."""

    with pytest.raises(TypeError, match="unsupported parameter type"):
        FunctionTool(f)
