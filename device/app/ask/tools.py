"""What ``lookout ask`` tells the model, and how a log tool's "cannot" is told apart.

A question is offered the log's tools (--db or --events) and the scene's (now: the
--source, or the sample video, opened when asked), unless it is asked of a log of earlier
runs without a --source: then "now" would be another camera's, so no scene tool is
offered and the instruction names none (a model told of a tool it was not given calls it
anyway). A report's counts (fetch_counts) are offered wherever --db keeps them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from live import wire
from live.tool import Tool, ToolContext, ToolUnavailable

_ABOUT_CAMERA = (
    "Use count_people_now for how many people are in view now (zone: in one zone now). Use "
    "start_occupancy_report(minutes) to watch for a while from now on: it answers at once "
    "with a job_id and its summary arrives later as another answer to the same call. Use "
    "fetch_counts(job_id, cursor) to read a report's per-minute counts one page at a time. "
)
_ABOUT_LOG = (
    "From the log of earlier runs: crossings(period, camera, line, direction) for how many "
    "came in ('in') or went out ('out') per line, zone_visits(period, zone) for visits and "
    "dwell per zone, busiest(period) for the busiest minute and the most people at once; "
    "visitors(minutes) for the last minutes. A period is 'all', 'today', 'yesterday', "
    "'today 09:00-12:00', 'since 9', 'last N minutes', 'last N hours' or a weekday, in the "
    "log's local time. Answer only the question asked: when a word of it is not about "
    "people in view, crossings, zones, dwell or the busiest time (a colour, clothes, an "
    "animal, a car, the weather, a name you were not given, why someone came), or no tool "
    "answers it as asked (another range, another quantity), call "
    "cannot_answer(reason, would_answer) instead of answering a different question. "
    "Answer briefly with the numbers. Do not describe people's appearance."
)
ASK_INSTRUCTION = (
    "You are Lookout, a camera agent answering questions about the people in view. "
    + _ABOUT_CAMERA
    + _ABOUT_LOG
)
# A log of earlier runs and no source: no camera to look at now, and no word of its tools
# (a model told of a tool it was not given calls it anyway, or answers without the log).
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
