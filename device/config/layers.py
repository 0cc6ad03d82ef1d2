"""Where settings come from, in order: defaults < profile < TOML file < environment < flags.

Each source is read once into ``Given`` (the values by setting, and each setting as the
source spells it), then laid over the configuration below it and validated: every
mistake is one line naming the setting as the user wrote it (``--stall-timeout``,
``lookout.toml: perception.detect-fps``, ``LOOKOUT_DETECT_FPS``).

A TOML file may be flat (``detect_fps = 5``, as before sections), sectioned
(``[perception]`` then ``detect_fps = 5``), or either inside a ``[lookout]`` table.
Every setting but the secrets also has a variable, ``LOOKOUT_<NAME>``; lines and
zones (tables) come from files and flags only. Secrets come from the environment
only (``device.config.checks``).
"""

from __future__ import annotations

import difflib
import logging
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from device.config.cameras import cameras_table, scene_flags, sources_flags
from device.config.checks import (
    api_key_from_env,
    check_gemini_env,
    token_from_env,
    validate,
    vertex_from_env,
)
from device.config.detector.profiles import profile_defaults
from device.config.errors import COMMAND_LINE, ENVIRONMENT, ConfigError
from device.config.model import (
    ENV_ONLY,
    SECTION_OF,
    SECTIONS,
    SETTINGS,
    Config,
    M,
    is_section,
    merged,
    validated,
)
from device.config.scene.specs import PARSERS

log = logging.getLogger("lookout.config")

SYSTEM_CONFIG = Path("/etc/lookout/lookout.toml")
FLAG_NAMES = {"lines": "--line", "zones": "--zone"}  # one per flag given
# Tables, or a secret with its own rule (LOOKOUT_HTTP_TOKEN: device.config.checks).
NOT_FROM_ENV = frozenset({"lines", "zones", "http_token", *ENV_ONLY})

# Settings that no longer do anything: a config file that still has one is read (a
# device must not stop starting after an upgrade), and the key is said once, with why.
RETIRED = {
    "smoothing": "the count follows the tracker at every frame, with no median over frames",
    "min_hold": "the count follows the tracker at every frame, with no hold before a change",
}
# Old names that still work, said once: the old name -> the setting, and why it changed.
RENAMED = {
    "fps": ("model_fps", "it sets only the model lane's rate; --detect-fps is the detector's")
}


def flag_name(name: str) -> str:
    """The command-line flag of a setting: ``stall_timeout`` -> ``--stall-timeout``."""
    return FLAG_NAMES.get(name) or "--" + name.replace("_", "-")


def env_name(name: str) -> str:
    """The environment variable of a setting: ``stall_timeout`` -> ``LOOKOUT_STALL_TIMEOUT``."""
    return "LOOKOUT_" + name.upper()


@dataclass
class Given:
    """What one source sets: values by setting name, and how the source spells each."""

    origin: str  # COMMAND_LINE, ENVIRONMENT, or the file's path
    values: dict[str, Any] = field(default_factory=dict)
    spelled: dict[str, str] = field(default_factory=dict)
    # Retired and renamed keys, said once the values validate: a bad value is one line.
    notes: list[str] = field(default_factory=list)

    def where(self, name: str) -> str:
        """A setting as a message names it for this source."""
        raw = self.spelled.get(name, name)
        if self.origin == COMMAND_LINE and name.startswith("cameras."):
            # A camera's value on the command line came from its named flag.
            _, camera, setting = [*name.split("."), "", ""][:3]
            flag = flag_name(setting) if setting else "--source"
            return f"{flag} {camera}{'=' if flag == '--source' else ':'}"
        if self.origin == COMMAND_LINE:
            return flag_name(raw.replace("-", "_"))
        if self.origin == ENVIRONMENT:
            return raw if raw.startswith("LOOKOUT_") else env_name(name)
        return f"{self.origin}: {raw}"


def _closest(key: str, known: tuple[str, ...]) -> str:
    spelled = [k.replace("_", "-") for k in known] if "-" in key else list(known)
    close = difflib.get_close_matches(key, spelled, n=3, cutoff=0.6)
    if not close:
        return "see lookout run --help for the settings"
    return "did you mean " + " or ".join(close) + "?"


def read(values: Mapping[str, Any], origin: str) -> Given:
    """The settings a file's table or the flags give; refuses unknown or repeated keys.

    A retired key is left out and a renamed one taken, each with a warning naming it.
    """
    given = Given(origin)
    for raw, value in values.items():
        key = raw.replace("-", "_")
        if key == "cameras" and origin != COMMAND_LINE:
            given.values["cameras"] = cameras_table(value, f"{origin}: {raw}")
            given.spelled["cameras"] = raw
            continue
        if origin != COMMAND_LINE and is_section(key, value):
            for inner, inner_value in value.items():
                _take(given, inner, inner_value, section=(key, raw))
        else:
            _take(given, raw, value)
    return given


def _take(given: Given, raw: str, value: Any, section: tuple[str, str] | None = None) -> None:
    origin = given.origin
    name = raw.replace("-", "_")
    shown = f"{section[1]}.{raw}" if section else raw
    where = flag_name(name) if origin == COMMAND_LINE else f"{origin}: {shown!r}"
    if name in RETIRED:
        given.notes.append(f"{where} is no longer used ({RETIRED[name]}): remove it")
        return
    if name in RENAMED:
        new, why = RENAMED[name]
        instead = flag_name(new) if origin == COMMAND_LINE else new
        given.notes.append(f"{where} is deprecated ({why}): use {instead}")
        name = new
    if name in ENV_ONLY:
        raise ConfigError(
            f"{origin}: {name} does not belong in a config file or on the command line; "
            + (
                "set GEMINI_API_KEY in the environment"
                if name == "api_key"
                else "set GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_CLOUD_PROJECT and "
                "GOOGLE_CLOUD_LOCATION in the environment"
            )
        )
    if section is not None and name in SECTION_OF and SECTION_OF[name] != section[0]:
        raise ConfigError(
            f"{origin}: {shown!r} is not a setting of [{section[1]}] "
            f"(it belongs in [{SECTION_OF[name]}])"
        )
    if name not in SETTINGS:
        known = tuple(SECTIONS[section[0]].model_fields) if section else (*SETTINGS, *SECTIONS)
        raise ConfigError(f"{origin}: unknown setting {shown!r} ({_closest(raw, known)})")
    if name in given.values:
        raise ConfigError(f"{origin}: {given.spelled[name]!r} and {shown!r} are the same setting")
    given.values[name] = value
    given.spelled[name] = shown


def from_env(environ: Mapping[str, str]) -> Given:
    """``LOOKOUT_<NAME>`` variables of settings (strings, parsed like flags)."""
    given = Given(ENVIRONMENT)
    for name in SETTINGS:
        variable = env_name(name)
        if name not in NOT_FROM_ENV and variable in environ:
            given.values[name] = environ[variable]
            given.spelled[name] = variable
    return given


def apply(
    config: Config, given: Given | Mapping[str, Any], origin: str = "", *, say_notes: bool = True
) -> Config:
    """``config`` with ``given`` over it, validated again.

    Flags and variables are strings to parse; a file's values have TOML types already,
    so they must match (strict: ``loop = 1`` or ``detect_fps = "2"`` are refused).
    ``given`` may be a mapping read from ``origin`` (COMMAND_LINE or a file).
    """
    if not isinstance(given, Given):
        given = read(given, origin)
    updates = dict(given.values)
    if given.origin == COMMAND_LINE:
        updates = _camera_flags(config, updates)
        for name in PARSERS.keys() & updates.keys():
            # A flag adds a line (or replaces the file's of that name); the others stay.
            try:
                updates[name] = getattr(config.scene, name) | PARSERS[name](updates[name])
            except ValueError as exc:
                raise ConfigError(f"{flag_name(name)} {exc}") from None
    strict = given.origin not in (COMMAND_LINE, ENVIRONMENT)
    config = validated(Config, merged(config, updates), given.where, strict=strict)
    if say_notes:
        _say(given)
    return config


def _camera_flags(config: Config, updates: dict[str, Any]) -> dict[str, Any]:
    """``--source`` (given once or more, named or not) and ``--line``/``--zone`` naming a
    camera, as the settings they mean: the device's, or a camera's (``cameras.py``)."""
    cameras: dict[str, dict[str, Any]] = {}
    sources = updates.get("source")
    if isinstance(sources, list):
        single, named = sources_flags(sources)
        if single is not None and config.cameras:
            raise ConfigError(
                f"--source {single!r} names no camera, and the configuration has cameras "
                f"({', '.join(config.cameras)}): give it as --source NAME={single}"
            )
        if single is None:
            del updates["source"]
        else:
            updates["source"] = single
        for name, spec in named.items():
            cameras.setdefault(name, {})["source"] = spec
    known = set(config.cameras) | set(cameras)
    for setting in PARSERS:
        items = updates.get(setting)
        if not isinstance(items, list):
            continue
        own, by_camera = scene_flags(setting, items, known)
        if own:
            updates[setting] = own
        else:
            del updates[setting]
        for name, flags in by_camera.items():
            cameras.setdefault(name, {})[setting] = flags
    if cameras:
        updates["cameras"] = cameras
    return updates


def _say(given: Given) -> None:
    for note in given.notes:
        log.warning("%s", note)
    given.notes.clear()  # a layer applied again (over a profile) is not said twice


def parse_flags(model: type[M], flags: Mapping[str, Any]) -> M:
    """Validate command-line options (None: not given) into ``model``; errors name the flag."""
    given = {name: value for name, value in flags.items() if value is not None}
    return validated(model, given, flag_name)


def load_file(path: Path, flag: str = "config file") -> dict[str, Any]:
    """A config file's settings: its top level, or its ``[lookout]`` table; ``flag``
    names it in what is said (``--config``, or the system's file)."""
    # In here: the configuration loads nothing outside itself when imported.
    from device.files.input_file import CONFIG_MAX, read_input

    try:
        text = read_input(path, CONFIG_MAX).decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except IsADirectoryError:
        raise ConfigError(f"cannot read config file {path}: it is a directory") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {flag} {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        reason = " ".join(str(exc).split())
        raise ConfigError(f"{path}: not valid TOML ({reason})") from None
    # Accept both a flat file and one with a [lookout] table.
    nested = "lookout" in data
    section = data.get("lookout", data)
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: [lookout] must be a table")
    section = {k: v for k, v in section.items() if k != "lookout"}
    if nested:
        # Tables beside [lookout] ([lines.NAME], [zones.NAME], [perception]...) belong
        # to it too.
        for name in (*PARSERS, *SECTIONS, "cameras"):
            if name in data and name not in section:
                section[name] = data[name]
    return section


def _stack(config: Config, layers: list[Given]) -> Config:
    for given in layers:
        config = apply(config, given, say_notes=False)
    return config


def stacked(
    flags: Mapping[str, Any],
    *,
    config_path: Path | None = None,
    environ: Mapping[str, str] = os.environ,
    system_config: Path = SYSTEM_CONFIG,
) -> tuple[Config, list[Given]]:
    """Defaults, the profile, the config file (``--config`` or /etc/lookout), the
    environment's ``LOOKOUT_`` variables, then flags (a flag whose value is None was not
    given), each setting recorded as given by the layer that set it last; and the layers,
    whose notes are not said yet. Nothing of the world is checked (``build`` does)."""
    layers: list[Given] = []
    path = config_path if config_path is not None else system_config
    if config_path is not None or system_config.is_file():
        flag = "--config" if config_path is not None else "config file"
        layers.append(read(load_file(path, flag), str(path)))
    layers.append(from_env(environ))
    layers.append(read({k: v for k, v in flags.items() if v is not None}, COMMAND_LINE))
    config = _stack(Config(), layers)
    if config.perception.profile != "none":
        # The profile replaces defaults only: the file, variables and flags go over it.
        preset = profile_defaults(
            config.perception.profile,
            scene=config.has_scene,
            backend=config.perception.backend,
        )
        config = _stack(apply(Config(), preset, COMMAND_LINE), layers)
    # Flags over variables over the file: the last layer that set a value names it.
    config.with_given({name: given.where(name) for given in layers for name in given.values})
    config.read_from(path if config_path is not None or system_config.is_file() else None)
    return config, layers


def build(
    flags: Mapping[str, Any],
    *,
    config_path: Path | None = None,
    environ: Mapping[str, str] = os.environ,
    system_config: Path = SYSTEM_CONFIG,
) -> Config:
    """The layers (``stacked``), then the secrets, and what the values need from the world
    (``checks.validate``)."""
    config, layers = stacked(
        flags, config_path=config_path, environ=environ, system_config=system_config
    )
    update: dict[str, Any] = {
        "api_key": api_key_from_env(environ),
        "vertex": vertex_from_env(environ),
    }
    if config.outputs.http_token is None and config.outputs.http_token_file is None:
        update["http_token"] = token_from_env(environ)  # out of ps and shell history
    config = validate(config.model_copy(update=update))
    check_gemini_env(config, environ)
    for given in layers:  # only once every layer is good: a mistake is one line
        _say(given)
    return config


__all__ = [
    "RENAMED",
    "RETIRED",
    "SYSTEM_CONFIG",
    "Given",
    "apply",
    "build",
    "env_name",
    "flag_name",
    "from_env",
    "load_file",
    "parse_flags",
    "read",
    "stacked",
]
