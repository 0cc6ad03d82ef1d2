"""The embedded offline model for request-response questions (``lookout ask``).

Deterministic and small, so a device answers with no network and no API key,
through exactly the runtime path Gemini takes (tool calls with ids, tickets,
late results, pages). It reads only the conversation it is sent:

* a question: "how many" / "count" / "people" -> ``count_people_now()``;
  "report" (with "N minutes" or "N seconds") -> ``start_occupancy_report``;
  a job id ("counts for job-...") -> ``fetch_counts`` from the first page;
  "visitors" / "came in" / "entries" / "exits" / "crossings" (with "N minutes",
  "N hours", "2 days", "the last week"; else the last hour) -> ``visitors(minutes)``;
  a span it cannot read, or past the tool's declared ``maximum``, is said to be, never
  answered for another span (``models/local/time_spans.py``);
* tool answers: it says what they mean; a finished report makes it read every
  page of per-minute counts (``fetch_counts`` with each ``next_cursor``), then
  it summarises.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import anyio

from live import wire
from live.model import FunctionCallRequest
from live.turns.model import TurnReply, TurnRequest
from models.local.log_text import (
    BUSIEST,
    CROSSINGS,
    DAY,
    LOG_TOOLS,
    SINCE,
    ZONES,
    camera_in,
    log_answer,
    period_in,
    what_i_answer,
    with_place,
)
from models.local.time_spans import names_a_time, said_span, span_minutes

COUNT_NOW = "count_people_now"
REPORT = "start_occupancy_report"
FETCH = "fetch_counts"
VISITORS = "visitors"
CANNOT = "cannot_answer"
NO_SOURCE = "no --source: this asks about now; give --source or ask about the log"
HELP = (
    "I can count the people in view now ('how many people?'), watch for a while and "
    "summarise ('report for 5 minutes'), read a report's per-minute counts "
    "('counts for job-...') and count who crossed the lines ('how many visitors in the "
    "last 10 minutes?')."
)
VISITORS_DEFAULT_MINUTES = 60.0  # "how many visitors?" with no time said: the last hour
_JOB_ID = re.compile(r"\bjob-[0-9a-f]{6,}\b")
COUNT_WORDS = re.compile(r"\b(how many|count|people|persons?|anyone|anybody|occupancy now)\b", re.I)
_REPORT_WORDS = re.compile(r"\b(report|survey|watch|monitor)\b", re.I)
# Asked before the count words: "how many visitors" is about crossings, not who is in view.
VISITOR_WORDS = re.compile(
    r"\b(visitors?|visits?|footfall|entries|entered|exits|exited|crossings?|crossed"
    r"|(?:came|come|coming|walked|went|gone|going) (?:in|out|inside|outside))\b",
    re.I,
)
_BUSIEST_WORDS = re.compile(r"\b(busiest|busy|peak|crowded|most people)\b", re.I)
_ZONE_WORDS = re.compile(r"\b(zones?|dwell\w*|stay\w*|stayed|linger\w*|wait\w*)\b", re.I)
_ZONE_NAME = re.compile(r"\b(?:at|in|inside)\s+(?:the\s+)?([a-z][\w-]*)", re.I)
_NOT_ZONES = {"last", "past", "previous", "morning", "afternoon", "evening", "today", "zone"}


def people(n: int) -> str:
    return "1 person" if n == 1 else f"{n} people"


def visitor_minutes(text: str) -> float:
    """The window a visitors question asks about ("N minutes/hours/days", "the last
    hour"), the last hour when it names none."""
    minutes = span_minutes(text)
    return VISITORS_DEFAULT_MINUTES if minutes is None else minutes


def maximum(declaration: wire.FunctionDeclaration, parameter: str) -> float | None:
    """The declared ``maximum`` of one of a function's parameters, where it has one."""
    schema = declaration.parameters
    field = (schema.properties or {}).get(parameter) if schema is not None else None
    return None if field is None or field.maximum is None else float(field.maximum)


class LocalTurnModel:
    """Implements ``live.turns.model.TurnModel`` without any network."""

    def __init__(self) -> None:
        self.name = "local"
        self._ids = itertools.count(1)
        # The most minutes each declared tool takes (its schema's ``maximum``), as a model
        # reads it: a span past it is said to be past it, not sent to fail.
        self._limits: dict[str, float | None] = {}

    async def generate(self, request: TurnRequest) -> TurnReply:
        await anyio.lowlevel.checkpoint()
        declared = {d.name for d in request.declarations if d.name}
        last = request.contents[-1] if request.contents else None
        responses = request.last_function_responses()
        if responses:
            return self._after_tools(request, responses, declared)
        # The question is the last text; parts before it are context (carried-over results).
        texts = [p.text for p in (last.parts or []) if p.text] if last else []
        self._limits = {
            d.name: maximum(d, "minutes") for d in request.declarations if d.name is not None
        }
        return self._answer_question(texts[-1].strip() if texts else "", declared)

    def _call(self, name: str, args: dict[str, Any]) -> FunctionCallRequest:
        return FunctionCallRequest(f"local-{next(self._ids)}", name, args)

    def _cannot(self, declared: set[str], reason: str, would_answer: str) -> TurnReply:
        if CANNOT not in declared:
            return TurnReply(text=f"I cannot answer that: {reason}. {would_answer}")
        args = {"reason": reason, "would_answer": would_answer}
        return TurnReply(calls=(self._call(CANNOT, args),))

    def _over_minutes(
        self,
        tool: str,
        text: str,
        declared: set[str],
        default: float,
        extra: dict[str, Any] | None = None,
    ) -> TurnReply:
        """A call of ``tool`` over the span the question names (``default`` when it names
        none), or why not: a time it names but cannot be read, or past what the tool takes,
        is never answered for another span."""
        minutes = span_minutes(text)
        if minutes is None and names_a_time(text):
            return self._cannot(
                declared,
                "I cannot read the time range of this question",
                "Ask over 'the last N minutes/hours/days'.",
            )
        minutes = default if minutes is None else minutes
        most = self._limits.get(tool)
        if most is not None and minutes > most:
            what = "count visitors" if tool == VISITORS else "watch"
            return self._cannot(
                declared,
                f"I can {what} over at most {said_span(most)}, not {said_span(minutes)}",
                f"Ask about {said_span(most)} or less"
                + (
                    " (with --db PATH, ask about 'today' or 'yesterday')."
                    if tool == VISITORS
                    else "."
                ),
            )
        args = {"minutes": round(minutes, 4), **(extra or {})}
        return TurnReply(calls=(self._call(tool, args),))

    def _answer_question(self, text: str, declared: set[str]) -> TurnReply:
        job = _JOB_ID.search(text)
        if job and FETCH in declared:
            return TurnReply(calls=(self._call(FETCH, {"job_id": job.group(0), "cursor": ""}),))
        about_log = bool(
            _BUSIEST_WORDS.search(text) or _ZONE_WORDS.search(text) or VISITOR_WORDS.search(text)
        )
        period = period_in(text) if about_log else "all"
        if about_log and CROSSINGS in declared and period is None:
            return self._cannot(
                declared,
                "I cannot read the time range of this question",
                "Ask over 'today', 'yesterday', 'since 9' or 'the last N minutes/hours'.",
            )
        if _BUSIEST_WORDS.search(text):
            if BUSIEST in declared:
                args = {"period": period, **with_place(text)}
                return TurnReply(calls=(self._call(BUSIEST, args),))
            return self._cannot(
                declared,
                "the busiest time is read from a log of counts, and none was given",
                "Ask with --db PATH, the log that lookout run --db PATH writes.",
            )
        if _ZONE_WORDS.search(text):
            if ZONES in declared:
                # A camera named as such is the camera; else the place is the zone's (a
                # camera's name there is taken as the camera by the tool).
                camera = camera_in(text)
                names = [m for m in _ZONE_NAME.findall(text) if m.lower() not in _NOT_ZONES]
                names = [n for n in names if n != camera]
                args = {"period": period, "zone": names[0] if names else ""}
                args = {**args, "camera": camera} if camera else args
                return TurnReply(calls=(self._call(ZONES, args),))
            return self._cannot(
                declared,
                "zones and dwell are read from a log of a run with zones, and none was given",
                "Ask with --db PATH after lookout run --zone NAME=... --db PATH.",
            )
        day_range = bool(DAY.search(text) or SINCE.search(text))
        if VISITOR_WORDS.search(text) and CROSSINGS in declared and day_range:
            args = {"period": period, **with_place(text)}
            return TurnReply(calls=(self._call(CROSSINGS, args),))
        if VISITOR_WORDS.search(text) and VISITORS in declared and day_range:
            return self._cannot(
                declared,
                "I can count visitors over the last minutes or hours, not a day or a clock time",
                "Ask about 'the last N minutes/hours', or with --db PATH for days and hours.",
            )
        if VISITOR_WORDS.search(text) and VISITORS in declared:
            return self._over_minutes(
                VISITORS, text, declared, VISITORS_DEFAULT_MINUTES, with_place(text)
            )
        if _REPORT_WORDS.search(text) and REPORT in declared:
            return self._over_minutes(REPORT, text, declared, 1.0)
        if COUNT_WORDS.search(text) and COUNT_NOW in declared:
            return TurnReply(calls=(self._call(COUNT_NOW, {}),))
        if (COUNT_WORDS.search(text) or _REPORT_WORDS.search(text)) and CROSSINGS in declared:
            return self._cannot(declared, NO_SOURCE, what_i_answer(declared) + ".")
        if CANNOT in declared:
            return self._cannot(
                declared, "I do not know which of my tools answers this", what_i_answer(declared)
            )
        return TurnReply(text=HELP)

    def _after_tools(
        self,
        request: TurnRequest,
        responses: list[wire.FunctionResponse],
        declared: set[str],
    ) -> TurnReply:
        texts: list[str] = []
        calls: list[FunctionCallRequest] = []
        for response in responses:
            payload = dict(response.response or {})
            name = response.name or ""
            text, call = self._answer(request, name, payload, declared)
            if text:
                texts.append(text)
            if call is not None:
                calls.append(call)
        return TurnReply(text=" ".join(texts), calls=tuple(calls))

    def _answer(
        self, request: TurnRequest, name: str, payload: dict[str, Any], declared: set[str]
    ) -> tuple[str, FunctionCallRequest | None]:
        """What to say about one tool answer, and the call to make next (if any)."""
        if payload.get("status") == "error":
            reason = payload.get("error", "no reason given")
            if name in (*LOG_TOOLS, VISITORS):  # the log cannot answer it, says what would
                return f"I cannot answer that: {reason}", None
            return f"Sorry, {name} failed: {reason}", None
        if name == COUNT_NOW:
            return (
                f"{people(int(payload.get('people', 0)))} in view "
                f"(frame {payload.get('frame')} at {float(payload.get('t', 0.0)):.1f} s "
                f"of {payload.get('source', 'the source')}).",
                None,
            )
        if name == REPORT:
            return self._report(payload, declared)
        if name == FETCH:
            return self._page(request, payload)
        if name == VISITORS:
            return visitors_text(payload), None
        if name == CANNOT:
            said = f"I cannot answer that: {payload.get('reason', '')}."
            if payload.get("would_answer"):
                said += f" {payload['would_answer']}"
            return said, None
        if name in LOG_TOOLS:
            return log_answer(name, payload), None
        return f"{name} answered {json.dumps(payload, sort_keys=True)}.", None

    def _report(
        self, payload: dict[str, Any], declared: set[str]
    ) -> tuple[str, FunctionCallRequest | None]:
        job_id = str(payload.get("job_id", "?"))
        status = payload.get("status")
        if status == "started":
            return f"Started occupancy report {job_id}; I will summarise it when it is done.", None
        if status == "running":
            return f"Report {job_id} is still running.", None
        if status != "succeeded":
            reason = payload.get("error", "no reason given")
            return f"The occupancy report {job_id} {status}: {reason}.", None
        if payload.get("periods") and FETCH in declared:
            return "", self._call(FETCH, {"job_id": job_id, "cursor": ""})
        return summary(payload), None

    def _page(
        self, request: TurnRequest, payload: dict[str, Any]
    ) -> tuple[str, FunctionCallRequest | None]:
        job_id = str(payload.get("job_id", ""))
        cursor = payload.get("next_cursor")
        if cursor:
            if not payload.get("counts") and not payload.get("complete"):
                return f"Report {job_id} has no more finished minutes yet.", None
            return "", self._call(FETCH, {"job_id": job_id, "cursor": cursor})
        pages = _pages_read(request, job_id)
        buckets = [b for page in pages for b in page.get("counts", [])]
        result = _report_result(request, job_id)
        lines = [summary(result)] if result else [f"Counts of {job_id}:"]
        for b in buckets:
            start, end = float(b.get("start_s", 0.0)), float(b.get("end_s", 0.0))
            lines.append(
                f"{_span(start, end)}: {b.get('min')}-{b.get('max')} (mean {b.get('mean')})"
            )
        return " ".join(lines) if len(lines) == 1 else "\n".join(lines), None


def summary(result: dict[str, Any]) -> str:
    if not result.get("samples"):
        return f"Report {result.get('job_id')} saw no frames."
    early = " (the source ended early)" if result.get("ended_early") else ""
    return (
        f"Occupancy over {float(result.get('watched_s', 0)):.0f} s of "
        f"{result.get('source', 'the source')}{early}: min {result.get('min')}, "
        f"max {result.get('max')}, mean {result.get('mean')} people, "
        f"{result.get('changes')} changes."
    )


def visitors_text(payload: dict[str, Any]) -> str:
    """What a ``visitors`` answer says: per line, who came in and who went out, and when."""
    minutes = float(payload.get("minutes", 0))
    window = f"{minutes:g} minute{'' if minutes == 1 else 's'}"
    if payload.get("clock") == "media":
        where = (
            f" of {payload.get('source') or 'the recording'} "
            f"({float(payload.get('from', 0)):.1f}-{float(payload.get('to', 0)):.1f} s)"
        )
    else:
        # Local ISO times: the clock time is what a person reads.
        start, end = str(payload.get("from", "")), str(payload.get("to", ""))
        where = f" ({start[11:19]}-{end[11:19]})" if len(start) >= 19 and len(end) >= 19 else ""
    note = f" ({payload['note']})" if payload.get("note") else ""
    cameras = payload.get("cameras")
    if isinstance(cameras, dict):  # a log of several cameras: each, and in total
        each = " | ".join(f"{name}: {_lines_text(one)}" for name, one in cameras.items())
        total = payload.get("total") or {}
        said = f"{each} | in total: {total.get('in', 0)} in, {total.get('out', 0)} out"
        return f"In the last {window}{where}: {said}.{note}"
    camera = f", camera {payload['camera']}" if payload.get("camera") else ""
    return f"In the last {window}{where}{camera}: {_lines_text(payload)}.{note}"


def _lines_text(payload: dict[str, Any]) -> str:
    lines = payload.get("lines") or {}
    counted = "; ".join(
        f"{name}: {counts.get('in', 0)} in, {counts.get('out', 0)} out"
        for name, counts in lines.items()
    )
    return counted or "no lines"


def _span(start: float, end: float) -> str:
    if start % 60 == 0 and end % 60 == 0:
        return f"minute {int(start // 60) + 1}"
    return f"{start:.0f}-{end:.0f} s"


def _report_result(request: TurnRequest, job_id: str) -> dict[str, Any] | None:
    for response in reversed(request.function_responses()):
        payload = response.response or {}
        if (
            response.name == REPORT
            and payload.get("job_id") == job_id
            and payload.get("status") == "succeeded"
        ):
            return dict(payload)
    return None


def _pages_read(request: TurnRequest, job_id: str) -> list[dict[str, Any]]:
    """The pages of ``job_id`` read since the walk last started from the first page."""
    pages: list[dict[str, Any]] = []
    for response in request.function_responses():
        payload = response.response or {}
        if response.name != FETCH or payload.get("job_id") != job_id or "counts" not in payload:
            continue
        counts = payload.get("counts") or []
        if counts and counts[0].get("period") == 0:
            pages = []  # a walk from the first page starts again
        pages.append(dict(payload))
    return pages


__all__ = [
    "LocalTurnModel",
    "period_in",
    "summary",
    "visitor_minutes",
    "visitors_text",
]
