"""What ``lookout ask`` tells the model, and how a log tool's "cannot" is told apart.

The instruction names the tools offered: a question about the log (``--db``, no
``--source``) is offered no camera tool, and its instruction does not name one (a model
told to use a tool it was not given calls it anyway, or answers without the log).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from live import wire
from live.tool import Tool, ToolContext, ToolUnavailable

_ABOUT_CAMERA = (
    "Use count_people_now for how many people are there now. Use "
    "start_occupancy_report(minutes) to watch for a while: it answers at once with a "
    "job_id and its summary arrives later as another answer to the same call. Use "
    "fetch_counts(job_id, cursor) to read per-minute counts one page at a time. "
)
_ABOUT_LOG = (
    "Use visitors(minutes) for how many people came in and went out across the counting "
    "lines in the last minutes. From the --db log: crossings(period) per line, "
    "zone_visits(period, zone) for visits and dwell per zone, busiest(period) for the "
    "busiest minute; a period is 'all', 'today', 'yesterday', 'since 9', 'last N minutes' "
    "or 'last N hours', in the log's local time. When no tool answers the question as "
    "asked (another range, another quantity, the scene now without a source), call "
    "cannot_answer(reason, would_answer) instead of answering a different question. "
    "Answer briefly with the numbers. Do not describe people's appearance."
)
ASK_INSTRUCTION = (
    "You are Lookout, a camera agent answering questions about the people in view. "
    + _ABOUT_CAMERA
    + _ABOUT_LOG
)
# A question about the log (no source): no camera to look at, and no word of its tools.
ASK_LOG_INSTRUCTION = (
    "You are Lookout, a camera agent answering questions about the people a camera saw, "
    "from its event log; there is no camera to look at now. " + _ABOUT_LOG
)


class SaysCannot:
    """A log tool whose "cannot" (``ToolUnavailable``: no log, a log without a run or a line,
    a range it cannot read, a zone it does not have) is noted by call id: the question is
    then not answerable with what ``ask`` has (exit 4, said by the model), not an error on
    the way (exit 1)."""

    def __init__(self, tool: Tool, noted: set[str]) -> None:
        self.tool = tool
        self.noted = noted

    @property
    def name(self) -> str:
        return self.tool.name

    @property
    def is_streaming(self) -> bool:
        return self.tool.is_streaming

    @property
    def consumes_input(self) -> bool:
        return self.tool.consumes_input

    @property
    def is_long_running(self) -> bool:
        return self.tool.is_long_running

    def declaration(self) -> wire.FunctionDeclaration:
        return self.tool.declaration()

    def validate(self, args: Mapping[str, Any]) -> dict[str, Any]:
        return self.tool.validate(args)

    async def call(self, args: dict[str, Any], context: ToolContext) -> Any:
        try:
            return await self.tool.call(args, context)
        except ToolUnavailable:
            self.noted.add(context.call_id)
            raise

    def stream(self, args: dict[str, Any], context: ToolContext) -> AsyncIterator[dict[str, Any]]:
        return self.tool.stream(args, context)

    def coalesce(self, older: dict[str, Any], newer: dict[str, Any]) -> dict[str, Any]:
        return self.tool.coalesce(older, newer)


__all__ = ["ASK_INSTRUCTION", "ASK_LOG_INSTRUCTION", "SaysCannot"]
