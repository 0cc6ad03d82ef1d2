"""The spending cap on a running device: its flags, the look refused, the console line,
the page's state and ``/metrics``; the real SDK against the fake, which scripts the
model's usage metadata."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from device.app.cost import Projection, projected_line, projection
from device.app.parts import session_config
from device.app.wiring import build_app
from device.config import build
from device.outputs.telemetry import Telemetry
from live.events import BudgetState, Event
from live.util.signal import Wakeup
from models.gemini.model import GeminiLiveModel, GeminiOptions
from tests.cli import lookout, lookout_in_process
from tests.datafiles import REPO_ROOT, data_file
from tests.device.test_config import one_line_refusal
from tests.fakelive import FakeLiveServer, ToolCallSpec, client_for
from tests.ops.test_telemetry import metrics

TEXT_MODEL = "gemini-live-2.5-flash-preview"


def config(tmp_path: Path, environ: dict[str, str] | None = None, **flags: Any) -> Any:
    settings = {
        "source": str(data_file("vtest.avi")),
        "model": "local",
        "loop": True,
        "device_id": "budget-test",
        **flags,
    }
    return build(settings, environ=environ or {}, system_config=tmp_path / "none.toml")


def test_the_limits_come_from_flags_variables_and_files(tmp_path: Path) -> None:
    limits = session_config(config(tmp_path, budget_tokens="50000")).budget
    assert (limits.per_hour, limits.per_session) == (50_000, None)
    env = {"LOOKOUT_BUDGET_SESSION": "200000"}
    limits = session_config(config(tmp_path, environ=env)).budget
    assert (limits.per_hour, limits.per_session) == (None, 200_000)
    toml = tmp_path / "lookout.toml"
    toml.write_text("[model]\nbudget-tokens = 7000\n")
    limits = session_config(build({}, config_path=toml, environ={})).budget
    assert limits.per_hour == 7000
    assert not session_config(config(tmp_path)).budget.enabled  # no cap by default


@pytest.mark.parametrize("flag", ["--budget-tokens=0", "--budget-session=lots"])
def test_a_bad_limit_is_refused_in_one_line(flag: str) -> None:
    line = one_line_refusal(lookout_in_process("run", "--model", "local", "--no-http", flag))
    assert flag.split("=")[0] in line


class Budgets:
    """The bus's budget events, with a wait woken by each."""

    def __init__(self) -> None:
        self.states: list[str] = []
        self._changed = Wakeup()

    def write(self, event: Event) -> None:
        if isinstance(event, BudgetState):
            self.states.append(event.state)
            self._changed.set()

    def close(self) -> None:
        pass

    async def reached(self, state: str) -> None:
        with anyio.fail_after(10):
            while state not in self.states:
                await self._changed.wait()


@pytest.mark.anyio
async def test_the_device_says_the_cap_on_its_console_page_and_metrics(
    srv: FakeLiveServer, tmp_path: Path
) -> None:
    out = io.StringIO()
    model = GeminiLiveModel(GeminiOptions(TEXT_MODEL), client=client_for(srv))
    app = build_app(
        config(tmp_path, budget_tokens="1000", send_frames=True),
        out=out,
        model=model,
        operations=False,
    )
    budgets = Budgets()
    app.bus.subscribe(budgets)
    telemetry = Telemetry(app.state)
    assert telemetry.state()["budget"]["state"] == "normal"
    async with anyio.create_task_group() as tg:
        tg.start_soon(app.run)
        try:
            await srv.wait_connection(1)
            with anyio.fail_after(10):
                await app.session.wait_model_connected()
            await srv.send_usage_metadata({"totalTokenCount": 500})
            await srv.send_usage_metadata({"totalTokenCount": 850})
            await srv.send_turn_complete()
            await budgets.reached("saving")
            (call_id,) = await srv.send_tool_call(ToolCallSpec("look", {}))
            answer = (await srv.wait_function_response(call_id)).response
            assert answer["status"] == "refused"
            assert answer["reason"] == "the token budget is at 85 % of its hour limit: no looks"
            budget = telemetry.state()["budget"]
            assert budget["state"] == "saving" and budget["hour"] == {"used": 850, "limit": 1000}
            assert not budget["frames"] and not budget["looks"]

            await srv.send_usage_metadata({"totalTokenCount": 150})
            await srv.send_turn_complete()
            await budgets.reached("capped")
            values = metrics(telemetry)
        finally:
            app.request_stop()
    assert values[("lookout_model_budget_tokens", (("window", "hour"),))] == 1000
    assert values[("lookout_model_budget_tokens", (("window", "session"),))] == 1000
    assert values[("lookout_model_budget_limit_tokens", (("window", "hour"),))] == 1000
    assert ("lookout_model_budget_limit_tokens", (("window", "session"),)) not in values
    assert values[("lookout_model_budget_state", (("state", "capped"),))] == 1
    assert values[("lookout_model_budget_state", (("state", "normal"),))] == 0
    assert values[("lookout_looks_total", (("outcome", "refused_budget"),))] == 1
    console = out.getvalue()
    assert "budget: 85 % of the token budget (1 000 tokens an hour): frames and looks stop" in (
        console
    )
    assert "budget: token budget spent (1 000 tokens an hour): updates to the model at most " in (
        console
    )


def test_without_a_cap_the_page_and_metrics_say_none() -> None:
    from tests.ops.support import FakeApp

    telemetry = Telemetry(FakeApp())
    assert telemetry.state()["budget"] is None
    assert not [k for k in metrics(telemetry) if k[0].startswith("lookout_model_budget")]


def test_the_projection_counts_what_the_settings_send(tmp_path: Path) -> None:
    gemini = {"GEMINI_API_KEY": "k"}
    plain = projection(config(tmp_path, gemini, model="gemini-3.8-live"))
    assert plain == Projection(frames=0, looks=4 * 60 * 214, updates=2 * 3600 * 25, audio=0)
    everything = projection(
        config(
            tmp_path,
            gemini,
            model="gemini-3.8-live",
            send_frames=True,
            model_fps="0.5",
            look_per_minute="2",
            mic="default",
        )
    )
    assert everything == Projection(
        frames=1800 * 64, looks=2 * 60 * 214, updates=2 * 3600 * 25, audio=3600 * 32
    )
    private = projection(
        config(tmp_path, gemini, model="gemini-3.8-live", send_frames=True, privacy=True)
    )
    assert private is not None and (private.frames, private.looks, private.audio) == (0, 0, 0)
    assert projection(config(tmp_path)) is None  # the local model costs nothing
    line = projected_line(config(tmp_path, gemini, model="gemini-3.8-live", budget_session="90000"))
    assert line == (
        "model input at these settings: up to ~51 360 tokens an hour: no frames "
        "(--send-frames off); looks 51 360 (4 a minute x ~214); plus count updates up to "
        "180 000 per stream (a change at every detection, 2 a second x ~25; a still scene: "
        "almost none); plus the context each turn re-reads; cap 90 000 this run"
    )


@pytest.mark.slow
def test_lookout_run_says_the_projection_at_start_and_not_for_the_local_model() -> None:
    video = str(data_file("vtest.avi"))
    run = ["run", "--no-http", "--source", video, "--pace", "fast", "--duration", "1"]
    with FakeLiveServer.run_in_thread() as server:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "device.cli",
                *run,
                "--model",
                "gemini-3.8-live",
                "--send-frames",
            ],
            cwd=REPO_ROOT,
            env=server.subprocess_env(),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert result.returncode == 0, result.stderr
    first = [line for line in result.stdout.splitlines() if line.startswith("model input")]
    assert len(first) == 1 and "frames 230 400 (1 a second x 64)" in first[0]
    local = lookout(*run, "--model", "local")
    assert local.returncode == 0, local.stderr
    assert "model input" not in local.stdout
