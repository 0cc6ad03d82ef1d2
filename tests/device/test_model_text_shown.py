"""What a model says is shown, never obeyed: the real CLI, the real google-genai SDK,
against the fake Live and generateContent servers over TLS.

A model's text (and a tool call's name or id, which the model chooses too) may hold
escape sequences that clear the screen or set the terminal's title, a CR or LF that
starts a line of its own (``[   99.9s] count: 0 (was 7)``, forged under the device's
own lines), a bidi override that turns the rest of the line around. On the console
they are shown escaped; the event logs keep the text exact (data, not display).
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.datafiles import REPO_ROOT, data_file
from tests.fakelive import (
    FakeGenerateServer,
    FakeLiveServer,
    GenerateRequest,
    ThreadedFakeGenerateServer,
    ThreadedFakeLiveServer,
    function_call_response,
    get_field,
    text_response,
)
from tests.ops.support import wait_until

pytestmark = pytest.mark.slow

FORGED = "[   99.9s] count: 0 (was 7)"
HOSTILE = f"3 people\x1b[2J\x1b]0;pwned\x07\r{FORGED}\n{FORGED}\u202eevil\x9b31m"
# As the console shows it: every control character written out.
SHOWN = (
    "3 people\\x1b[2J\\x1b]0;pwned\\x07\\r[   99.9s] count: 0 (was 7)\\n"
    "[   99.9s] count: 0 (was 7)\\u202eevil\\x9b31m"
)
RAW = ("\x1b", "\x07", "\r", "\u202e", "\x9b")


def assert_inert(text: str) -> None:
    """Nothing in ``text`` a terminal would obey, and no line the model forged."""
    assert [c for c in RAW if c in text] == [], repr(text[-400:])
    assert not any(line.startswith(FORGED[:10]) for line in text.splitlines()), text


def jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


@pytest.fixture
def live() -> Iterator[ThreadedFakeLiveServer]:
    with FakeLiveServer.run_in_thread() as srv:
        yield srv


@pytest.fixture
def generate() -> Iterator[ThreadedFakeGenerateServer]:
    with FakeGenerateServer.run_in_thread() as srv:
        yield srv


def test_a_live_model_cannot_clear_the_console_or_forge_a_line(
    live: ThreadedFakeLiveServer, tmp_path: Path
) -> None:
    events, db = tmp_path / "events.jsonl", tmp_path / "events.db"
    with (tmp_path / "out.txt").open("w") as out, (tmp_path / "err.txt").open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "device.cli", "run", "--model", "gemini-3.8-live",
             "--no-http", "--verbose", "--loop", "--source", str(data_file("vtest.avi")),
             "--events", str(events), "--db", str(db)],
            cwd=REPO_ROOT, env=live.subprocess_env(), stdout=out, stderr=err,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    try:
        live.wait_connection(1, timeout=30)
        live.send_text(HOSTILE)
        live.send_output_transcription(HOSTILE)
        live.send_turn_complete()  # the console shows a transcript by sentence or turn
        # A tool call's name and id are the model's words too.
        live.send_tool_call({"name": f"count_people\n{FORGED}\x1b[2J", "args": {},
                             "id": f"c1\r{FORGED}"})  # fmt: skip
        wait_until(
            lambda: {"model_text", "transcript", "error"} <= {e["type"] for e in jsonl(events)},
            30, "the model's text, its transcript and the refused call in the event log",
        )  # fmt: skip
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    out_text, err_text = (tmp_path / "out.txt").read_text(), (tmp_path / "err.txt").read_text()
    assert proc.returncode == 0, err_text
    assert f"] model: {SHOWN}\n" in out_text
    assert f"] model (spoken): {SHOWN}\n" in out_text
    assert "count_people\\n[   99.9s] count: 0 (was 7)\\x1b[2J" in out_text  # the refused call
    assert_inert(out_text)
    assert_inert(err_text)  # log records too (-v)
    # The record is exact: data, not display.
    recorded = jsonl(events)
    assert [e["text"] for e in recorded if e["type"] == "model_text"] == [HOSTILE]
    assert [e["text"] for e in recorded if e["type"] == "transcript"] == [HOSTILE]
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT data FROM events WHERE type = 'model_text'").fetchall()
    assert [json.loads(data)["text"] for (data,) in rows] == [HOSTILE]


def test_lookout_ask_shows_the_answer_and_the_calls_without_obeying_them(
    generate: ThreadedFakeGenerateServer, tmp_path: Path
) -> None:
    question = "how many people?"
    forged_call = '<- count_people_now {"people":0}'
    answer = f"There are 3 people.\r\nNobody else.\x1b[2J\u202e\r\n{forged_call}\rX"

    def step(req: GenerateRequest) -> dict[str, Any]:
        parts = get_field(req.contents[-1], "parts", []) or []
        if any(get_field(part, "function_response") for part in parts):
            return text_response(answer)
        return function_call_response([("fc-1\x1b[2J", f"nope\n{forged_call}", {})])

    generate.set_responder(step)
    result = subprocess.run(
        [sys.executable, "-m", "device.cli", "ask", question, "--model", "gemini-test-model",
         "--source", str(data_file("vtest.avi"))],
        cwd=REPO_ROOT, env=generate.subprocess_env(api_key="ask-test-key-0123456789"),
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr  # a call of a tool that does not exist
    assert "Traceback" not in result.stderr
    # The answer keeps its lines (CRLF as LF); nothing else a terminal would obey.
    assert result.stdout == (
        'There are 3 people.\nNobody else.\\x1b[2J\\u202e\n<- count_people_now {"people":0}\\rX\n'
    )
    # The device's own lines on stderr: the model's call name cannot start one of them.
    assert "-> nope\\n<- count_people_now" in result.stderr
    assert not any(line.startswith("<- count_people_now") for line in result.stderr.splitlines())
    assert [c for c in RAW if c in result.stdout + result.stderr] == []
