"""The embedded offline model for request-response questions (``lookout ask``).

Deterministic and small, so a device answers with no network and no API key,
through exactly the runtime path Gemini takes (tool calls with ids, tickets,
late results, pages). It reads only the conversation it is sent: the question is
read whole into what it asks, where and when (``models/local/question.py``,
against the cameras, lines and zones the tools declare), and answered by the one
tool that answers exactly that:

* people in view now (or in a zone now) -> ``count_people_now``;
* a report over the next N minutes -> ``start_occupancy_report``, then every page of
  its per-minute counts (``fetch_counts`` with each ``next_cursor``) and a summary;
  a report's counts by its job id -> ``fetch_counts``;
* entries and exits, per line or in one direction -> ``crossings`` (the log), or
  ``visitors`` over the last minutes where only that is offered;
* zone visits and dwell -> ``zone_visits``; the busiest time, and the most people at
  once -> ``busiest``.

A question with a word it cannot place, or one it reads but no offered tool answers,
is refused (``cannot_answer``: why, and what it can answer instead), never answered
as the nearest question it resembles.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import anyio

from live import wire
from live.model import FunctionCallRequest
from live.turns.model import TurnReply, TurnRequest
from models.local.log_text import (
    BUSIEST,
    CROSSINGS,
    LOG_TOOLS,
    ZONES,
    lines_said,
    log_answer,
    what_i_answer,
)
from models.local.question import Names, Query, Unread, What, read_question
from models.local.time_spans import said_span

COUNT_NOW = "count_people_now"
REPORT = "start_occupancy_report"
FETCH = "fetch_counts"
VISITORS = "visitors"
CANNOT = "cannot_answer"
HELP = (
    "I can count the people in view now ('how many people?'), watch for a while and "
    "summarise ('report for 5 minutes'), read a report's per-minute counts "
    "('counts for job-...') and count who crossed the lines ('how many came in today?')."
)
NO_SOURCE = "no --source: this asks about now; give --source or ask about the log"
REPORT_DEFAULT_MINUTES = 1.0  # "report" with no span said


def people(n: int) -> str:
    return "1 person" if n == 1 else f"{n} people"


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
        self._now_zones: tuple[str, ...] = ()  # the zones count_people_now can count now

    async def generate(self, request: TurnRequest) -> TurnReply:
        await anyio.lowlevel.checkpoint()
        declared = {d.name for d in request.declarations if d.name}
        responses = request.last_function_responses()
        if responses:
            return self._after_tools(request, responses, declared)
        self._limits = {
            d.name: maximum(d, "minutes") for d in request.declarations if d.name is not None
        }
        self._now_zones = declared_names(request, only=COUNT_NOW).zones
        return self._answer_question(question_of(request), declared, declared_names(request))

    def _call(self, name: str, args: dict[str, Any]) -> FunctionCallRequest:
        return FunctionCallRequest(f"local-{next(self._ids)}", name, args)

    def _cannot(self, declared: set[str], reason: str, would_answer: str) -> TurnReply:
        if CANNOT not in declared:
            return TurnReply(text=f"I cannot answer that: {reason}. {would_answer}")
        args = {"reason": reason, "would_answer": would_answer}
        return TurnReply(calls=(self._call(CANNOT, args),))

    def _over_minutes(
        self, tool: str, minutes: float, declared: set[str], extra: dict[str, Any] | None = None
    ) -> TurnReply:
        """A call of ``tool`` over ``minutes``, or why not: past what the tool takes is
        never answered for another span."""
        most = self._limits.get(tool)
        if most is not None and minutes > most:
            what = "count visitors" if tool == VISITORS else "watch"
            return self._cannot(
                declared,
                f"I can {what} over at most {said_span(most)}, not {said_span(minutes)}",
                f"Ask about {said_span(most)} or less"
                + (" (with a log, ask about 'today' or 'yesterday')." if tool == VISITORS else "."),
            )
        args = {"minutes": round(minutes, 4), **(extra or {})}
        return TurnReply(calls=(self._call(tool, args),))

    def _answer_question(self, text: str, declared: set[str], names: Names) -> TurnReply:
        query = read_question(text, names)
        if isinstance(query, Unread):
            return self._cannot(declared, query.why, what_i_answer(declared) + ".")
        what, when = query.what, query.when
        if what is What.JOB:
            if FETCH not in declared:
                return self._cannot(
                    declared,
                    "a report's counts are kept in the database it was made with",
                    "Ask with --db PATH, the one the report was made with.",
                )
            return self._one(FETCH, {"job_id": query.job, "cursor": ""})
        if what is What.REPORT:
            if REPORT not in declared:
                return self._cannot(declared, NO_SOURCE, what_i_answer(declared) + ".")
            minutes = when.minutes if when.minutes is not None else REPORT_DEFAULT_MINUTES
            return self._over_minutes(REPORT, minutes, declared)
        if what is What.PEOPLE_NOW:
            if COUNT_NOW not in declared:
                return self._cannot(declared, NO_SOURCE, what_i_answer(declared) + ".")
            if query.zone and query.zone not in self._now_zones:
                return self._cannot(
                    declared,
                    f"zone {query.zone} is not set for the source looked at now",
                    f"Ask with --zone {query.zone}=X1,Y1,... (as lookout run had it).",
                )
            return self._one(COUNT_NOW, {"zone": query.zone} if query.zone else {})
        period = when.period
        if what is What.CROSSINGS:
            if VISITORS in declared and when.minutes is not None and not query.line:
                # The last N minutes: of a camera's wall clock, or of a recording's own
                # time (a replay run fast logged them in seconds): what visitors counts.
                return self._over_minutes(VISITORS, when.minutes, declared, _place(query, "camera"))
            if CROSSINGS in declared:
                args = {"period": period, **_place(query, "camera", "line")}
                if query.direction:
                    args["direction"] = query.direction
                return self._one(CROSSINGS, args)
            if VISITORS in declared:
                return self._cannot(
                    declared,
                    "here I count who came in and went out over the last minutes or hours only",
                    "Ask about 'the last N minutes/hours', or with --db PATH for days and hours.",
                )
            return self._cannot(
                declared,
                "entries and exits are read from the log of a run with lines",
                "Ask with --db PATH or --events PATH, the log lookout run --line ... wrote.",
            )
        tool = ZONES if what is What.ZONE_VISITS else BUSIEST
        if tool not in declared:
            return self._cannot(
                declared,
                "that is read from the log of a run, and none was given",
                "Ask with --db PATH or --events PATH, the log lookout run wrote.",
            )
        places = ("camera", "zone") if tool == ZONES else ("camera",)
        return self._one(tool, {"period": period, **_place(query, *places)})

    def _one(self, name: str, args: dict[str, Any]) -> TurnReply:
        return TurnReply(calls=(self._call(name, args),))

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
            where = f"in zone {payload['zone']}" if payload.get("zone") else "in view"
            count = payload.get("people")
            said = "an unknown number of people" if count is None else people(int(count))
            return (
                f"{said} {where} (frame {payload.get('frame')} at "
                f"{float(payload.get('t', 0.0)):.1f} s of {payload.get('source', 'the source')}).",
                None,
            )
        if name == REPORT:
            return self._report(payload, declared)
        if name == FETCH:
            return self._page(request, payload)
        if name == VISITORS:
            query = read_question(question_of(request), declared_names(request))
            return visitors_text(payload, query if isinstance(query, Query) else None), None
        if name in LOG_TOOLS:
            query = read_question(question_of(request), declared_names(request))
            return log_answer(name, payload, query if isinstance(query, Query) else None), None
        if name == CANNOT:
            said = f"I cannot answer that: {payload.get('reason', '')}."
            if payload.get("would_answer"):
                said += f" {payload['would_answer']}"
            return said, None
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


def _place(query: Query, *kinds: str) -> dict[str, str]:
    return {kind: getattr(query, kind) for kind in kinds if getattr(query, kind)}


def question_of(request: TurnRequest) -> str:
    """The question of this turn: the user's last text (parts before it are context)."""
    for content in reversed(request.contents):
        if content.role == "user":
            texts = [p.text for p in content.parts or [] if p.text]
            if texts:
                return texts[-1].strip()
    return ""


def declared_names(request: TurnRequest, only: str | None = None) -> Names:
    """The cameras, lines and zones the tools declare (their parameters' enums); ``only``:
    one tool's."""
    found: dict[str, list[str]] = {"camera": [], "line": [], "zone": []}
    for declaration in request.declarations:
        if only is not None and declaration.name != only:
            continue
        schema = declaration.parameters
        for name, field in ((schema.properties or {}) if schema is not None else {}).items():
            if name in found and field.enum:
                found[name].extend(v for v in field.enum if v not in found[name])
    return Names(tuple(found["camera"]), tuple(found["line"]), tuple(found["zone"]))


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


def visitors_text(payload: dict[str, Any], query: Query | None = None) -> str:
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
        each = " | ".join(f"{name}: {_lines_text(one, query)}" for name, one in cameras.items())
        total = payload.get("total") or {}
        said = f"{each} | in total: {total.get('in', 0)} in, {total.get('out', 0)} out"
        return f"In the last {window}{where}: {said}.{note}"
    camera = f", camera {payload['camera']}" if payload.get("camera") else ""
    return f"In the last {window}{where}{camera}: {_lines_text(payload, query)}.{note}"


def _lines_text(payload: dict[str, Any], query: Query | None = None) -> str:
    return lines_said(payload.get("lines") or {}, query.direction if query is not None else "")


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


__all__ = ["LocalTurnModel", "declared_names", "question_of", "summary", "visitors_text"]
