"""`lookout ask` with a Gemini model: the real CLI process, the real google-genai SDK over
TLS, the real detector on the real video, against the fake ``generateContent`` server.

The fake is scripted by a responder that plays a tiny "Gemini": it looks at the last
content of each request (the question, or a function response) and answers with a function
call, a text or an error. Waiting is on the subprocess (with a deadline), never a sleep.
"""

from __future__ import annotations

import functools
import json
import re
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import cv2
import pytest

from device.app.ask.command import ASK_INSTRUCTION
from device.vision.frame import Frame
from device.vision.perception import Perception
from models.detector import PersonDetector
from tests.datafiles import REPO_ROOT, data_file
from tests.fakelive import (
    FakeGenerateServer,
    FakeHttpError,
    GenerateRequest,
    ThreadedFakeGenerateServer,
    error_response,
    function_call_response,
    get_field,
    text_response,
)

pytestmark = pytest.mark.slow

MODEL = "gemini-test-model"
API_KEY = "ask-test-key-0123456789-abcdef"
TOOL_NAMES = {"count_people_now", "start_occupancy_report", "fetch_counts", "visitors",
              "crossings", "zone_visits", "busiest", "cannot_answer"}  # fmt: skip

Answer = dict[str, Any] | FakeHttpError


@pytest.fixture
def server() -> Iterator[ThreadedFakeGenerateServer]:
    with FakeGenerateServer.run_in_thread() as srv:
        yield srv


@pytest.fixture(scope="module")
def video() -> Path:
    return data_file("vtest.avi")


def ask(
    server: ThreadedFakeGenerateServer, question: str, *args: str, timeout: float = 90
) -> subprocess.CompletedProcess[str]:
    """Run ``lookout ask`` to the end against the fake (the responder answers meanwhile)."""
    return subprocess.run(
        [sys.executable, "-m", "device.cli", "ask", question, "--model", MODEL, *args],
        cwd=REPO_ROOT,
        env=server.subprocess_env(api_key=API_KEY),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def events_of(tmp_path: Path) -> list[dict[str, Any]]:
    return read_jsonl(tmp_path / "ev.jsonl")


def jobs_table(db: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT job_id, name, state, data FROM jobs").fetchall()
    return [
        {"job_id": job_id, "name": name, "state": state, "data": json.loads(data)}
        for job_id, name, state, data in rows
    ]


# ----------------------------------------------------------------- reading one request


@dataclass(frozen=True)
class LastTurn:
    """The last content of a request: the user's text or the function responses it carries."""

    role: str | None
    text: str | None
    responses: list[tuple[str | None, str | None, dict[str, Any]]]

    def response(self, call_id: str) -> dict[str, Any] | None:
        for rid, _, body in self.responses:
            if rid == call_id:
                return body
        return None


def last_turn(req: GenerateRequest) -> LastTurn:
    contents = req.contents
    if not contents:
        return LastTurn(None, None, [])
    last = contents[-1]
    texts: list[str] = []
    responses: list[tuple[str | None, str | None, dict[str, Any]]] = []
    for part in get_field(last, "parts", []) or []:
        text = get_field(part, "text")
        if isinstance(text, str):
            texts.append(text)
        fr = get_field(part, "function_response")
        if isinstance(fr, dict):
            body = get_field(fr, "response")
            responses.append(
                (get_field(fr, "id"), get_field(fr, "name"), body if isinstance(body, dict) else {})
            )
    return LastTurn(get_field(last, "role"), "".join(texts) if texts else None, responses)


@dataclass
class Script:
    """A responder that records what it saw and answers from ``step`` (on the fake's thread)."""

    step: Callable[[GenerateRequest, LastTurn], Answer]
    seen: list[LastTurn] = field(default_factory=list)
    unscripted: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, req: GenerateRequest) -> Answer:
        turn = last_turn(req)
        with self.lock:
            self.seen.append(turn)
        answer = self.step(req, turn)
        if isinstance(answer, FakeHttpError) and answer.status == 418:
            with self.lock:
                self.unscripted.append(f"request {req.index}: {turn}")
        return answer


def unscripted(turn: LastTurn) -> FakeHttpError:
    # 418: not an answer any real model gives, so the test can tell its own script ran out.
    return error_response(418, f"the test's script has no answer for {turn}", "UNSCRIPTED")


def assert_clean(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr, result.stderr
    assert API_KEY not in result.stdout + result.stderr


# ----------------------------------------------------------------- count now


def people_on_frame(video: Path, index: int) -> tuple[int, int]:
    """The device's count and the detector's boxes on frame ``index`` of the file, when it
    is the first frame looked at (read in order, as the source does: seeking is not frame
    exact in every container)."""
    capture = cv2.VideoCapture(str(video))
    try:
        for _ in range(index):
            assert capture.grab(), f"{video} ended before frame {index}"
        ok, image = capture.read()
        assert ok, f"{video} has no frame {index}"
    finally:
        capture.release()
    perception = Perception(PersonDetector(threshold=0.2), detect_fps=2.0)
    frame = Frame(image, t_media=index / 10.0, index=index)
    percept = anyio.run(functools.partial(perception.process, frame, force=True))
    assert percept is not None and percept.count is not None
    return percept.count, percept.raw


def test_count_people_now_round_trip(server: ThreadedFakeGenerateServer, video: Path) -> None:
    question = "how many people are there?"

    def step(req: GenerateRequest, turn: LastTurn) -> Answer:
        if turn.role == "user" and turn.text == question:
            return function_call_response([("fc-1", "count_people_now", {})])
        counted = turn.response("fc-1")
        if counted is not None and "people" in counted:
            return text_response(f"There are {counted['people']} people.")
        return unscripted(turn)

    script = Script(step)
    server.set_responder(script)
    started = time.monotonic()
    result = ask(server, question, "--source", str(video))
    elapsed = time.monotonic() - started

    assert not script.unscripted, script.unscripted
    assert_clean(result)
    assert result.returncode == 0, result.stderr
    requests = server.requests
    assert len(requests) == 2, [last_turn(r) for r in requests]
    first, second = requests

    # What every request says about the tools, the instruction and the key.
    assert first.model == MODEL and first.api_key == API_KEY
    assert all(r.api_key == API_KEY for r in requests)
    assert first.system_instruction() == ASK_INSTRUCTION
    assert sorted(first.declaration_names()) == sorted(TOOL_NAMES)
    assert len(first.function_declarations()) == len(TOOL_NAMES)
    for declaration in first.function_declarations():
        assert get_field(declaration, "behavior") is None, declaration
        assert "behavior" not in json.dumps(declaration)
        assert get_field(declaration, "description"), declaration
    assert first.user_texts() == [question]

    def params(name: str) -> tuple[dict[str, Any], set[str]]:
        schema = get_field(first.declaration(name), "parameters") or {}
        properties = get_field(schema, "properties") or {}
        return properties, set(get_field(schema, "required") or [])

    properties, required = params("count_people_now")
    assert properties == {} and required == set()
    properties, required = params("start_occupancy_report")
    assert set(properties) == {"minutes"} and required == {"minutes"}
    assert str(get_field(properties["minutes"], "type")).upper() == "NUMBER"
    properties, required = params("fetch_counts")
    assert set(properties) == {"job_id", "cursor"}
    assert "job_id" in required
    assert str(get_field(properties["job_id"], "type")).upper() == "STRING"
    assert str(get_field(properties["cursor"], "type")).upper() == "STRING"
    properties, required = params("visitors")
    # The log's tools take a camera (issue 34): optional, a log of one camera needs none.
    assert set(properties) == {"minutes", "camera"} and required == {"minutes"}
    assert str(get_field(properties["camera"], "type")).upper() == "STRING"
    assert str(get_field(properties["minutes"], "type")).upper() == "NUMBER"

    # The call went back with the model's id and name, and the detector's real count.
    (response,) = second.function_responses()
    assert (response.id, response.name) == ("fc-1", "count_people_now")
    body = response.response
    assert set(body) == {"people", "in_last_frame", "frame", "t", "source"}
    assert body["source"] == video.name  # not where it lives on disk
    # The device's count of that frame, as lookout run would say it, and its boxes.
    assert (body["people"], body["in_last_frame"]) == people_on_frame(video, int(body["frame"]))
    # The history carries the model's own call back, as it was.
    (call,) = second.function_calls()
    assert (call.id, call.name) == ("fc-1", "count_people_now")

    assert result.stdout == f"There are {body['people']} people.\n"
    assert "-> count_people_now()  [fc-1]" in result.stderr
    assert elapsed < 60


# ----------------------------------------------------------------- occupancy report


REPORT_QUESTION = "report for 0.5 minutes"


@dataclass
class ReportScript:
    """Start a report, say "Started.", then on the final result page through its counts."""

    fail_final: bool = False
    pages_asked: list[tuple[str, str]] = field(default_factory=list)  # (call id, cursor)

    def final(self, req: GenerateRequest) -> dict[str, Any] | None:
        for response in req.function_responses():
            body = response.response
            if response.id == "fc-r" and isinstance(body, dict) and body["status"] != "started":
                return body
        return None

    def page_call(self, job_id: str, cursor: str) -> dict[str, Any]:
        call_id = f"fc-p{len(self.pages_asked) + 1}"
        self.pages_asked.append((call_id, cursor))
        return function_call_response(
            [(call_id, "fetch_counts", {"job_id": job_id, "cursor": cursor})]
        )

    def __call__(self, req: GenerateRequest, turn: LastTurn) -> Answer:
        if turn.role == "user" and turn.text == REPORT_QUESTION:
            return function_call_response([("fc-r", "start_occupancy_report", {"minutes": 0.5})])
        report = turn.response("fc-r")
        if report is not None and report.get("status") == "started":
            return text_response("Started.")
        if report is not None and report.get("status") == "succeeded":
            if self.fail_final:
                return error_response(503, "The model is overloaded. Please try again later.")
            return self.page_call(str(report["job_id"]), "")
        if len(turn.responses) == 1 and turn.responses[0][1] == "fetch_counts":
            page = turn.responses[0][2]
            final = self.final(req)
            if final is None or page.get("status") == "error":
                return unscripted(turn)
            if page.get("next_cursor"):
                return self.page_call(str(final["job_id"]), str(page["next_cursor"]))
            return text_response(f"Done: max {final['max']}.")
        return unscripted(turn)


def report_args(video: Path, tmp_path: Path) -> list[str]:
    return [
        "--source", str(video), "--pace", "fast", "--period", "10", "--page-size", "2",
        "--db", str(tmp_path / "x.db"),
    ]  # fmt: skip


def test_occupancy_report_result_comes_back_on_the_ticket_call_and_pages_once(
    server: ThreadedFakeGenerateServer, video: Path, tmp_path: Path
) -> None:
    report = ReportScript()
    script = Script(report)
    server.set_responder(script)
    result = ask(server, REPORT_QUESTION, *report_args(video, tmp_path))

    assert not script.unscripted, script.unscripted
    assert_clean(result)
    assert result.returncode == 0, result.stderr
    requests = server.requests

    # The ticket went back at once, on the model's call id.
    ticket = last_turn(requests[1])
    assert [(rid, name) for rid, name, _ in ticket.responses] == [
        ("fc-r", "start_occupancy_report")
    ]
    ticket_body = ticket.responses[0][2]
    assert ticket_body["status"] == "started"
    job_id = ticket_body["job_id"]

    # The final result: a second answer to the same call, once, with the summary.
    finals = [
        i
        for i, r in enumerate(requests)
        if (b := last_turn(r).response("fc-r")) is not None and b["status"] == "succeeded"
    ]
    assert len(finals) == 1, [last_turn(r) for r in requests]
    final_turn = last_turn(requests[finals[0]])
    ((final_id, final_name, final),) = final_turn.responses
    assert (final_id, final_name) == ("fc-r", "start_occupancy_report")
    assert final["job_id"] == job_id
    assert final["samples"] == 60 and final["periods"] == 3 and final["pages"] == 2
    assert {"min", "max", "mean", "changes"} <= set(final)
    # Both answers to fc-r are in the history, the ticket first.
    answers = [r.response["status"] for r in requests[-1].function_responses() if r.id == "fc-r"]
    assert answers == ["started", "succeeded"]

    # Each page asked for once, each period seen once across the pages.
    pages = [
        t.responses[0]
        for t in map(last_turn, requests)
        if t.responses and t.responses[0][1] == "fetch_counts"
    ]
    assert [p[0] for p in pages] == ["fc-p1", "fc-p2"]
    first_page = pages[0][2]
    assert first_page["next_cursor"] and first_page["complete"] is False
    assert report.pages_asked == [("fc-p1", ""), ("fc-p2", first_page["next_cursor"])]
    periods = [row["period"] for _, _, page in pages for row in page["counts"]]
    assert sorted(periods) == [0, 1, 2] and len(periods) == 3
    assert pages[-1][2]["next_cursor"] is None and pages[-1][2]["complete"] is True
    assert max(row["max"] for _, _, page in pages for row in page["counts"]) == final["max"]

    # The calls as stderr says them ("-> name(args)  [id]"): ask writes no log of its own.
    calls = [
        (m.group(2), m.group(1))
        for m in re.finditer(r"^-> (\w+)\(.*\)\s+\[([\w-]+)\]$", result.stderr, re.M)
    ]
    assert calls == [
        ("fc-r", "start_occupancy_report"),
        ("fc-p1", "fetch_counts"),
        ("fc-p2", "fetch_counts"),
    ]

    # Progress went to people (stderr) and never to the model.
    messages = set(re.findall(rf"^job {job_id}: (.+)$", result.stderr, re.M))
    assert messages
    for req in requests:
        wire = json.dumps(req.body)
        assert "progress" not in wire.lower(), req.index
        assert not [m for m in messages if m in wire], req.index
    assert f"job {job_id}: " in result.stderr  # the progress lines people see

    # The answer: both texts on stdout, nothing else.
    assert result.stdout == f"Started.\nDone: max {final['max']}.\n"

    # The job store: succeeded and delivered, with its result.
    (job,) = jobs_table(tmp_path / "x.db")
    assert job["job_id"] == job_id and job["name"] == "start_occupancy_report"
    assert job["state"] == "succeeded"
    assert job["data"]["state"] == "succeeded" and job["data"]["delivered"] is True
    assert job["data"]["result"]["max"] == final["max"]
    assert job["data"]["call_id"] == "fc-r"


def test_a_report_survives_the_model_failing_on_its_result(
    server: ThreadedFakeGenerateServer, video: Path, tmp_path: Path
) -> None:
    script = Script(ReportScript(fail_final=True))
    server.set_responder(script)
    result = ask(server, REPORT_QUESTION, *report_args(video, tmp_path))

    assert not script.unscripted, script.unscripted
    assert_clean(result)
    assert result.returncode == 1, result.stderr
    requests = server.requests
    finals = [
        r.t
        for r in requests
        if (b := last_turn(r).response("fc-r")) is not None and b["status"] == "succeeded"
    ]
    # Every delivery attempt carried the result, with the runner's backoff between them.
    assert len(finals) == 3, [last_turn(r) for r in requests]
    assert finals[1] - finals[0] >= 0.9 and finals[2] - finals[1] >= 1.9
    assert len(requests) == 2 + 3

    assert result.stdout == "Started.\n"
    assert "503" in result.stderr
    assert "has not reached the model yet" in result.stderr
    (job,) = jobs_table(tmp_path / "x.db")
    assert job["state"] == "succeeded"
    data = job["data"]
    assert data["state"] == "succeeded" and data["delivered"] is False
    assert data["result"] is not None and data["result"]["samples"] == 60
    assert {"min", "max", "mean", "changes"} <= set(data["result"])


# ----------------------------------------------------------------- model failures


@pytest.mark.parametrize(
    ("status", "words"),
    [(503, ("503", "UNAVAILABLE")), (400, ("400", "INVALID_ARGUMENT"))],
)
def test_a_failing_model_exits_1_with_one_clear_line(
    server: ThreadedFakeGenerateServer, video: Path, status: int, words: tuple[str, ...]
) -> None:
    message = {503: "The model is overloaded.", 400: "Request contains an invalid argument."}
    server.set_responder(lambda req: error_response(status, message[status]))
    started = time.monotonic()
    result = ask(server, "how many people are there?", "--source", str(video), timeout=60)
    elapsed = time.monotonic() - started

    assert result.returncode == 1, result.stderr
    assert_clean(result)
    assert result.stdout == ""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    problem = [line for line in lines if all(w in line for w in words)]
    assert len(problem) == 1, result.stderr
    assert MODEL in problem[0] and message[status] in problem[0]
    assert len(lines) == 1, result.stderr
    # No retry of a question: one request, then the exit.
    assert len(server.requests) == 1
    assert elapsed < 30
