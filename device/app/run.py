"""The run of the device: its tasks, the signals that stop it, and how it ends.

``App`` is handed every part already built (``device/app/wiring.py:build_app``)
and only runs them: the live session, the services (status server, MQTT),
each camera (its source runner, frame driver and count's freshness watch:
``device/app/camera.py``), the wall-clock watch, the console's commands and
progress line. It ends when every camera's source has ended (a file, or
``--duration`` passed), the console says quit, or a signal comes (exiting
within 2 s); its exit code says whether the run failed (1: a required model,
a source that failed for good) or its event logs or MQTT miss events (3).
One camera's source failing or ending leaves the others counting.

The device is the product and the model one consumer of what it sees: while
the source runs, perception counts and the bus carries every count change to
the outputs whatever the model does. Only ``--require-model`` makes a missing
model fatal.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, TextIO

import anyio
from anyio import CancelScope

from device.app.camera import Camera
from device.app.commands import QUIT, TALK, run_command
from device.app.describe import describe_config, run_started
from device.app.detector_load import DetectorLoad
from device.app.freshness import CountFreshness
from device.app.logs import EventLogs
from device.app.operations import Operations
from device.app.state import DeviceState
from device.app.voice import Voice
from device.bus import EventBus
from device.capture import FrameDriver
from device.config import Config
from device.config.device_id import cloned_card
from device.events import CaptureStatsEvent, ClockStep
from device.feeds.runner import SourceRunner
from device.outputs.console import ConsoleSink
from device.sources import FrameSource
from device.vision.percept import CountUnknown, Percept
from device.vision.perception import Perception
from live.events import ErrorEvent
from live.requests import LiveRequestQueue
from live.session import LiveSession
from live.util.clock import Clock
from live.util.plural import counted
from live.util.walltime import StepWatch
from tools.count_people import CountPeople

log = logging.getLogger("lookout.app")

EXIT_FAILURE = 1  # the run failed (a required model, a source that failed for good)
EXIT_LOG_INCOMPLETE = 3  # the run ended, but its event log (or MQTT) misses events (said why)
COMMAND_MAX = 4096  # characters of one line of --stdin (a command is a few words)
CLOCK_CHECK_S = 1.0  # how often the wall clock is compared with the monotonic one
VOICE_DRAIN_S = 10.0  # at the end of a run, at most this long to finish a sentence
# A signal ends the run within 2 s (the README's promise), counted from the signal to the
# process's exit: the session's stop and the source's last states get these backstops;
# what is left (about 0.7 s) is for the services' cleanup, the closing lines and the
# interpreter's exit, which a loaded machine makes slow. They summed to 1.9 s before,
# leaving nothing for those, and the exit took 1.8-2.4 s when the backstops were reached.
SIGNAL_SESSION_S = 1.0
SIGNAL_SOURCE_S = 0.3


class StopSwitch:
    """Ends the run: the request queue closes, so the session and each camera's frames end."""

    def __init__(self, queue: LiveRequestQueue[Any]) -> None:
        self.queue = queue
        self.requested = False

    def request(self) -> None:
        self.requested = True
        if not self.queue.closed:
            self.queue.close()


@dataclass
class App:
    """One device run, built whole by ``build_app``; ``run`` runs it once."""

    config: Config
    bus: EventBus
    clock: Clock
    out: TextIO
    read_stdin: bool
    run_id: str
    cameras: list[Camera]  # in the order configured; at least one
    counter: CountPeople
    queue: LiveRequestQueue[Percept | CountUnknown]
    session: LiveSession
    console: ConsoleSink
    logs: EventLogs
    state: DeviceState  # the read-only view the outputs read
    operations: Operations
    stop: StopSwitch
    wall_steps: StepWatch
    voice: Voice | None = None
    # What the run ended with: why it failed (None: it did not).
    failure: str | None = field(default=None, init=False)
    _hurried: bool = field(default=False, init=False)  # a signal: stop within 2 s
    began: bool = field(default=False, init=False)  # ``run`` has begun (its signals its own)
    _source_closed: anyio.Event = field(default_factory=anyio.Event, init=False)

    # The first camera's parts: a device's only camera, unless it names several.
    @property
    def source(self) -> FrameSource:
        return self.cameras[0].source

    @property
    def perception(self) -> Perception:
        return self.cameras[0].perception

    @property
    def capture(self) -> FrameDriver:
        return self.cameras[0].capture

    @property
    def source_runner(self) -> SourceRunner:
        return self.cameras[0].source_runner

    @property
    def freshness(self) -> CountFreshness:
        return self.cameras[0].freshness

    def camera(self, name: str) -> Camera:
        return next(c for c in self.cameras if c.name == name)

    def current_percept(self) -> Percept | None:
        """The first camera's newest result while its count is known; None otherwise."""
        return self.perception.current()

    def request_stop(self) -> None:
        self.stop.request()

    async def run(self) -> int:
        # The run's own handlers from its first moment: a signal now stops it cleanly
        # (before, the command's start undoes what it made: ``device/entry.py``).
        signals_watched = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        with anyio.open_signal_receiver(*signals_watched) as signals:
            self.began = True
            return await self._run(signals)

    async def _run(self, signals: AsyncIterator[int]) -> int:
        self.logs.bind_loop(asyncio.get_running_loop())
        cloned = cloned_card(self.config.device.device_id)
        if cloned is not None:
            log.warning("%s", cloned)  # the id it goes by, not one given: an SD card's twin
        described = describe_config(self.config)
        log.info("effective configuration: %s", described)
        self.bus.publish(
            run_started(
                self.run_id,
                self.source,
                self.config,
                described,
                wall=self.wall_steps.wall(),
                cameras={c.name: c.source for c in self.cameras},
            )
        )
        session = self.session
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._watch_signals, signals, tg.cancel_scope)
                async with session.run():
                    for service in self.operations.services:
                        await tg.start(service.run)
                    for camera in self.cameras:
                        await tg.start(camera.source_runner.run)
                    if self.voice is not None:
                        await tg.start(self.voice.run)
                    tg.start_soon(self._capture_then_close, session)
                    if self.read_stdin:
                        tg.start_soon(self._read_commands, session)
                    if self.console.tty:
                        tg.start_soon(self._show_progress)
                    for camera in self.cameras:
                        if camera.watched:
                            tg.start_soon(camera.freshness.watch)
                    tg.start_soon(self._detector_load().watch)
                    tg.start_soon(self._watch_wall_clock)
                    async for _ in session:
                        pass  # every event already went to the bus (``Runner(on_event=)``)
                    # The sources' last states (and the counts going unknown) are said while
                    # the outputs (MQTT) still run.
                    with anyio.CancelScope(shield=True):
                        await self._close_sources()
                    self._source_closed.set()
                    if self.voice is not None and not self._hurried:
                        # What the model said before the end is heard to its end.
                        with anyio.move_on_after(VOICE_DRAIN_S):
                            await self.voice.finish()
                    if session.failure:
                        self.failure = session.failure
                tg.cancel_scope.cancel()
        finally:
            await self._close()
        if self.failure:
            return EXIT_FAILURE
        code = 0
        incomplete = self.logs.incomplete()
        if incomplete is not None:
            print(f"lookout: the event log is incomplete: {incomplete}", file=sys.stderr)
            code = EXIT_LOG_INCOMPLETE
        for check in self.operations.delivery_checks:
            undelivered = check()
            if undelivered is not None:
                print(f"lookout: {undelivered}", file=sys.stderr)
                code = EXIT_LOG_INCOMPLETE
        return code

    def _detector_load(self) -> DetectorLoad:
        return DetectorLoad(
            self.cameras, lambda line: self.console.say(line, self.bus.elapsed()), self.clock
        )

    async def _close_sources(self) -> None:
        for camera in self.cameras:
            await camera.source_runner.close()

    async def _close(self) -> None:
        with anyio.CancelScope(shield=True):
            await self._close_sources()
        for camera in self.cameras:
            self._say_totals(camera)
            stats = camera.capture.stats
            self.bus.publish(
                CaptureStatsEvent(
                    frames_read=stats.frames_read,
                    frames_sampled=stats.frames_sampled,
                    frames_detected=camera.perception.stats.detected,
                    dropped=dict(stats.dropped),
                    detect_ms_mean=round(camera.perception.stats.detect_ms_mean, 3),
                    camera=camera.name,
                )
            )
        # What a log can be checked against (the soak benchmark does): every event made.
        log.info("%d events published in this run", self.bus.published)
        self.bus.close()

    async def _watch_wall_clock(self) -> None:
        """Say each step of the system clock: what is stored as wall time follows it."""
        while True:
            await self.clock.sleep(CLOCK_CHECK_S)
            step = self.wall_steps.check()
            if step is not None:
                self.bus.publish(ClockStep(step_s=round(step, 3), wall=self.wall_steps.wall()))

    async def _capture_then_close(self, session: LiveSession) -> None:
        """Every camera's frames until each has ended; then the session's end."""
        async with anyio.create_task_group() as cameras:
            for camera in self.cameras:
                cameras.start_soon(camera.capture_frames, self._camera_failed)
        if not self.stop.requested and self.failure is None:
            # Let the tools finish the last frames before the session ends.
            with anyio.move_on_after(10):
                await session.wait_inputs_idle()
        self.request_stop()

    def _camera_failed(self, message: str) -> None:
        # The run fails (exit 1) once it ends; the other cameras count on meanwhile.
        self.failure = self.failure or message
        self.bus.publish(ErrorEvent(message=message, where="source"))

    async def _watch_signals(self, signals: AsyncIterator[int], scope: CancelScope) -> None:
        """The run's signals (its receiver is made as ``run`` begins)."""
        async for number in signals:
            if number == signal.SIGHUP:
                # logrotate's postrotate, a hung-up terminal: by default it killed the
                # device on the spot (no offline state, logs cut). The logs follow
                # their files' names by themselves; this only makes it immediate.
                self._logs_follow_names()
                continue
            if self.stop.requested:
                scope.cancel()  # a second signal: stop now
                return
            self.logs.hurry()
            self._hurried = True
            self.request_stop()
            # The session stops streams and flushes within its own timeouts; this is
            # the backstop that keeps the promise of exiting within 2 seconds.
            with anyio.move_on_after(SIGNAL_SESSION_S):
                await self.session.wait_finished()
            # Then the source's last states reach the outputs (MQTT) before they stop.
            with anyio.move_on_after(SIGNAL_SOURCE_S):
                await self._source_closed.wait()
            scope.cancel()
            return

    def _logs_follow_names(self) -> None:
        self.logs.follow_names()
        self.console.say(
            "SIGHUP: the event logs are checked against their file names (rotation); "
            "the device runs on (SIGTERM or SIGINT stop it)",
            self.bus.elapsed(),
        )

    async def _read_commands(self, session: LiveSession) -> None:
        bus = self.bus

        def say(text: str) -> None:
            self.console.say(text, bus.elapsed())

        while not self.queue.closed:
            line = await anyio.to_thread.run_sync(
                sys.stdin.readline, COMMAND_MAX, abandon_on_cancel=True
            )
            if not line:
                return
            if len(line) >= COMMAND_MAX and not line.endswith("\n"):
                # Not typed: /dev/zero, a binary file. Read on, it would never end.
                say(f"stdin: a line over {COMMAND_MAX} characters is no command: not read on")
                return
            text = line.strip()
            if not text:
                continue
            if text.lower() in QUIT:
                self.request_stop()
                return
            if text.lower() in TALK and self.voice is not None:
                say(self.voice.talk(not self.voice.talking))
                continue
            named = [c.name for c in self.cameras] if self.config.named_cameras else []
            await run_command(text, session, self.queue, say, cameras=named)

    def _media_total_s(self, camera: Camera) -> float | None:
        """How long a replayed file is, in media time (None: a camera, a loop, unknown)."""
        source = camera.source
        fps = source.fps
        frames = getattr(source, "frame_count", None)
        if source.is_camera or camera.config.source.loop or not fps or not frames:
            return None
        return float(frames / fps)

    async def _show_progress(self) -> None:
        # The first camera's replay: a progress line is for watching one file go by.
        camera = self.cameras[0]
        while True:
            done = camera.capture.stats.last_frame_t or 0.0
            percept = camera.perception.current()
            count = percept.count if percept is not None else None
            self.console.progress(done, self._media_total_s(camera), count)
            await anyio.sleep(0.5)

    def _say_totals(self, camera: Camera) -> None:
        """A run ends with each camera's lines' and zones' totals; a replay also with what
        it went through, terminal or not."""
        whose = f"{camera.name}: " if self.config.named_cameras else ""
        scene = self._scene_totals(camera)
        if scene:
            self.console.say(whose + scene, self.bus.elapsed())
        if camera.live:
            return
        stats = camera.capture.stats
        # Each frame read stands for 1/fps of media (the skipped ones too): 100 frames of
        # a 10 fps file are 10.0 s, though the last one looked at began at 9.5 s.
        fps = camera.source.fps
        media = stats.frames_read / fps if fps else (stats.last_frame_t or 0.0)
        total = self._media_total_s(camera)
        of = f" of {total:.1f}" if total else ""
        self.console.say(
            f"{whose}replayed {counted(stats.frames_read, 'frame')} ({media:.1f}{of} s of "
            f"media) from {camera.source.name} in {self.bus.elapsed():.1f} s; the detector "
            f"ran on {camera.perception.stats.detected:,}",
            self.bus.elapsed(),
        )

    def _scene_totals(self, camera: Camera) -> str | None:
        """``totals: line post 12 in, 16 out; zone left 3 stayed over 30 s`` (None: no
        lines or zones)."""
        # The scene at the end (lines and zones may have been edited on the page).
        scene = camera.perception.scene
        if not scene.lines and not scene.zones:
            return None
        parts = [
            f"line {name} {totals.entered} in, {totals.exited} out"
            for name, totals in scene.line_totals().items()
        ]
        dwells = self.console.of(camera.name).dwells
        for name, zone in scene.zones.items():
            dwell = zone.dwell_s
            stayed = dwells.get(name, 0)
            parts.append(
                f"zone {name} {counted(stayed, 'person', 'people')} stayed over {dwell:g} s"
            )
        return "totals: " + "; ".join(parts)


__all__ = ["CLOCK_CHECK_S", "EXIT_FAILURE", "EXIT_LOG_INCOMPLETE", "App", "StopSwitch"]
