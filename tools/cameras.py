"""The camera a tool call is about: the ``camera`` parameter, and one tool over every camera.

A device that names its cameras (``--source door=...``) declares ``camera`` on each tool
that reads one (``count_people``, ``count_people_now``, ``watch_line``, ``watch_zone``,
``look``): an enum of the names, so the model sees them and cannot invent one; optional
with one camera, required with several. A device with one unnamed camera declares no such
parameter: its tools are declared exactly as before cameras had names.

``per_camera`` makes the one function the model calls from each camera's own (a
``CountPeople`` per camera, a ``SceneWatchers``, ...): the same parameters, hints and
docstring, plus ``camera``, and each call runs the named camera's. ``Cameras.input_filter``
gives a streaming call's input stream only its camera's percepts and unknowns
(``FunctionTool(input_filter=...)``; the requests say their camera as ``origin``), so two
calls about two cameras run side by side, each on its own input.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field

from live.input_stream import InputFilter
from live.tool import ToolArgumentError
from tools.function_tool import is_injected

CAMERA = "camera"


@dataclass(frozen=True)
class Cameras:
    """The device's cameras as the tools take them: ``names`` in order, and whether the
    device names them (``named``; False: the one classic camera, never declared)."""

    names: tuple[str, ...]
    named: bool = True

    def __post_init__(self) -> None:
        if not self.names:
            raise ValueError("a device has at least one camera")

    @property
    def declared(self) -> bool:
        """Whether the tools take ``camera`` (the model sees the parameter)."""
        return self.named

    @property
    def required(self) -> bool:
        """Several cameras: a call must say which."""
        return len(self.names) > 1

    def listed(self) -> str:
        return ", ".join(self.names)

    def resolve(self, camera: str | None, tool: str) -> str:
        """The camera a call is about (its ``camera``, or the only one)."""
        if camera is None:
            if len(self.names) == 1:
                return self.names[0]
            raise ToolArgumentError(f"{tool}: say which camera (cameras: {self.listed()})")
        if camera not in self.names:
            raise ToolArgumentError(
                f"{tool}: no camera named {camera!r} (cameras: {self.listed()})"
            )
        return camera

    def annotation(self, what: str = "the camera") -> Any:
        """The declared type of ``camera``: an enum of the names."""
        field = Field(description=f"{what}, by name: {self.listed()}")
        names: Any = Literal[self.names]
        return Annotated[names, field] if self.required else Annotated[names | None, field]

    def input_filter(self, args: Mapping[str, Any]) -> InputFilter | None:
        """What a streaming call's input stream takes: its camera's requests alone (one
        camera: every request, as before cameras were named)."""
        if len(self.names) == 1:
            return None
        camera = args.get(CAMERA)
        if camera not in self.names:
            return _nothing  # refused before it starts (validation); never fed meanwhile
        return lambda request: bool(request.origin == camera)


def _nothing(request: Any) -> bool:
    return False


def per_camera(
    name: str,
    cameras: Cameras,
    of_camera: Mapping[str, Callable[..., Any]],
    *,
    annotations: Mapping[str, Any] | None = None,
) -> Callable[..., Any]:
    """One tool function named ``name`` over each camera's own (``of_camera``, all with one
    signature: a coroutine or an async generator function): the model's ``camera``
    argument picks whose runs, with the other arguments as given; where cameras are named,
    each answer and emission (a dict) says its ``camera`` first.

    ``annotations``: parameters declared otherwise than each camera's own says (a line's
    name: of any camera's lines, each camera checking its own).
    """
    sample = next(iter(of_camera.values()))
    # A callable object (a ``CountPeople``) is read by its ``__call__``.
    target = sample if inspect.isroutine(sample) else type(sample).__call__.__get__(sample)
    hints = typing.get_type_hints(target, include_extras=True)
    hints.update(annotations or {})
    streaming = inspect.isasyncgenfunction(target)
    if not streaming and not inspect.iscoroutinefunction(target):
        raise TypeError(f"{name}: a camera's tool must be async (a coroutine or a stream)")

    def said(camera: str, item: Any) -> Any:
        # Whose it is, in every answer and emission: the model follows several cameras.
        return {CAMERA: camera, **item} if cameras.declared and isinstance(item, dict) else item

    if streaming:

        async def stream(camera: str | None = None, **kwargs: Any) -> AsyncIterator[Any]:
            chosen = cameras.resolve(camera, name)
            async for item in of_camera[chosen](**kwargs):
                yield said(chosen, item)

        tool: Callable[..., Any] = stream
    else:

        async def call(camera: str | None = None, **kwargs: Any) -> Any:
            chosen = cameras.resolve(camera, name)
            return said(chosen, await of_camera[chosen](**kwargs))

        tool = call

    params = _with_camera(inspect.signature(sample).parameters.values(), hints, cameras)
    if cameras.declared:
        hints[CAMERA] = cameras.annotation()
    tool.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    tool.__annotations__ = {p.name: hints[p.name] for p in params if p.name in hints}
    tool.__name__ = tool.__qualname__ = name
    tool.__doc__ = inspect.getdoc(target)
    return tool


def _with_camera(
    params: Sequence[inspect.Parameter] | Any, hints: Mapping[str, Any], cameras: Cameras
) -> list[inspect.Parameter]:
    """The camera's tool's parameters as keywords, with ``camera`` before those the model
    gives (after the hidden ones, which come first: the stream, the context)."""
    own = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in params]
    if not cameras.declared:
        return own
    hidden = [p for p in own if _hidden(hints.get(p.name))]
    given = [p for p in own if p not in hidden]
    camera = inspect.Parameter(
        CAMERA,
        inspect.Parameter.KEYWORD_ONLY,
        default=inspect.Parameter.empty if cameras.required else None,
    )
    return [*hidden, camera, *given]


def _hidden(annotation: Any) -> bool:
    return annotation is not None and is_injected(annotation)


__all__ = ["CAMERA", "Cameras", "per_camera"]
