"""Settings as a user meets them: flags, TOML files, --help and the one-line refusals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from device.cli_flags import ASK_SETTINGS, AskFlags, parser
from device.config import FIELDS, SETTINGS, Config, ConfigError, build
from device.config.explain import value_range
from tests.cli import lookout, lookout_in_process

NO_SYSTEM = Path("/nonexistent/lookout.toml")

# Each numeric setting with a value just below and just above what it accepts.
BOUNDS: list[tuple[str, str, str]] = [
    ("fps", "0", "121"),
    ("detect_fps", "0", "121"),
    ("folder_fps", "0", "121"),
    ("threshold", "0", "1"),
    ("max_side", "63", "4097"),
    ("jpeg_quality", "0", "101"),
    ("duration", "0", "10000001"),
    ("stall_timeout", "0", "1e9"),
    ("model_attempts", "0", "1001"),
    ("fallback_after", "-1", "86401"),
]
BAD_VALUES = [
    (name, bad) for name, low, high in BOUNDS for bad in ("inf", "nan", "-inf", low, high)
]


def make(flags: dict[str, Any] | None = None, **kw: Any) -> Config:
    kw.setdefault("environ", {})
    kw.setdefault("system_config", NO_SYSTEM)
    return build(flags or {}, **kw)


def one_line_refusal(result: Any) -> str:
    """The single stderr line of a command that was refused as bad usage."""
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("lookout: ")
    assert "pydantic" not in lines[0]
    return str(lines[0])


def flag(name: str) -> str:
    # --line and --zone are given once per line or zone; the rest are the setting's name.
    return {"lines": "--line", "zones": "--zone"}.get(name) or "--" + name.replace("_", "-")


@pytest.mark.parametrize(("name", "bad"), BAD_VALUES)
def test_a_bad_number_on_the_command_line_is_refused_naming_the_flag(name: str, bad: str) -> None:
    result = lookout_in_process("run", "--model", "local", "--no-http", f"{flag(name)}={bad}")
    line = one_line_refusal(result)
    assert f"{flag(name)} must be" in line


@pytest.mark.parametrize(("name", "bad"), BAD_VALUES)
def test_a_bad_number_in_the_config_file_is_refused_naming_key_and_file(
    tmp_path: Path, name: str, bad: str
) -> None:
    key = name.replace("_", "-")
    path = tmp_path / "lookout.toml"
    path.write_text(f'[lookout]\nmodel = "local"\nhttp = ""\n{key} = {bad}\n', encoding="utf-8")
    line = one_line_refusal(lookout_in_process("run", "--config", str(path)))
    assert f"{path}: {key} must be" in line


@pytest.mark.slow
@pytest.mark.parametrize("where", ["flag", "file"])
def test_the_real_process_refuses_an_impossible_timeout_in_one_line(
    tmp_path: Path, where: str
) -> None:
    # The cases above call main() here; this one is the whole process, exit code and all.
    if where == "flag":
        result = lookout("run", "--model", "local", "--no-http", "--stall-timeout", "inf")
    else:
        path = tmp_path / "lookout.toml"
        path.write_text('model = "local"\nhttp = ""\nstall_timeout = 1e9\n', encoding="utf-8")
        result = lookout("run", "--config", str(path))
    line = one_line_refusal(result)
    assert "stall" in line and ("at most 3600" in line or "finite" in line)


@pytest.mark.parametrize(
    "args",
    [
        ["--report-fps", "inf"],
        ["--report-fps", "0"],
        ["--period", "nan"],
        ["--period", "-60"],
        ["--page-size", "0"],
        ["--page-size", "2.5"],
    ],
)
def test_ask_refuses_a_bad_number_of_its_own_options(args: list[str]) -> None:
    line = one_line_refusal(lookout_in_process("ask", "how many?", "--model", "local", *args))
    assert f"{args[0]} must be" in line


def test_a_config_file_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "lookout.toml"
    path.write_bytes(b'device_id = "caf\xe9"\n')
    line = one_line_refusal(lookout("run", "--config", str(path), timeout=30))
    assert str(path) in line and "UTF-8" in line


def test_a_config_file_that_is_not_toml_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "lookout.toml"
    path.write_text("fps = = 2\n[lookout\n", encoding="utf-8")
    line = one_line_refusal(lookout("run", "--config", str(path), timeout=30))
    assert str(path) in line and "not valid TOML" in line


def test_an_unknown_key_names_the_file_and_suggests_the_close_one(tmp_path: Path) -> None:
    path = tmp_path / "lookout.toml"
    path.write_text("[lookout]\nstall_timout = 3\n", encoding="utf-8")
    line = one_line_refusal(lookout("run", "--config", str(path), timeout=30))
    assert str(path) in line and "'stall_timout'" in line and "stall_timeout" in line
    assert "jpeg_quality" not in line  # a suggestion, not the whole list


def test_a_dashed_unknown_key_gets_a_dashed_suggestion(tmp_path: Path) -> None:
    path = tmp_path / "lookout.toml"
    path.write_text("detect-fsp = 3\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="did you mean detect-fps"):
        make(config_path=path)


@pytest.mark.parametrize(
    ("text", "key", "expected"),
    [
        ("fps = 'fast'\n", "fps", "must be a number"),
        ("max-side = 768.5\n", "max-side", "must be an integer"),
        ("privacy = 'yes'\n", "privacy", "must be true or false"),
        ("scheduling = 'now'\n", "scheduling", "must be one of silent, when_idle, interrupt"),
        ("events = 3\n", "events", "must be a path"),
        ("device_id = '  '\n", "device_id", "must not be empty"),
        ("http = 8765\n", "http", "must be a string"),
        ("require-model = 'sure'\n", "require-model", "must be true or false"),
    ],
)
def test_a_wrong_type_in_a_file_says_key_file_and_what_was_expected(
    tmp_path: Path, text: str, key: str, expected: str
) -> None:
    path = tmp_path / "lookout.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        make(config_path=path)
    message = str(info.value)
    assert message.startswith(f"{path}: {key} {expected}")
    assert "\n" not in message and "https://" not in message
    assert "validation error" not in message


def test_the_same_setting_spelled_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "lookout.toml"
    path.write_text("send-frames = true\nsend_frames = false\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="same setting"):
        make(config_path=path)


def test_the_api_key_is_never_a_flag_or_a_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="GEMINI_API_KEY"):
        make({"api_key": "AIza-x"})
    assert "--api-key" not in lookout("run", "--help", timeout=30).stdout


def squash(text: str) -> str:
    return " ".join(text.split())


def test_run_help_lists_every_setting_with_its_description() -> None:
    result = lookout("run", "--help", timeout=30)
    assert result.returncode == 0, result.stderr
    text = squash(result.stdout)
    # argparse wraps (also at hyphens) to the terminal's width: compare without spaces.
    bare = "".join(text.split())
    for name in SETTINGS:
        field = FIELDS[name]
        assert flag(name) in text
        assert field.description and "".join(field.description.split()) in bare, name
    assert "(more than 0 and less than 1; default: 0.45)" in text
    assert "(default: realtime)" in text
    for extra in ("--no-http", "--config", "--stdin", "--verbose"):
        assert extra in text


@pytest.mark.parametrize(
    ("command", "fields"),
    [
        ("ask", [*ASK_SETTINGS, *AskFlags.model_fields]),
        ("doctor", ["source", "model", "detector"]),
    ],
)
def test_ask_and_doctor_help_show_their_options(command: str, fields: list[str]) -> None:
    result = lookout(command, "--help", timeout=30)
    assert result.returncode == 0, result.stderr
    bare = "".join(result.stdout.split())
    for name in fields:
        field = FIELDS.get(name) or AskFlags.model_fields[name]
        assert flag(name) in result.stdout
        bounds = value_range(field)
        shown = f"{field.description}({bounds + ';' if bounds else ''}default:"
        assert "".join(shown.split()) in bare, name
    assert "--config" in result.stdout


def parsed(*argv: str) -> Config:
    args = parser().parse_args(["run", *argv])
    return make({name: getattr(args, name) for name in SETTINGS})


def test_the_new_settings_default_parse_from_flags_and_from_a_file(tmp_path: Path) -> None:
    default = parsed()
    assert (
        default.model.require_model,
        default.model.model_attempts,
        default.model.fallback_after,
    ) == (
        False,
        6,
        30.0,
    )
    flagged = parsed("--require-model", "--model-attempts", "3", "--fallback-after", "12.5")
    assert (
        flagged.model.require_model,
        flagged.model.model_attempts,
        flagged.model.fallback_after,
    ) == (
        True,
        3,
        12.5,
    )
    path = tmp_path / "lookout.toml"
    path.write_text(
        "[lookout]\nrequire-model = true\nmodel_attempts = 20\nfallback-after = 0\n",
        encoding="utf-8",
    )
    filed = make(config_path=path)
    assert (filed.model.require_model, filed.model.model_attempts, filed.model.fallback_after) == (
        True,
        20,
        0.0,
    )
    # Flags win over the file.
    assert make({"model_attempts": "2"}, config_path=path).model.model_attempts == 2


def test_flags_not_given_leave_the_file_alone(tmp_path: Path) -> None:
    path = tmp_path / "lookout.toml"
    path.write_text("loop = true\nfps = 0.5\nevents = '~/events.jsonl'\n", encoding="utf-8")
    args = parser().parse_args(["run"])
    config = make({name: getattr(args, name) for name in SETTINGS}, config_path=path)
    assert config.source.loop is True and config.model.model_fps == 0.5
    assert config.outputs.events == Path.home() / "events.jsonl"


def test_updates_are_validated_again() -> None:
    config = Config.of(device_id="p", model="local")
    with pytest.raises(ConfigError, match="stall_timeout must be"):
        config.model_copy(update={"stall_timeout": float("inf")})
    with pytest.raises(ConfigError, match="model_fps must be"):
        config.model.model_fps = 0
    assert config.model_copy(update={"model_fps": 5}).model.model_fps == 5.0
    assert config.model.model_fps == 1.0


def test_the_api_key_stays_out_of_dumps_and_copies() -> None:
    config = make(environ={"GEMINI_API_KEY": "AIza-secret-test-key"})
    assert "AIza" not in repr(config) and "AIza" not in str(config.model_dump())
    assert config.model_copy(update={"model_fps": 2}).model.api_key == "AIza-secret-test-key"


def test_a_retired_setting_in_a_config_file_is_said_once_and_the_device_still_starts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # smoothing and min_hold tuned a median and a hold the count no longer has: a device
    # whose file still sets them must not stop starting after an upgrade.
    path = tmp_path / "lookout.toml"
    path.write_text("smoothing = 5\nmin_hold = 2.0\nthreshold = 0.5\n")
    with caplog.at_level("WARNING", logger="lookout.config"):
        config = make(config_path=path)
    assert config.perception.threshold == 0.5
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 2 and all("no longer used" in line for line in said), said
    assert any("'smoothing'" in line for line in said) and str(path) in said[0]


def test_a_retired_setting_as_a_flag_is_refused_in_one_line() -> None:
    assert "--min-hold" in one_line_refusal(lookout_in_process("run", "--min-hold", "1"))


@pytest.mark.parametrize("name", ["door\n", "door\r", "door ", "\ndoor", "do\nor", "door\t"])
def test_a_line_or_zone_name_with_a_line_break_or_space_is_refused(
    tmp_path: Path, name: str
) -> None:
    # A name ending in a newline used to pass ("$" matches before it): two lines called
    # "door" on the console, and a broken MQTT topic.
    path = tmp_path / "lookout.toml"
    quoted = name.encode("unicode_escape").decode()
    path.write_text(f'[lines."{quoted}"]\npoints = [[0.1, 0.1], [0.9, 0.9]]\n')
    with pytest.raises(ConfigError, match="must be 1-40 letters, digits"):
        make(config_path=path)
    # On the command line the spaces around a name are the shell's, not the name's.
    inside = name.strip() or name
    if inside != name.strip() or any(c.isspace() for c in name.strip()):
        with pytest.raises(ConfigError, match="must be 1-40 letters, digits"):
            make({"zones": [f"{name}=0,0,1,0,1,1"]})
    else:
        assert list(make({"zones": [f"{name}=0,0,1,0,1,1"]}).scene.zones) == ["door"]


def test_a_token_file_saved_with_a_byte_order_mark_gives_the_token_without_it(
    tmp_path: Path,
) -> None:
    token_file = tmp_path / "token"
    token_file.write_bytes("\ufeffs3cret-token\n".encode())
    config = make({"http_token_file": token_file})
    assert config.outputs.http_token == "s3cret-token"
