"""The question table (``tests/ask_table.py``), asked of a real ``lookout run`` log: every
answerable question answered with the log's true figures, every other one refused (exit
4), never answered as a nearby question. Once with the offline model, once with Gemini
through the real google-genai SDK against the fake ``generateContent`` server, which
plays a model that calls the tool the question needs: the same log tools answer it."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from device.app.ask.command import AskApp, AskOptions
from device.app.report.data import load_events
from device.config import build
from live.events import ToolCall, ToolResult
from tests.ask_table import HELD_OUT, LOG, RIGHT, ROWS, RUN_FLAGS, ZONE, Row, Truth, judge, truth_of
from tests.cli import lookout
from tests.datafiles import data_file
from tests.detection_cache import remembered
from tests.fakelive import (
    FakeGenerateServer,
    GenerateRequest,
    ThreadedFakeGenerateServer,
    function_call_response,
    text_response,
)
from tests.recorder import Recorder

pytestmark = pytest.mark.slow

MODEL = "gemini-test-model"
API_KEY = "ask-table-test-key-0123456789"


@pytest.fixture(scope="module")
def table_log(tmp_path_factory: pytest.TempPathFactory, detections_folder: Path) -> Path:
    where = tmp_path_factory.mktemp("table")
    db = where / "day.sqlite"
    (where / "empty.toml").write_text("")
    with remembered(detections_folder):
        ran = lookout(
            "run", "--source", str(data_file("vtest.avi")), "--model", "local",
            "--pace", "fast", "--no-http", *RUN_FLAGS, "--db", str(db),
            "--events", str(where / "day.jsonl"),
            "--config", str(where / "empty.toml"), timeout=180,
        )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return db


@pytest.fixture(scope="module")
def truth(table_log: Path) -> Truth:
    return truth_of(load_events(table_log))


def config_for(row: Row, db: Path, **extra: Any) -> Any:
    log = {"events": db} if db.suffix == ".jsonl" else {"db": db}
    flags: dict[str, Any] = (
        log
        if row.asked == LOG
        else {"source": str(data_file("vtest.avi")), "pace": "fast", "zones": [ZONE]}
    )
    return build(
        {"model": "local", **flags, **extra.pop("flags", {})},
        config_path=None,
        environ=extra.pop("environ", {}),
        system_config=db.parent / "absent.toml",
    )


def asked(row: Row, db: Path, **extra: Any) -> tuple[int, str, list[ToolCall], list[ToolResult]]:
    app = AskApp(
        config_for(row, db, **extra),
        AskOptions(row.question),
        out=io.StringIO(),
        err=io.StringIO(),
        watch_signals=False,
    )
    recorder = Recorder()
    app.sinks.append(recorder)
    code = anyio.run(app.run)
    calls = [e for e in recorder.events if isinstance(e, ToolCall)]
    results = [e for e in recorder.events if isinstance(e, ToolResult)]
    return code, app.out.getvalue(), calls, results  # type: ignore[attr-defined]


TABLE = (*ROWS, *(r for r in HELD_OUT if not r.hourly))


def test_the_table_is_large_and_mixed() -> None:
    answerable = [r for r in ROWS if r.probe is not None]
    assert len(ROWS) >= 60 and len(answerable) >= 35 and len(ROWS) - len(answerable) >= 20
    assert len({r.question for r in ROWS if r.asked == LOG}) == len(
        [r for r in ROWS if r.asked == LOG]
    )


@pytest.mark.parametrize("row", TABLE, ids=[f"{r.asked}: {r.question}" for r in TABLE])
def test_the_offline_model_answers_the_question_asked_or_refuses(
    row: Row, table_log: Path, truth: Truth
) -> None:
    code, text, _, results = asked(row, table_log)
    verdict, why = judge(row, truth, code, [r.response for r in results], text)
    assert verdict == RIGHT, why


# ----------------------------------------------------------------------------- Gemini


@pytest.fixture(scope="module")
def gemini() -> Iterator[ThreadedFakeGenerateServer]:
    with FakeGenerateServer.run_in_thread() as server:
        yield server


@pytest.mark.parametrize(
    "row",
    [r for r in TABLE if r.asked == LOG],
    ids=[r.question for r in TABLE if r.asked == LOG],
)
def test_gemini_through_the_sdk_gets_the_same_answers_from_the_same_tools(
    row: Row,
    table_log: Path,
    truth: Truth,
    gemini: ThreadedFakeGenerateServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The call a model that read the question would make: the offline model's.
    _, _, local_calls, _ = asked(row, table_log)
    assert local_calls, f"the offline model made no call for {row.question!r}"
    call = local_calls[0]

    def model(req: GenerateRequest) -> dict[str, Any]:
        answered = [r for r in req.function_responses() if r.id == "fc-1"]
        if not answered:
            return function_call_response([("fc-1", call.name, dict(call.args))])
        return text_response(json.dumps(answered[-1].response))

    gemini.set_responder(model)
    env = gemini.endpoint.env(api_key=API_KEY)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    code, text, calls, results = asked(
        row, table_log, flags={"model": MODEL}, environ={"GEMINI_API_KEY": API_KEY}
    )
    assert [(c.name, c.args) for c in calls] == [(call.name, call.args)]
    # Gemini says the tool's answer as it likes (here: its JSON); the figures are checked
    # in the answer that went back to it through the SDK.
    verdict, why = judge(row, truth, code, [r.response for r in results], "")
    assert verdict == RIGHT, why
    assert json.loads(text) == results[-1].response


@pytest.mark.parametrize(
    "row",
    [r for r in TABLE if r.asked == LOG],
    ids=[r.question for r in TABLE if r.asked == LOG],
)
def test_the_json_lines_log_answers_as_the_database_does(
    row: Row, table_log: Path, truth: Truth
) -> None:
    code, text, _, results = asked(row, table_log.with_name("day.jsonl"))
    verdict, why = judge(row, truth, code, [r.response for r in results], text)
    assert verdict == RIGHT, why
