"""`lookout run` against the fake Live server playing each model family on each backend (the
real CLI, the real google-genai SDK, the real detector on the real video): the model calls
count_people, the count changes reach it in the form its family takes, the connection drops
and resumes, a misspelt stop is answered with what runs, the stop stops, a new call starts
again. On Vertex AI (the SDK's Vertex path, application default credentials) responses carry
no id, so the test finds an answer by the function's name and its place among them."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.datafiles import REPO_ROOT, data_file
from tests.fakelive import (
    FakeLiveServer,
    FunctionResponseRecord,
    LiveConnection,
    ThreadedFakeLiveServer,
)
from tests.fakelive.endpoint import write_vertex_credentials
from tests.fakelive.profiles import PROFILES

pytestmark = pytest.mark.slow

TEXT_PREFIX = "Function count_people returned: "


@dataclass(frozen=True)
class Family:
    profile: str
    model: str
    # Emissions as function responses for the call id (else as realtime text after one answer).
    responses: bool
    # The one-space realtime text after each tool response, without which the model is silent.
    kick: bool = False
    vertex: bool = False


MODEL_2_5 = "gemini-2.5-flash-native-audio-preview-09-2025"
FAMILIES = {
    "3.8": Family("3.8", "gemini-3.8-live", responses=True),
    "3.1": Family("3.1", "gemini-3.1-flash-live-preview", responses=False, kick=True),
    "2.5": Family("2.5", MODEL_2_5, responses=True),
    "2.5-vertex": Family("2.5-vertex", MODEL_2_5, responses=False, vertex=True),
    "3.1-vertex": Family(
        "3.1-vertex", "gemini-3.1-flash-live-preview", responses=False, kick=True, vertex=True
    ),
}


@pytest.fixture(params=sorted(FAMILIES))
def family(request: pytest.FixtureRequest) -> Family:
    return FAMILIES[request.param]


@pytest.fixture
def server(family: Family) -> Iterator[ThreadedFakeLiveServer]:
    with FakeLiveServer.run_in_thread(profile=PROFILES[family.profile]) as srv:
        yield srv


def counts_told(family: Family, conn: LiveConnection, call_id: str | None = None) -> list[Any]:
    """The count emissions the model got on ``conn`` (for ``call_id`` where the form says)."""
    if family.responses:
        return [
            r.response
            for r in conn.function_responses()
            if (call_id is None or r.id == call_id)
            and isinstance(r.response, dict)
            and "people" in r.response
        ]
    texts = [r.text or "" for r in conn.realtime_inputs() if r.kind == "text"]
    payloads = [json.loads(t.removeprefix(TEXT_PREFIX)) for t in texts if t.startswith(TEXT_PREFIX)]
    return [p for p in payloads if "people" in p]


def stop_call(name: str) -> dict[str, Any]:
    return {"name": "stop_streaming", "args": {"function_name": name}}


def answer(
    family: Family, server: ThreadedFakeLiveServer, call_id: str, name: str, nth: int
) -> FunctionResponseRecord:
    """The answer to a call: by its id, or on Vertex (no ids) the ``nth`` answer named ``name``."""
    if not family.vertex:
        return server.wait_function_response(call_id, timeout=30)
    live = server.server

    def found() -> FunctionResponseRecord | None:
        named = [r for c in live.connections for r in c.function_responses() if r.name == name]
        return named[nth - 1] if len(named) >= nth else None

    return server.wait_for(found, timeout=30)


def environment(family: Family, server: ThreadedFakeLiveServer, tmp_path: Path) -> dict[str, str]:
    if family.vertex:
        credentials = write_vertex_credentials(tmp_path / "adc.json")
        return server.endpoint.vertex_subprocess_env(credentials)
    return server.subprocess_env()


def test_the_cli_scenario_runs_on_each_family(
    family: Family, server: ThreadedFakeLiveServer, tmp_path: Path
) -> None:
    events = tmp_path / "events.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "device.cli", "run", "--model", family.model, "--no-http",
         "--source", str(data_file("vtest.avi")), "--duration", "90", "--events", str(events)],
        cwd=REPO_ROOT, env=environment(family, server, tmp_path), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    live = server.server  # read only inside wait_for, on the fake's own loop

    def told(index: int, at_least: int, call_id: str | None = None) -> Callable[[], bool]:
        return lambda: len(counts_told(family, live.connections[index], call_id)) >= at_least

    try:
        server.wait_connection(1, timeout=60)
        (first,) = server.send_tool_call({"name": "count_people", "args": {}})
        server.wait_for(told(0, 2, first), timeout=60)
        server.send_resumption_update("h-1")
        server.drop_connection()
        second = server.wait_connection(2, timeout=30)
        assert second.resumption_handle == "h-1"
        server.wait_for(told(1, 1, first), timeout=60)
        (typo,) = server.send_tool_call(stop_call("count_peple"))
        misspelt = answer(family, server, typo, "stop_streaming", 1)
        (stop,) = server.send_tool_call(stop_call("count_people"))
        stopped = answer(family, server, stop, "stop_streaming", 2)
        before = len(counts_told(family, server.connection(1)))
        (again,) = server.send_tool_call({"name": "count_people", "args": {}})
        server.wait_for(told(1, before + 1, again if family.responses else None), timeout=60)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err

    assert misspelt.response["status"] == "No active streaming function named count_peple"
    assert [r["name"] for r in misspelt.response["running"]] == ["count_people"]
    assert stopped.response["status"] == "Successfully stopped streaming function count_people"
    connections = server.connections()
    assert [c.close_code for c in connections] == [1006, 1000]  # the drop, then the end
    for conn in connections:
        responses = conn.function_responses()
        if family.responses:
            told_counts = [r for r in responses if "people" in (r.response or {})]
            assert all(r.will_continue and r.scheduling == "WHEN_IDLE" for r in told_counts)
        else:
            # One answer per call, nothing a synchronous family or Vertex refuses, no client
            # content (1007 on 3.1), and where the family needs it the kick after every
            # answer, after which the model ran.
            if family.vertex:
                assert conn.vertex and all(r.id is None and "id" not in r.raw for r in responses)
            else:
                ids = [r.id for r in responses]
                assert len(ids) == len(set(ids))
            assert not any("scheduling" in r.raw or "will_continue" in r.raw for r in responses)
            assert conn.client_contents() == []
            if family.kick:
                kinds = [m.kind for m in conn.messages]
                for i, kind in enumerate(kinds):
                    if kind == "tool_response":
                        assert [r.text for r in conn.messages[i + 1].realtime_inputs()] == [" "]
            assert len(conn.runs) == len(conn.of_kind("tool_response"))
    # What the device saw, it told: every count event is in the event log, and the model
    # heard counts on both connections.
    assert all(counts_told(family, c) for c in connections)
    logged = [json.loads(line) for line in events.read_text().splitlines() if line.strip()]
    assert [e["id"] for e in logged if e["type"] == "tool_call"] == [first, typo, stop, again]
    assert "Traceback" not in out + err


def test_a_setup_never_answered_is_given_up_in_bounded_time_with_one_line() -> None:
    """A 3.1 model leaves a setup with affective dialog or proactivity unanswered, and the
    SDK waits for ever: the device gives that connection up, says so once, counts on."""
    with FakeLiveServer.run_in_thread(profile=PROFILES["3.1"], answer_setup=False) as server:
        result = subprocess.run(
            [sys.executable, "-m", "device.cli", "run", "--model", FAMILIES["3.1"].model,
             "--no-http", "--source", str(data_file("vtest.avi")), "--duration", "17"],
            cwd=REPO_ROOT, env=server.subprocess_env(), capture_output=True, text=True,
            timeout=120, check=False,
        )  # fmt: skip
        connections = server.connections()
    assert result.returncode == 0, result.stderr
    said = [line for line in result.stdout.splitlines() if "setup" in line]
    assert len(said) == 1, result.stdout
    assert "no answer to setup within 15 s" in said[0]
    assert "Traceback" not in result.stdout + result.stderr
    assert connections[0].closed  # the unanswered connection was closed, not left open
    lines = result.stdout.splitlines()
    after = lines[lines.index(said[0]) + 1 :]
    assert any("people in view" in line or "count:" in line for line in after)  # counts on
