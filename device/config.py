"""Configuration: a TOML file, then command-line flags (flags win), secrets from the environment.

Every problem a user can cause (unknown key, wrong type, value out of range)
raises ConfigError with one line that names the setting and the source it
came from; the CLI prints it and exits 2.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

SYSTEM_CONFIG = Path("/etc/lookout/lookout.toml")
DEFAULT_GEMINI_MODEL = "gemini-3.8-live"
PACES = ("realtime", "fast")
EMIT_MODES = ("function_response", "text")
SCHEDULINGS = ("silent", "when_idle", "interrupt")


class ConfigError(Exception):
    """A setting a user got wrong; the message is one line naming it."""


@dataclass
class Config:
    source: str | None = None  # None: the sample video
    model: str | None = None  # None: Gemini when an API key is set, else the local model
    fps: float = 1.0  # capture sampling for the model lane
    detect_fps: float = 2.0  # count_people's own rate (the capture loop samples for both)
    send_frames: bool = False
    privacy: bool = False
    pace: str = "realtime"
    loop: bool = False
    duration: float | None = None
    events: Path | None = None
    db: Path | None = None
    threshold: float = 0.45
    detector: Path | None = None
    max_side: int = 768
    jpeg_quality: int = 80
    emit: str = "function_response"
    scheduling: str = "when_idle"
    min_hold: float = 1.0
    smoothing: int = 3
    system_instruction: str | None = None
    device_id: str = field(default_factory=lambda: _default_device_id())
    http: str | None = "127.0.0.1:8765"
    http_token: str | None = None
    mqtt: str | None = None
    stall_timeout: float = 5.0  # seconds without a frame before a live source is reopened
    folder_fps: float = 1.0  # frame rate given to an image folder
    log_level: str = "warning"
    # Not settable from files or flags: secrets come from the environment only.
    api_key: str | None = field(default=None, repr=False)

    def model_name(self) -> str:
        if self.model:
            return self.model
        return DEFAULT_GEMINI_MODEL if self.api_key else "local"

    @property
    def uses_gemini(self) -> bool:
        return self.model_name() != "local"

    def secrets(self) -> tuple[str, ...]:
        return tuple(s for s in (self.api_key, self.http_token, self.mqtt_password()) if s)

    def mqtt_password(self) -> str | None:
        if not self.mqtt:
            return None
        from urllib.parse import urlsplit

        try:
            return urlsplit(self.mqtt).password
        except ValueError:
            return None


def _default_device_id() -> str:
    name = socket.gethostname() or "lookout"
    cleaned = "".join(c if c.isalnum() or c in "-_" else "-" for c in name.lower())
    return cleaned.strip("-") or "lookout"


_FIELDS = {f.name: f for f in fields(Config) if f.name != "api_key"}
_OPTIONAL_FLOAT = {"duration"}
_PATHS = {"events", "db", "detector"}
_OPTIONAL_STR = {"source", "model", "system_instruction", "http", "http_token", "mqtt"}
_FLOATS = {"fps", "detect_fps", "threshold", "min_hold", "stall_timeout", "folder_fps"}
_INTS = {"max_side", "jpeg_quality", "smoothing"}
_BOOLS = {"send_frames", "privacy", "loop"}
_STRS = {"pace", "emit", "scheduling", "device_id", "log_level"}


def _coerce(name: str, value: Any, origin: str) -> Any:
    where = f"{origin}: {name}"
    if value is None:
        if name in _OPTIONAL_FLOAT | _PATHS | _OPTIONAL_STR:
            return None
        raise ConfigError(f"{where} must not be empty")
    if name in _BOOLS:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{where} must be true or false, not {value!r}")
    if name in _FLOATS or name in _OPTIONAL_FLOAT:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise ConfigError(f"{where} must be a number, not {value!r}")
    if name in _INTS:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ConfigError(f"{where} must be an integer, not {value!r}")
    if name in _PATHS:
        if isinstance(value, str | Path) and str(value):
            return Path(value).expanduser()
        raise ConfigError(f"{where} must be a path, not {value!r}")
    if name in _STRS or name in _OPTIONAL_STR:
        if isinstance(value, int) and not isinstance(value, bool) and name == "source":
            return str(value)  # `source = 0` in TOML means camera 0
        if isinstance(value, str):
            return value
        raise ConfigError(f"{where} must be a string, not {value!r}")
    raise ConfigError(f"{where} is not a setting")


def apply(config: Config, values: Mapping[str, Any], origin: str) -> Config:
    updates: dict[str, Any] = {}
    for raw_key, value in values.items():
        key = raw_key.replace("-", "_")
        if key == "api_key":
            raise ConfigError(
                f"{origin}: api_key does not belong in a config file; "
                "set GEMINI_API_KEY in the environment"
            )
        if key not in _FIELDS:
            known = ", ".join(sorted(_FIELDS))
            raise ConfigError(f"{origin}: unknown setting {raw_key!r} (known: {known})")
        updates[key] = _coerce(key, value, origin)
    return dataclasses.replace(config, **updates)


def load_file(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    # Accept both a flat file and one with a [lookout] table.
    section = data.get("lookout", data)
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: [lookout] must be a table")
    return {k: v for k, v in section.items() if k != "lookout"}


def validate(config: Config) -> Config:
    def need(ok: bool, message: str) -> None:
        if not ok:
            raise ConfigError(message)

    need(config.fps > 0, f"fps must be positive, not {config.fps:g}")
    need(config.detect_fps > 0, f"detect_fps must be positive, not {config.detect_fps:g}")
    need(config.pace in PACES, f"pace must be one of {', '.join(PACES)}, not {config.pace!r}")
    need(
        config.emit in EMIT_MODES,
        f"emit must be one of {', '.join(EMIT_MODES)}, not {config.emit!r}",
    )
    need(
        config.scheduling in SCHEDULINGS,
        f"scheduling must be one of {', '.join(SCHEDULINGS)}, not {config.scheduling!r}",
    )
    need(0 < config.threshold < 1, f"threshold must be between 0 and 1, not {config.threshold:g}")
    need(64 <= config.max_side <= 4096, f"max_side must be 64..4096, not {config.max_side}")
    need(1 <= config.jpeg_quality <= 100, f"jpeg_quality must be 1..100, not {config.jpeg_quality}")
    need(config.min_hold >= 0, f"min_hold must not be negative, not {config.min_hold:g}")
    need(config.smoothing >= 1, f"smoothing must be at least 1, not {config.smoothing}")
    need(
        config.duration is None or config.duration > 0,
        f"duration must be positive, not {config.duration}",
    )
    need(config.stall_timeout > 0, "stall_timeout must be positive")
    need(config.folder_fps > 0, f"folder_fps must be positive, not {config.folder_fps:g}")
    need(bool(config.device_id.strip()), "device_id must not be empty")
    if config.detector is not None:
        need(config.detector.is_file(), f"detector model not found: {config.detector}")
    for name in ("events", "db"):
        path: Path | None = getattr(config, name)
        if path is not None and path.parent != Path() and not path.parent.is_dir():
            raise ConfigError(f"{name}: directory does not exist: {path.parent}")
    if config.uses_gemini and not config.api_key:
        raise ConfigError(
            f"model {config.model_name()} needs an API key: set GEMINI_API_KEY "
            "(or use --model local)"
        )
    return config


def api_key_from_env(environ: Mapping[str, str] = os.environ) -> str | None:
    # The SDK prefers GOOGLE_API_KEY when both are set; do the same so we never
    # report one key while the client uses the other.
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY"):
        value = environ.get(name, "").strip()
        if value:
            return value
    return None


def build(
    flags: Mapping[str, Any],
    *,
    config_path: Path | None = None,
    environ: Mapping[str, str] = os.environ,
    system_config: Path = SYSTEM_CONFIG,
) -> Config:
    """Defaults, then the config file (``--config`` or /etc/lookout), then flags."""
    config = Config()
    if config_path is not None:
        config = apply(config, load_file(config_path), str(config_path))
    elif system_config.is_file():
        config = apply(config, load_file(system_config), str(system_config))
    given = {k: v for k, v in flags.items() if v is not None}
    config = apply(config, given, "command line")
    config.api_key = api_key_from_env(environ)
    return validate(config)
