"""Vertex AI from the CLI: `lookout run` and `lookout doctor` with the SDK's Vertex variables
(GOOGLE_GENAI_USE_VERTEXAI, project, location, GOOGLE_VERTEX_BASE_URL) and application default
credentials (an offline authorized_user file), the real google-genai SDK against the fake
Live server over TLS; and the one-line refusals of a Vertex setting that cannot work."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli import LOOKOUT, lookout_in_process
from tests.datafiles import REPO_ROOT, data_file
from tests.fakelive import FakeLiveServer, ThreadedFakeLiveServer
from tests.fakelive.endpoint import (
    DEFAULT_API_KEY,
    VERTEX_LOCATION,
    VERTEX_PROJECT,
    VERTEX_TOKEN,
    write_vertex_credentials,
)
from tests.fakelive.profiles import PROFILES

MODEL = "gemini-2.5-flash-native-audio-preview-09-2025"
RESOURCE = f"projects/{VERTEX_PROJECT}/locations/{VERTEX_LOCATION}/publishers/google/models/{MODEL}"
TEXT_PREFIX = "Function count_people returned: "


@pytest.fixture
def server() -> Iterator[ThreadedFakeLiveServer]:
    # The Vertex profile closes a session with 1007 on `scheduling`, as the service does.
    with FakeLiveServer.run_in_thread(profile=PROFILES["2.5-vertex"]) as srv:
        yield srv


@pytest.mark.slow
def test_lookout_run_on_vertex_ai_uses_the_vertex_endpoint_token_and_model_name(
    server: ThreadedFakeLiveServer, tmp_path: Path
) -> None:
    credentials = write_vertex_credentials(tmp_path / "adc.json")
    env = server.endpoint.vertex_subprocess_env(credentials)
    assert env["GEMINI_API_KEY"] == DEFAULT_API_KEY  # set, and must not be used on Vertex
    events = tmp_path / "events.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "device.cli", "run", "--model", MODEL, "--no-http",
         "--log-level", "debug", "--source", str(data_file("vtest.avi")), "--duration", "90",
         "--events", str(events)],
        cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    live = server.server  # read only inside wait_for, on the fake's own loop
    try:
        conn = server.wait_connection(1, timeout=60)
        (call,) = server.send_tool_call({"name": "count_people", "args": {}})
        # The answer to the call, then a count change as realtime text (Vertex takes one
        # answer per call and no will_continue).
        server.wait_for(lambda: live.connections[0].function_responses(), timeout=60)
        server.wait_for(
            lambda: any(
                (r.text or "").startswith(TEXT_PREFIX)
                for r in live.connections[0].realtime_inputs()
                if r.kind == "text"
            ),
            timeout=60,
        )
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err

    conn = server.connection(0)
    assert conn.vertex and conn.version == "v1beta1"
    assert conn.path.endswith(
        "/ws/google.cloud.aiplatform.v1beta1.LlmBidiService/BidiGenerateContent"
    )
    assert conn.headers["authorization"] == f"Bearer {VERTEX_TOKEN}"
    assert conn.api_key is None  # the Gemini API key stayed out of it
    assert conn.setup is not None and conn.setup["model"] == RESOURCE
    (answer,) = conn.function_responses()
    assert answer.name == "count_people" and answer.id is None
    assert not {"scheduling", "will_continue", "id"} & set(answer.raw)
    assert conn.close_code == 1000  # never closed for an unknown field
    logged = [json.loads(line) for line in events.read_text().splitlines() if line.strip()]
    assert [e["id"] for e in logged if e["type"] == "tool_call"] == [call]
    assert VERTEX_TOKEN not in out + err  # not even in the debug log of the headers
    assert "Traceback" not in out + err


@pytest.mark.slow
def test_lookout_doctor_on_vertex_ai_shakes_hands_with_the_vertex_endpoint(
    server: ThreadedFakeLiveServer, tmp_path: Path
) -> None:
    env = server.endpoint.vertex_subprocess_env(write_vertex_credentials(tmp_path / "adc.json"))
    args = ("doctor", "--source", str(data_file("vtest.avi")), "--model", MODEL)
    result = subprocess.run([*LOOKOUT, *args], cwd=REPO_ROOT, env=env, capture_output=True,
                            text=True, timeout=60, check=False)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    line = next(x for x in result.stdout.splitlines() if "] model" in x)
    assert "[  ok]" in line and "setup accepted" in line and f"project {VERTEX_PROJECT}" in line
    (conn,) = server.connections()
    assert conn.vertex and conn.headers["authorization"] == f"Bearer {VERTEX_TOKEN}"
    assert conn.setup is not None and conn.setup["model"] == RESOURCE
    assert VERTEX_TOKEN not in result.stdout + result.stderr


VERTEX_ON = {"GOOGLE_GENAI_USE_VERTEXAI": "true"}


@pytest.mark.parametrize(
    ("env", "said"),
    [
        (
            {**VERTEX_ON, "GOOGLE_CLOUD_LOCATION": "us-central1"},
            "GOOGLE_GENAI_USE_VERTEXAI is on but GOOGLE_CLOUD_PROJECT is not set",
        ),
        (
            {**VERTEX_ON, "GOOGLE_CLOUD_PROJECT": "p"},
            "GOOGLE_GENAI_USE_VERTEXAI is on but GOOGLE_CLOUD_LOCATION is not set",
        ),
        (
            {**VERTEX_ON, "GOOGLE_VERTEX_BASE_URL": "https://gw.example"},
            "GOOGLE_VERTEX_BASE_URL without GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION",
        ),
    ],
)
def test_vertex_without_a_project_or_a_location_is_refused_in_one_line(
    env: dict[str, str], said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "GOOGLE_VERTEX_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = lookout_in_process("run", "--no-http", "--model", MODEL)
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert said in line


def test_vertex_without_application_default_credentials_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name, value in {
        **VERTEX_ON,
        "GOOGLE_CLOUD_PROJECT": "p",
        "GOOGLE_CLOUD_LOCATION": "us-central1",
        # A file that is not there: google-auth says so without asking the network.
        "GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "missing.json"),
    }.items():
        monkeypatch.setenv(name, value)
    result = lookout_in_process(
        "run", "--no-http", "--model", MODEL, "--source", str(data_file("vtest.avi"))
    )
    assert result.returncode == 2, result.stdout + result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert "Vertex AI needs application default credentials" in line
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_lookout_ask_on_vertex_ai_asks_the_vertex_model_resource(tmp_path: Path) -> None:
    from tests.fakelive import FakeGenerateServer, text_response

    with FakeGenerateServer.run_in_thread() as srv:
        srv.queue(text_response("Three people."))
        env = srv.endpoint.vertex_subprocess_env(write_vertex_credentials(tmp_path / "adc.json"))
        result = subprocess.run(
            [sys.executable, "-m", "device.cli", "ask", "How many people?", "--model", "gemini-x",
             "--source", str(data_file("vtest.avi"))],
            cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=90, check=False,
        )  # fmt: skip
        requests = srv.requests
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Three people." in result.stdout
    (request,) = requests
    where = f"/v1beta1/projects/{VERTEX_PROJECT}/locations/{VERTEX_LOCATION}/publishers/google"
    assert request.path == f"{where}/models/gemini-x:generateContent"
    assert request.headers["authorization"] == f"Bearer {VERTEX_TOKEN}"
    assert request.api_key is None
    assert VERTEX_TOKEN not in result.stdout + result.stderr
