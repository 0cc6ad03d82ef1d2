"""Configuration (file + flags + environment) and the offline local model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from device.config import Config, ConfigError, api_key_from_env, build
from live.config import EmitMode, SessionConfig
from live.events import ModelText
from live.input_stream import InputStream
from live.requests import LiveRequestQueue
from live.session import Runner
from live.util.clock import FakeClock
from models.local.model import LocalModel, describe
from tests.live.harness import blob_value, frame_blob
from tools.function_tool import FunctionTool

NO_SYSTEM = Path("/nonexistent/lookout.toml")


def make(flags: dict[str, Any] | None = None, **kw: Any) -> Config:
    kw.setdefault("environ", {})
    kw.setdefault("system_config", NO_SYSTEM)
    return build(flags or {}, **kw)


def test_defaults_use_the_local_model_without_a_key() -> None:
    config = make()
    assert config.model_name() == "local" and not config.uses_gemini
    assert (
        config.model.model_fps == 1.0
        and config.detection_fps() == 2.0
        and config.source.pace == "realtime"
    )
    assert config.model.send_frames is False and config.device.privacy is False


def test_a_key_in_the_environment_selects_gemini_and_never_shows_in_repr() -> None:
    config = make(environ={"GEMINI_API_KEY": "AIza-secret-test-key"})
    assert config.model_name() == "gemini-3.8-live"
    assert "AIza" not in repr(config)
    assert config.secrets() == ("AIza-secret-test-key",)


def test_the_effective_configuration_shows_no_secret() -> None:
    from device.app.describe import describe_config

    config = make(
        {"http_token": "tok-123456", "mqtt": "mqtt://user:pa55word@broker:1883"},
        environ={"GEMINI_API_KEY": "AIza-secret-test-key"},
    )
    text = str(describe_config(config))
    assert "AIza" not in text and "tok-123456" not in text and "pa55word" not in text
    assert "broker:1883" in text and "gemini-3.8-live" in text
    assert set(config.secrets()) == {"AIza-secret-test-key", "tok-123456", "pa55word"}


def test_google_api_key_wins_like_in_the_sdk() -> None:
    assert api_key_from_env({"GEMINI_API_KEY": "a", "GOOGLE_API_KEY": "b"}) == "b"
    assert api_key_from_env({"GEMINI_API_KEY": " a "}) == "a"
    assert api_key_from_env({}) is None


def test_file_then_flags_flags_win(tmp_path: Path) -> None:
    path = tmp_path / "lookout.toml"
    path.write_text('[lookout]\nfps = 0.5\npace = "fast"\nsource = 0\nsend-frames = true\n')
    config = make({"fps": 2.0, "privacy": True}, config_path=path)
    assert config.model.model_fps == 2.0  # the flag
    assert config.source.pace == "fast" and config.source.source == "0" and config.model.send_frames
    assert config.device.privacy


def test_system_config_is_read_when_present(tmp_path: Path) -> None:
    path = tmp_path / "system.toml"
    path.write_text('device_id = "hall-1"\n')
    assert make(system_config=path).device.device_id == "hall-1"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("fps = 'fast'\n", "fps must be a number"),
        ("colour = 'red'\n", "unknown setting 'colour'"),
        ("pace = 'slow'\n", "pace must be one of realtime, fast"),
        ("loop = 1\n", "loop must be true or false"),
        ("api_key = 'x'\n", "api_key does not belong in a config file"),
        ("threshold = 1.5\n", "threshold must be more than 0 and less than 1"),
        ("fps = [\n", "not valid TOML"),
        ("model = 'gemini-3.8-live'\n", "needs an API key: set GEMINI_API_KEY"),
    ],
)
def test_bad_config_files_give_one_clear_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        make(config_path=path)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_config_file() -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        make(config_path=Path("/nonexistent/x.toml"))


@pytest.mark.parametrize(
    ("emission", "sentence"),
    [
        ({"people": 3, "previous": 2}, "3 people in view (was 2)."),
        ({"people": 1, "previous": None}, "1 person in view."),
        ({"status": "stopped", "reason": "stop_streaming"}, "Counting stopped (stop_streaming)."),
        (
            {"status": "error", "error": "DetectorError: gone"},
            "Counting problem: DetectorError: gone",
        ),
    ],
)
def test_local_model_sentences(emission: dict[str, Any], sentence: str) -> None:
    assert describe(emission) == sentence


async def count_people(stream: InputStream) -> Any:
    """Stands in for the real tool: reports each frame's number when it changes."""
    last = None
    async for request in stream:
        value = blob_value(request.blob.data if request.blob else None)
        if value != last:
            yield {"people": value, "previous": last}
            last = value


@pytest.mark.anyio
@pytest.mark.parametrize("mode", [EmitMode.FUNCTION_RESPONSE, EmitMode.TEXT])
async def test_local_model_drives_the_real_runtime_and_obeys_commands(mode: EmitMode) -> None:
    clock = FakeClock()
    queue = LiveRequestQueue(now=clock.now)
    model = LocalModel()
    texts: list[str] = []
    runner = Runner(model, [FunctionTool(count_people)], SessionConfig(emit_mode=mode), clock=clock)

    async def said(text: str) -> None:
        # Generous: a missing sentence fails in seconds, instead of hanging the suite.
        with anyio.fail_after(30):
            while text not in texts:
                event = await session.events.receive()
                if isinstance(event, ModelText):
                    texts.append(event.text)

    async with runner.run_live(queue) as session:
        await session.wait_input_consumer()
        await session.wait_inputs_idle()
        queue.send_realtime(frame_blob(2))
        await said("2 people in view.")
        queue.send_realtime(frame_blob(3))
        await said("3 people in view (was 2).")
        queue.send_content("count")
        await said("3 people in view.")
        queue.send_content("stop")
        await said("Successfully stopped streaming function count_people")
        assert session.running_streams() == []
        queue.send_content("start")
        while not session.running_streams():
            await session.events.receive()
        # A person's question about the count is answered; anything else is said to be
        # beyond the offline model, never called an unknown command.
        queue.send_realtime(frame_blob(4))
        await said("4 people in view.")  # the new call's first emission
        texts.clear()
        queue.send_content("How many people are here?")
        await said("4 people in view.")
        queue.send_content("dance")
        await said(
            "I am the offline model: I can only answer about the count; 'dance' needs a Gemini"
            " model (--model). Commands: count, stop, start, help, quit."
        )
    # The calls went through the runtime with real call ids.
    assert model.state.calls and all(cid.startswith("local-call-") for cid in model.state.calls)


def test_the_sample_video_is_found_from_any_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A service starts in / or its home, not in the repository.
    from device.app.parts import sample_video
    from tests.datafiles import REPO_ROOT

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOOKOUT_DATA_DIR", raising=False)
    found = sample_video()
    assert found is not None and found.name == "vtest.avi"
    assert found.is_relative_to(REPO_ROOT) or found.is_relative_to(REPO_ROOT.parent / "shared")
