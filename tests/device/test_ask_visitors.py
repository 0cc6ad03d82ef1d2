"""`lookout ask` and ``visitors(minutes)``: entries and exits per line from the ``--db`` log.

Logs written through the real SQLite event log (a camera restarted mid-window, a
recording), the tool's window and refusals, the local model's keywords, the command
(local model and Gemini against the fake ``generateContent`` server) and a real
``lookout run --line`` on the sample video followed by a question about it.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from google.genai import types

from device.app.ask.command import AskApp, AskOptions
from device.app.report.data import load_events
from device.config import build
from device.events import ClockStep, CountChanged, LineCrossed, RunStarted
from live.events import ErrorEvent, Event, ToolCall, ToolResult
from live.store.eventlog import SQLiteEventLog
from live.tool import ToolArgumentError
from live.turns.model import TurnRequest
from models.local.turns import LocalTurnModel
from tests.cli import lookout
from tests.datafiles import REPO_ROOT, data_file
from tests.fakelive import (
    FakeGenerateServer,
    GenerateRequest,
    ThreadedFakeGenerateServer,
    function_call_response,
    get_field,
    text_response,
)
from tests.recorder import Recorder
from tools.crossing_log import read_line_runs
from tools.occupancy import OccupancyTools
from tools.visitors import MAX_VISITORS_MINUTES, VisitorCounter
from tools.visitors import VisitorsUnavailable as Unavailable

W = 1_795_000_000.0  # a camera's first start, seconds since the epoch
DOOR = {"door": {"points": [[0.5, 0.1], [0.5, 0.9]]}}


def run_event(run_id: str, t: float, wall: float, *, live: bool, lines: dict[str, Any],
              command: str = "run", source: str = "rtsp://cam") -> RunStarted:  # fmt: skip
    return RunStarted(t=t, run_id=run_id, started="", started_wall=wall, source=source,
                      live=live, model="local", command=command,
                      config={"lines": lines})  # fmt: skip


def crossings(line: str, at: list[tuple[float, str]], t0: float = 0.0) -> list[Event]:
    """Crossings of ``line`` at session times ``t0 + t`` (media time ``t``)."""
    events: list[Event] = []
    ins = outs = 0
    for t, direction in at:
        ins, outs = ins + (direction == "in"), outs + (direction == "out")
        events.append(LineCrossed(t=t0 + t, line=line, direction=direction, track=len(events),
                                  t_media=t, total_in=ins, total_out=outs))  # fmt: skip
    return events


def write_log(db: Path, runs: list[tuple[str, list[Event]]]) -> Path:
    for session, events in runs:
        log = SQLiteEventLog(db, session=session)
        for event in events:
            log.record(event)
        log.close()
    return db


def camera_log(db: Path) -> Path:
    """Camera A from W (door: crossings at +10 ... +550 s), then restarted as B at W + 600
    with a second line (door at +630, +800; gate at +700), then an ``ask`` at W + 850."""
    a = [
        run_event("camA", 0.5, W, live=True, lines=DOOR),
        *crossings(
            "door", [(10, "in"), (100, "out"), (250, "in"), (400, "in"), (550, "out")], t0=0.5
        ),
    ]
    b = [
        run_event("camB", 0.2, W + 600, live=True, lines=DOOR | {"gate": DOOR["door"]}),
        *crossings("door", [(30, "out"), (200, "in")], t0=0.2),
        *crossings("gate", [(100, "in")], t0=0.2),
    ]
    ask = [run_event("ask1", 0.1, W + 850, live=False, lines=DOOR, command="ask")]
    return write_log(db, [("camA", a), ("camB", b), ("ask1", ask)])


def media_log(db: Path, name: str = "clip.mp4", run_id: str = "file1") -> Path:
    """A recording: door in at 5, 50; out at 20, 70 s of media; the file ends at 80 s."""
    events = [
        run_event(run_id, 0.3, W, live=False, lines=DOOR, source=f"/videos/{name}"),
        *crossings("door", [(5, "in"), (20, "out"), (50, "in"), (70, "out")], t0=0.3),
        CountChanged(t=80.3, count=None, previous=2, t_media=80.0, reason="source ended"),
    ]
    return write_log(db, [(run_id, events)])


def expected_wall(db: Path, start: float, end: float) -> dict[str, dict[str, int]]:
    """Crossings whose wall-clock time (the run's start + session time since its run event)
    lies in [start, end], counted straight from the log's rows."""
    import sqlite3

    with sqlite3.connect(db) as conn:
        rows = [(s, json.loads(d)) for s, d in conn.execute("SELECT session, data FROM events")]
    runs = {s: e for s, e in rows if e["type"] == "run"}
    table: dict[str, dict[str, int]] = {}
    for session, e in rows:
        if e["type"] == "crossing":
            wall = runs[session]["started_wall"] + e["t"] - runs[session]["t"]
            counts = table.setdefault(e["line"], {"in": 0, "out": 0})
            counts[e["direction"]] += start <= wall <= end
    return table


async def ask_visitors(counter: VisitorCounter, minutes: float) -> dict[str, Any]:
    return await counter.visitors(minutes)


# ------------------------------------------------------------------- the tool itself


@pytest.mark.anyio
async def test_a_camera_window_ends_now_and_spans_a_restart(tmp_path: Path) -> None:
    db = camera_log(tmp_path / "cam.db")
    counter = VisitorCounter(db, wall=lambda: W + 900)
    answer = await ask_visitors(counter, 10)
    # 10 minutes back from W + 900: door in at +400, out at +550 (run A), out at +630 and
    # in at +800 (run B), gate in at +700.
    assert answer["lines"] == {"door": {"in": 2, "out": 2}, "gate": {"in": 1, "out": 0}}
    assert answer["lines"] == expected_wall(db, W + 300, W + 900)
    assert answer["crossings"] == 5 and answer["clock"] == "wall" and answer["minutes"] == 10
    local = time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(W + 300))
    assert answer["from"] == local
    # The whole log, and a window with nobody in it (every line still named).
    everything = await ask_visitors(counter, 60)
    assert everything["lines"] == expected_wall(db, W - 2700, W + 900)
    assert everything["crossings"] == 8
    quiet = await ask_visitors(counter, 0.5)
    assert quiet["lines"] == {"door": {"in": 0, "out": 0}, "gate": {"in": 0, "out": 0}}


@pytest.mark.anyio
async def test_a_recording_window_ends_with_the_recording_in_media_time(tmp_path: Path) -> None:
    db = media_log(tmp_path / "file.db")
    counter = VisitorCounter(db, wall=lambda: 0.0)  # the wall clock plays no part
    half = await ask_visitors(counter, 0.5)
    assert half == {
        "minutes": 0.5, "clock": "media", "from": 50.0, "to": 80.0, "source": "clip.mp4",
        "lines": {"door": {"in": 1, "out": 1}}, "crossings": 2,
    }  # fmt: skip
    whole = await ask_visitors(counter, 10)
    assert (whole["from"], whole["to"], whole["lines"]) == (
        0.0,
        80.0,
        {"door": {"in": 2, "out": 2}},
    )
    # The newest run with lines decides the clock: a recording after a camera is read alone.
    camera_log(db)
    media_log(db, "later.mp4", run_id="file2")
    assert (await ask_visitors(counter, 10))["source"] == "later.mp4"


@pytest.mark.anyio
async def test_no_log_no_line_and_not_a_log_are_clear_answers(tmp_path: Path) -> None:
    with pytest.raises(Unavailable, match=r"^no event log to count visitors in: ask with --db"):
        await ask_visitors(VisitorCounter(None), 10)
    empty = write_log(tmp_path / "empty.db", [("s", [run_event("s", 0, W, live=True, lines={})])])
    with pytest.raises(Unavailable, match="no counting line is configured"):
        await ask_visitors(VisitorCounter(empty), 10)
    configured = await ask_visitors(VisitorCounter(empty, ("door",), wall=lambda: W), 10)
    assert configured["lines"] == {"door": {"in": 0, "out": 0}} and "note" in configured
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    with pytest.raises(Unavailable, match="not a Lookout event"):
        await ask_visitors(VisitorCounter(text), 10)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"minutes": 0}, f"minutes must be more than 0 and at most {MAX_VISITORS_MINUTES}, got 0"),
        ({"minutes": -3}, "must be more than 0 and at most"),
        ({"minutes": MAX_VISITORS_MINUTES + 1}, "must be more than 0 and at most"),
        ({"minutes": "ten"}, "minutes"),
        ({"minutes": float("nan")}, "minutes"),
        ({}, "minutes"),
        ({"minutes": 5, "line": "door"}, "line"),
    ],
)
def test_bad_arguments_are_refused_in_one_line(args: dict[str, Any], message: str) -> None:
    tool = VisitorCounter(None).tool()
    with pytest.raises(ToolArgumentError) as refused:
        tool.validate(args)
    text = str(refused.value)
    assert text.startswith("visitors: ") and message in text and "\n" not in text
    assert tool.validate({"minutes": 2.5}) == {"minutes": 2.5}


def test_read_line_runs_skips_asks_and_keeps_the_order(tmp_path: Path) -> None:
    runs = read_line_runs(camera_log(tmp_path / "cam.db"))
    assert [r.info["run_id"] for r in runs] == ["camA", "camB"]
    assert [r.lines for r in runs] == [["door"], ["door", "gate"]]
    assert [len(r.crossings) for r in runs] == [5, 3]


# ------------------------------------------------------------------- the local model


def question(text: str, *names: str) -> TurnRequest:
    return TurnRequest(
        contents=(types.Content(role="user", parts=[types.Part(text=text)]),),
        declarations=tuple(types.FunctionDeclaration(name=n) for n in names),
    )


TOOLS = ("count_people_now", "start_occupancy_report", "fetch_counts", "visitors")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("text", "call"),
    [
        ("how many visitors in the last 10 minutes?", ("visitors", {"minutes": 10.0})),
        ("How many people came in during the last hour?", ("visitors", {"minutes": 60.0})),
        ("entries and exits in the past 2 hours", ("visitors", {"minutes": 120.0})),
        ("how many people are there?", ("count_people_now", {})),
        ("report for 5 minutes", ("start_occupancy_report", {"minutes": 5.0})),
    ],
)
async def test_the_local_model_asks_visitors_for_visitor_questions(
    text: str, call: tuple[str, dict[str, Any]]
) -> None:
    reply = await LocalTurnModel().generate(question(text, *TOOLS))
    assert [(c.name, c.args) for c in reply.calls] == [call]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("how many visitors in the last 2 weeks?", "over at most 1 week, not 2 weeks"),
        ("visitors in the last 200 hours", "over at most 1 week, not 200 hours"),
        ("how many visitors this month?", "questions about 'month'"),
        ("how many came in since monday?", "over the last minutes or hours only"),
        ("how many visitors?", "over the last minutes or hours only"),  # never the last hour
        ("report for 2 days", "watch over at most 1 day, not 2 days"),
    ],
)
async def test_the_local_model_never_answers_a_span_it_cannot_ask_for_with_another(
    text: str, said: str
) -> None:
    """A span past what the tool declares (its schema's maximum), or one it cannot read,
    is said to be; the last hour (the default) is never counted instead."""
    counter = VisitorCounter(db=None)
    declarations = (counter.tool().declaration(), *(
        t.declaration() for t in OccupancyTools(SimpleNamespace(name="clip.mp4")).tools()
    ), types.FunctionDeclaration(name="cannot_answer"))  # fmt: skip
    request = TurnRequest(
        contents=(types.Content(role="user", parts=[types.Part(text=text)]),),
        declarations=declarations,
    )
    reply = await LocalTurnModel().generate(request)
    ((name, args),) = [(c.name, c.args) for c in reply.calls]
    assert name == "cannot_answer" and said in args["reason"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("text", "minutes"),
    [("visitors in the last 3 days", 4320.0), ("visitors in the last week", 10080.0),
     ("entries in the last 2 days and 3 hours", 3060.0)],
)  # fmt: skip
async def test_the_local_model_reads_days_and_weeks(text: str, minutes: float) -> None:
    reply = await LocalTurnModel().generate(question(text, *TOOLS))
    assert [(c.name, c.args) for c in reply.calls] == [("visitors", {"minutes": minutes})]


@pytest.mark.anyio
async def test_without_the_tool_the_local_model_does_not_pretend() -> None:
    reply = await LocalTurnModel().generate(question("how many visitors today?", "fetch_counts"))
    assert not reply.calls and "entries and exits are read from the log" in reply.text


# ------------------------------------------------------------------- lookout ask


@pytest.mark.slow
@pytest.mark.anyio
async def test_ask_answers_a_visitors_question_from_the_db(tmp_path: Path) -> None:
    db = camera_log(tmp_path / "cam.db")
    config = build(
        {"source": str(data_file("vtest.avi")), "model": "local", "pace": "fast", "db": db},
        config_path=None, environ={}, system_config=tmp_path / "absent.toml",
    )  # fmt: skip
    app = AskApp(config, AskOptions("how many visitors in the last 10 minutes?"),
                 out=io.StringIO(), err=io.StringIO(), watch_signals=False)  # fmt: skip
    app.visitors.wall = lambda: W + 900
    recorder = Recorder()
    app.sinks.append(recorder)
    assert await app.run() == 0
    (call,) = [e for e in recorder.events if isinstance(e, ToolCall)]
    assert (call.name, call.args) == ("visitors", {"minutes": 10.0})
    (result,) = [e for e in recorder.events if isinstance(e, ToolResult)]
    assert result.response["lines"] == expected_wall(db, W + 300, W + 900)
    start, end = (time.strftime("%H:%M:%S", time.localtime(W + s)) for s in (300, 900))
    assert app.out.getvalue() == (  # type: ignore[attr-defined]
        f"In the last 10 minutes ({start}-{end}): 2 came in at door; 1 came in at gate.\n"
    )
    assert not [e for e in recorder.events if isinstance(e, ErrorEvent)]


@pytest.mark.anyio
async def test_a_log_without_a_line_is_not_answerable_and_says_what_would(tmp_path: Path) -> None:
    db = write_log(tmp_path / "zones.db", [("s", [run_event("s", 0, W, live=True, lines={})])])
    config = build({"model": "local", "db": db}, config_path=None, environ={},
                   system_config=tmp_path / "absent.toml")  # fmt: skip
    app = AskApp(config, AskOptions("how many visitors in the last 10 minutes?"),
                 out=io.StringIO(), err=io.StringIO(), watch_signals=False)  # fmt: skip
    assert await app.run() == 4
    said = app.out.getvalue()  # type: ignore[attr-defined]
    assert said.startswith("I cannot answer that: no counting line is configured, and ")
    assert "run lookout run --line NAME=X1,Y1,X2,Y2 --db with this file" in said
    shown = app.err.getvalue().splitlines()  # type: ignore[attr-defined]
    assert not [line for line in shown if line.startswith("error")], shown


@pytest.mark.slow
def test_lookout_ask_visitors_from_the_command_line(tmp_path: Path) -> None:
    db = media_log(tmp_path / "file.db")
    video = str(data_file("vtest.avi"))
    asked = lookout("ask", "how many visitors in the last 0.5 minutes?", "--db", str(db),
                    "--source", video)  # fmt: skip
    assert asked.returncode == 0, asked.stderr
    assert asked.stdout == "In the last 0.5 minutes of clip.mp4 (50.0-80.0 s): 1 came in at door.\n"
    assert "-> visitors(minutes=0.5)" in asked.stderr and "Traceback" not in asked.stderr
    # A bad window is refused in one line; no log is said plainly. Neither is a traceback.
    bad = lookout("ask", "visitors in the last 0 minutes", "--db", str(db), "--source", video)
    # A call refused for its arguments is the question not answerable as asked (exit 4),
    # said on stdout; on stderr it is the tool's answer, not an error line.
    assert bad.returncode == 4 and "Traceback" not in bad.stderr
    assert "visitors: minutes must be more than 0 and at most 10080, got 0.0" in bad.stdout
    assert not [x for x in bad.stderr.splitlines() if x.startswith("error")], bad.stderr
    # No log to count in: not answerable with what ask has (exit 4), said once, on stdout
    # with what would answer it; on stderr only as the tool's answer, not as an error.
    none = lookout("ask", "how many visitors?", "--source", video)
    assert none.returncode == 4 and "Traceback" not in none.stderr
    assert none.stdout.startswith("I cannot answer that: no event log to read: ")
    assert "ask with --db PATH" in none.stdout and len(none.stdout.splitlines()) == 1
    assert not [x for x in none.stderr.splitlines() if x.startswith("error")], none.stderr


# ------------------------------------------------------------------- Gemini


@pytest.fixture
def gemini() -> Iterator[ThreadedFakeGenerateServer]:
    with FakeGenerateServer.run_in_thread() as srv:
        yield srv


def gemini_ask(server: ThreadedFakeGenerateServer, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "device.cli", "ask", *args, "--model", "gemini-test-model"],
        cwd=REPO_ROOT, env=server.subprocess_env(api_key="visitors-test-key-0123456789"),
        capture_output=True, text=True, timeout=90, check=False,
    )  # fmt: skip


def function_response(req: GenerateRequest, call_id: str) -> dict[str, Any] | None:
    for response in req.function_responses():
        if response.id == call_id and isinstance(response.response, dict):
            return response.response
    return None


@pytest.mark.slow
def test_gemini_calls_visitors_and_gets_the_counts_or_the_refusal(
    gemini: ThreadedFakeGenerateServer, tmp_path: Path
) -> None:
    db = media_log(tmp_path / "file.db")

    def step(req: GenerateRequest) -> dict[str, Any]:
        texts = [get_field(p, "text") for c in req.contents for p in get_field(c, "parts") or []]
        minutes = -5 if "negative" in " ".join(t for t in texts if isinstance(t, str)) else 0.5
        body = function_response(req, "fc-v")
        if body is None:
            return function_call_response([("fc-v", "visitors", {"minutes": minutes})])
        return text_response(json.dumps(body))

    gemini.set_responder(step)
    video = str(data_file("vtest.avi"))
    result = gemini_ask(gemini, "visitors lately?", "--db", str(db), "--source", video)
    assert result.returncode == 0, result.stderr
    declared = gemini.requests[0].declaration("visitors")
    schema = get_field(declared, "parameters") or {}
    assert get_field(schema, "required") == ["minutes"]
    assert "at most 10080" in str(
        get_field(get_field(schema, "properties")["minutes"], "description")
    )
    assert json.loads(result.stdout) == {
        "minutes": 0.5, "clock": "media", "from": 50.0, "to": 80.0, "source": "clip.mp4",
        "lines": {"door": {"in": 1, "out": 1}}, "crossings": 2,
    }  # fmt: skip
    refused = gemini_ask(gemini, "negative visitors?", "--db", str(db), "--source", video)
    assert "Traceback" not in refused.stderr
    assert json.loads(refused.stdout) == {
        "status": "error",
        "error": "visitors: minutes must be more than 0 and at most 10080, got -5",
    }


# ------------------------------------------------------------------- a real run


@pytest.mark.slow
@pytest.mark.usefixtures("remembered_detections")
def test_visitors_after_a_real_run_equals_its_crossings_in_the_window(tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    (tmp_path / "empty.toml").write_text("")
    video = str(data_file("vtest.avi"))
    ran = lookout(
        "run", "--source", video, "--model", "local", "--pace", "fast", "--no-http",
        "--duration", "15", "--line", "post=0.5599,0.7292,0.5599,0.2083", "--db", str(db),
        "--config", str(tmp_path / "empty.toml"), timeout=90,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    logged = load_events(db)
    found = [e for e in logged if e["type"] == "crossing"]
    assert len(found) >= 3, "the sample video should cross the post line"
    end = max(e["t_media"] for e in logged if isinstance(e.get("t_media"), int | float))
    asked = lookout("ask", "how many came in and went out in the last 0.1 minutes?",
                    "--db", str(db), "--source", video,
                    "--config", str(tmp_path / "empty.toml"))  # fmt: skip
    assert asked.returncode == 0, asked.stderr
    window = [e for e in found if end - 6.0 <= e["t_media"] <= end]
    ins = sum(1 for e in window if e["direction"] == "in")
    outs = sum(1 for e in window if e["direction"] == "out")
    # The recording's own last 6 s, up to its end, as the answer says them.
    said = re.fullmatch(
        r"In the last 0\.1 minutes of \S+ \(([\d.]+)-([\d.]+) s\): post: (\d+) in, (\d+) out\.\n",
        asked.stdout,
    )
    assert said is not None, asked.stdout
    assert float(said.group(2)) == pytest.approx(end, abs=0.06)
    assert (int(said.group(3)), int(said.group(4))) == (ins, outs)


@pytest.mark.anyio
async def test_visitors_follow_a_step_of_the_system_clock_during_the_run(tmp_path: Path) -> None:
    """A Pi without a real-time clock boots three days behind; NTP steps the clock 60 s
    into the run. The run's start is on the old clock, the crossings after the step
    happened *now*: "the last 10 minutes" counts them, as the device logged the step."""
    behind = 3 * 86400.0
    now = W + 3600.0
    started = now - 300 - behind  # the run started 5 min ago, on the clock then
    events: list[Event] = [
        run_event("cam", 0.5, started, live=True, lines=DOOR),
        *crossings("door", [(10, "in"), (30, "out")], t0=0.5),  # before the step
        ClockStep(t=60.5, step_s=behind, wall=started + 60 + behind),
        *crossings("door", [(100, "in"), (200, "in"), (250, "out")], t0=0.5),
    ]
    db = write_log(tmp_path / "x.db", [("cam", events)])
    counter = VisitorCounter(db, wall=lambda: now)
    answer = await ask_visitors(counter, 10.0)
    # All five happened within the last 10 minutes of the real clock.
    assert answer["lines"] == {"door": {"in": 3, "out": 2}}
    answer = await ask_visitors(counter, 2.0)  # the last two: at now - 100 s and - 50 s
    assert answer["lines"] == {"door": {"in": 1, "out": 1}}
