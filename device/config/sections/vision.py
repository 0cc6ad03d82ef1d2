"""The settings of what the device sees: its source, the detector, the lines and zones."""

from __future__ import annotations

from pydantic import Field

from device.config.scene.specs import Lines, Zones
from device.config.sections.base import Section, unset
from device.config.values import (
    DETECT_FPS,
    MAX_DURATION_S,
    MAX_DWELL_S,
    MAX_FPS,
    SCENE_DETECT_FPS,
    Anchor,
    Backend,
    FilePath,
    OnOff,
    Pace,
    Precision,
    Profile,
    SourceSpec,
)


class SourceSettings(Section):
    """Where frames come from, how they are read and how they are prepared."""

    source: SourceSpec | None = Field(
        default=None,
        description="camera index (0), video file, image folder, RTSP/HTTP URL, or picam; "
        "several cameras: NAME=SOURCE, repeated (TOML: [cameras.NAME] source = ...)",
        json_schema_extra=unset("the sample video"),
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
        json_schema_extra=unset("run until stopped"),
    )
    camera_fps: float | None = Field(
        default=None,
        ge=0,
        le=240,
        description="frame rate to ask a camera for (0: leave it at its own). Default: the "
        "lowest of 5, 10, 15, 20, 25, 30 at least twice the sampling rate; raise it if a "
        "dim scene blurs at the longer exposures a low rate allows",
        json_schema_extra=unset("twice the sampling rate"),
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
        description="largest image or frame decoded (a bigger JPEG, of a folder or an MJPEG "
        "camera, is decoded at 1/2, 1/4 or 1/8 size; other frames are skipped and said; a "
        "video whose frames are bigger is refused)",
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
        json_schema_extra=unset(
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
        json_schema_extra=unset("the shipped NanoDet-g 416"),
    )
    profile: Profile = Field(
        default="none",
        description="fit the detector to this CPU: pi4 (int8, 1 detection a second, 2.5 with "
        "lines or zones), pi5 (int8), laptop (the defaults), auto (pi4 or pi5 when the board "
        "says so, else the detector is timed at start-up: int8 and a lower rate when the "
        "defaults would cost over a quarter of a core); settings given explicitly win",
    )
    precision: Precision = Field(
        default="auto",
        description="which shipped NanoDet-g 416 to run: auto (the fastest here that holds "
        "the accuracy rule: models/accuracy.py), fp32, or int8 (static int8: about a fifth "
        "less CPU per detection with onnxruntime, but it misses some people fp32 finds at "
        "scores near the threshold, so auto never picks it; docs/benchmarks.md); --detector "
        "wins",
    )
    backend: Backend = Field(
        default="auto",
        description="what runs the detector: auto (each installed runtime measured on this "
        "machine once, the fastest that holds the accuracy rule kept; lookout doctor shows "
        "the table), onnxruntime, or openvino (pip install 'lookout[openvino]': bf16 "
        "arithmetic on CPUs with AVX-512 BF16 or AMX)",
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
        "repeatable; CAMERA:NAME=... for one camera of several; "
        "TOML: [lines.NAME] points = [[x1, y1], [x2, y2]]",
        json_schema_extra=unset("none"),
    )
    zones: Zones = Field(
        default_factory=dict,
        description="a named zone to count people in, NAME=X1,Y1,X2,Y2,X3,Y3[,...] (0..1); "
        "repeatable; CAMERA:NAME=... for one camera of several; "
        "TOML: [zones.NAME] points = [[x, y], ...], dwell = seconds",
        json_schema_extra=unset("none"),
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


__all__ = ["PerceptionSettings", "SceneSettings", "SourceSettings"]
