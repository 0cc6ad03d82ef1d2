"""The tool protocol the session dispatches to, and the context a call receives."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from live import wire
from live.events import Event
from live.input_stream import InputStream
from live.util.clock import Clock

log = logging.getLogger("lookout.tool")


class ToolArgumentError(ValueError):
    """The model called a tool with arguments it cannot take; the message says why."""


class ToolUnavailable(Exception):
    """A tool cannot answer here for a reason a person can fix (no log to read, nothing
    configured): the message is the answer, said as is; it is not a failure of the tool."""


@dataclass
class ToolContext:
    """Handed to a tool that asks for it (by type annotation, never by name).

    ``publish`` lets a tool report its own events (for example a count change)
    through the session's event stream and log. A long-running tool (a job) also
    gets ``job_id``, ``progress`` (for people: console, log, status page; never
    sent to the model) and ``milestone`` (an intermediate result the model
    should know about, sent with the job's call id).

    ``show(blob)`` puts an image before the model as realtime input, once, ahead
    of this call's answer; False when it will not go (a device call, no model
    connected, privacy mode), so the answer can say so.
    """

    call_id: str
    function_name: str
    clock: Clock
    input_stream: InputStream[Any] | None = None
    logger: logging.Logger = field(default_factory=lambda: logging.getLogger("lookout.tool"))
    publish: Callable[[Event], None] = field(default=lambda event: None)
    state: dict[str, Any] = field(default_factory=dict)
    job_id: str | None = None
    progress: Callable[[float | None, str], None] = field(default=lambda fraction, message: None)
    milestone: Callable[[dict[str, Any]], None] = field(default=lambda payload: None)
    show: Callable[[wire.Blob], bool] = field(default=lambda blob: False)


class Tool(Protocol):
    """A callable the model can invoke.

    ``is_streaming`` tools return an async iterator of dict emissions;
    ``consumes_input`` tools get their own :class:`InputStream`. Such a tool may
    also have ``input_accept`` (the MIME patterns its stream takes; none: the
    session's) and ``input_filter(args)``: for one call's checked arguments, which
    realtime requests its stream takes (``live/input_stream.py:InputFilter``; None:
    all), so that a call about one camera is never offered another's input.
    """

    @property
    def name(self) -> str: ...

    @property
    def is_streaming(self) -> bool: ...

    @property
    def consumes_input(self) -> bool: ...

    @property
    def is_long_running(self) -> bool:
        """Answer with a ticket at once and deliver the result when the work is done."""
        ...

    def declaration(self) -> wire.FunctionDeclaration: ...

    def validate(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """Checked and converted arguments; raises ToolArgumentError."""
        ...

    def call(self, args: dict[str, Any], context: ToolContext) -> Awaitable[Any]:
        """Run a regular tool (its result answers the call)."""
        ...

    def stream(self, args: dict[str, Any], context: ToolContext) -> AsyncIterator[dict[str, Any]]:
        """Start a streaming tool; each item is one emission to the model."""
        ...

    def coalesce(self, older: dict[str, Any], newer: dict[str, Any]) -> dict[str, Any]:
        """One emission that stands for two the model has not received yet.

        While the model is away, a stream's emissions are merged this way, so
        that on its return it is told the current state once, not every change
        it missed (the event log keeps every one). ``coalesce_updates`` is the
        rule for tools that have no better one.
        """
        ...


def coalesce_by_tool(
    tools: Mapping[str, Tool],
) -> Callable[[str, dict[str, Any], dict[str, Any]], dict[str, Any]]:
    """The merge rule for emissions of the tool of that name (its own ``coalesce``)."""

    def merge(name: str, older: dict[str, Any], newer: dict[str, Any]) -> dict[str, Any]:
        tool = tools.get(name)
        try:
            return (
                tool.coalesce(older, newer) if tool is not None else coalesce_updates(older, newer)
            )
        except Exception:
            log.exception("coalescing emissions of %s failed; keeping the newer one", name)
            return newer

    return merge


def coalesce_updates(older: dict[str, Any], newer: dict[str, Any]) -> dict[str, Any]:
    """The newer emission, saying how many updates it replaces."""
    merged = dict(newer)
    merged.pop("while_away", None)
    missed = _updates(older) + _updates(newer)
    merged["while_away"] = {"updates": missed}
    return merged


def _updates(payload: dict[str, Any]) -> int:
    away = payload.get("while_away")
    if isinstance(away, dict) and isinstance(away.get("updates"), int):
        return int(away["updates"])
    return 1


def check_unique_names(tools: Sequence[Tool]) -> None:
    """A runner's tools are looked up by name: two of one name would shadow each other."""
    names = [tool.name for tool in tools]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"duplicate tool names: {', '.join(duplicates)}")
