"""`lookout ask`: one-shot questions on the real video with the real detector and local model."""

from __future__ import annotations

import io
import json
import signal
import sqlite3
import subprocess
from dataclasses import asdict
from pathlib import Path
from typing import Any

import cv2
import pytest

from device.app.ask.command import AskApp, AskOptions
from device.config import build
from live.events import ErrorEvent, JobProgress, JobUpdate, ToolCall, ToolResult
from live.jobs.records import Job, JobState, SQLiteJobStore
from live.turns.conversation import ToolModeError, TurnRunner
from live.turns.model import TurnReply, TurnRequest
from models.detector import PersonDetector
from models.local.turns import LocalTurnModel
from tests.cli import LOOKOUT, lookout, offline_env
from tests.datafiles import REPO_ROOT, data_file
from tests.recorder import Recorder
from tools.count_people import CountPeople
from tools.function_tool import FunctionTool

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("remembered_detections")]


class RecordingLocalModel(LocalTurnModel):
    """The local model, keeping every request it was sent (to check what reached it)."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[TurnRequest] = []

    async def generate(self, request: TurnRequest) -> TurnReply:
        self.requests.append(request)
        return await super().generate(request)


def make_app(question: str, tmp_path: Path, **flags: Any) -> tuple[AskApp, Recorder]:
    config = build(
        {"source": str(data_file("vtest.avi")), "model": "local", "pace": "fast", **flags},
        config_path=None,
        environ={},
        system_config=tmp_path / "absent.toml",
    )
    options = AskOptions(question, period_s=10.0, page_size=2)
    app = AskApp(
        config,
        options,
        out=io.StringIO(),
        err=io.StringIO(),
        model=RecordingLocalModel(),
        watch_signals=False,
    )
    recorder = Recorder()
    app.sinks.append(recorder)
    return app, recorder


def detector_count_on_frame(index: int) -> int:
    capture = cv2.VideoCapture(str(data_file("vtest.avi")))
    try:
        capture.set(cv2.CAP_PROP_POS_FRAMES, index)
        ok, image = capture.read()
    finally:
        capture.release()
    assert ok
    return len(PersonDetector().detect(image))


@pytest.mark.anyio
async def test_how_many_answers_the_detector_count_for_the_frame_it_used(tmp_path: Path) -> None:
    app, recorder = make_app("how many people are there?", tmp_path)
    assert await app.run() == 0
    (result,) = [e for e in recorder.events if isinstance(e, ToolResult)]
    assert result.name == "count_people_now"
    frame, people = result.response["frame"], result.response["people"]
    assert people == detector_count_on_frame(frame)
    answer = app.out.getvalue()  # type: ignore[attr-defined]
    noun = "person" if people == 1 else "people"
    assert answer.startswith(f"{people} {noun} in view (frame {frame} at ")


@pytest.mark.anyio
async def test_report_ticket_at_once_progress_only_for_people_result_with_the_same_id(
    tmp_path: Path,
) -> None:
    app, recorder = make_app("report for 0.5 minutes", tmp_path)
    model = app.turn_model
    assert isinstance(model, RecordingLocalModel)
    assert await app.run() == 0
    events = recorder.events
    (call,) = [e for e in events if isinstance(e, ToolCall) and e.name == "start_occupancy_report"]
    answers = [e for e in events if isinstance(e, ToolResult) and e.id == call.id]
    assert [a.response["status"] for a in answers] == ["started", "succeeded"]
    job_id = answers[0].response["job_id"]
    # The ticket came back (and the model spoke) before the job had made any progress.
    progress = [e for e in events if isinstance(e, JobProgress)]
    assert progress, "no progress was reported"
    assert events.index(answers[0]) < events.index(progress[0])
    assert "Started occupancy report" in app.out.getvalue()  # type: ignore[attr-defined]
    # Progress went to the console ...
    err = app.err.getvalue()  # type: ignore[attr-defined]
    assert f"job {job_id}: " in err
    # ... and never to the model.
    sent = json.dumps([asdict(c) for r in model.requests for c in r.contents], default=str)
    for event in progress:
        assert event.message not in sent
    assert "job_progress" not in sent
    # The final result reached the model as a FunctionResponse with the ticket's call id.
    finals = [
        p.function_response
        for r in model.requests
        for c in r.contents
        for p in c.parts or []
        if p.function_response is not None
        and p.function_response.id == call.id
        and (p.function_response.response or {}).get("status") == "succeeded"
    ]
    assert finals and finals[0].name == "start_occupancy_report"
    final = answers[1].response
    # 30 s at the detection rate of lookout run (2 a second): its frames, its counts.
    assert final["samples"] == 60 and final["periods"] == 3 and final["pages"] == 2
    assert final["min"] <= final["mean"] <= final["max"]


@pytest.mark.anyio
async def test_paging_walks_every_page_exactly_once(tmp_path: Path) -> None:
    app, recorder = make_app("report for 0.5 minutes", tmp_path)
    assert await app.run() == 0
    fetches = [e for e in recorder.events if isinstance(e, ToolCall) and e.name == "fetch_counts"]
    assert [f.args["cursor"] for f in fetches] == ["", "2"]
    pages = [
        e.response
        for e in recorder.events
        if isinstance(e, ToolResult) and e.name == "fetch_counts"
    ]
    periods = [row["period"] for page in pages for row in page["counts"]]
    assert periods == [0, 1, 2]
    assert [page["next_cursor"] for page in pages] == ["2", None]
    assert pages[-1]["complete"] is True
    out = app.out.getvalue()  # type: ignore[attr-defined]
    assert "0-10 s:" in out and "20-30 s:" in out


@pytest.mark.anyio
async def test_a_report_and_its_counts_outlive_the_process_in_sqlite(tmp_path: Path) -> None:
    db = tmp_path / "lookout.db"
    first, _ = make_app("report for 20 seconds", tmp_path, db=db)
    assert await first.run() == 0
    with sqlite3.connect(db) as conn:
        ((data,),) = conn.execute("SELECT data FROM jobs").fetchall()
    job = json.loads(data)
    assert job["state"] == "succeeded" and job["delivered"] is True
    assert job["result"]["max"] >= job["result"]["min"]
    second, recorder = make_app(f"counts for {job['job_id']}", tmp_path, db=db)
    assert await second.run() == 0
    pages = [e.response for e in recorder.events if isinstance(e, ToolResult)]
    assert [row["period"] for page in pages for row in page["counts"]] == [0, 1]


@pytest.mark.anyio
async def test_wrong_report_length_and_unknown_job_get_clear_answers(tmp_path: Path) -> None:
    # Past what the report tool declares (a day): the local model says so itself (exit 4,
    # what would answer), and starts no report; a model that sends it anyway meets the
    # tool's own refusal (tests/tools: argument errors).
    app, recorder = make_app("report for 5000 minutes", tmp_path)
    assert await app.run() == 4
    said = app.out.getvalue()  # type: ignore[attr-defined]
    assert "I can watch over at most 1 day, not 5000 minutes" in said
    assert not [e for e in recorder.events if isinstance(e, JobUpdate)]
    assert not [e for e in recorder.events if isinstance(e, ToolCall)
                and e.name == "start_occupancy_report"]  # fmt: skip

    app, recorder = make_app("counts for job-0123456789", tmp_path)
    assert await app.run() == 1
    (error,) = [e for e in recorder.events if isinstance(e, ErrorEvent)]
    assert "no report with job_id 'job-0123456789' (known: none yet)" in error.message


def test_the_streaming_count_people_tool_is_refused_in_request_response_mode() -> None:
    tool = FunctionTool(CountPeople(), name="count_people")
    with pytest.raises(ToolModeError, match=r"^count_people is a streaming tool .*live mode"):
        TurnRunner(LocalTurnModel(), [tool])


# ----------------------------------------------------------------------------- the command


def test_lookout_ask_how_many_from_the_command_line() -> None:
    result = lookout("ask", "how many people?", "--source", str(data_file("vtest.avi")))
    assert result.returncode == 0, result.stderr
    count = detector_count_on_frame(0)
    noun = "person" if count == 1 else "people"
    assert result.stdout.startswith(f"{count} {noun} in view (frame 0 at 0.0 s of ")
    assert "-> count_people_now()" in result.stderr
    assert "Traceback" not in result.stderr


def test_lookout_ask_bad_input_gets_one_line() -> None:
    missing = lookout("ask", "how many?", "--source", "/nonexistent/video.mp4")
    assert missing.returncode == 2
    assert missing.stderr.count("\n") == 1 and "/nonexistent/video.mp4" in missing.stderr
    empty = lookout("ask", "  ")
    assert empty.returncode == 2 and empty.stderr.strip() == "lookout: the question is empty"
    pages = lookout("ask", "x", "--page-size", "0")
    assert pages.returncode == 2 and "--page-size" in pages.stderr


def test_ctrl_c_cancels_a_running_report_and_records_it(tmp_path: Path) -> None:
    db = tmp_path / "ask.db"
    env = offline_env()
    process = subprocess.Popen(
        [*LOOKOUT, "ask", "report for 10 minutes", "--db", str(db),
         "--source", str(data_file("vtest.avi")), "--loop"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
        env=env,
    )  # fmt: skip
    assert process.stderr is not None
    try:
        # Realtime replay: the job runs for minutes unless interrupted.
        for line in process.stderr:
            if "% 0/600 s" in line or ": 0% " in line:
                break
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=15)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 1
    assert "interrupted: cancelling running jobs" in err
    assert "cancelled: interrupted by the user" in err
    with sqlite3.connect(db) as conn:
        ((data,),) = conn.execute("SELECT data FROM jobs").fetchall()
    job = json.loads(data)
    assert job["state"] == "cancelled" and job["error"] == "interrupted by the user"
    # The model was told, with the call id of the ticket.
    assert "cancelled: interrupted by the user" in out


@pytest.mark.anyio
async def test_results_the_model_never_saw_are_carried_into_the_next_run(tmp_path: Path) -> None:
    db = tmp_path / "lookout.db"
    store = SQLiteJobStore(db)
    unseen = Job("job-aaaaaaaaaa", "call-1", "start_occupancy_report", {"minutes": 1.0})
    unseen.state, unseen.result = JobState.SUCCEEDED, {"max": 4, "mean": 2.5}
    orphan = Job("job-bbbbbbbbbb", "call-2", "start_occupancy_report", {"minutes": 9.0})
    seen = Job("job-cccccccccc", "call-3", "start_occupancy_report", {"minutes": 1.0})
    seen.state, seen.delivered = JobState.SUCCEEDED, True
    for job in (unseen, orphan, seen):  # as a run killed mid-job would leave them
        store.put(job)
    store.close()
    app, _ = make_app("how many people?", tmp_path, db=db)
    model = app.turn_model
    assert isinstance(model, RecordingLocalModel)
    assert await app.run() == 0
    first = model.requests[0].contents[-1].parts or []
    assert first[-1].text == "how many people?"
    carried = first[0].text or ""
    assert '"job_id": "job-aaaaaaaaaa", "status": "succeeded", "max": 4' in carried
    assert '"job_id": "job-bbbbbbbbbb", "status": "failed"' in carried
    assert "job-cccccccccc" not in carried
    store = SQLiteJobStore(db)
    jobs = {job.job_id: job for job in store.jobs()}
    store.close()
    assert all(job.delivered for job in jobs.values())
    assert jobs["job-bbbbbbbbbb"].state is JobState.FAILED
    assert jobs["job-bbbbbbbbbb"].error == "lookout ended before the job finished"
    err = app.err.getvalue()  # type: ignore[attr-defined]
    assert "job-aaaaaaaaaa (start_occupancy_report, succeeded) ended in an earlier run" in err
