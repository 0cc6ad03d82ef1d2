"""Configuration: one pydantic model is the single source of truth for every setting.

Each field of ``Config`` gives a setting's type, default, constraints and
one-line description; the TOML keys, the ``lookout`` flags and their --help
are derived from it. Values come from defaults, then a TOML file, then
command-line flags (flags win); secrets only from the environment.

Every problem a user can cause (unknown key, wrong type, value out of range,
a file that is not TOML) raises ConfigError with one line that names the
setting as the user wrote it: ``--stall-timeout`` on the command line, the
key and the file otherwise. The CLI prints it and exits 2.
"""

from __future__ import annotations

import difflib
import logging
import math
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, Self, TypeVar, Union, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
)
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from device.app.device_id import default_device_id

log = logging.getLogger("lookout.config")

SYSTEM_CONFIG = Path("/etc/lookout/lookout.toml")
DEFAULT_GEMINI_MODEL = "gemini-3.8-live"
COMMAND_LINE = "command line"

Pace = Literal["realtime", "fast"]
Anchor = Literal["feet", "center"]
EmitMode = Literal["function_response", "text"]
Scheduling = Literal["silent", "when_idle", "interrupt"]
LogLevel = Literal["debug", "info", "warning", "error", "critical"]
Precision = Literal["fp32", "int8"]
Profile = Literal["none", "auto", "pi4", "pi5", "laptop"]
PACES: tuple[str, ...] = get_args(Pace)
EMIT_MODES: tuple[str, ...] = get_args(EmitMode)
SCHEDULINGS: tuple[str, ...] = get_args(Scheduling)


class ConfigError(Exception):
    """A setting a user got wrong; the message is one line naming it."""


def _to_path(value: object) -> Path:
    if isinstance(value, Path):
        value = str(value)
    if not isinstance(value, str):
        raise ValueError(f"must be a path, not {_shown(value)}")
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


def _no_empty_token(value: str) -> str:
    if not value.strip():
        raise ValueError("is empty (an unset shell variable?): give a token, or leave it out")
    if value != value.strip() or any(c.isspace() for c in value):
        raise ValueError("must not contain spaces or line breaks")
    return value


def _lower(value: object) -> object:
    return value.lower() if isinstance(value, str) else value


FilePath = Annotated[Path, BeforeValidator(_to_path)]
SourceSpec = Annotated[str, BeforeValidator(_camera_index)]
DeviceId = Annotated[str, AfterValidator(_not_blank)]
# An empty token (``--http-token "$UNSET"``) would silently turn authentication off.
Token = Annotated[str, AfterValidator(_no_empty_token)]
Level = Annotated[LogLevel, BeforeValidator(_lower)]


def _on_off(value: object) -> object:
    # TOML's `motion = true` reads as well as `motion = "on"`.
    if isinstance(value, bool):
        return "on" if value else "off"
    return _lower(value)


OnOff = Annotated[Literal["on", "off"], BeforeValidator(_on_off)]

# Above these, timers and frame arithmetic overflow (OpenCV takes int milliseconds).
MAX_FPS = 120.0
MAX_DURATION_S = 1e7
DETECT_FPS = 2.0  # enough for a count
SCENE_DETECT_FPS = 5.0  # lines and zones: people move ~1.5 m/s, a crossing needs frames

# --- named lines and zones -------------------------------------------------------------

# Matched whole (fullmatch): "$" alone also matches before a final newline, which let
# "door\n" through as a second line called door on the console.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,39}")
MAX_DWELL_S = 86400.0


class LineSpec(BaseModel):
    """A directed segment A -> B, normalised to the frame (0..1)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    points: tuple[tuple[float, float], tuple[float, float]]


class ZoneSpec(BaseModel):
    """A polygon normalised to the frame, and its own dwell time (None: --dwell)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    points: tuple[tuple[float, float], ...]
    dwell: float | None = None


def _point(value: object, where: str) -> tuple[float, float]:
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise ValueError(f"{where} must be [x, y], not {_shown(value)}")
    xy = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise ValueError(f"{where} must be two numbers, not {_shown(value)}")
        if not 0.0 <= float(v) <= 1.0:
            raise ValueError(
                f"{where} = {_shown(list(value))} is outside 0..1 (coordinates are fractions "
                "of the frame's width and height)"
            )
        xy.append(float(v))
    return (xy[0], xy[1])


def _name(name: object, kind: str) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(
            f"name {_shown(name)} must be 1-40 letters, digits, - or _ "
            "(it names MQTT topics and sensors)"
        )
    return name


def _numbers(name: str, text: str, kind: str) -> list[tuple[float, float]]:
    parts = [p.strip() for p in text.split(",")]
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise ValueError(f"{name}: {text!r} must be numbers separated by commas") from None
    if len(values) % 2:
        raise ValueError(f"{name}: {text!r} has an odd number of coordinates")
    return [
        _point(values[i : i + 2], f"{name}: point {i // 2 + 1}") for i in range(0, len(values), 2)
    ]


def _split_flag(item: object, kind: str, usage: str) -> tuple[str, str]:
    if not isinstance(item, str) or "=" not in item:
        raise ValueError(f"must be {usage}, not {_shown(item)}")
    name, _, text = item.partition("=")
    return _name(name.strip(), kind), text


def _from_flags(value: object, kind: str, usage: str) -> object:
    """Repeated ``--line``/``--zone`` flags (a list of NAME=...) as the TOML table they mean."""
    if not isinstance(value, list):
        return value
    table: dict[str, Any] = {}
    for item in value:
        name, text = _split_flag(item, kind, usage)
        if name in table:
            raise ValueError(f"{name} is given twice")
        table[name] = {"points": _numbers(name, text, kind)}
    return table


def parse_lines(value: object) -> dict[str, LineSpec]:
    """``--line NAME=X1,Y1,X2,Y2`` flags (a list) or a TOML ``[lines.NAME]`` table."""
    value = _from_flags(value, "line", "NAME=X1,Y1,X2,Y2")
    if not isinstance(value, Mapping):
        raise ValueError(f"must be a table of lines, not {_shown(value)}")
    lines: dict[str, LineSpec] = {}
    for name, spec in value.items():
        _name(name, "line")
        if isinstance(spec, LineSpec):
            lines[name] = spec
            continue
        if not isinstance(spec, Mapping) or set(spec) - {"points"} or "points" not in spec:
            raise ValueError(f"{name} must be a table with points = [[x1, y1], [x2, y2]]")
        points = spec["points"]
        if not isinstance(points, list | tuple) or len(points) != 2:
            raise ValueError(f"{name} needs exactly two points [[x1, y1], [x2, y2]]")
        a, b = (_point(p, f"{name}: point {i + 1}") for i, p in enumerate(points))
        if math.dist(a, b) < 0.01:
            raise ValueError(f"{name}: its two points are (almost) the same")
        lines[name] = LineSpec(points=(a, b))
    return lines


def parse_zones(value: object) -> dict[str, ZoneSpec]:
    """``--zone NAME=X1,Y1,X2,Y2,X3,Y3[,...]`` flags or a TOML ``[zones.NAME]`` table."""
    value = _from_flags(value, "zone", "NAME=X1,Y1,X2,Y2,X3,Y3[,...]")
    if not isinstance(value, Mapping):
        raise ValueError(f"must be a table of zones, not {_shown(value)}")
    zones: dict[str, ZoneSpec] = {}
    for name, spec in value.items():
        _name(name, "zone")
        if isinstance(spec, ZoneSpec):
            zones[name] = spec
            continue
        if not isinstance(spec, Mapping) or set(spec) - {"points", "dwell"} or "points" not in spec:
            raise ValueError(
                f"{name} must be a table with points = [[x, y], ...] and optionally dwell"
            )
        points = spec["points"]
        if not isinstance(points, list | tuple) or len(points) < 3:
            raise ValueError(f"{name} needs at least 3 points [[x, y], ...]")
        polygon = tuple(_point(p, f"{name}: point {i + 1}") for i, p in enumerate(points))
        if _area(polygon) < 1e-4:
            raise ValueError(f"{name}: its points enclose no area")
        dwell = spec.get("dwell")
        if dwell is not None:
            ok = isinstance(dwell, int | float) and not isinstance(dwell, bool)
            if not ok or not math.isfinite(dwell) or not 0 < dwell <= MAX_DWELL_S:
                raise ValueError(
                    f"{name}: dwell must be seconds between 0 and {MAX_DWELL_S:g}, "
                    f"not {_shown(dwell)}"
                )
            dwell = float(dwell)
        zones[name] = ZoneSpec(points=polygon, dwell=dwell)
    return zones


def _area(points: tuple[tuple[float, float], ...]) -> float:
    total = 0.0
    for (x1, y1), (x2, y2) in zip(points, points[1:] + points[:1], strict=True):
        total += x1 * y2 - x2 * y1
    return abs(total) / 2


Lines = Annotated[dict[str, LineSpec], BeforeValidator(parse_lines)]
Zones = Annotated[dict[str, ZoneSpec], BeforeValidator(parse_zones)]
# Repeatable flags whose values add to (or replace, by name) the file's.
MERGED = frozenset({"lines", "zones"})


def _default_device_id() -> str:
    # Every Raspberry Pi is called raspberrypi: the host name alone would be shared.
    return default_device_id()


def _unset(text: str) -> dict[str, Any]:
    """What a setting means when it is not given, for --help (its default is None)."""
    return {"unset": text}


class Config(BaseModel):
    """Every setting of a device. Construct with keywords; updates are re-validated."""

    model_config = ConfigDict(
        extra="forbid",
        allow_inf_nan=False,
        validate_assignment=True,
        protected_namespaces=(),
    )

    source: SourceSpec | None = Field(
        default=None,
        description="camera index (0), video file, image folder, RTSP/HTTP URL, or picam",
        json_schema_extra=_unset("the sample video"),
    )
    model: str | None = Field(
        default=None,
        description="local, or a Gemini model name",
        json_schema_extra=_unset("a Gemini model when an API key is set, else local"),
    )
    fps: float = Field(
        default=1.0, gt=0, le=MAX_FPS, description="frames per second sampled for the model lane"
    )
    detect_fps: float | None = Field(
        default=None,
        gt=0,
        le=MAX_FPS,
        description="frames per second the detector and tracker look at (the device count, "
        "lines, zones and every tool)",
        json_schema_extra=_unset(
            f"{DETECT_FPS:g}, or {SCENE_DETECT_FPS:g} when lines or zones are configured"
        ),
    )
    motion: OnOff = Field(
        default="on",
        description="motion gate: while nothing moves, the last detections stand and the "
        "detector runs only on a heartbeat (--motion-heartbeat); with motion, or off, it runs "
        "at --detect-fps",
    )
    motion_threshold: float = Field(
        default=0.001,
        gt=0,
        lt=1,
        description="share of the picture (0..1, of a ~160 px wide grey copy) that must "
        "differ from the recent background to count as motion",
    )
    motion_heartbeat: float = Field(
        default=10.0,
        gt=0,
        le=3600,
        description="seconds between detections while nothing moves (keeps a person "
        "standing still, corrects a wrong count)",
    )
    motion_hangover: float = Field(
        default=2.0,
        ge=0,
        le=600,
        description="seconds the detector keeps its full rate after the last movement (what "
        "the movement started, a new person's confirmation or a track leaving, is settled "
        "by real detections before the scene is held)",
    )
    motion_pixel_delta: float = Field(
        default=25.0,
        gt=0,
        lt=255,
        description="grey levels (0..255) a pixel must differ from the recent background to "
        "have moved: above compression and sensor noise, below a person against a wall",
    )
    lines: Lines = Field(
        default_factory=dict,
        description="a named line to count crossings of, NAME=X1,Y1,X2,Y2 (0..1 of the frame; "
        "in = from its left to its right side walking from the first point to the second); "
        "repeatable; TOML: [lines.NAME] points = [[x1, y1], [x2, y2]]",
        json_schema_extra=_unset("none"),
    )
    zones: Zones = Field(
        default_factory=dict,
        description="a named zone to count people in, NAME=X1,Y1,X2,Y2,X3,Y3[,...] (0..1); "
        "repeatable; TOML: [zones.NAME] points = [[x, y], ...], dwell = seconds",
        json_schema_extra=_unset("none"),
    )
    dwell: float = Field(
        default=30.0,
        gt=0,
        le=MAX_DWELL_S,
        description="seconds in a zone after which a person is dwelling (a zone's own dwell wins)",
    )
    anchor: Anchor = Field(
        default="feet",
        description="the point of a person that crosses lines and stands in zones: the "
        "bottom centre of the box (feet) or its centre",
    )
    send_frames: bool = Field(
        default=False,
        description="also send frames to the model (at most --fps, at most --max-side px)",
    )
    privacy: bool = Field(
        default=False, description="no image ever leaves the device, whatever else is set"
    )
    pace: Pace = Field(
        default="realtime", description="file replay: by timestamps, or as fast as possible"
    )
    loop: bool = Field(default=False, description="replay a file forever")
    duration: float | None = Field(
        default=None,
        gt=0,
        le=MAX_DURATION_S,
        description=(
            "stop after this many seconds: of media time for a file or folder (however "
            "fast it is replayed), of wall time for a camera"
        ),
        json_schema_extra=_unset("run until stopped"),
    )
    events: FilePath | None = Field(
        default=None,
        description="write events as JSON lines to this file",
        json_schema_extra=_unset("none"),
    )
    db: FilePath | None = Field(
        default=None,
        description="record events in this SQLite file (ask: also jobs and per-minute counts)",
        json_schema_extra=_unset("none"),
    )
    threshold: float = Field(default=0.45, gt=0, lt=1, description="detector score threshold")
    detector: FilePath | None = Field(
        default=None,
        description="ONNX person detector file",
        json_schema_extra=_unset("the shipped NanoDet-g 416"),
    )
    profile: Profile = Field(
        default="none",
        description="fit the detector to this CPU: pi4 (int8, 1 detection a second, 2.5 with "
        "lines or zones), pi5 (int8), laptop (the defaults), auto (pi4 or pi5 when the board "
        "says so, else the detector is timed at start-up: int8 and a lower rate when the "
        "defaults would cost over a quarter of a core); settings given explicitly win",
    )
    precision: Precision = Field(
        default="fp32",
        description="which shipped NanoDet-g 416 to run: fp32, or int8 (static int8: about "
        "a fifth less CPU per detection, but it misses some people fp32 finds at scores "
        "near the threshold, so fp32 stays the default; docs/benchmarks.md); --detector wins",
    )
    camera_fps: float | None = Field(
        default=None,
        ge=0,
        le=240,
        description="frame rate to ask a camera for (0: leave it at its own). Default: the "
        "lowest of 5, 10, 15, 20, 25, 30 at least twice the sampling rate; raise it if a "
        "dim scene blurs at the longer exposures a low rate allows",
        json_schema_extra=_unset("twice the sampling rate"),
    )
    detector_threads: int = Field(
        default=1,
        ge=0,
        le=64,
        description="CPU threads one detection may use (0: onnxruntime's choice, one per "
        "core). One costs the least CPU per detection (a second thread cut latency by a "
        "third but cost a quarter more CPU: docs/benchmarks.md)",
    )
    max_side: int = Field(
        default=768, ge=64, le=4096, description="resize frames to at most this many pixels"
    )
    jpeg_quality: int = Field(
        default=80, ge=1, le=100, description="JPEG quality of encoded frames"
    )
    emit: EmitMode = Field(
        default="function_response",
        description="how tool results reach the model (text: for models with synchronous "
        "calls only)",
    )
    scheduling: Scheduling = Field(
        default="when_idle", description="when the model reacts to a count change"
    )
    system_instruction: str | None = Field(
        default=None,
        description="system instruction given to the model",
        json_schema_extra=_unset("the built-in one"),
    )
    device_id: DeviceId = Field(
        default_factory=_default_device_id,
        description="name of this device (MQTT topics, status page)",
        json_schema_extra=_unset("the host name and a suffix unique to this machine"),
    )
    http: str | None = Field(
        default="127.0.0.1:8765",
        description='status server address HOST:PORT ("": no status server)',
    )
    http_token: Token | None = Field(
        default=None,
        description="bearer token required by the status server (all routes but /healthz); "
        "a flag shows in ps: prefer --http-token-file or LOOKOUT_HTTP_TOKEN",
        json_schema_extra=_unset("none, or LOOKOUT_HTTP_TOKEN from the environment"),
    )
    http_token_file: FilePath | None = Field(
        default=None,
        description="read the status server's token from this file (its first line)",
        json_schema_extra=_unset("none"),
    )
    http_insecure: bool = Field(
        default=False,
        description="serve the status page beyond this machine without a token (anyone on "
        "the network can watch the camera and stop streams)",
    )
    http_hosts: str = Field(
        default="",
        description="more host names the page may be reached by, comma-separated (a DNS name, "
        "a reverse proxy's name); the machine's own names and IP addresses always work",
    )
    mqtt: str | None = Field(
        default=None,
        description="publish to an MQTT broker, mqtt://host:port",
        json_schema_extra=_unset("no MQTT"),
    )
    stall_timeout: float = Field(
        default=5.0,
        gt=0,
        le=3600,
        description="seconds without a frame before a live source is reopened",
    )
    folder_fps: float = Field(
        default=1.0, gt=0, le=MAX_FPS, description="frame rate given to an image folder source"
    )
    timelapse: bool = Field(
        default=False,
        description="an image folder is a time-lapse of one scene: follow people from image "
        "to image (otherwise each image is counted on its own)",
    )
    max_image_pixels: int = Field(
        default=50_000_000,
        ge=100_000,
        le=1_000_000_000,
        description="largest image a folder source decodes (a bigger JPEG is decoded at 1/2, "
        "1/4 or 1/8 size; other formats are skipped and said)",
    )
    log_level: Level = Field(default="warning", description="logging level")
    require_model: bool = Field(
        default=False,
        description="exit 1 when the model cannot be connected after --model-attempts attempts "
        "(without it the device keeps running and retrying)",
    )
    model_attempts: int = Field(
        default=6, ge=1, le=1000, description="connection attempts before --require-model gives up"
    )
    fallback_after: float = Field(
        default=30.0,
        ge=0,
        le=86400,
        description="seconds without a connected model after which the console says "
        "the count changes itself",
    )
    # Not settable from files or flags, never dumped or shown: secrets come from the
    # environment only.
    api_key: str | None = Field(default=None, repr=False, exclude=True)

    def detection_fps(self) -> float:
        """The detector's rate: as set, else what the configured lines and zones need."""
        if self.detect_fps is not None:
            return self.detect_fps
        return SCENE_DETECT_FPS if (self.lines or self.zones) else DETECT_FPS

    def model_name(self) -> str:
        if self.model:
            return self.model
        return DEFAULT_GEMINI_MODEL if self.api_key else "local"

    @property
    def uses_gemini(self) -> bool:
        return self.model_name() != "local"

    def secrets(self) -> tuple[str, ...]:
        """What is scrubbed from everything served or sent to a model, wherever it turns
        up: the keys, the token, and the secret parts of the camera's and broker's URLs."""
        from live.redact import url_secrets

        found = (self.api_key, self.http_token, self.mqtt_password())
        urls = (*url_secrets(self.source), *url_secrets(self.mqtt))
        return tuple(s for s in (*found, *urls) if s)

    def mqtt_password(self) -> str | None:
        if not self.mqtt:
            return None
        from urllib.parse import urlsplit

        try:
            return urlsplit(self.mqtt).password
        except ValueError:
            return None

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy; pydantic's does not validate ``update``, this one does (ConfigError)."""
        copied = super().model_copy(deep=deep)
        if not update:
            return copied
        return _validated(type(copied), _values(copied) | dict(update), str)

    def __setattr__(self, name: str, value: Any) -> None:
        try:
            super().__setattr__(name, value)
        except ValidationError as exc:
            raise ConfigError(explain(exc, type(self), str)) from None


ENV_ONLY = frozenset({"api_key"})
SETTINGS: tuple[str, ...] = tuple(name for name in Config.model_fields if name not in ENV_ONLY)

M = TypeVar("M", bound=BaseModel)


FLAG_NAMES = {"lines": "--line", "zones": "--zone"}  # one per flag given


def flag_name(name: str) -> str:
    """The command-line flag of a setting: ``stall_timeout`` -> ``--stall-timeout``."""
    return FLAG_NAMES.get(name) or "--" + name.replace("_", "-")


def _values(config: BaseModel) -> dict[str, Any]:
    # model_dump would drop the excluded api_key; this keeps every field.
    return {name: getattr(config, name) for name in type(config).model_fields}


def _validated(
    model: type[M], data: Mapping[str, Any], where: Callable[[str], str], *, strict: bool = False
) -> M:
    try:
        return model.model_validate(data, strict=strict)
    except ValidationError as exc:
        raise ConfigError(explain(exc, model, where)) from None


# --- turning pydantic's errors into one line -------------------------------------------

_NUMBER = {"float_type", "float_parsing"}
_INTEGER = {"int_type", "int_parsing", "int_from_float", "int_parsing_size"}
_BOOLEAN = {"bool_type", "bool_parsing"}
_BOUNDS = {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}
_FIXED = {"finite_number": "must be a finite number", "string_type": "must be a string"}


def _number(value: object) -> str:
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e16 else f"{value:g}"
    return str(value)


def _range(field: FieldInfo) -> str:
    bounds = {
        kind: getattr(rule, kind)
        for rule in field.metadata
        for kind in ("gt", "ge", "lt", "le")
        if getattr(rule, kind, None) is not None
    }
    if "ge" in bounds and "le" in bounds:
        return f"between {_number(bounds['ge'])} and {_number(bounds['le'])}"
    if "gt" in bounds and "lt" in bounds:
        return f"between {_number(bounds['gt'])} and {_number(bounds['lt'])} (exclusive)"
    words = {"gt": "more than", "ge": "at least", "lt": "less than", "le": "at most"}
    return " and ".join(f"{words[k]} {_number(v)}" for k, v in bounds.items())


def base_type(field: FieldInfo) -> Any:
    """A field's type without ``| None`` and without Annotated's validators."""
    annotation: Any = field.annotation
    if get_origin(annotation) in (Union, UnionType):
        given = [a for a in get_args(annotation) if a is not type(None)]
        annotation = given[0] if len(given) == 1 else annotation
    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def choices(field: FieldInfo) -> tuple[str, ...]:
    """The values a Literal setting takes; empty for other types."""
    annotation = base_type(field)
    if get_origin(annotation) is Literal:
        return tuple(str(c) for c in get_args(annotation))
    return ()


def _shown(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    text = repr(str(value)) if isinstance(value, Path) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _requirement(error: ErrorDetails, field: FieldInfo | None) -> tuple[str, bool]:
    """What the value must be, and whether to show the value given after it."""
    kind = error["type"]
    if kind == "value_error":
        return str(error.get("ctx", {}).get("error", error["msg"])), False
    if kind in _BOUNDS and field is not None:
        return f"must be {_range(field)}", True
    if kind == "literal_error" and field is not None and choices(field):
        return f"must be one of {', '.join(choices(field))}", True
    if kind in _NUMBER:
        return "must be a number", True
    if kind in _INTEGER:
        return "must be an integer", True
    if kind in _BOOLEAN:
        return "must be true or false", True
    if kind == "extra_forbidden":
        return "is not a setting", False
    if kind in _FIXED:
        return _FIXED[kind], True
    # Anything else: pydantic's own first line, worded like ours.
    message = error["msg"].splitlines()[0].replace("Input should be", "must be")
    return message[:1].lower() + message[1:], True


def explain(exc: ValidationError, model: type[BaseModel], where: Callable[[str], str]) -> str:
    """One line for a validation error; ``where`` names a setting as its source spells it."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    name = str(first["loc"][0]) if first["loc"] else ""
    field = model.model_fields.get(name)
    requirement, show_value = _requirement(first, field)
    line = f"{where(name)} {requirement}" if name else requirement
    if show_value:
        line += f", not {_shown(first['input'])}"
    if len(errors) > 1:
        line += f" (and {len(errors) - 1} more)"
    return " ".join(line.split())


# --- sources: files, flags -------------------------------------------------------------


def _closest(key: str, known: tuple[str, ...]) -> str:
    spelled = [k.replace("_", "-") for k in known] if "-" in key else list(known)
    close = difflib.get_close_matches(key, spelled, n=3, cutoff=0.6)
    if not close:
        return "see lookout run --help for the settings"
    return "did you mean " + " or ".join(close) + "?"


# Settings that no longer do anything: a config file that still has one is read (a
# device must not stop starting after an upgrade), and the key is said once, with why.
RETIRED = {
    "smoothing": "the count follows the tracker at every frame, with no median over frames",
    "min_hold": "the count follows the tracker at every frame, with no hold before a change",
}


def _keys(values: Mapping[str, Any], origin: str) -> dict[str, str]:
    """Setting name -> the key as the source wrote it; refuses unknown or repeated keys.

    A retired key is left out, with a warning naming it.
    """
    spelled: dict[str, str] = {}
    for raw in values:
        name = raw.replace("-", "_")
        if name in RETIRED:
            log.warning("%s: %r is no longer used (%s): remove it", origin, raw, RETIRED[name])
            continue
        if name in ENV_ONLY:
            raise ConfigError(
                f"{origin}: {name} does not belong in a config file or on the command line; "
                "set GEMINI_API_KEY in the environment"
            )
        if name not in SETTINGS:
            raise ConfigError(f"{origin}: unknown setting {raw!r} ({_closest(raw, SETTINGS)})")
        if name in spelled:
            raise ConfigError(f"{origin}: {spelled[name]!r} and {raw!r} are the same setting")
        spelled[name] = raw
    return spelled


def apply(config: Config, values: Mapping[str, Any], origin: str) -> Config:
    """``config`` updated with ``values`` and re-validated.

    ``origin`` is COMMAND_LINE for flags (strings are parsed; errors name the
    flag) or the file the values were read from (TOML types must match; errors
    name the key and the file).
    """
    spelled = _keys(values, origin)
    updates = {name: values[raw] for name, raw in spelled.items()}
    data = _values(config) | updates
    if origin == COMMAND_LINE:
        for name in MERGED & updates.keys():
            # A flag adds a line (or replaces the file's of that name); the others stay.
            parse = parse_lines if name == "lines" else parse_zones
            try:
                data[name] = getattr(config, name) | parse(updates[name])
            except ValueError as exc:
                raise ConfigError(f"{flag_name(name)} {exc}") from None
        return _validated(Config, data, flag_name)

    def key(name: str) -> str:
        return f"{origin}: {spelled.get(name, name)}"

    # TOML values have types already; strict keeps `loop = 1` or `fps = "2"` out.
    return _validated(Config, data, key, strict=True)


def parse_flags(model: type[M], flags: Mapping[str, Any]) -> M:
    """Validate command-line options (None: not given) into ``model``; errors name the flag."""
    given = {name: value for name, value in flags.items() if value is not None}
    return _validated(model, given, flag_name)


def load_file(path: Path) -> dict[str, Any]:
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except IsADirectoryError:
        raise ConfigError(f"cannot read config file {path}: it is a directory") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
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
        # [lines.NAME] and [zones.NAME] beside [lookout] belong to it too.
        for name in MERGED:
            if name in data and name not in section:
                section[name] = data[name]
    return section


def validate(config: Config) -> Config:
    """Check what the values need from the world: files that exist, an API key.

    The values themselves were checked when the Config was made.
    """
    if config.detector is not None and not config.detector.is_file():
        raise ConfigError(f"detector model not found: {config.detector}")
    from device.app.paths import check_writable_file  # it raises this module's ConfigError

    for name, what in (("events", "file"), ("db", "database file")):
        path: Path | None = getattr(config, name)
        if path is not None:
            check_writable_file(name, path, what)
    if config.http_token_file is not None:
        if config.http_token is not None:
            raise ConfigError("give --http-token or --http-token-file, not both")
        config = config.model_copy(update={"http_token": read_token(config.http_token_file)})
    from device.tracker import TrackerConfig, can_follow

    if (config.lines or config.zones) and not can_follow(1 / config.detection_fps()):
        # A crossing or a stay is a person followed from one detection to the next.
        raise ConfigError(
            f"lines and zones need more than {1 / TrackerConfig.max_lost_s:g} detections a "
            f"second to follow people (--detect-fps is {config.detection_fps():g})"
        )
    if config.uses_gemini and not config.api_key:
        raise ConfigError(
            f"model {config.model_name()} needs an API key: set GEMINI_API_KEY "
            "(or use --model local)"
        )
    return config


def read_token(path: Path) -> str:
    """The first line of a token file (``--http-token-file``), checked like a flag's."""
    try:
        # utf-8-sig: an editor's byte-order mark is not part of the token (with it,
        # every client was refused 401 and nothing said why).
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or "not UTF-8 text"
        raise ConfigError(f"--http-token-file {path}: {reason}") from None
    token = text.splitlines()[0].strip() if text.strip() else ""
    try:
        return _no_empty_token(token)
    except ValueError as exc:
        raise ConfigError(f"--http-token-file {path}: the token {exc}") from None


def token_from_env(environ: Mapping[str, str]) -> str | None:
    if "LOOKOUT_HTTP_TOKEN" not in environ:
        return None
    try:
        return _no_empty_token(environ["LOOKOUT_HTTP_TOKEN"].strip())
    except ValueError as exc:
        raise ConfigError(f"LOOKOUT_HTTP_TOKEN {exc}") from None


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
    """Defaults, then the config file (``--config`` or /etc/lookout), then flags.

    A flag whose value is None was not given.
    """
    config = Config()
    path = config_path if config_path is not None else system_config
    from_file: dict[str, Any] | None = None
    if config_path is not None or system_config.is_file():
        from_file = load_file(path)
        config = apply(config, from_file, str(path))
    given = {k: v for k, v in flags.items() if v is not None}
    config = apply(config, given, COMMAND_LINE)
    if config.profile != "none":
        # The profile replaces defaults only: the file and the flags are applied over it.
        from device.app.profiles import profile_defaults

        preset = profile_defaults(config.profile, scene=bool(config.lines or config.zones))
        config = apply(Config(), preset, COMMAND_LINE)
        if from_file is not None:
            config = apply(config, from_file, str(path))
        config = apply(config, given, COMMAND_LINE)
    update: dict[str, Any] = {"api_key": api_key_from_env(environ)}
    if config.http_token is None and config.http_token_file is None:
        update["http_token"] = token_from_env(environ)  # out of ps and shell history
    config = config.model_copy(update=update)
    return validate(config)
