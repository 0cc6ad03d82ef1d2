"""The kinds of value settings take: choices, paths, tokens, limits, and how a value is shown.

Each is a type (a ``Literal`` or an ``Annotated`` with its validator), so the section
models in ``device.config.*_sections`` state a setting's kind once and pydantic checks it
whichever way the value came (flag, TOML, environment).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, get_args

from pydantic import AfterValidator, BeforeValidator

from device.config.text import not_utf8, unsafe
from device.config.urls import (
    check_host_names,
    check_http,
    check_http_url,
    check_mqtt_url,
    check_source,
)

Pace = Literal["realtime", "fast"]
Anchor = Literal["feet", "center"]
EmitMode = Literal["function_response", "text"]
Scheduling = Literal["silent", "when_idle", "interrupt"]
# models/gemini/families.py's FAMILIES, and auto (by model name); a test keeps them equal.
ModelFamily = Literal["auto", "3.8", "3.1", "2.5", "safe"]
LogLevel = Literal["debug", "info", "warning", "error", "critical"]
Precision = Literal["auto", "fp32", "int8"]
Backend = Literal["auto", "onnxruntime", "openvino"]
Profile = Literal["none", "auto", "pi4", "pi5", "laptop"]
SnapshotPrivacy = Literal["none", "faces", "boxes"]
PACES: tuple[str, ...] = get_args(Pace)
EMIT_MODES: tuple[str, ...] = get_args(EmitMode)
SCHEDULINGS: tuple[str, ...] = get_args(Scheduling)

# Above these, timers and frame arithmetic overflow (OpenCV takes int milliseconds).
MAX_FPS = 120.0
MAX_DURATION_S = 1e7
MAX_DWELL_S = 86400.0
DETECT_FPS = 2.0  # enough for a count
SCENE_DETECT_FPS = 5.0  # lines and zones: people move ~1.5 m/s, a crossing needs frames


def shown(value: object) -> str:
    """A value as a one-line message quotes it (TOML's spelling for booleans)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    text = repr(str(value)) if isinstance(value, Path) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _to_path(value: object) -> Path:
    if isinstance(value, Path):
        value = str(value)
    if not isinstance(value, str):
        raise ValueError(f"must be a path, not {shown(value)}")
    if not value.strip():
        raise ValueError("must be a path, not empty")
    # A NUL byte would surface later as a ValueError from os.stat, far from its cause.
    if "\0" in value:
        raise ValueError("must not contain a NUL character")
    try:
        return Path(value).expanduser()
    except RuntimeError:  # ~user of a user that does not exist
        raise ValueError(f"cannot expand ~ in {value!r}") from None


def _camera_index(value: object) -> object:
    # `source = 0` in TOML means camera 0; true/false are ints to Python but not indexes.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


# The id is in every MQTT topic, which carries at most 65,535 bytes; the default id is a
# host name (at most 253 characters, RFC 1035) and a suffix of 7.
MAX_DEVICE_ID = 260


def _device_id(value: str) -> str:
    """A device id names MQTT topics and Home Assistant entities, and is shown on the
    console, the page and in logs, as it is: nothing a terminal or a browser would obey."""
    _not_blank(value)
    problem = unsafe(value)
    if problem is not None:
        raise ValueError(f"{shown(value)} {problem}: a device id is shown as it is")
    if len(value) > MAX_DEVICE_ID:
        raise ValueError(f"is {len(value)} characters long (at most {MAX_DEVICE_ID})")
    return value


def _model_name(value: str) -> str:
    # A model's name is a segment of the resource name the API is sent (models/NAME),
    # and shown on the console and the page.
    problem = unsafe(value)
    if problem is None and any(c.isspace() for c in value):
        problem = "has a space in it"
    if problem is not None:
        raise ValueError(f"{shown(value)} {problem}: a model's name has none")
    return value


def _utf8(value: str) -> str:
    problem = not_utf8(value)
    if problem is not None:  # sent as UTF-8: a byte of argv that is not would not encode
        raise ValueError(f"is not UTF-8 text: it {problem}")
    return value


def no_empty_token(value: str) -> str:
    """A token as given; an empty one (an unset shell variable) is refused."""
    if not value.strip():
        raise ValueError("is empty (an unset shell variable?): give a token, or leave it out")
    if value != value.strip() or any(c.isspace() for c in value):
        raise ValueError("must not contain spaces or line breaks")
    problem = unsafe(value)
    if problem is not None:
        # Compared with an HTTP header's bytes: a control character or a byte that is
        # not UTF-8 (the token's own, so not shown) can never match.
        raise ValueError(f"must be text without control characters: it {problem}")
    return value


def _lower(value: object) -> object:
    return value.lower() if isinstance(value, str) else value


def _on_off(value: object) -> object:
    # TOML's `motion = true` reads as well as `motion = "on"`.
    if isinstance(value, bool):
        return "on" if value else "off"
    return _lower(value)


def _send_frames(value: object) -> object:
    # The flag alone (or TOML's true) sends the one camera's frames; a name, that camera's
    # (checked against the cameras when the run is built: they may come from another layer).
    if isinstance(value, bool):
        return value
    if not isinstance(value, str):
        raise ValueError("must be on, off or the name of the camera whose frames are sent")
    word = value.strip()
    if word.lower() in {"on", "true", "yes", "1"}:
        return True
    if word.lower() in {"off", "false", "no", "0"}:
        return False
    if not word or any(c.isspace() or not c.isprintable() for c in word):
        raise ValueError("must be on, off or the name of the camera whose frames are sent")
    return word


FilePath = Annotated[Path, BeforeValidator(_to_path)]
# Frames to the model: off, on (the one camera) or a camera's name.
SendFrames = Annotated[bool | str, BeforeValidator(_send_frames)]
SourceSpec = Annotated[str, BeforeValidator(_camera_index), AfterValidator(check_source)]
DeviceId = Annotated[str, AfterValidator(_device_id)]
ModelName = Annotated[str, AfterValidator(_model_name)]
Utf8Text = Annotated[str, AfterValidator(_utf8)]
MqttUrl = Annotated[str, AfterValidator(check_mqtt_url)]
HttpAddress = Annotated[str, AfterValidator(check_http)]
HostNames = Annotated[str, AfterValidator(check_host_names)]
HttpUrl = Annotated[str, AfterValidator(check_http_url)]
# An empty token (``--http-token "$UNSET"``) would silently turn authentication off.
Token = Annotated[str, AfterValidator(no_empty_token)]
Level = Annotated[LogLevel, BeforeValidator(_lower)]
OnOff = Annotated[Literal["on", "off"], BeforeValidator(_on_off)]

__all__ = [
    "DETECT_FPS",
    "EMIT_MODES",
    "MAX_DEVICE_ID",
    "MAX_DURATION_S",
    "MAX_DWELL_S",
    "MAX_FPS",
    "PACES",
    "SCENE_DETECT_FPS",
    "SCHEDULINGS",
    "Anchor",
    "Backend",
    "DeviceId",
    "EmitMode",
    "FilePath",
    "HostNames",
    "HttpAddress",
    "HttpUrl",
    "Level",
    "LogLevel",
    "ModelFamily",
    "ModelName",
    "MqttUrl",
    "OnOff",
    "Pace",
    "Precision",
    "Profile",
    "Scheduling",
    "SendFrames",
    "SnapshotPrivacy",
    "SourceSpec",
    "Token",
    "Utf8Text",
    "no_empty_token",
    "shown",
]
