"""The app: a frame source, the capture loop, perception and a live session, on one bus.

The device is the product and the model one consumer of what it sees: while
the source runs, perception counts and the bus carries every count change to
the outputs (console, logs, page, metrics, MQTT) whatever the model does. The
session starts at once and connects to its model beside it; the model may be
absent, connecting, unreachable or connected at any moment. Only
``--require-model`` makes a missing model fatal.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import signal
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TextIO

import anyio
from anyio import CancelScope
from anyio.abc import TaskStatus
from google.genai import types

from device.app.commands import QUIT, run_command
from device.app.config import Config, ConfigError
from device.app.paths import check_writable_file, open_output
from device.bus import EventBus
from device.capture import CaptureLoop
from device.events import (
    CaptureStatsEvent,
    ClockStep,
    LogProblem,
    RunStarted,
    SourceStateEvent,
)
from device.feeds.runner import SourceRunner, SourceState, StateChange
from device.motion import MotionConfig
from device.outputs.console import ConsoleSink
from device.outputs.sinks import JsonlSink
from device.percept import CountUnknown, Percept
from device.perception import Perception, tracker_config
from device.scene import SceneSpec
from device.sources import (
    FrameSource,
    ImageFolderSource,
    SourceError,
    check_decodable,
    open_source,
)
from live import (
    EmitMode,
    LiveRequestQueue,
    LiveSession,
    ReconnectPolicy,
    Runner,
    SessionConfig,
    SQLiteEventLog,
)
from live.clock import Clock, MonotonicClock
from live.events import ErrorEvent, Event
from live.model import LiveModel
from live.redact import safe_url, strip_credentials
from live.tool import Tool
from live.walltime import StepWatch
from models.detector import PersonDetector, shipped_model
from models.local.model import LocalModel
from tools import FunctionTool
from tools.count_people import CountPeople, check_count_args, coalesce_counts
from tools.watchers import LINE_TOOL, ZONE_TOOL, SceneWatchers

log = logging.getLogger("lookout.app")

RETRY_SUFFIX = re.compile(r";? *retry in [^;)]*$")
EXIT_FAILURE = 1  # the run failed (a required model, a source that failed for good)
EXIT_LOG_INCOMPLETE = 3  # the run ended, but its event log (or MQTT) misses events (said why)
CLOCK_CHECK_S = 1.0  # how often the wall clock is compared with the monotonic one
SPARE_STREAMS = 16  # streams the model may run at once beyond one per line and zone
# After SIGTERM/SIGINT, what the event log has not written by then is counted lost (and
# said, exit 3): a database another process holds locked must not hold the exit.
SIGNAL_FLUSH_S = 0.5

SYSTEM_INSTRUCTION = (
    "You are Lookout, a camera agent. Call count_people once at the start and keep it "
    "running: it reports the number of people in view whenever it changes. When it "
    "reports a change, say briefly how many people are in view now. Do not describe "
    "people's appearance. Use stop_streaming(function_name='count_people') when asked "
    "to stop counting, and count_people_now for the count at this moment."
)


def sample_video() -> Path | None:
    """The sample video, wherever set-up put it."""
    import os

    here = Path(__file__).resolve().parents[2]  # the repository (device/app/run.py)
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
    spec = config.source
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
        folder_fps=config.folder_fps,
        max_image_pixels=config.max_image_pixels,
        # A stuck network read gives up a little after the watchdog does.
        read_timeout_s=config.stall_timeout * 2,
    )


def detector_factory(config: Config) -> Callable[[], PersonDetector]:
    """Builds the configured detector when first needed (loading takes a while).

    It reports boxes down to the tracker's low score: those below the user's
    threshold are never counted, they only keep a half-hidden person's track.
    """
    low = tracker_config(config.threshold).low
    path = config.detector or shipped_model(config.precision)  # an explicit file wins
    threads = config.detector_threads or None  # 0: onnxruntime's own choice
    return functools.partial(PersonDetector, path, threshold=low, threads=threads)


def scene_spec(config: Config) -> SceneSpec:
    """The configured lines and zones, for perception."""
    return SceneSpec(
        lines={name: spec.points for name, spec in config.lines.items()},
        zones={
            name: (spec.points, spec.dwell if spec.dwell is not None else config.dwell)
            for name, spec in config.zones.items()
        },
        anchor=config.anchor,
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
        loop=config.loop,
        stall_timeout_s=config.stall_timeout,
        first_open_attempts=first_open_attempts,
    )


def configured_perception(
    config: Config,
    detect_fps: float,
    source: FrameSource,
    publish: Callable[[Event], None] = lambda event: None,
    on_percept: Callable[[Percept], None] = lambda percept: None,
    on_unknown: Callable[[CountUnknown], None] = lambda unknown: None,
    now: Callable[[], float] = time.monotonic,
) -> Perception:
    """Perception with the configured detector, scene and gate (run, count and ask).

    Raises ConfigError for lines on frames that cannot be linked (unrelated photos).
    """
    perception = Perception(
        detector_factory(config),
        detect_fps=detect_fps,
        threshold=config.threshold,
        publish=publish,
        on_percept=on_percept,
        on_unknown=on_unknown,
        now=now,
        scene=scene_spec(config),
        motion=motion_config(config),
        photos=unrelated_photos(config, source),
    )
    if config.lines and not perception.linked:
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
    return isinstance(source, ImageFolderSource) and not config.timelapse


def motion_config(config: Config) -> MotionConfig | None:
    """The motion gate's settings; None with ``--motion off`` (detect every due frame)."""
    if config.motion == "off":
        return None
    return MotionConfig(
        threshold=config.motion_threshold,
        heartbeat_s=config.motion_heartbeat,
        hangover_s=config.motion_hangover,
        pixel_delta=config.motion_pixel_delta,
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
    from models.detector import DetectorError

    try:
        perception.shared.get()
    except DetectorError as exc:
        raise ConfigError(f"detector: {exc}") from None


def scene_tools(config: Config, current: Callable[[], Percept | None]) -> list[Tool]:
    """``watch_line``/``watch_zone`` over the configured names (none configured: no tool)."""
    watchers = SceneWatchers(lines=list(config.lines), zones=list(config.zones), current=current)
    tools: list[Tool] = []
    if config.lines:
        tools.append(FunctionTool(watchers.watch_line_tool(), name=LINE_TOOL))
    if config.zones:
        tools.append(FunctionTool(watchers.watch_zone_tool(), name=ZONE_TOOL))
    return tools


def system_instruction(config: Config) -> str:
    """The built-in instruction, naming the configured lines and zones."""
    text = SYSTEM_INSTRUCTION
    if config.lines:
        names = ", ".join(config.lines)
        text += (
            f" The device counts people crossing these lines: {names}. Call watch_line for "
            "each at the start and keep them running: each reports the run's in and out "
            "totals after a crossing. Say the totals when asked how many came in or went "
            "out; do not announce every crossing."
        )
    if config.zones:
        names = ", ".join(
            f"{name} (dwell {spec.dwell if spec.dwell is not None else config.dwell:g} s)"
            for name, spec in config.zones.items()
        )
        text += (
            f" It watches these zones: {names}. Call watch_zone for each at the start and "
            "keep them running; say when someone has stayed longer than the dwell time."
        )
    return text


def build_model(config: Config) -> LiveModel:
    if not config.uses_gemini:
        return LocalModel()
    from models.gemini.model import GeminiLiveModel, GeminiOptions

    return GeminiLiveModel(GeminiOptions(model=config.model_name()), api_key=config.api_key)


def session_config(config: Config) -> SessionConfig:
    return SessionConfig(
        emit_mode=EmitMode(config.emit),
        scheduling=types.FunctionResponseScheduling(config.scheduling.upper()),
        system_instruction=config.system_instruction or system_instruction(config),
        forward_frames=config.send_frames,
        privacy=config.privacy,
        model_frame_interval_s=1.0 / config.fps,
        stop_timeout_s=1.0,
        flush_timeout_s=0.5,
        reconnect=ReconnectPolicy(
            max_attempts=config.model_attempts if config.require_model else None
        ),
        # Room for a watch of every line and zone, and a few counts besides.
        max_streams=SPARE_STREAMS + len(config.lines) + len(config.zones),
        secrets=config.secrets(),
    )


class Service(Protocol):
    """Something that runs beside the device (status server, MQTT publisher).

    ``run`` is started in the app's task group before the source opens and is
    cancelled when the app ends; it calls ``task_status.started()`` when ready.
    """

    async def run(self, app: App, *, task_status: TaskStatus[None]) -> None: ...


@dataclass
class App:
    """One device run. Outputs subscribe to ``bus`` (made here when not handed in)."""

    config: Config
    bus: EventBus | None = None
    out: TextIO = field(default_factory=lambda: sys.stdout)
    clock: Clock = field(default_factory=MonotonicClock)
    read_stdin: bool = False
    services: list[Service] = field(default_factory=list)
    source_override: FrameSource | None = None  # tests inject faulty sources here
    wall_steps: StepWatch = field(default_factory=StepWatch)  # tests step a fake clock
    model_override: LiveModel | None = None  # tests and benchmarks inject a recording model

    def __post_init__(self) -> None:
        if self.bus is None:
            self.bus = EventBus(self.clock)
        bus = self.bus
        self.source: FrameSource = self.source_override or configured_source(
            self.config, self.clock
        )
        self.model = self.model_override or build_model(self.config)
        self.perception = configured_perception(
            self.config,
            self.config.detection_fps(),
            self.source,
            bus.publish,
            bus.percept,
            self._tell_tools,
            self.clock.now,
        )
        self._down_since: float | None = None
        self.counter = CountPeople(current=self.current_percept, why_unknown=self.why_unknown)
        self.tools: list[Tool] = [
            FunctionTool(
                self.counter, name="count_people", check=check_count_args, coalesce=coalesce_counts
            ),
            FunctionTool(self.counter.count_people_now),
        ]
        self.tools += scene_tools(self.config, self.current_percept)
        self.queue: LiveRequestQueue[Percept | CountUnknown] = LiveRequestQueue()
        self.session: LiveSession | None = None
        self.failure: str | None = None
        self.console = ConsoleSink(
            self.out,
            fallback_after_s=self.config.fallback_after,
            on_closed=self._stdout_closed,
            live_source=self.source.live,
        )
        bus.subscribe(self.console)
        self.jsonl: JsonlSink | None = None
        self.event_log: SQLiteEventLog | None = None
        # What the user asked to be written must be writable: said now, in one line.
        if self.config.events is not None:
            check_writable_file("events", self.config.events)
            self.jsonl = open_output(
                "events", self.config.events, lambda p: JsonlSink(p, on_problem=self._log_problem)
            )
            bus.subscribe(self.jsonl)
        # Outputs that deliver events elsewhere (MQTT): why some never arrived (None: all did).
        self.delivery_checks: list[Callable[[], str | None]] = []
        self.run_id = uuid.uuid4().hex[:12]
        if self.config.db is not None:
            check_writable_file("db", self.config.db, "database file")
            self.event_log = open_output(
                "db",
                self.config.db,
                lambda p: SQLiteEventLog(p, session=self.run_id, on_problem=self._log_problem),
            )
            bus.subscribe(_LogSink(self.event_log, lambda: self._flush_budget_s))
        self.source_runner = configured_runner(
            self.config,
            self.source,
            self.clock,
            self._on_source_state,
            on_skipped=lambda message: bus.publish(ErrorEvent(message=message, where="source")),
        )
        sample_fps = self.config.detection_fps()
        if self.config.send_frames and not self.config.privacy:
            sample_fps = max(sample_fps, self.config.fps)
        request_fps = getattr(self.source, "request_fps", None)
        if request_fps is not None and self.config.camera_fps != 0:
            # A camera then sends little more than is sampled (0: leave it at its own rate).
            request_fps(sample_fps, self.config.camera_fps)
        self.capture = CaptureLoop(
            self.source_runner,
            self.queue,
            clock=self.clock,
            sample_fps=sample_fps,
            perceive=self.perception.process,
            max_side=self.config.max_side,
            jpeg_quality=self.config.jpeg_quality,
            pace=self.config.pace,
            live=self.source.live,
            media_duration_s=None if self.source.live else self.config.duration,
        )
        self._stop_requested = False
        # How long closing may wait for the event log to catch up: a run that ends by
        # itself waits for it; one stopped by a signal has promised to exit in 2 s.
        self._flush_budget_s = 5.0
        self._source_closed = anyio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None

    def preflight(self) -> None:
        """What the user caused, found before anything runs (``preflight``)."""
        preflight(self.perception, self.source)

    # ------------------------------------------------------------------ state

    def current_percept(self) -> Percept | None:
        """Perception's newest result while the count is known; None otherwise."""
        return self.perception.current()

    def why_unknown(self) -> str:
        return self.perception.unknown_reason

    def _log_problem(self, kind: str, message: str) -> None:
        """An event log started or stopped failing (called from the store's writer thread)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            log.warning("%s", message)
            return
        loop.call_soon_threadsafe(self._say_problem, kind, message)

    def _say_problem(self, kind: str, message: str) -> None:
        assert self.bus is not None
        self.bus.publish(LogProblem(kind=kind, message=message))

    def _stdout_closed(self) -> None:
        # Whoever read the console left (``| head -2``): end quietly, like other tools.
        self.request_stop()

    def log_problems(self) -> list[str]:
        """What is wrong with the event logs right now (the page and /healthz say it)."""
        problems = []
        if self.event_log is not None:
            health = self.event_log.health()
            if health.degraded:
                problems.append(
                    f"event log {self.config.db}: {health.last_error}; "
                    f"{health.pending:,} events waiting"
                )
            if health.dropped:
                problems.append(f"event log {self.config.db}: {health.dropped:,} events lost")
        if self.jsonl is not None and (self.jsonl.degraded or self.jsonl.lost):
            why = f": {self.jsonl.last_error}" if self.jsonl.degraded else ""
            lost = f"{self.jsonl.lost:,} lines lost"
            problems.append(f"events file {self.config.events}{why}; {lost}")
        return problems

    def log_incomplete(self) -> str | None:
        """Why the run's event logs miss events (None when they are complete)."""
        problems = []
        if self.event_log is not None and not self.event_log.complete:
            health = self.event_log.health()
            problems.append(
                f"{self.config.db}: {health.dropped:,} events lost ({health.last_error})"
            )
        if self.jsonl is not None and not self.jsonl.complete:
            problems.append(
                f"{self.config.events}: {self.jsonl.lost:,} lines lost ({self.jsonl.last_error})"
            )
        return "; ".join(problems) or None

    def _on_source_state(self, change: StateChange) -> None:
        assert self.bus is not None
        self.bus.publish(SourceStateEvent.of(self.source.name, change))
        if change.state is SourceState.RUNNING:
            self._down_since = None
            return
        if self._down_since is None:
            self._down_since = time.time()
        kind = "camera" if self.source.live else "source"
        when = time.strftime("%H:%M:%S", time.localtime(self._down_since))
        # Still trying (opening, reconnecting) is "since"; done (failed, ended) is "at".
        done = change.state in (SourceState.FAILED, SourceState.ENDED)
        # The reason without its next retry time, which is stale a second later.
        why = RETRY_SUFFIX.sub("", change.reason)
        detail = f" ({why})" if why else ""
        self._count_unknown(
            f"{kind} {change.state.value} {'at' if done else 'since'} {when}{detail}",
            outage=not done,
        )

    def _count_unknown(self, reason: str, *, outage: bool = False) -> None:
        """The count no longer holds: perception says so (an event for the outputs, and
        ``_tell_tools`` for the tools). ``outage``: the source may be back in a moment."""
        self.perception.forget(reason, outage=outage)

    def _tell_tools(self, unknown: CountUnknown) -> None:
        """The tools hear it in-band, in order with the percepts they consume."""
        if not self.queue.closed:
            self.queue.send_realtime(percept=unknown)

    async def _watch_freshness(self) -> None:
        """A live count goes unknown when no usable frame came for a detection period and
        the hold, whatever the source's state says (a camera that delivers nothing usable
        stays 'running' until its watchdog gives up, and that takes longer)."""
        while True:
            stale_after = self.perception.stale_after_s()
            last = self.perception.last_at
            if not self.perception.known or last is None:
                await self.clock.sleep(stale_after)
                continue
            overdue = last + stale_after - self.clock.now()
            if overdue > 0:
                await self.clock.sleep(overdue)
                continue
            self._count_unknown(
                f"no usable frame from {self.source.name} for {self.clock.now() - last:.0f} s",
                outage=True,
            )

    async def _watch_wall_clock(self) -> None:
        """Say each step of the system clock: what is stored as wall time follows it."""
        while True:
            await self.clock.sleep(CLOCK_CHECK_S)
            step = self.wall_steps.check()
            if step is not None:
                assert self.bus is not None
                self.bus.publish(ClockStep(step_s=round(step, 3), wall=self.wall_steps.wall()))

    # ------------------------------------------------------------------- run

    def request_stop(self) -> None:
        self._stop_requested = True
        if not self.queue.closed:
            self.queue.close()

    async def run(self) -> int:
        assert self.bus is not None
        self._loop = asyncio.get_running_loop()
        described = describe_config(self.config)
        log.info("effective configuration: %s", described)
        self.bus.publish(
            run_started(
                self.run_id, self.source, self.config, described, wall=self.wall_steps.wall()
            )
        )
        runner = Runner(
            self.model,
            self.tools,
            session_config(self.config),
            clock=self.clock,
            event_log=self.bus,
            epoch=self.bus.epoch,
        )
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._watch_signals, tg.cancel_scope)
                async with runner.run_live(self.queue) as session:
                    self.session = session
                    self.capture.gate = session
                    for service in self.services:
                        await tg.start(service.run, self)
                    await tg.start(self.source_runner.run)
                    tg.start_soon(self._capture_then_close, session)
                    if self.config.duration is not None and self.source.live:
                        # A camera runs for wall time; a recording for its own media time.
                        tg.start_soon(self._stop_after, self.config.duration)
                    if self.read_stdin:
                        tg.start_soon(self._read_commands, session)
                    if self.console.tty:
                        tg.start_soon(self._show_progress)
                    if self.source.live or self.config.pace == "realtime":
                        # A fast replay waits for its consumers: a pause there is not staleness.
                        tg.start_soon(self._watch_freshness)
                    tg.start_soon(self._watch_wall_clock)
                    async for _ in session:
                        pass  # every event already went to the bus (the session's event log)
                    # The source's last states (and the count going unknown) are said while
                    # the outputs (MQTT) still run.
                    with anyio.CancelScope(shield=True):
                        await self.source_runner.close()
                    self._source_closed.set()
                    if session.failure:
                        self.failure = session.failure
                tg.cancel_scope.cancel()
        finally:
            await self._close()
        if self.failure:
            return EXIT_FAILURE
        code = 0
        incomplete = self.log_incomplete()
        if incomplete is not None:
            print(f"lookout: the event log is incomplete: {incomplete}", file=sys.stderr)
            code = EXIT_LOG_INCOMPLETE
        for check in self.delivery_checks:
            undelivered = check()
            if undelivered is not None:
                print(f"lookout: {undelivered}", file=sys.stderr)
                code = EXIT_LOG_INCOMPLETE
        return code

    async def _close(self) -> None:
        assert self.bus is not None
        with anyio.CancelScope(shield=True):
            await self.source_runner.close()
        self._say_totals()
        stats = self.capture.stats
        self.bus.publish(
            CaptureStatsEvent(
                frames_read=stats.frames_read,
                frames_sampled=stats.frames_sampled,
                frames_detected=self.perception.stats.detected,
                dropped=dict(stats.dropped),
                detect_ms_mean=round(self.perception.stats.detect_ms_mean, 3),
            )
        )
        # What a log can be checked against (the soak benchmark does): every event made.
        log.info("%d events published in this run", self.bus.published)
        self.bus.close()

    async def _capture_then_close(self, session: LiveSession) -> None:
        assert self.bus is not None
        try:
            await self.capture.run()
        except SourceError as exc:
            self.failure = str(exc)
            self.bus.publish(ErrorEvent(message=str(exc), where="source"))
        if not self._stop_requested and self.failure is None:
            # Let the tools finish the last frames before the session ends.
            with anyio.move_on_after(10):
                await session.wait_inputs_idle()
        self.request_stop()

    async def _stop_after(self, seconds: float) -> None:
        await self.clock.sleep(seconds)
        self.request_stop()

    async def _watch_signals(self, scope: CancelScope) -> None:
        signals_watched = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        with anyio.open_signal_receiver(*signals_watched) as signals:
            async for number in signals:
                if number == signal.SIGHUP:
                    # logrotate's postrotate, a hung-up terminal: by default it killed the
                    # device on the spot (no offline state, logs cut). The logs follow
                    # their files' names by themselves; this only makes it immediate.
                    self._logs_follow_names()
                    continue
                if self._stop_requested:
                    scope.cancel()  # a second signal: stop now
                    return
                self._flush_budget_s = SIGNAL_FLUSH_S
                self.request_stop()
                # The session stops streams and flushes within its own timeouts; this is
                # the backstop that keeps the promise of exiting within 2 seconds.
                with anyio.move_on_after(1.5):
                    if self.session is not None:
                        await self.session.wait_finished()
                # Then the source's last states reach the outputs (MQTT) before they stop.
                with anyio.move_on_after(0.4):
                    await self._source_closed.wait()
                scope.cancel()
                return

    def _logs_follow_names(self) -> None:
        if self.jsonl is not None:
            self.jsonl.follow_name()
        assert self.bus is not None
        self.console.say(
            "SIGHUP: the event logs are checked against their file names (rotation); "
            "the device runs on (SIGTERM or SIGINT stop it)",
            self.bus.elapsed(),
        )

    async def _read_commands(self, session: LiveSession) -> None:
        assert self.bus is not None
        bus = self.bus

        def say(text: str) -> None:
            self.console.say(text, bus.elapsed())

        while not self.queue.closed:
            line = await anyio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)
            if not line:
                return
            text = line.strip()
            if not text:
                continue
            if text.lower() in QUIT:
                self.request_stop()
                return
            await run_command(text, session, self.queue, say)

    def _media_total_s(self) -> float | None:
        """How long a replayed file is, in media time (None: a camera, a loop, unknown)."""
        fps = self.source.fps
        frames = getattr(self.source, "frame_count", None)
        if self.source.live or self.config.loop or not fps or not frames:
            return None
        return float(frames / fps)

    async def _show_progress(self) -> None:
        while True:
            done = self.capture.stats.last_frame_t or 0.0
            percept = self.current_percept()
            count = percept.count if percept is not None else None
            self.console.progress(done, self._media_total_s(), count)
            await anyio.sleep(0.5)

    def _say_totals(self) -> None:
        """A replay ends with what it went through, terminal or not."""
        if self.source.live:
            return
        assert self.bus is not None
        stats = self.capture.stats
        media = stats.last_frame_t or 0.0
        total = self._media_total_s()
        of = f" of {total:.1f}" if total else ""
        self.console.say(
            f"replayed {stats.frames_read:,} frames ({media:.1f}{of} s of media) from "
            f"{self.source.name} in {self.bus.elapsed():.1f} s; the detector ran on "
            f"{self.perception.stats.detected:,}",
            self.bus.elapsed(),
        )


@dataclass
class _LogSink:
    """The SQLite event log as a bus subscriber (``budget``: seconds closing may wait)."""

    log: SQLiteEventLog
    budget: Callable[[], float] = lambda: 5.0

    def write(self, event: Any) -> None:
        self.log.record(event)

    def close(self) -> None:
        self.log.close(self.budget())


def run_started(
    run_id: str,
    source: FrameSource,
    config: Config,
    described: dict[str, Any],
    command: str = "run",
    wall: float | None = None,
) -> RunStarted:
    """The ``run`` event; ``wall``: the wall-clock time now (the system's by default)."""
    wall = time.time() if wall is None else wall
    return RunStarted(
        run_id=run_id,
        started=time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(wall)),
        started_wall=round(wall, 3),
        source=safe_url(source.name),
        live=source.live,
        model=config.model_name(),
        command=command,
        config=described,
    )


URL_SETTINGS = frozenset({"source", "mqtt"})


def describe_config(config: Config) -> dict[str, Any]:
    """The effective configuration without secrets (for logs and the status page)."""
    data = config.model_dump(mode="json")  # api_key is never dumped; paths become strings
    if data.get("http_token"):
        data["http_token"] = "***"
    # Camera and broker URLs carry passwords more often than not, in the user info or the
    # query: shown as everywhere else (safe_url); a URL inside any other text as well.
    data = {
        k: (safe_url(v) if k in URL_SETTINGS else strip_credentials(v)) if isinstance(v, str) else v
        for k, v in data.items()
    }
    data["model"] = config.model_name()
    return data


__all__ = ["App", "SourceState", "configured_source", "describe_config", "sample_video"]
