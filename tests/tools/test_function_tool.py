"""Declarations built from signatures; hidden parameters; argument checking and constraints."""

from __future__ import annotations

import enum
import functools
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import Annotated, Any, Literal

import pytest
from google.genai import types
from pydantic import Field

from live.input_stream import InputStream
from live.tool import ToolArgumentError, ToolContext
from tools.arguments import WholeRange
from tools.function_tool import FunctionTool, is_streaming_callable, schema_for


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


def test_a_typed_input_stream_is_hidden_and_fed_like_a_bare_one() -> None:
    async def f(
        stream: InputStream[int], n: Annotated[int, Field(ge=1)] = 1
    ) -> AsyncIterator[dict[str, Any]]:
        """Typed by what its requests carry."""
        yield {}

    async def g(stream: InputStream[int] | None = None) -> AsyncIterator[dict[str, Any]]:
        """Optional and typed."""
        yield {}

    tool = FunctionTool(f)
    decl = tool.declaration()
    assert decl.parameters is not None and decl.parameters.properties is not None
    assert list(decl.parameters.properties) == ["n"]
    assert tool.consumes_input
    assert FunctionTool(g).declaration().parameters is None and FunctionTool(g).consumes_input


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


def bounded(
    count: Annotated[int, Field(ge=1, le=10, description="how many, 1 to 10")],
    ratio: Annotated[float, Field(gt=0, lt=1)] = 0.5,
    name: Annotated[str, Field(max_length=8, pattern="^[a-z]+$")] | None = None,
    tags: Annotated[list[str], Field(min_length=1, max_length=3)] | None = None,
    every: int = 1,
    verbose: bool = False,
    label: str = "",
) -> dict[str, Any]:
    """Constraints in the signature.

    Args:
        count: the docstring's words, which the Field's description overrides.
        ratio: share of frames to look at.
    """
    return {}


def test_annotated_constraints_are_declared_with_their_description() -> None:
    decl = FunctionTool(bounded).declaration()
    assert decl.parameters is not None and decl.parameters.properties is not None
    props = decl.parameters.properties
    assert props["count"].type == types.Type.INTEGER
    assert props["count"].description == "how many, 1 to 10"
    assert (props["count"].minimum, props["count"].maximum) == (1, 10)
    # An exclusive bound on a float has no exact Schema form: validate enforces it alone.
    assert props["ratio"].description == "share of frames to look at."
    assert props["ratio"].minimum is None and props["ratio"].maximum is None
    assert props["name"].nullable is True
    assert (props["name"].max_length, props["name"].pattern) == (8, "^[a-z]+$")
    assert (props["tags"].min_items, props["tags"].max_items) == (1, 3)
    assert decl.parameters.required == ["count"]


def test_an_exclusive_integer_bound_is_declared_as_the_inclusive_one() -> None:
    schema = schema_for(Annotated[int, Field(gt=0, lt=5)])
    assert (schema.minimum, schema.maximum) == (1, 4)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"count": 0}, "bounded: count must be at least 1, got 0"),
        ({"count": 11}, "bounded: count must be at most 10, got 11"),
        ({"count": 1, "ratio": 1}, "bounded: ratio must be less than 1.0, got 1"),
        ({"count": 1, "ratio": 0.0}, "bounded: ratio must be more than 0.0, got 0.0"),
        ({"count": 1, "name": "Bob"}, "bounded: name must match '^[a-z]+$', got str 'Bob'"),
        ({"count": 1, "name": "abcdefghi"}, "bounded: name must have at most 8 characters, got 9"),
        ({"count": 1, "tags": []}, "bounded: tags must have at least 1 item, got 0"),
        ({"count": 1, "tags": ["a", 2]}, "bounded: tags[1] must be a string, got int 2"),
    ],
)
def test_values_outside_annotated_constraints_are_refused_in_one_line(
    args: dict[str, Any], message: str
) -> None:
    with pytest.raises(ToolArgumentError) as info:
        FunctionTool(bounded).validate(args)
    assert str(info.value) == message


def test_values_inside_annotated_constraints_pass() -> None:
    args = {"count": 10, "ratio": 0.25, "name": "abc", "tags": ["a", "b", "c"]}
    assert FunctionTool(bounded).validate(args) == args


def report(minutes: Annotated[float, Field(gt=0, le=1440), WholeRange()]) -> dict[str, Any]:
    """A range the model is told in full whichever end it crossed."""
    return {}


@pytest.mark.parametrize(
    ("minutes", "message"),
    [
        (5000.0, "report: minutes must be more than 0 and at most 1440, got 5000.0"),
        (0, "report: minutes must be more than 0 and at most 1440, got 0"),
        ("5", "report: minutes must be a number, got str '5'"),
        (float("nan"), "report: minutes must be a finite number"),
    ],
)
def test_a_whole_range_is_named_whichever_bound_was_crossed(minutes: Any, message: str) -> None:
    tool = FunctionTool(report)
    with pytest.raises(ToolArgumentError) as info:
        tool.validate({"minutes": minutes})
    assert str(info.value) == message
    assert tool.validate({"minutes": 1440}) == {"minutes": 1440.0}
    decl = tool.declaration()
    assert decl.parameters is not None and decl.parameters.properties is not None
    assert decl.parameters.properties["minutes"].maximum == 1440


def test_a_whole_range_without_bounds_fails_at_construction() -> None:
    def f(n: Annotated[int, WholeRange()]) -> None:
        """No bounds to name."""

    with pytest.raises(TypeError, match="needs bounds"):
        FunctionTool(f)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"count": "3"}, "count must be an integer, got str '3'"),
        ({"count": 1, "ratio": "0.5"}, "ratio must be a number, got str '0.5'"),
        ({"count": 1, "ratio": True}, "ratio must be a number, got bool True"),
        ({"count": 1, "verbose": 1}, "verbose must be true or false, got int 1"),
        ({"count": 1, "verbose": "true"}, "verbose must be true or false, got str 'true'"),
        ({"count": 1, "label": 3}, "label must be a string, got int 3"),
        ({"count": 1, "every": "2"}, "every must be an integer, got str '2'"),
    ],
)
def test_nothing_is_coerced_from_another_type(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolArgumentError) as info:
        FunctionTool(bounded).validate(args)
    assert str(info.value) == f"bounded: {message}"


def test_a_megabyte_argument_is_not_echoed_back() -> None:
    huge = "x" * 1_000_000
    for args in ({"count": huge}, {"count": 1, "name": huge}, {"count": [[huge] * 1000] * 1000}):
        with pytest.raises(ToolArgumentError) as info:
            FunctionTool(bounded).validate(args)
        assert len(str(info.value)) < 120 and "\n" not in str(info.value)


def test_several_errors_make_one_line_naming_the_first_few() -> None:
    args = {"count": "x", "ratio": "y", "name": 3, "tags": "z", "every": 0.5, "verbose": None}
    with pytest.raises(ToolArgumentError) as info:
        FunctionTool(bounded).validate(args)
    message = str(info.value)
    assert message == (
        "bounded: count must be an integer, got str 'x'; ratio must be a number, got str 'y'; "
        "name must be a string, got int 3 (and 3 more)"
    )


def test_check_runs_after_the_types_are_right() -> None:
    seen: list[dict[str, Any]] = []

    def check(args: dict[str, Any]) -> None:
        seen.append(args)
        if args.get("name") and "tags" not in args:
            raise ToolArgumentError("bounded: a name needs tags")

    tool = FunctionTool(bounded, check=check)
    with pytest.raises(ToolArgumentError, match="count must be at least 1"):
        tool.validate({"count": 0})
    assert seen == []
    with pytest.raises(ToolArgumentError, match="a name needs tags"):
        tool.validate({"count": 2.0, "name": "abc"})
    assert seen == [{"count": 2, "name": "abc"}]


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


def choices(colour: Colour = Colour.RED, level: Level = Level.LOW, pick: Literal[1, 2] = 1) -> None:
    """Enum and Literal choices."""


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"colour": "blue"}, {"colour": Colour.BLUE}),
        ({"colour": Colour.BLUE}, {"colour": Colour.BLUE}),
        # The declaration lists enum values as strings, so the text form of 2 is 2.
        ({"level": "2"}, {"level": Level.HIGH}),
        ({"level": 2}, {"level": Level.HIGH}),
        ({"pick": 2.0}, {"pick": 2}),
    ],
)
def test_choices_accept_their_values(args: dict[str, Any], expected: dict[str, Any]) -> None:
    assert FunctionTool(choices).validate(args) == expected


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"colour": "green"}, "colour must be one of red, blue, got str 'green'"),
        ({"level": True}, "level must be one of 1, 2, got bool True"),
        ({"pick": True}, "pick must be one of 1, 2, got bool True"),
        ({"pick": "1"}, "pick must be one of 1, 2, got str '1'"),
        ({"pick": None}, "pick must not be null"),
    ],
)
def test_choices_refuse_anything_else(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolArgumentError) as info:
        FunctionTool(choices).validate(args)
    assert str(info.value) == f"choices: {message}"


def test_only_the_arguments_given_come_back_and_defaults_are_never_copied() -> None:
    lock = threading.Lock()  # cannot be copied: pydantic must never see it

    def f(
        json: int,
        model_config: str = "",
        _private: bool = False,
        guard: dict[str, Any] | None = lock,  # type: ignore[assignment]
    ) -> None:
        """Names pydantic reserves for itself, a default it could not copy."""

    tool = FunctionTool(f)
    assert tool.validate({"json": 1}) == {"json": 1}
    assert tool.validate({"json": 1, "model_config": "a", "_private": True}) == {
        "json": 1,
        "model_config": "a",
        "_private": True,
    }


def test_sequences_and_mappings_are_checked_element_wise() -> None:
    def f(
        points: Sequence[int] = (),
        weights: dict[str, float] | None = None,
        raw: dict | None = None,  # type: ignore[type-arg]
    ) -> None:
        """Containers."""

    tool = FunctionTool(f)
    decl = tool.declaration()
    assert decl.parameters is not None and decl.parameters.properties is not None
    points = decl.parameters.properties["points"]
    assert points.type == types.Type.ARRAY and points.items is not None
    assert points.items.type == types.Type.INTEGER
    assert tool.validate({"points": (1, 2.0), "raw": {"a": [1]}}) == {
        "points": [1, 2],
        "raw": {"a": [1]},
    }
    assert tool.validate({"weights": {"a": 1}}) == {"weights": {"a": 1.0}}
    with pytest.raises(ToolArgumentError, match=r"^f: points\[1\] must be an integer, got str"):
        tool.validate({"points": [1, "2", "3"]})
    with pytest.raises(ToolArgumentError, match=r"^f: weights\['b'\] must be a number, got str"):
        tool.validate({"weights": {"a": 1, "b": "heavy"}})
    with pytest.raises(ToolArgumentError, match=r"^f: weights must be an object, got list"):
        tool.validate({"weights": [1]})


def test_an_annotated_type_that_cannot_be_declared_fails_at_construction() -> None:
    def f(x: Annotated[complex, Field(description="no schema")]) -> None:
        """Complex numbers have no schema, Field or not."""

    with pytest.raises(TypeError, match="unsupported parameter type"):
        FunctionTool(f)


def test_one_unresolvable_annotation_leaves_the_others_their_types_and_constraints() -> None:
    def f(
        count: Annotated[int, Field(ge=1)],
        later: Later = None,  # type: ignore[name-defined] # noqa: F821
    ) -> OnlyForTypeCheckers:  # type: ignore[name-defined] # noqa: F821
        """The return type is imported under TYPE_CHECKING, say."""

    tool = FunctionTool(f)
    decl = tool.declaration()
    assert decl.parameters is not None and decl.parameters.properties is not None
    count = decl.parameters.properties["count"]
    assert count.type == types.Type.INTEGER and count.minimum == 1
    # What cannot be resolved is declared as text and, as before, not checked.
    assert decl.parameters.properties["later"].type == types.Type.STRING
    marker = object()
    assert tool.validate({"count": 2, "later": marker}) == {"count": 2, "later": marker}
    with pytest.raises(ToolArgumentError, match="count must be at least 1"):
        tool.validate({"count": 0})
