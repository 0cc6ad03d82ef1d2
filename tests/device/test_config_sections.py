"""Settings by concern: sections in TOML, flat keys as before, LOOKOUT_ variables, old names.

Every way of giving a setting means the same value, and every mistake is one line that
names the setting as the user wrote it: the flag, the key and the file, or the variable.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from device.config import SECTION_OF, SECTIONS, SETTINGS, ConfigError, build, env_name
from device.config.layers import NOT_FROM_ENV
from device.log_limit import RepeatFilter
from tests.cli import lookout, lookout_in_process
from tests.datafiles import REPO_ROOT

NO_SYSTEM = Path("/nonexistent/lookout.toml")


def make(flags: dict[str, Any] | None = None, **kw: Any) -> Any:
    kw.setdefault("environ", {})
    kw.setdefault("system_config", NO_SYSTEM)
    return build(flags or {}, **kw)


def from_file(tmp_path: Path, text: str, **kw: Any) -> Any:
    path = tmp_path / "lookout.toml"
    path.write_text(text, encoding="utf-8")
    return make(config_path=path, **kw)


def refused(tmp_path: Path, text: str, **kw: Any) -> str:
    with pytest.raises(ConfigError) as info:
        from_file(tmp_path, text, **kw)
    message = str(info.value)
    assert "\n" not in message and "validation error" not in message, message
    return message


# --------------------------------------------------------------------- TOML sections


SECTIONED = """\
[source]
source = "0"
loop = true

[perception]
detect_fps = 3
motion = "off"

[scene]
dwell = 12

[model]
model = "local"
model_fps = 0.5

[device]
device_id = "hall"
log_level = "info"

[outputs]
http = ""
events = "/tmp/e.jsonl"

[lines.door]
points = [[0.5, 0.1], [0.5, 0.9]]
"""

FLAT = """\
source = "0"
loop = true
detect_fps = 3
motion = "off"
dwell = 12
model = "local"
fps = 0.5
device_id = "hall"
log_level = "info"
http = ""
events = "/tmp/e.jsonl"

[lines.door]
points = [[0.5, 0.1], [0.5, 0.9]]
"""


def test_a_sectioned_file_a_flat_one_and_one_under_lookout_mean_the_same(tmp_path: Path) -> None:
    sectioned = from_file(tmp_path, SECTIONED)
    assert sectioned.perception.detect_fps == 3.0 and sectioned.source.source == "0"
    assert sectioned.model_name() == "local"
    assert sectioned.model.model_fps == 0.5 and sectioned.device.device_id == "hall"
    assert list(sectioned.scene.lines) == ["door"] and sectioned.scene.dwell == 12.0
    flat = from_file(tmp_path, FLAT)  # `fps`: the old name of model_fps
    under_lookout = from_file(tmp_path, "[lookout]\n" + FLAT.replace("[lines.door]", "[lines.x]"))
    nested = from_file(
        tmp_path,
        SECTIONED.replace("[source]", "[lookout]\n[lookout.source]").replace(
            "[perception]", "[lookout.perception]"
        ),
    )
    assert flat.dump_flat() == sectioned.dump_flat() == nested.dump_flat()
    assert under_lookout.perception.detect_fps == 3.0 and list(under_lookout.scene.lines) == ["x"]


def test_sections_beside_a_lookout_table_belong_to_it(tmp_path: Path) -> None:
    config = from_file(tmp_path, "[lookout]\nthreshold = 0.6\n\n[perception]\ndetect_fps = 4\n")
    assert (config.perception.threshold, config.perception.detect_fps) == (0.6, 4.0)


def test_every_setting_is_in_exactly_one_section_and_has_a_description() -> None:
    assert set(SECTIONS) == {"source", "perception", "scene", "model", "audio", "device", "outputs"}
    for name in SETTINGS:
        assert SECTION_OF[name] in SECTIONS
        field = SECTIONS[SECTION_OF[name]].model_fields[name]
        assert field.description, name


def test_a_setting_name_is_used_by_one_section_only() -> None:
    # The sections live in several modules: a flat key must still name one setting.
    names = [name for section in SECTIONS.values() for name in section.model_fields]
    assert sorted({name for name in names if names.count(name) > 1}) == []


def test_a_bad_value_in_a_section_names_the_key_with_its_section_and_the_file(
    tmp_path: Path,
) -> None:
    message = refused(tmp_path, "[perception]\ndetect-fps = 500\n")
    path = tmp_path / "lookout.toml"
    expected = "perception.detect-fps must be more than 0 and at most 120, not 500"
    assert message == f"{path}: {expected}"
    assert "source.loop must be true or false" in refused(tmp_path, "[source]\nloop = 1\n")


def test_a_setting_in_the_wrong_section_says_where_it_belongs(tmp_path: Path) -> None:
    message = refused(tmp_path, "[perception]\ndwell = 3\n")
    assert "'perception.dwell'" in message and "belongs in [scene]" in message


def test_an_unknown_key_in_a_section_gets_a_suggestion_from_that_section(tmp_path: Path) -> None:
    message = refused(tmp_path, "[perception]\ndetect_fsp = 3\n")
    assert "unknown setting 'perception.detect_fsp'" in message
    assert "(did you mean detect_fps" in message
    assert "did you mean perception?" in refused(tmp_path, "[perceptoin]\ndetect_fps = 3\n")


def test_a_section_that_is_not_a_table_is_refused_in_one_line(tmp_path: Path) -> None:
    message = refused(tmp_path, "perception = 3\n")
    assert "unknown setting 'perception'" in message or "must be a table" in message


def test_a_setting_given_flat_and_in_its_section_is_refused(tmp_path: Path) -> None:
    message = refused(tmp_path, "detect_fps = 3\n[perception]\ndetect_fps = 4\n")
    assert "same setting" in message


def test_source_and_model_are_both_a_setting_and_a_section(tmp_path: Path) -> None:
    config = from_file(tmp_path, 'source = "0"\nmodel = "local"\n[perception]\nthreshold = 0.5\n')
    assert (config.source.source, config.model.model) == ("0", "local")
    config = from_file(tmp_path, '[source]\nsource = "1"\n[model]\nmodel = "local"\n')
    assert (config.source.source, config.model.model) == ("1", "local")


# ------------------------------------------------------------------ the environment


def test_every_setting_but_tables_and_secrets_has_a_variable_between_the_file_and_the_flags(
    tmp_path: Path,
) -> None:
    path = tmp_path / "lookout.toml"
    path.write_text("[perception]\ndetect_fps = 3\nthreshold = 0.6\n", encoding="utf-8")
    environ = {"LOOKOUT_DETECT_FPS": "4", "LOOKOUT_LOOP": "true", "LOOKOUT_DATA_DIR": "/x"}
    config = make(config_path=path, environ=environ)
    assert config.perception.detect_fps == 4.0  # the variable wins over the file
    assert config.perception.threshold == 0.6  # the file, where no variable says otherwise
    assert config.source.loop is True
    flagged = make({"detect_fps": "5"}, config_path=path, environ=environ)
    assert flagged.perception.detect_fps == 5.0  # the flag wins over both
    assert {name for name in SETTINGS if name not in NOT_FROM_ENV} == set(SETTINGS) - {
        "lines",
        "zones",
        "http_token",
    }


def test_a_bad_variable_is_one_line_naming_it() -> None:
    with pytest.raises(ConfigError) as info:
        make(environ={"LOOKOUT_DETECT_FPS": "500"})
    assert str(info.value) == "LOOKOUT_DETECT_FPS must be more than 0 and at most 120, not '500'"
    with pytest.raises(ConfigError, match=r"^LOOKOUT_PACE must be one of realtime, fast"):
        make(environ={"LOOKOUT_PACE": "slow"})


def test_the_cli_refuses_a_bad_variable_in_one_line_exit_2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOKOUT_STALL_TIMEOUT", "inf")
    result = lookout_in_process("run", "--model", "local", "--no-http")
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("lookout: LOOKOUT_STALL_TIMEOUT must be")


def test_secrets_and_tables_have_no_generic_variable() -> None:
    config = make(environ={"LOOKOUT_API_KEY": "AIza-nope", "LOOKOUT_LINES": "door=0,0,1,1"})
    assert config.model.api_key is None and config.scene.lines == {}
    # LOOKOUT_HTTP_TOKEN keeps its rule: only when no token or token file is given.
    assert make(environ={"LOOKOUT_HTTP_TOKEN": "t0ken"}).outputs.http_token == "t0ken"
    given = make({"http_token": "flag-token"}, environ={"LOOKOUT_HTTP_TOKEN": "t0ken"})
    assert given.outputs.http_token == "flag-token"


def test_the_variable_names_come_from_the_settings() -> None:
    assert env_name("stall_timeout") == "LOOKOUT_STALL_TIMEOUT"
    assert env_name("model_fps") == "LOOKOUT_MODEL_FPS"


# ------------------------------------------------------------------------ old names


def test_fps_is_the_old_name_of_model_fps_and_says_so_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("WARNING", logger="lookout.config"):
        config = make({"fps": "2"}, environ={})
    assert config.model.model_fps == 2.0
    said = [r.getMessage() for r in caplog.records]
    assert said == [
        "--fps is deprecated (it sets only the model lane's rate; --detect-fps is the "
        "detector's): use --model-fps"
    ]
    caplog.clear()
    with caplog.at_level("WARNING", logger="lookout.config"):
        # With a profile the file is laid over it again: still said once.
        config = from_file(tmp_path, 'fps = 0.5\nprofile = "pi5"\n')
    assert config.model.model_fps == 0.5
    assert len(caplog.records) == 1 and "'fps' is deprecated" in caplog.records[0].getMessage()


def test_a_bad_old_fps_flag_is_refused_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"^--fps must be"):
        make({"fps": "0"})
    with pytest.raises(ConfigError, match="same setting"):
        make({"fps": "2", "model_fps": "3"})


@pytest.mark.slow
def test_the_old_fps_flag_still_runs_with_one_warning_line() -> None:
    result = lookout("run", "--fps", "2", "--model", "local", "--no-http", "--source", "README.md")
    lines = result.stderr.splitlines()
    assert result.returncode == 2, result.stderr  # the source is refused after the warning
    warnings = [line for line in lines if "--fps is deprecated" in line]
    assert len(warnings) == 1 and "--model-fps" in warnings[0], result.stderr


def test_run_help_shows_model_fps_in_its_section_and_hides_the_old_name() -> None:
    text = lookout_in_process("run", "--help").stdout
    assert "--model-fps" in text and "model ([model] in the file)" in text
    assert (
        not re.search(r"^\s+--fps\b", text, re.MULTILINE)
        and "perception ([perception] in the file)" in text
    )


# --------------------------------------------------------------------------- log_level


@pytest.fixture
def restored_loggers() -> Iterator[None]:
    """run sets the levels of Lookout's loggers (and the root's) and filters the root's
    handlers: put them back after."""
    root = logging.getLogger()
    handlers, root_level = list(root.handlers), root.level
    levels = {
        name: logger.level
        for name, logger in logging.Logger.manager.loggerDict.items()
        if isinstance(logger, logging.Logger)
    }
    yield
    # pytest's capturing handlers live all session: the run's repeat filter must not stay.
    for handler in {*handlers, *root.handlers}:
        handler.filters[:] = [f for f in handler.filters if not isinstance(f, RepeatFilter)]
    for name, logger in logging.Logger.manager.loggerDict.items():
        if isinstance(logger, logging.Logger):
            logger.setLevel(levels.get(name, logging.NOTSET))
    root.handlers[:] = handlers
    root.setLevel(root_level)


@pytest.mark.usefixtures("restored_loggers")
@pytest.mark.parametrize(
    ("flag", "level"),
    [
        ([], logging.WARNING),
        (["--log-level", "debug"], logging.DEBUG),
        (["--log-level", "error"], logging.ERROR),
        (["--log-level", "error", "-v"], logging.INFO),
    ],
)
def test_log_level_sets_what_lookout_s_loggers_write(flag: list[str], level: int) -> None:
    # The source is refused after logging is set up: the level is what run set.
    result = lookout_in_process(
        "run", "--model", "local", "--no-http", "--source", str(REPO_ROOT / "README.md"), *flag
    )
    assert result.returncode == 2, result.stderr
    assert logging.getLogger("lookout").level == level
    app = logging.getLogger("lookout.app")
    assert app.isEnabledFor(level) and not app.isEnabledFor(level - 1)
    # Asked for more than warnings, the loggers quieted for the console say everything too.
    quiet = logging.getLogger("lookout.connection")
    assert quiet.isEnabledFor(logging.INFO) == (level < logging.WARNING)


@pytest.mark.usefixtures("restored_loggers")
def test_log_level_from_the_file_is_applied(tmp_path: Path) -> None:
    path = tmp_path / "lookout.toml"
    path.write_text('[device]\nlog_level = "debug"\n', encoding="utf-8")
    result = lookout_in_process(
        "run", "--config", str(path), "--model", "local", "--no-http",
        "--source", str(REPO_ROOT / "README.md"),
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert logging.getLogger("lookout").level == logging.DEBUG
