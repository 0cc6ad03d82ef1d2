"""`lookout ask --db LOG` with Gemini: the log's tools are declared (and the camera's are
not), the model's calls run on the real log and their answers go back to it, and a question
the log cannot answer ends with exit 4. The real CLI process and the real google-genai SDK
over TLS, against the fake ``generateContent`` server scripted as a model would answer.

The log is small and written by hand through the device's own SQLite event log: a 30
minute recording of a shop door that started at 08:50 (+02:00), with crossings before and
after 09:00 and a zone visit, so that "since 9" in the log's own day has one answer, and the
command runs with TZ=UTC so that the machine's own day would give another.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from device.app.ask.command import EXIT_UNANSWERED, AskApp, AskOptions
from device.app.describe import describe_config
from device.app.report.data import load_events
from device.config import Config, build
from device.events import CountChanged, DwellPassed, LineCrossed, RunStarted, ZoneCount
from live.events import Event
from live.store.eventlog import SQLiteEventLog
from tests.cli import lookout
from tests.datafiles import REPO_ROOT
from tests.device.test_gemini_ask import LastTurn, Script, assert_clean, unscripted
from tests.fakelive import (
    FakeGenerateServer,
    GenerateRequest,
    ThreadedFakeGenerateServer,
    function_call_response,
    text_response,
)
from tests.fakelive.rest import FakeHttpError

pytestmark = pytest.mark.slow

MODEL = "gemini-test-model"
API_KEY = "ask-log-test-key-0123456789"
LOG_TOOLS = {"visitors", "crossings", "zone_visits", "busiest", "cannot_answer"}
CAMERA_TOOLS = {"count_people_now", "start_occupancy_report", "fetch_counts"}

TZ = timezone(timedelta(hours=2))
STARTED = datetime(2024, 5, 14, 8, 50, tzinfo=TZ)  # the recording's first frame
NINE = STARTED.replace(hour=9, minute=0)
# Seconds into the run: (t, direction) at the door; two before 09:00, four after.
DOOR_CROSSINGS = [(240, "in"), (420, "out"), (660, "in"), (780, "in"), (1020, "out"), (1200, "in")]
END_S = 1800.0  # the recording ends at 09:20


def shop_log(db: Path) -> Path:
    """The recording's ``lookout run --line door=... --zone kiosk=... --dwell 5 --db``."""
    config = Config.of(
        lines=["door=0.56,0.2,0.56,0.75"], zones=["kiosk=0.1,0.3,0.5,0.3,0.5,0.9"], dwell=5
    )
    events: list[Event] = [
        RunStarted(
            t=0.0,
            run_id="rec-shop",
            started=STARTED.strftime("%Y-%m-%dT%H:%M:%S%z"),
            started_wall=STARTED.timestamp(),
            source="/recordings/shop-door.mp4",
            live=False,
            model="local",
            command="run",
            config=describe_config(config),
        ),
        CountChanged(t=1.0, count=1, previous=None, t_media=1.0, frame=10),
    ]
    ins = outs = 0
    for track, (t, direction) in enumerate(DOOR_CROSSINGS, start=1):
        ins, outs = ins + (direction == "in"), outs + (direction == "out")
        events.append(LineCrossed(t=t, line="door", direction=direction, track=track,
                                  t_media=t, total_in=ins, total_out=outs))  # fmt: skip
    events += [
        ZoneCount(
            t=700.0, zone="kiosk", people=1, previous=0, dwelling=0, longest_s=0.0, t_media=700.0
        ),
        DwellPassed(t=705.0, zone="kiosk", track=3, seconds=5.0, t_media=705.0),
        ZoneCount(
            t=760.0, zone="kiosk", people=0, previous=1, dwelling=0, longest_s=60.0, t_media=760.0
        ),
        CountChanged(t=END_S, count=None, previous=1, t_media=END_S, reason="source ended"),
    ]
    log = SQLiteEventLog(db, session="rec-shop")
    for event in sorted(events, key=lambda e: e.t):  # logged as they happened
        log.record(event)
    log.close()
    return db


def crossings_in_log(db: Path, since: datetime) -> dict[str, dict[str, int]]:
    """The door's entries and exits at or after ``since``, read straight from the log."""
    events = load_events(db)
    (run,) = [e for e in events if e["type"] == "run" and e["command"] == "run"]
    counted: dict[str, dict[str, int]] = {}
    for e in events:
        if e["type"] == "crossing":
            wall = run["started_wall"] + e["t"] - run["t"]
            row = counted.setdefault(e["line"], {"in": 0, "out": 0})
            row[e["direction"]] += wall >= since.timestamp()
    return counted


@pytest.fixture
def server() -> Iterator[ThreadedFakeGenerateServer]:
    with FakeGenerateServer.run_in_thread() as srv:
        yield srv


@pytest.fixture
def db(tmp_path: Path) -> Path:
    (tmp_path / "empty.toml").write_text("")
    return shop_log(tmp_path / "shop.sqlite")


def ask(
    server: ThreadedFakeGenerateServer, db: Path, question: str
) -> subprocess.CompletedProcess[str]:
    env = server.subprocess_env(api_key=API_KEY)
    env["TZ"] = "UTC"  # the log's day is +02:00: the machine's is not
    return subprocess.run(
        [sys.executable, "-m", "device.cli", "ask", question, "--model", MODEL, "--db", str(db),
         "--config", str(db.parent / "empty.toml")],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def declared(req: GenerateRequest) -> set[str]:
    return set(req.declaration_names())


def like_a_model(on_question: Callable[[GenerateRequest], dict[str, Any]]) -> Script:
    """Gemini as it would answer: ``on_question(request)`` to the question, then a sentence
    about what the tool answered (its figures, its "cannot" or the error it got)."""

    def step(req: GenerateRequest, turn: LastTurn) -> dict[str, Any] | FakeHttpError:
        if turn.role == "user" and turn.text is not None and not turn.responses:
            return on_question(req)
        if len(turn.responses) != 1:
            return unscripted(turn)
        (_, name, body) = turn.responses[0]
        if name == "crossings" and "lines" in body:
            door = body["lines"]["door"]
            return text_response(
                f"Since 9:00, {door['in']} people came in through the door and {door['out']} "
                "went out."
            )
        if name == "count_people_now" and "people" in body:
            return text_response(f"There are {body['people']} people.")
        if name == "cannot_answer":
            return text_response(f"I cannot answer that: {body['reason']}. {body['would_answer']}")
        if body.get("status") == "error":
            return text_response(f"I cannot answer that: {body['error']}")
        return unscripted(turn)

    return Script(step)


def calls(*call: tuple[str, str, dict[str, Any]]) -> Callable[[GenerateRequest], dict[str, Any]]:
    return lambda req: function_call_response(call)


def events_of_the_ask(db: Path) -> list[dict[str, Any]]:
    """What the ask added to the --db: every event not of the recording's run."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT data FROM events WHERE session != 'rec-shop'").fetchall()
    return [json.loads(data) for (data,) in rows]


def assert_no_video_opened(db: Path, stderr: str = "") -> None:
    """The question read the log and opened no video, and wrote nothing into the log it
    read: not its run, not a count, a source state or the sample video's name."""
    assert events_of_the_ask(db) == []
    assert "vtest" not in stderr and "source" not in stderr.lower().replace("--source", "")


QUESTION = "how many people crossed the door line since 9?"


def test_gemini_counts_the_door_crossings_since_9_from_the_log(
    server: ThreadedFakeGenerateServer, db: Path
) -> None:
    script = like_a_model(calls(("fc-1", "crossings", {"period": "since 9"})))
    server.set_responder(script)
    result = ask(server, db, QUESTION)

    assert not script.unscripted, script.unscripted
    assert_clean(result)
    assert result.returncode == 0, result.stderr
    first, second = server.requests
    # The log's tools, and none that looks at a camera (there is none to look at).
    assert declared(first) == LOG_TOOLS
    assert not CAMERA_TOOLS & set(re.findall(r"\w+", first.system_instruction() or ""))
    assert "crossings(period" in (first.system_instruction() or "")
    assert first.user_texts() == [QUESTION]

    # What went back to the model is the log's figures since 09:00 of the log's own day.
    expected = crossings_in_log(db, NINE)
    assert expected == {"door": {"in": 3, "out": 1}}  # the log is as this test wrote it
    (response,) = second.function_responses()
    assert (response.id, response.name) == ("fc-1", "crossings")
    body = response.response
    assert body["lines"] == expected
    assert body["crossings"] == 4
    assert (body["from"], body["to"]) == ("2024-05-14 09:00:00", "2024-05-14 09:20:00")
    (call,) = second.function_calls()  # the model's own call, carried back as it was
    assert (call.id, call.name, call.args) == ("fc-1", "crossings", {"period": "since 9"})

    # The answer on stdout is the model's text, alone; the call is shown on stderr.
    assert result.stdout == "Since 9:00, 3 people came in through the door and 1 went out.\n"
    assert '-> crossings(period="since 9")  [fc-1]' in result.stderr
    assert_no_video_opened(db)


@pytest.mark.parametrize(
    ("question", "call", "said"),
    [
        # Not about the log at all: the model says so through cannot_answer.
        ("what colour is the door?",
         ("fc-2", "cannot_answer", {"reason": "the log holds counts, not colours",
                                    "would_answer": "Look at the camera."}),
         "the log holds counts, not colours"),
        # A range the log tools cannot read: the tool says so, and the model passes it on.
        ("how many people came in last week?",
         ("fc-3", "crossings", {"period": "last week"}),
         "cannot read the period 'last week'"),
    ],
)  # fmt: skip
def test_a_question_the_log_cannot_answer_exits_4_in_one_line(
    server: ThreadedFakeGenerateServer,
    db: Path,
    question: str,
    call: tuple[str, str, dict[str, Any]],
    said: str,
) -> None:
    script = like_a_model(calls(call))
    server.set_responder(script)
    result = ask(server, db, question)

    assert not script.unscripted, script.unscripted
    assert_clean(result)
    assert result.returncode == EXIT_UNANSWERED, (result.stdout, result.stderr)
    lines = result.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("I cannot answer that: "), result.stdout
    assert said in lines[0]
    # The refusal is the tool's answer (its "<-" line), not also an "error [crossings]" line.
    assert not [x for x in result.stderr.splitlines() if x.startswith("error")], result.stderr
    assert len(server.requests) == 2
    assert declared(server.requests[0]) == LOG_TOOLS
    assert_no_video_opened(db)


def test_a_question_about_now_is_not_answered_from_the_default_video(
    server: ThreadedFakeGenerateServer, db: Path
) -> None:
    def now(req: GenerateRequest) -> dict[str, Any]:
        # Offered count_people_now, a model asked "how many now?" calls it; not offered it,
        # the model can only say what would answer it.
        if "count_people_now" in declared(req):
            return function_call_response([("fc-4", "count_people_now", {})])
        return function_call_response([("fc-4", "cannot_answer", {
            "reason": "there is no camera to look at now", "would_answer": "Ask with --source."
        })])  # fmt: skip

    script = like_a_model(now)
    server.set_responder(script)
    result = ask(server, db, "how many people are there right now?")

    assert not script.unscripted, script.unscripted
    assert_clean(result)
    assert result.returncode == EXIT_UNANSWERED, (result.stdout, result.stderr)
    assert result.stdout == (
        "I cannot answer that: there is no camera to look at now. Ask with --source.\n"
    )
    assert not declared(server.requests[0]) & CAMERA_TOOLS
    assert_no_video_opened(db)


def test_a_zone_the_log_has_under_another_spelling_is_asked_again_and_answered(
    server: ThreadedFakeGenerateServer, db: Path
) -> None:
    # The first call names a zone the log does not have; the tool says which it has, and
    # the model asks again: the question is answered (exit 0), not unanswerable or an error.
    def step(req: GenerateRequest, turn: LastTurn) -> dict[str, Any] | FakeHttpError:
        if turn.role == "user" and turn.text is not None and not turn.responses:
            return function_call_response([("fc-5", "zone_visits", {"zone": "Kiosk"})])
        refused, answered = turn.response("fc-5"), turn.response("fc-6")
        if refused is not None and "kiosk" in str(refused.get("error", "")):
            return function_call_response([("fc-6", "zone_visits", {"zone": "kiosk"})])
        if answered is not None and "zones" in answered:
            kiosk = answered["zones"]["kiosk"]
            return text_response(f"{kiosk['dwell_events']} person stayed at the kiosk.")
        return unscripted(turn)

    script = Script(step)
    server.set_responder(script)
    result = ask(server, db, "how many people stayed at the Kiosk?")

    assert not script.unscripted, script.unscripted
    assert_clean(result)
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert result.stdout == "1 person stayed at the kiosk.\n"
    dwells = [e for e in load_events(db) if e["type"] == "dwell" and e["zone"] == "kiosk"]
    (last,) = server.requests[-1].function_responses()[-1:]
    assert last.response["zones"]["kiosk"]["dwell_events"] == len(dwells) == 1
    assert "zone_visits: zone must be one of kiosk" in result.stderr


def test_the_local_model_says_a_time_the_log_has_not_reached_and_exits_4(db: Path) -> None:
    # The same "cannot" of the log tool, through the offline model: said as such, exit 4.
    asked = lookout("ask", "how many visitors since 23?", "--db", str(db), "--model", "local",
                    "--config", str(db.parent / "empty.toml"))  # fmt: skip
    assert asked.returncode == EXIT_UNANSWERED, (asked.stdout, asked.stderr)
    assert asked.stdout == (
        "I cannot answer that: 23:00 has not come yet today in the log's time (it is 09:20 there)\n"
    )
    assert "Traceback" not in asked.stderr
    # Said once on stderr too, as the tool's answer: no "error [crossings]" line beside it.
    assert asked.stderr.count("23:00 has not come yet") == 1, asked.stderr
    assert not [x for x in asked.stderr.splitlines() if x.startswith("error")], asked.stderr


@pytest.mark.anyio
async def test_a_question_about_the_log_needs_no_sample_video(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A device set up without the sample video still answers from its log.
    import io

    import device.app.parts

    monkeypatch.setattr(device.app.parts, "sample_video", lambda: None)
    config = build({"model": "local", "db": db}, config_path=None, environ={},
                   system_config=db.parent / "absent.toml")  # fmt: skip
    out = io.StringIO()
    app = AskApp(config, AskOptions("how many visitors since 9?"), out=out, err=io.StringIO(),
                 watch_signals=False)  # fmt: skip
    assert await app.run() == 0
    assert out.getvalue().startswith("Since 09:00 (") and ": 3 came in at door." in out.getvalue()
