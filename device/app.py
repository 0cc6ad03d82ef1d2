"""The app: wires a frame source, the capture loop, a live session and the sinks together."""

from __future__ import annotations

import functools
import logging
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TextIO

import anyio
from anyio import CancelScope
from anyio.abc import TaskStatus
from google.genai import types

from device.capture import CaptureLoop, EncodedFrame
from device.config import Config
from device.events import CaptureStatsEvent, SourceStateEvent
from device.sinks import ConsoleSink, EventSink, JsonlSink
from device.source_runner import SourceRunner, SourceState, StateChange
from device.sources import FrameSource, SourceError, open_source
from live import (
    EmitMode,
    LiveRequestQueue,
    LiveSession,
    Runner,
    SessionConfig,
    SessionError,
    SQLiteEventLog,
)
from live.clock import Clock, MonotonicClock
from live.events import ErrorEvent, Event
from live.model import LiveModel
from live.tool import Tool
from models.detector import PersonDetector
from models.local import LocalModel
from tools import FunctionTool
from tools.count_people import CountChanged, CountPeople, FrameResult, check_count_args

log = logging.getLogger("lookout.app")

SYSTEM_INSTRUCTION = (
    "You are Lookout, a camera agent. Call count_people once at the start and keep it "
    "running: it reports the number of people in view whenever it changes. When it "
    "reports a change, say briefly how many people are in view now. Do not describe "
    "people's appearance. Use stop_streaming(function_name='count_people') when asked "
    "to stop counting."
)


def sample_video() -> Path | None:
    """The sample video, wherever set-up put it."""
    import os

    here = Path(__file__).resolve().parent.parent
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
        # A stuck network read gives up a little after the watchdog does.
        read_timeout_s=config.stall_timeout * 2,
    )


def detector_factory(config: Config) -> Callable[[], PersonDetector]:
    """Builds the configured detector when first needed (loading takes a while)."""
    return functools.partial(PersonDetector, config.detector, threshold=config.threshold)


def build_model(config: Config) -> LiveModel:
    if not config.uses_gemini:
        return LocalModel()
    from models.gemini import GeminiLiveModel, GeminiOptions

    return GeminiLiveModel(GeminiOptions(model=config.model_name()), api_key=config.api_key)


def session_config(config: Config) -> SessionConfig:
    return SessionConfig(
        emit_mode=EmitMode(config.emit),
        scheduling=types.FunctionResponseScheduling(config.scheduling.upper()),
        system_instruction=config.system_instruction or SYSTEM_INSTRUCTION,
        forward_frames=config.send_frames,
        privacy=config.privacy,
        model_frame_interval_s=1.0 / config.fps,
        stop_timeout_s=1.0,
        flush_timeout_s=0.5,
        secrets=config.secrets(),
    )


class Service(Protocol):
    """Something that runs beside a session (status server, MQTT publisher).

    ``run`` is started in the app's task group once the session is up and is
    cancelled when the app ends; it calls ``task_status.started()`` when ready.
    """

    async def run(self, app: App, *, task_status: TaskStatus[None]) -> None: ...


@dataclass
class App:
    config: Config
    out: TextIO = field(default_factory=lambda: sys.stdout)
    clock: Clock = field(default_factory=MonotonicClock)
    read_stdin: bool = False
    observers: list[Callable[[FrameResult], None]] = field(default_factory=list)
    frame_observers: list[Callable[[EncodedFrame], None]] = field(default_factory=list)
    extra_sinks: list[EventSink] = field(default_factory=list)
    services: list[Service] = field(default_factory=list)
    source_override: FrameSource | None = None  # tests inject faulty sources here

    def __post_init__(self) -> None:
        self.source: FrameSource = self.source_override or configured_source(
            self.config, self.clock
        )
        self.model = build_model(self.config)
        self.counter = CountPeople(
            detector=detector_factory(self.config),
            max_fps=self.config.detect_fps,
            k=self.config.smoothing,
            min_hold_s=self.config.min_hold,
            observers=self.observers,
        )
        self.tools: list[Tool] = [
            FunctionTool(self.counter, name="count_people", check=check_count_args)
        ]
        self.queue = LiveRequestQueue()
        self.session: LiveSession | None = None
        self.failure: str | None = None
        self.count: int | None = None
        self.sinks: list[EventSink] = [ConsoleSink(self.out), *self.extra_sinks]
        if self.config.events is not None:
            self.sinks.append(JsonlSink(self.config.events))
        self.event_log = SQLiteEventLog(self.config.db) if self.config.db is not None else None
        self.source_runner = SourceRunner(
            self.source,
            clock=self.clock,
            on_state=self._on_source_state,
            loop=self.config.loop,
            stall_timeout_s=self.config.stall_timeout,
        )
        self.capture = CaptureLoop(
            self.source_runner,
            self.queue,
            clock=self.clock,
            sample_fps=max(self.config.fps, self.config.detect_fps),
            max_side=self.config.max_side,
            jpeg_quality=self.config.jpeg_quality,
            pace=self.config.pace,
            live=self.source.live,
            on_frame=self._on_frame,
        )
        self._stop_requested = False

    # ------------------------------------------------------------- callbacks

    def _on_source_state(self, change: StateChange) -> None:
        event = SourceStateEvent.of(self.source.name, change)
        if self.session is not None:
            self.session.publish(event)
        else:
            self._write(event)

    def _on_frame(self, frame: EncodedFrame) -> None:
        for observer in self.frame_observers:
            try:
                observer(frame)
            except Exception:
                log.exception("frame observer failed")

    def _write(self, event: Event) -> None:
        if isinstance(event, CountChanged):
            self.count = event.count
        for sink in self.sinks:
            try:
                sink.write(event)
            except Exception:
                log.exception("event sink failed")

    # ------------------------------------------------------------------- run

    def request_stop(self) -> None:
        self._stop_requested = True
        if not self.queue.closed:
            self.queue.close()

    async def run(self) -> int:
        log.info("effective configuration: %s", describe_config(self.config))
        runner = Runner(
            self.model,
            self.tools,
            session_config(self.config),
            clock=self.clock,
            event_log=self.event_log,
        )
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._watch_signals, tg.cancel_scope)
                try:
                    async with runner.run_live(self.queue) as session:
                        self.session = session
                        self.capture.gate = session
                        await tg.start(self.source_runner.run)
                        for service in self.services:
                            await tg.start(service.run, self)
                        tg.start_soon(self._capture_then_close, session)
                        if self.config.duration is not None:
                            tg.start_soon(self._stop_after, self.config.duration)
                        if self.read_stdin:
                            tg.start_soon(self._read_commands)
                        if isinstance(self.sinks[0], ConsoleSink) and self.sinks[0].tty:
                            tg.start_soon(self._show_progress, self.sinks[0])
                        async for event in session:
                            self._write(event)
                        if session.failure:
                            self.failure = session.failure
                except SessionError as exc:
                    self.failure = str(exc)
                    self._write(ErrorEvent(message=str(exc), where="model"))
                tg.cancel_scope.cancel()
        finally:
            await self._close()
        return 1 if self.failure else 0

    async def _close(self) -> None:
        with anyio.CancelScope(shield=True):
            await self.source_runner.close()
        self._write(
            CaptureStatsEvent(
                t=self._elapsed(),
                frames_read=self.capture.stats.frames_read,
                frames_sampled=self.capture.stats.frames_sampled,
                frames_encoded=self.capture.stats.frames_encoded,
                dropped=dict(self.capture.stats.dropped),
                encode_ms_mean=round(self.capture.stats.encode_ms_mean, 3),
            )
        )
        if self.event_log is not None:
            self.event_log.close()
        for sink in self.sinks:
            sink.close()

    def _elapsed(self) -> float:
        if self.session is None:
            return 0.0
        return self.clock.now() - self.session.started_at

    async def _capture_then_close(self, session: LiveSession) -> None:
        try:
            await self.capture.run()
        except SourceError as exc:
            self.failure = str(exc)
            session.publish(ErrorEvent(message=str(exc), where="source"))
        if not self._stop_requested and self.failure is None:
            # Let the tools finish the last frames before the session ends.
            with anyio.move_on_after(10):
                await session.wait_inputs_idle()
        self.request_stop()

    async def _stop_after(self, seconds: float) -> None:
        await self.clock.sleep(seconds)
        self.request_stop()

    async def _watch_signals(self, scope: CancelScope) -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _ in signals:
                if self._stop_requested:
                    scope.cancel()  # a second signal: stop now
                    return
                self.request_stop()
                # The session stops streams and flushes within its own timeouts; this is
                # the backstop that keeps the promise of exiting within 2 seconds.
                with anyio.move_on_after(1.5):
                    if self.session is not None:
                        await self.session.wait_finished()
                scope.cancel()
                return

    async def _read_commands(self) -> None:
        while not self.queue.closed:
            line = await anyio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)
            if not line:
                return
            text = line.strip()
            if not text:
                continue
            if text.lower() in {"quit", "exit", "q"}:
                self.request_stop()
                return
            if not self.queue.closed:
                self.queue.send_content(text)

    async def _show_progress(self, console: ConsoleSink) -> None:
        total = None
        fps = self.source.fps
        frames = getattr(self.source, "frame_count", None)
        if not self.source.live and fps and frames:
            total = frames / fps
        while True:
            done = self.capture.stats.last_frame_t or 0.0
            console.progress(done, total if not self.config.loop else None, self.count)
            await anyio.sleep(0.5)


def describe_config(config: Config) -> dict[str, Any]:
    """The effective configuration without secrets (for logs and the status page)."""
    data = config.model_dump(mode="json")  # api_key is never dumped; paths become strings
    if data.get("http_token"):
        data["http_token"] = "***"
    password = config.mqtt_password()
    if password and data.get("mqtt"):
        data["mqtt"] = str(data["mqtt"]).replace(f":{password}@", ":***@")
    data["model"] = config.model_name()
    return data


__all__ = ["App", "SourceState", "configured_source", "describe_config", "sample_video"]
