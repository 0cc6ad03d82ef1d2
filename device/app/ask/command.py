"""``lookout ask``: one request-response question about the camera or its log.

It opens the source, asks the model (the local one, or Gemini through
``generate_content``) with its tools (count now, a long-running occupancy report,
paged per-minute counts, the visitors a ``lookout run`` with lines counted into the
``--db`` log, and the log's crossings, zone visits and busiest minute), prints the
answer on stdout and everything else (tool calls, job state, progress, errors) on
stderr. A question about the log (``--db``, no ``--source``) opens no source and is
offered no camera tool. A report's progress is shown to people (progress bar on a
terminal, ``--events``, ``--db``) and never sent to the model; the command waits for
running jobs unless ``--no-wait``, and Ctrl-C cancels them (recorded, and told to the
model).
"""

from __future__ import annotations

import logging
import signal
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

import anyio
from anyio import CancelScope

from device.app.ask.console import AskConsole
from device.app.ask.frames import Camera, LazyFrames, PerceivedFrames
from device.app.ask.tools import ASK_INSTRUCTION, ASK_LOG_INSTRUCTION, SaysCannot
from device.app.describe import describe_config, run_started
from device.app.parts import (
    configured_perception,
    configured_runner,
    configured_source,
    preflight,
    sample_video,
)
from device.capture import FrameDriver
from device.config import Config, ConfigError
from device.config.paths import check_writable_file, open_output
from device.events import SourceStateEvent
from device.feeds.runner import StateChange
from device.outputs.sinks import EventSink
from device.sources import FrameSource
from live.events import (
    ErrorEvent,
    Event,
    JobUpdate,
    ToolCall,
    ToolResult,
)
from live.jobs.records import JobState, JobStore, MemoryJobStore, SQLiteJobStore
from live.store.eventlog import EventLog, MemoryEventLog
from live.tool import Tool
from live.turns.conversation import Conversation, TurnConfig, TurnOutcome, TurnRunner
from live.turns.model import TurnModel
from live.util.clock import Clock, MonotonicClock
from tools.log_questions import LogNames, LogTools
from tools.occupancy import MemoryOccupancyLog, OccupancyLog, OccupancyTools, SQLiteOccupancyLog
from tools.visitors import VisitorCounter

log = logging.getLogger("lookout.ask")

EXIT_UNANSWERED = 4  # the question cannot be answered with what ask has (said, and what would)


def model_name(config: Config) -> str:
    if config.model.model:
        return config.model.model
    # Ephemeral tokens open Live sessions only: ask's requests need a key or Vertex AI.
    if not (config.model.api_key or config.model.vertex is not None):
        return "local"
    from models.gemini.turns import DEFAULT_TURN_MODEL  # google-genai, only for Gemini

    return DEFAULT_TURN_MODEL


def build_turn_model(config: Config, say: Callable[[str], None] = print) -> TurnModel:
    """Gemini when a key is set (falling back to the local model when it cannot be
    reached, said through ``say``), else the local model."""
    from models.local.turns import LocalTurnModel

    name = model_name(config)
    tokens_only = config.uses_tokens and not config.model.api_key and config.model.vertex is None
    if tokens_only and name != "local":
        raise ConfigError(
            f"ask --model {name}: ephemeral tokens (--token-file, --token-url) open Live "
            "sessions only, and ask's questions are requests: set GEMINI_API_KEY or Vertex AI "
            "here, or ask the local model (--model local)"
        )
    if name == "local":
        if tokens_only and not config.model.model:
            say(
                "the local model answers: ephemeral tokens open Live sessions only "
                "(ask asks Gemini with GEMINI_API_KEY or Vertex AI)"
            )
        return LocalTurnModel()
    from device.app.ask.fallback import FallbackTurnModel
    from models.gemini.turns import GeminiTurnModel
    from models.gemini.vertex import VertexError

    vertex = config.model.vertex
    try:
        gemini = GeminiTurnModel(
            name, api_key=None if vertex is not None else config.model.api_key, vertex=vertex
        )
    except VertexError as exc:
        raise ConfigError(str(exc)) from None
    return FallbackTurnModel(gemini, LocalTurnModel(), say)


@dataclass
class AskOptions:
    question: str
    wait: bool = True
    sample_fps: float | None = None  # frames perceived per second of source time (None: as run)
    period_s: float = 60.0  # span of one row of fetch_counts ("per minute")
    page_size: int = 10


@dataclass
class AskApp:
    config: Config
    options: AskOptions
    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)
    clock: Clock = field(default_factory=MonotonicClock)
    model: TurnModel | None = None  # tests inject a recording model
    source_override: FrameSource | None = None
    watch_signals: bool = True

    def __post_init__(self) -> None:
        db, events = self.config.outputs.db, self.config.outputs.events
        # The log asked about: the SQLite one (--db), else the JSON-lines one (--events);
        # both read the same. ask writes nothing into it: its own record is the console's.
        self.log_path = db if db is not None else events
        if db is not None and events is not None:
            raise ConfigError(
                "--db and --events name two logs: ask reads one (give --db PATH or "
                "--events PATH; it writes into neither)"
            )
        if events is not None and not events.is_file():
            raise ConfigError(f"--events {events}: no such log (lookout run --events writes one)")
        # Without --source, a question about the log opens no video; one about now looks
        # at the sample video, as lookout run does, opened when it asks.
        self.about_log = (
            self.source_override is None
            and self.config.source.source is None
            and self.log_path is not None
        )
        self.console = AskConsole(self.out, self.err)
        self.turn_model = self.model or build_turn_model(self.config, self.console.note)
        self.sinks: list[EventSink] = [self.console]
        self.run_id = uuid.uuid4().hex[:12]
        self.event_log: EventLog = MemoryEventLog()
        self.job_store: JobStore
        self.occupancy: OccupancyLog
        if db is not None:
            # A report's jobs and per-minute counts are kept in their own tables, for a
            # later "counts for job-..." (never mixed with the events of the log).
            check_writable_file("db", db, "database file")
            self.job_store = open_output("db", db, SQLiteJobStore)
            self.occupancy = SQLiteOccupancyLog(db)
        else:
            self.job_store = MemoryJobStore()
            self.occupancy = MemoryOccupancyLog()
        self.camera = None if self.about_log else self._camera()
        self.lazy: LazyFrames | None = None
        frames: PerceivedFrames | LazyFrames
        if self.camera is not None:
            frames = self.camera.frames
        else:
            video = sample_video()
            self.lazy = frames = LazyFrames(
                self._checked_camera, video.name if video else "the sample video"
            )
        self.report_fps = self.options.sample_fps or self.config.detection_fps()
        self.occupancy_tools = OccupancyTools(
            frames,
            self.occupancy,
            sample_fps=self.report_fps,
            bucket_s=self.options.period_s,
            page_size=self.options.page_size,
            zones=tuple(self.config.scene.zones),
        )
        self.visitors = VisitorCounter(self.log_path, tuple(self.config.scene.lines))
        self.log_tools = LogTools(self.log_path)
        self.log_names = LogNames()
        self.has_reports = False  # --db keeps reports made earlier (their counts are offered)
        self.errors = 0
        self.unanswered = False  # the model said it cannot answer (cannot_answer)
        self.log_said_cannot: set[str] = set()  # calls a log tool answered "cannot" (ids)
        self.called: dict[str, str] = {}  # call id -> tool name
        self.log_tool_names: set[str] = set()  # the log's tools offered (``offered``)
        self.last_log_answer_cannot = False  # ... and no tool answered after it
        self.outcomes: list[TurnOutcome] = []
        self.conversation: Conversation | None = None
        self._interrupted = False
        self._finished = anyio.Event()

    def _camera(self) -> Camera:
        source = self.source_override or configured_source(self.config, self.clock)
        # A question is answered now: a camera that cannot be opened is said in seconds.
        runner = configured_runner(
            self.config,
            source,
            self.clock,
            lambda change: self._on_source_state(source.name, change),
            on_skipped=lambda message: self._write(ErrorEvent(message=message, where="source")),
            first_open_attempts=2,
        )
        report_fps = self.options.sample_fps or self.config.detection_fps()
        perception = configured_perception(self.config, report_fps, source)
        driver = FrameDriver(
            runner,
            clock=self.clock,
            sample_fps=report_fps,  # frames on the detection grid, perception takes the same
            perceive=perception.process,
            max_side=self.config.source.max_side,
            jpeg_quality=None,
            pace=self.config.source.pace,
            is_camera=source.is_camera,
        )
        return Camera(source, runner, perception, PerceivedFrames(driver, perception, source.name))

    def _checked_camera(self) -> Camera:
        """The sample video, opened when a question about the log asks about now (a
        worker thread: loading the detector takes a while)."""
        camera = self._camera()
        preflight(camera.perception, camera.source)
        return camera

    def _on_source_state(self, name: str, change: StateChange) -> None:
        if not change.said:
            return  # one more attempt of a failure run already said
        self._write(SourceStateEvent.of(name, change))

    def _write(self, event: Event) -> None:
        if isinstance(event, ToolCall):
            self.called[event.id] = event.name
        if (
            isinstance(event, ErrorEvent)
            and event.where == "tool_call"
            and self.called.get(event.call_id or "") in self.log_tool_names
        ):
            # A log tool's call refused for its arguments (a name the log does not have):
            # the model may ask again and be answered; if not, the question was not
            # answerable. (A tool that does not exist is the model's error.)
            self.log_said_cannot.add(event.call_id or "")
        said_cannot = event.call_id in self.log_said_cannot
        if isinstance(event, ToolResult):
            if event.name == "cannot_answer":
                self.unanswered = True
            else:
                # A log tool's "cannot" answers the question unless a later call answered.
                self.last_log_answer_cannot = said_cannot
        if (isinstance(event, ErrorEvent) and not said_cannot) or (
            isinstance(event, JobUpdate) and event.error
        ):
            self.errors += 1
        for sink in self.sinks:
            if said_cannot and isinstance(event, ErrorEvent) and sink is self.console:
                continue  # a tool's "cannot" is its answer (the "<-" line), not an error
            try:
                sink.write(event)
            except Exception:
                log.exception("event sink failed")

    def preflight(self) -> None:
        """A detector that cannot load, a file that is not a video: one line, before asking."""
        if self.camera is not None:
            preflight(self.camera.perception, self.camera.source)

    @property
    def looks_now(self) -> bool:
        """Whether a question may look at the scene now: a --source was given, or no log of
        earlier runs was (a --db that keeps only reports is no log: the sample video then,
        as lookout run looks at it). Asked of a log alone, "now" would be another camera's."""
        return self.camera is not None or not self.log_tools.runs

    def offered(self) -> list[Tool]:
        """The tools of this question: the scene's (now, and a report from now on) where it
        may look, a report's counts where --db keeps them, and the log's, each place
        parameter declared as the names there are."""
        scene = self.occupancy_tools.tools()
        if not self.looks_now:
            scene = [t for t in scene if t.name == "fetch_counts" and self.has_reports]
        log_tools = [self.visitors.tool(), *self.log_tools.tools(self.log_names)]
        self.log_tool_names = {t.name for t in log_tools} - {"cannot_answer"}
        return [*scene, *(SaysCannot(tool, self.log_said_cannot) for tool in log_tools)]

    async def run(self) -> int:
        # The log's cameras, lines and zones, read once: what the tools declare.
        self.log_names = await anyio.to_thread.run_sync(self.log_tools.load)
        self.has_reports = bool(await anyio.to_thread.run_sync(self.job_store.jobs))
        runner = TurnRunner(
            self.turn_model,
            self.offered(),
            TurnConfig(
                system_instruction=self.config.model.system_instruction
                or (ASK_INSTRUCTION if self.looks_now else ASK_LOG_INSTRUCTION),
                secrets=self.config.secrets(),
            ),
            clock=self.clock,
            event_log=self.event_log,
            job_store=self.job_store,
        )
        # Which question, when, on what: a --db holding many runs tells them apart.
        source = None if self.camera is None else self.camera.source
        started = run_started(
            self.run_id, source, self.config, describe_config(self.config), command="ask"
        )
        self._write(started)
        try:
            async with anyio.create_task_group() as tg:
                if self.camera is not None:
                    await tg.start(self.camera.runner.run)
                async with runner.open() as conversation:
                    self.conversation = conversation
                    if self.watch_signals:
                        tg.start_soon(self._watch_signals, conversation, tg.cancel_scope)
                    if self.config.outputs.db is not None:
                        await self._carry_over(conversation)
                    async for event in conversation.run_async(self.options.question):
                        self._write(event)
                    self.outcomes.append(conversation.last_outcome or TurnOutcome.MODEL_FAILED)
                    if self.options.wait:
                        async for event in conversation.follow_up():
                            self._write(event)
                    elif conversation.running_jobs:
                        self.console._err_line(
                            "not waiting for "
                            + ", ".join(conversation.running_jobs)
                            + " (--no-wait): it is cancelled now"
                        )
                self._finished.set()
                tg.cancel_scope.cancel()
        finally:
            await self._close()
        if self._interrupted:
            return 1
        answered = bool(self.outcomes) and self.outcomes[0] is TurnOutcome.ANSWERED
        if answered and (self.unanswered or self.last_log_answer_cannot):
            return EXIT_UNANSWERED  # said as such, with what would answer it
        return 0 if answered and self.errors == 0 else 1

    async def _carry_over(self, conversation: Conversation) -> None:
        """Jobs of earlier runs in this --db: close the orphans, hand over unseen results."""
        jobs = await anyio.to_thread.run_sync(self.job_store.jobs)
        for job in jobs:
            if job.state is JobState.RUNNING:
                # Its process ended (killed, power cut) before it did.
                job.state, job.error = JobState.FAILED, "lookout ended before the job finished"
                job.ended_at = time.time()
                await anyio.to_thread.run_sync(self.job_store.put, job)
        unseen = [job for job in jobs if not job.delivered]
        for job in unseen:
            self.console._err_line(
                f"{job.job_id} ({job.name}, {job.state.value}) ended in an earlier run without "
                "the model hearing of it: its result goes with this question"
            )
        conversation.carry_over(unseen)

    async def _watch_signals(self, conversation: Conversation, scope: CancelScope) -> None:
        """First Ctrl-C: cancel running jobs and let the model hear of it; second: leave now."""
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with anyio.create_task_group() as tg:
                async for _ in signals:
                    if self._interrupted:
                        scope.cancel()
                        return
                    self._interrupted = True
                    self.console._err_line("interrupted: cancelling running jobs")
                    tg.start_soon(self._cancel_jobs, conversation, scope)

    async def _cancel_jobs(self, conversation: Conversation, scope: CancelScope) -> None:
        with anyio.move_on_after(3):
            for job_id in conversation.running_jobs:
                await conversation.cancel_job(job_id, "interrupted by the user")
        # The cancelled result goes to the model; give that a moment, then leave regardless.
        with anyio.move_on_after(5):
            await self._finished.wait()
        scope.cancel()

    async def _close(self) -> None:
        with anyio.CancelScope(shield=True):
            for camera in (self.camera, self.lazy.camera if self.lazy else None):
                if camera is not None:
                    await camera.runner.close()
            aclose = getattr(self.turn_model, "aclose", None)
            if aclose is not None:
                try:
                    await aclose()
                except Exception:
                    log.exception("closing the model failed")
        self.event_log.close()
        for store in (self.job_store, self.occupancy):
            close = getattr(store, "close", None)
            if close is not None:
                close()
        for sink in self.sinks:
            sink.close()


__all__ = [
    "ASK_INSTRUCTION",
    "AskApp",
    "AskConsole",
    "AskOptions",
    "build_turn_model",
]
