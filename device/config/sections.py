"""Every setting, by concern: one pydantic model per section, each field its one description.

A field's type, default, bounds and one-line description are the setting: its flag
(``--detect-fps``), its TOML key (``detect_fps``, flat or in its section's table
``[perception]``), its variable (``LOOKOUT_DETECT_FPS``), its --help line and its
error messages all come from it. A setting's name is unique across sections, so a flat
key still says which setting it is. A new concern (audio, one camera of several) is one
more section here and one more field of ``device.config.model.Config``.

Kept whole: one list of every setting, so a name is seen to be unique across sections
and each section's fields read side by side; each field is a declaration, not logic.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from device.config.device_id import default_device_id
from device.config.errors import ConfigError
from device.config.explain import explain
from device.config.scene import Lines, Zones
from device.config.values import (
    DETECT_FPS,
    MAX_DURATION_S,
    MAX_DWELL_S,
    MAX_FPS,
    SCENE_DETECT_FPS,
    Anchor,
    DeviceId,
    EmitMode,
    FilePath,
    Level,
    ModelFamily,
    OnOff,
    Pace,
    Precision,
    Profile,
    Scheduling,
    SnapshotPrivacy,
    SourceSpec,
    Token,
)


def _unset(text: str) -> dict[str, Any]:
    """What a setting means when it is not given, for --help (its default is None)."""
    return {"unset": text}


class Section(BaseModel):
    """One concern's settings; an assignment is validated (a mistake is a ConfigError)."""

    model_config = ConfigDict(
        extra="forbid", allow_inf_nan=False, validate_assignment=True, protected_namespaces=()
    )

    def __setattr__(self, name: str, value: Any) -> None:
        try:
            super().__setattr__(name, value)
        except ValidationError as exc:
            raise ConfigError(explain(exc, type(self), str)) from None


class SourceSettings(Section):
    """Where frames come from, how they are read and how they are prepared."""

    source: SourceSpec | None = Field(
        default=None,
        description="camera index (0), video file, image folder, RTSP/HTTP URL, or picam",
        json_schema_extra=_unset("the sample video"),
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
    camera_fps: float | None = Field(
        default=None,
        ge=0,
        le=240,
        description="frame rate to ask a camera for (0: leave it at its own). Default: the "
        "lowest of 5, 10, 15, 20, 25, 30 at least twice the sampling rate; raise it if a "
        "dim scene blurs at the longer exposures a low rate allows",
        json_schema_extra=_unset("twice the sampling rate"),
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
    max_side: int = Field(
        default=768, ge=64, le=4096, description="resize frames to at most this many pixels"
    )
    jpeg_quality: int = Field(
        default=80, ge=1, le=100, description="JPEG quality of encoded frames"
    )


class PerceptionSettings(Section):
    """The detector, its rate and the motion gate in front of it."""

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
    threshold: float = Field(
        default=0.45,
        gt=0,
        lt=1,
        description="lowest detector score a box needs to count as a person: lower finds "
        "more people in poor light, and more things that are not people",
    )
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
    detector_threads: int = Field(
        default=1,
        ge=0,
        le=64,
        description="CPU threads one detection may use (0: onnxruntime's choice, one per "
        "core). One costs the least CPU per detection (a second thread cut latency by a "
        "third but cost a quarter more CPU: docs/benchmarks.md)",
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


class SceneSettings(Section):
    """The named lines and zones, and how a person is placed on them."""

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


class VertexPlace(BaseModel):
    """Where Gemini runs on Vertex AI (from the SDK's environment variables only:
    ``models/gemini/vertex.py`` reads them); None in ``ModelSettings.vertex``: the Gemini API."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    project: str
    location: str
    base_url: str | None = None


class ModelSettings(Section):
    """The live model: which, what it is sent, how it is told, how hard to insist on it."""

    model: str | None = Field(
        default=None,
        description="local, or a Gemini model name",
        json_schema_extra=_unset("a Gemini model when an API key is set, else local"),
    )
    send_frames: bool = Field(
        default=False,
        description="also send frames to the model (at most --model-fps, at most --max-side px)",
    )
    model_fps: float = Field(
        default=1.0,
        gt=0,
        le=MAX_FPS,
        description="frames per second sent to the model with --send-frames (its lane only: "
        "the detector's rate is --detect-fps); formerly --fps",
    )
    look_per_minute: int = Field(
        default=4,
        ge=0,
        le=60,
        description="how many times a minute the model may look at the scene (its look tool; "
        "0: never)",
    )
    budget_tokens: int | None = Field(
        default=None,
        ge=1,
        le=10**12,
        description="a spending cap: tokens per rolling hour (from the model's usage "
        "reports); at 80 % frames and looks stop, at 100 % updates reach the model at most "
        "once a minute",
        json_schema_extra=_unset("no cap"),
    )
    budget_session: int | None = Field(
        default=None,
        ge=1,
        le=10**12,
        description="a spending cap: tokens for the whole run (as --budget-tokens, but it "
        "never frees room)",
        json_schema_extra=_unset("no cap"),
    )
    emit: EmitMode | None = Field(
        default=None,
        description="how tool results reach the model (text: for models with synchronous "
        "calls only)",
        json_schema_extra=_unset("by the model's family: text for synchronous calls only"),
    )
    family: ModelFamily = Field(
        default="auto",
        description="the Gemini Live model family whose wire forms to use (3.8, 3.1, 2.5, "
        "or safe: what every family takes); auto: by the model's name",
    )
    scheduling: Scheduling = Field(
        default="when_idle", description="when the model reacts to a count change"
    )
    system_instruction: str | None = Field(
        default=None,
        description="system instruction given to the model",
        json_schema_extra=_unset("the built-in one"),
    )
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
    token_file: FilePath | None = Field(
        default=None,
        description="connect with ephemeral tokens (lookout token) read from this file, "
        "re-read at every connection, instead of an API key on the device",
        json_schema_extra=_unset("none"),
    )
    token_url: str | None = Field(
        default=None,
        description="connect with ephemeral tokens fetched from this URL (GET), a fresh one "
        "for every connection, instead of an API key on the device",
        json_schema_extra=_unset("none"),
    )
    # Not settable from files, flags or LOOKOUT_ variables, never dumped or shown: the key
    # comes from GEMINI_API_KEY or GOOGLE_API_KEY only.
    api_key: str | None = Field(default=None, repr=False, exclude=True)
    # Not settable either: GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_CLOUD_PROJECT,
    # GOOGLE_CLOUD_LOCATION (and GOOGLE_VERTEX_BASE_URL) only.
    vertex: VertexPlace | None = Field(default=None, exclude=True)


class AudioSettings(Section):
    """The device's voice: what it hears, where it speaks, and when it listens."""

    mic: str | None = Field(
        default=None,
        description="listen: a microphone (its name or number; the flag alone: the default "
        "one), or a WAV file replayed as if spoken",
        json_schema_extra={**_unset("no microphone"), "flag_const": "default"},
    )
    speaker: str | None = Field(
        default=None,
        description="speak: a loudspeaker (its name or number; the flag alone: the default "
        "one), or a WAV file that gets exactly what was played",
        json_schema_extra={**_unset("no loudspeaker"), "flag_const": "default"},
    )
    push_to_talk: bool = Field(
        default=False,
        description="the microphone is heard only while talk is held (t on the console, "
        "the page's button), instead of the model's own voice detection",
    )
    half_duplex: bool = Field(
        default=False,
        description="mute the microphone while the device speaks (no echo cancellation: "
        "it would hear itself)",
    )
    tts: OnOff = Field(
        default="on",
        description="the local model speaks through espeak-ng on the loudspeaker when it is "
        "installed",
    )


class DeviceSettings(Section):
    """The device itself: its name, what may leave it, what it logs."""

    device_id: DeviceId = Field(
        # Every Raspberry Pi is called raspberrypi: the host name alone would be shared.
        default_factory=default_device_id,
        description="name of this device (MQTT topics, status page)",
        json_schema_extra=_unset("the host name and a suffix unique to this machine"),
    )
    privacy: bool = Field(
        default=False,
        description="no image and no audio ever leaves the device (counts and text only), "
        "whatever else is set",
    )
    log_level: Level = Field(
        default="warning",
        description="the least severe of Lookout's own log messages written to stderr "
        "(-v: at least info)",
    )


class OutputSettings(Section):
    """Where events go: the event logs, the status server, MQTT."""

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
    snapshots: FilePath | None = Field(
        default=None,
        description="save one JPEG (boxes and ids drawn) of each crossing, dwell and count "
        "change after a quiet spell in this folder, named in a snapshot event (never with "
        "--privacy)",
        json_schema_extra=_unset("no snapshots"),
    )
    snapshots_max_mb: float = Field(
        default=500.0,
        gt=0,
        le=1_000_000,
        description="the most megabytes the snapshots folder keeps (the oldest go first)",
    )
    snapshots_days: float = Field(
        default=7.0,
        gt=0,
        le=36_500,
        description="days a snapshot is kept (older ones are deleted at start and after "
        "each write)",
    )
    snapshots_quiet: float = Field(
        default=10.0,
        ge=0,
        le=86_400,
        description="seconds the count must have stood still before its change is a snapshot",
    )
    snapshots_privacy: SnapshotPrivacy = Field(
        default="none",
        description="what a snapshot shows of people: none (the frame as seen), faces (the "
        "head of every detected person pixelated), boxes (no camera pixels: the boxes, ids, "
        "lines and zones on a plain background)",
    )


__all__ = [
    "AudioSettings",
    "DeviceSettings",
    "ModelSettings",
    "OutputSettings",
    "PerceptionSettings",
    "SceneSettings",
    "Section",
    "SourceSettings",
]
