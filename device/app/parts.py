"""The device's parts as the configuration sets them up, shared by ``run``, ``count`` and ``ask``.

Each function reads the configuration and makes one part (the source, the
detector, perception, the source's runner, the tools over lines and zones, the
model, the session's settings); nothing here runs or opens anything but the
detector's check in ``preflight``. ``device/app/wiring.py`` puts them together
for a run.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from device.app.instruction import (
    LOOK_INSTRUCTION,
    SYSTEM_INSTRUCTION,
    frames_camera,
    offers_look,
    system_instruction,
)
from device.config import Config, ConfigError
from device.config.detector.choice import config_choice
from device.feeds.runner import SourceRunner, StateChange
from device.sources import (
    FrameSource,
    ImageFolderSource,
    SourceError,
    check_decodable,
    open_source,
)
from device.vision.motion import MotionConfig
from device.vision.percept import MAIN_CAMERA, Perceived, Percept
from device.vision.perception import Perception, tracker_config
from device.vision.scene import SceneSpec
from device.vision.shared_detector import SharedDetector
from live import wire
from live.config import BudgetLimits, EmitMode, ReconnectPolicy, SessionConfig
from live.events import Event
from live.model import LiveModel
from live.util.clock import Clock
from models.detector import DetectorError, PersonDetector
from models.local.model import LocalModel
from tools.look import Look

SPARE_STREAMS = 16  # streams the model may run at once beyond one per line and zone


def look_tool(
    config: Config, current: Callable[[], Percept | None], why_unknown: Callable[[], str]
) -> Look:
    """The look tool over perception, bounded and drawn as configured."""
    from device.outputs.camera_state import scene_geometry

    return Look(
        current=current,
        why_unknown=why_unknown,
        per_minute=config.model.look_per_minute,
        privacy=config.device.privacy,
        geometry=scene_geometry(config),
    )


def sample_video() -> Path | None:
    """The sample video, wherever set-up put it."""
    here = Path(__file__).resolve().parents[2]  # the repository (device/app/parts.py)
    candidates = []
    if os.environ.get("LOOKOUT_DATA_DIR"):
        candidates.append(Path(os.environ["LOOKOUT_DATA_DIR"]) / "vtest.avi")
    candidates += [
        Path.cwd() / "data" / "vtest.avi",
        here / "data" / "vtest.avi",
        here.parent / "shared" / "data" / "vtest.avi",
    ]
    return next((p for p in candidates if p.is_file()), None)


def configured_source(config: Config, clock: Clock) -> FrameSource:
    """The source ``--source`` names, else the sample video; nothing is opened yet."""
    spec = config.source.source
    if spec is None:
        video = sample_video()
        if video is None:
            raise SourceError(
                "no --source given and the sample video is missing "
                "(run python3 scripts/fetch_sample_data.py)"
            )
        spec = str(video)
    return open_source(
        spec,
        clock_now=clock.now,
        folder_fps=config.source.folder_fps,
        max_image_pixels=config.source.max_image_pixels,
        # A stuck network read gives up a little after the watchdog does.
        read_timeout_s=config.source.stall_timeout * 2,
    )


def detector_factory(
    config: Config, threshold: float | None = None
) -> Callable[[], PersonDetector]:
    """Builds the configured detector when first needed (loading takes a while).

    It reports boxes down to the tracker's low score: those below the user's
    threshold are never counted, they only keep a half-hidden person's track.
    ``threshold``: the lowest of the cameras it serves (default: the device's).
    """
    low = tracker_config(config.perception.threshold if threshold is None else threshold).low
    threads = config.perception.detector_threads or None  # 0: the runtime's own choice

    def build() -> PersonDetector:
        # The backend and precision the settings mean here (measured once, remembered):
        # chosen where the detector loads, a worker thread, not the event loop.
        choice = config_choice(config)
        own = config.perception.detector
        try:
            return choice.variant.detector(own, threshold=low, threads=threads)
        except DetectorError as exc:
            fallback = choice.fallback
            if fallback is None:
                raise
            # Measured fine once, failing now (a full disk for OpenVINO's copy of the model, a
            # broken update): the reference still counts; said, not hidden.
            logging.getLogger("lookout.detector").warning(
                "%s cannot load now (%s): %s instead", choice.variant.label, exc, fallback.label
            )
            return fallback.detector(own, threshold=low, threads=threads)

    return build


def scene_spec(config: Config) -> SceneSpec:
    """The configured lines and zones, for perception."""
    return SceneSpec(
        lines={name: spec.points for name, spec in config.scene.lines.items()},
        zones={
            name: (spec.points, spec.dwell if spec.dwell is not None else config.scene.dwell)
            for name, spec in config.scene.zones.items()
        },
        anchor=config.scene.anchor,
    )


def configured_runner(
    config: Config,
    source: FrameSource,
    clock: Clock,
    on_state: Callable[[StateChange], None],
    *,
    on_skipped: Callable[[str], None] = lambda message: None,
    first_open_attempts: int | None = None,
) -> SourceRunner:
    """The source's runner with the configured loop and stall watchdog (run and ask)."""
    return SourceRunner(
        source,
        clock=clock,
        on_state=on_state,
        on_skipped=on_skipped,
        loop=config.source.loop,
        stall_timeout_s=config.source.stall_timeout,
        first_open_attempts=first_open_attempts,
    )


def configured_perception(
    config: Config,
    detect_fps: float,
    source: FrameSource,
    publish: Callable[[Event], None] = lambda event: None,
    on_percept: Callable[[Perceived], None] = lambda percept: None,
    now: Callable[[], float] = time.monotonic,
    *,
    detector: SharedDetector | None = None,
    camera: str = MAIN_CAMERA,
) -> Perception:
    """Perception with the configured detector, scene and gate (run, count and ask);
    ``detector``: the device's shared one (None: one of its own); ``camera``: whose.

    Raises ConfigError for lines on frames that cannot be linked (unrelated photos).
    """
    perception = Perception(
        detector if detector is not None else detector_factory(config),
        detect_fps=detect_fps,
        threshold=config.perception.threshold,
        publish=publish,
        on_percept=on_percept,
        now=now,
        scene=scene_spec(config),
        motion=motion_config(config),
        photos=unrelated_photos(config, source),
        camera=camera,
    )
    if config.scene.lines and not perception.linked:
        raise ConfigError(unlinked_lines(source))
    return perception


def unlinked_lines(source: FrameSource) -> str:
    """Why lines cannot be counted on ``source`` (its frames are not linked)."""
    if isinstance(source, ImageFolderSource):
        return (
            "lines need people followed from frame to frame, and the images of a folder are "
            "counted each on its own (give --timelapse if they are a time-lapse of one scene)"
        )
    return "lines need people followed from frame to frame: detect more often (--detect-fps)"


def unrelated_photos(config: Config, source: FrameSource) -> bool:
    """Whether the frames are unrelated photos (people cannot be followed from one to the
    next): an image folder, unless the user says it is a time-lapse of one scene."""
    return isinstance(source, ImageFolderSource) and not config.source.timelapse


def motion_config(config: Config) -> MotionConfig | None:
    """The motion gate's settings; None with ``--motion off`` (detect every due frame)."""
    if config.perception.motion == "off":
        return None
    return MotionConfig(
        threshold=config.perception.motion_threshold,
        heartbeat_s=config.perception.motion_heartbeat,
        hangover_s=config.perception.motion_hangover,
        pixel_delta=config.perception.motion_pixel_delta,
    )


def preflight(perception: Perception, source: FrameSource) -> None:
    """What the user caused, found before anything runs: raises ConfigError (one line).

    The detector must load (a file that is not a model is a configuration error,
    not a run that counts nothing), and a file source must decode its first frame
    (a text file is not a camera to keep reconnecting to).
    """
    load_detector(perception)
    try:
        check_decodable(source)
    except SourceError as exc:
        raise ConfigError(str(exc)) from None


def load_detector(perception: Perception) -> None:
    """The detector must load: a file that is not a model is a ConfigError (one line)."""
    try:
        perception.shared.get()
    except DetectorError as exc:
        raise ConfigError(f"detector: {exc}") from None


def model_family(config: Config) -> str | None:
    """The configured Gemini model family (None: by the model's name)."""
    return None if config.model.family == "auto" else config.model.family


def build_model(config: Config) -> LiveModel:
    """The configured live model: local, or Gemini Live on the Gemini API (the key) or on
    Vertex AI (its variables and application default credentials; none: ConfigError)."""
    if not config.uses_gemini:
        # Its tools may take any name (the page draws lines): it is told the configured ones,
        # each camera's (a watch's enum is every camera's names together).
        return LocalModel(
            watch=_watched(config),
            cameras={name: _watched(config.camera(name)) for name in config.camera_names}
            if config.named_cameras
            else None,
        )
    from models.gemini.model import GeminiLiveModel, GeminiOptions
    from models.gemini.tokens import token_source
    from models.gemini.vertex import VertexError

    options = GeminiOptions(
        model=config.model_name(),
        # Only a microphone that is streamed needs transcribing (never in privacy mode).
        listens=config.audio.mic is not None and not config.device.privacy,
        push_to_talk=config.audio.push_to_talk,
        family=model_family(config),
    )
    vertex = config.model.vertex
    tokens = token_source(config.model.token_file, config.model.token_url)
    try:
        return GeminiLiveModel(
            options,
            # On Vertex AI a key is not used (the SDK would take it for express mode), nor
            # with ephemeral tokens (the device holds no key).
            api_key=None if vertex is not None or tokens is not None else config.model.api_key,
            vertex=vertex,
            tokens=tokens,
        )
    except VertexError as exc:
        raise ConfigError(str(exc)) from None


def _watched(config: Config) -> dict[str, list[str]]:
    return {"watch_line": list(config.scene.lines), "watch_zone": list(config.scene.zones)}


def emit_mode(config: Config) -> EmitMode:
    """How a stream's emissions reach the model: as set, else what its family takes
    (function responses per call id, or text after one answer for synchronous calls)."""
    if config.model.emit is not None:
        return EmitMode(config.model.emit)
    if not config.uses_gemini:
        return EmitMode.FUNCTION_RESPONSE
    from models.gemini.families import Backend, capabilities

    backend = Backend.VERTEX if config.model.vertex is not None else Backend.GEMINI_API
    family = capabilities(config.model_name(), backend, family=model_family(config))
    return EmitMode.FUNCTION_RESPONSE if family.streams_as_responses else EmitMode.TEXT


def session_config(config: Config) -> SessionConfig:
    """The session's settings; raises ConfigError for frames of no camera of the device."""
    sent = frames_camera(config)
    views = [config.camera(name) for name in config.camera_names]
    return SessionConfig(
        emit_mode=emit_mode(config),
        scheduling=wire.Scheduling(config.model.scheduling.upper()),
        system_instruction=config.model.system_instruction or system_instruction(config),
        send_frames=sent is not None,
        # Of several cameras, the model sees the one asked for (by the requests' origin).
        model_input=None if len(views) == 1 else (lambda request: request.origin == sent),
        privacy=config.device.privacy,
        model_frame_interval_s=1.0 / config.model.model_fps,
        stop_timeout_s=1.0,
        flush_timeout_s=0.5,
        reconnect=ReconnectPolicy(
            max_attempts=config.model.model_attempts if config.model.require_model else None
        ),
        # Room for a watch of every line and zone, and a few counts besides.
        max_streams=SPARE_STREAMS + sum(len(v.scene.lines) + len(v.scene.zones) for v in views),
        secrets=config.secrets(),
        budget=BudgetLimits(
            per_hour=config.model.budget_tokens, per_session=config.model.budget_session
        ),
    )


__all__ = [
    "LOOK_INSTRUCTION",
    "SPARE_STREAMS",
    "SYSTEM_INSTRUCTION",
    "build_model",
    "configured_perception",
    "configured_runner",
    "configured_source",
    "detector_factory",
    "emit_mode",
    "load_detector",
    "look_tool",
    "model_family",
    "motion_config",
    "offers_look",
    "preflight",
    "sample_video",
    "scene_spec",
    "session_config",
    "system_instruction",
    "unlinked_lines",
    "unrelated_photos",
]
