"""One run's parts, built once, in dependency order, from the configuration: ``build_app``.

Each part is given what it needs when it is made and nothing is assigned to it
afterwards. The order is the dependencies' own:

    clock, bus                        (given, or made here)
    source, model, request queue
    perception                        -> bus (events; percepts and unknowns)
    session feed                      -> bus (percepts and unknowns), queue
    tools (count_people, look, ...)   -> perception
    stop switch, console              -> bus (subscribed first: it says things first)
    event logs (JSONL, SQLite)        -> bus
    count freshness                   -> bus, perception, source
    source runner                     -> source, freshness (its state callback)
    live session                      -> model, tools, queue, bus (where its events go)
    voice (microphone, loudspeaker)   -> queue, console, session (a WAV waits for the model),
                                         bus (model audio, the local model's sentences)
    frame driver                      -> source runner, perception, session (fast pace),
                                         queue (the frames perception did not look at)
    snapshots (--snapshots)           -> bus (events, percepts; its own events)
    device state (read-only view)     -> the parts above
    operations (page, /metrics, MQTT) -> device state, bus
    App                               -> all of it; ``App.run`` runs it

Tests and benchmarks inject a bus, a clock, a source, a model or a wall-clock
watch; ``operations=False`` leaves out the status page and MQTT.
"""

from __future__ import annotations

import sys
import uuid
from typing import TextIO

from device.app.camera import build_camera
from device.app.camera_tools import camera_tools
from device.app.instruction import frames_camera
from device.app.logs import EventLogs
from device.app.operations import Operations, build_operations
from device.app.parts import build_model, detector_factory, preflight, session_config
from device.app.run import App, StopSwitch
from device.app.scene.news import SceneNews
from device.app.session_feed import SessionFeed
from device.app.state import DeviceState
from device.app.voice import build_voice
from device.bus import EventBus
from device.config import Config
from device.outputs.console import CameraLines, ConsoleSink
from device.outputs.console_log import ConsoleLogs
from device.outputs.pictures.snapshots import open_snapshots
from device.sources import FrameSource
from device.vision.percept import CountUnknown, Percept
from device.vision.shared_detector import SharedDetector
from live.model import LiveModel
from live.requests import LiveRequestQueue
from live.session import LiveSession, Runner
from live.util.clock import Clock, MonotonicClock
from live.util.walltime import StepWatch


def build_app(
    config: Config,
    *,
    bus: EventBus | None = None,
    out: TextIO | None = None,
    clock: Clock | None = None,
    read_stdin: bool = False,
    source: FrameSource | None = None,
    model: LiveModel | None = None,
    wall_steps: StepWatch | None = None,
    operations: bool = True,
    check: bool = False,
    console_logs: ConsoleLogs | None = None,
) -> App:
    """Build one run of the device from ``config``.

    ``source``, ``model``: injected instead of the configured ones (tests, benchmarks).
    ``check``: find what the user caused (a detector that does not load, a source that
    does not decode) before the outputs bind their ports, as ``lookout run`` does.
    ``console_logs``: the stderr log's filter that makes warnings console lines (the CLI's).
    Raises ConfigError, SourceError or OSError with one line for what the user got wrong.
    """
    clock = clock or MonotonicClock()
    bus = bus or EventBus(clock)
    out = out or sys.stdout
    model = model or build_model(config)
    # Room for two of each camera's requests (the default, 2, for one): cameras that put
    # theirs in between two pumps must not push each other's out.
    queue: LiveRequestQueue[Percept | CountUnknown] = LiveRequestQueue(
        realtime_maxsize=2 * len(config.camera_names)
    )
    views = [config.camera(name) for name in config.camera_names]
    # One model in memory for every camera, reporting boxes down to the lowest camera's
    # threshold (each camera counts at its own).
    detector = SharedDetector(detector_factory(config, min(v.perception.threshold for v in views)))
    consumers = _Consumers()
    cameras = [
        build_camera(
            view,
            clock=clock,
            bus=bus,
            queue=queue,
            detector=detector,
            consumers=consumers,
            sample_fps=_sample_fps(view, frames_camera(config)),
            source=source if index == 0 else None,
        )
        for index, view in enumerate(views)
    ]
    bus.on_percept(SessionFeed(queue))  # the tools hear each camera's percepts in frame order
    # A line or zone drawn on the page reaches the model's watches (the offline model's too).
    news = SceneNews(
        queue,
        {c.name: (list(c.config.scene.lines), list(c.config.scene.zones)) for c in cameras},
        named=config.named_cameras,
    )
    bus.subscribe(news)
    bus.on_percept(news.on_percept)
    first = cameras[0]
    perception = first.perception
    made = camera_tools(config, cameras)  # each camera's count, lines, zones and look
    counter, tools, look = made.counters[first.name], made.tools, made.look
    stop = StopSwitch(queue)
    console = ConsoleSink(
        out,
        fallback_after_s=config.model.fallback_after,
        # Whoever read the console left (``| head -2``): end quietly, like other tools.
        on_closed=stop.request,
        cameras={
            c.name: CameraLines(c.live, len(c.config.scene.lines), len(c.config.scene.zones))
            for c in cameras
        },
        named=config.named_cameras,
    )
    bus.subscribe(console)
    if console_logs is not None:
        # From here on (the outputs binding their ports, the whole run) a warning is a
        # timed console line like every other; the bus's end ends it.
        console_logs.attach(lambda line: console.say(line, bus.elapsed()))
        bus.subscribe(console_logs)
    run_id = uuid.uuid4().hex[:12]
    logs = EventLogs.open(config, bus, run_id)
    runner = Runner(
        model,
        tools,
        session_config(config),
        clock=clock,
        on_event=bus.publish,  # the session's events reach every output, the logs among them
        epoch=bus.epoch,
    )
    session = runner.session(queue)
    consumers.session = session
    if session.budget.enabled:
        look.budget = session.budget.look_refusal  # past 80 % of the budget: no looks
    voice = build_voice(
        config,
        queue,
        clock,
        lambda text: console.say(text, bus.elapsed()),
        model_hears=config.uses_gemini,
        wait_model=session.wait_model_connected,
    )
    if voice is not None:
        bus.subscribe(voice)  # model audio to the loudspeaker, the local model's sentences
    if check:
        for camera in cameras:
            preflight(camera.perception, camera.source)
    snapshots = open_snapshots(
        config, run_id, bus.publish, lambda line: console.say(line, bus.elapsed())
    )
    state = DeviceState(
        config=config,
        clock=clock,
        live_session=session,
        capture=first.capture,
        source_runner=first.source_runner,
        perception=perception,
        source=first.source,
        logs=logs,
        look=look,
        voice=voice,
        scene=first.scene,
        snapshots=snapshots,
        cameras={c.name: c for c in cameras},
    )
    ops = (
        # The outputs' own news (the page's address, the broker away or back) reads like
        # every other console line: timed, and clear of the progress line.
        build_operations(
            config, state, bus, clock, announce=lambda line: console.say(line, bus.elapsed())
        )
        if operations
        else Operations()
    )
    if snapshots is not None:
        # Its ``snapshot`` events come once the picture is written; closed before the logs,
        # so the pictures written in the run's last second are still in them.
        bus.subscribe(snapshots, closes_first=True)
        bus.on_percept(snapshots.on_percept)
    return App(
        config=config,
        bus=bus,
        clock=clock,
        out=out,
        read_stdin=read_stdin,
        run_id=run_id,
        cameras=cameras,
        counter=counter,
        queue=queue,
        session=session,
        console=console,
        logs=logs,
        state=state,
        operations=ops,
        stop=stop,
        wall_steps=wall_steps or StepWatch(),
        voice=voice,
    )


def _sample_fps(config: Config, sent: str | None) -> float:
    """How often a camera's frames are sampled: its detection rate, or the model lane's
    when its frames go to the model (``sent``: whose do) and that is faster."""
    sample_fps = config.detection_fps()
    if sent == config.camera_name:
        sample_fps = max(sample_fps, config.model.model_fps)
    return sample_fps


class _Consumers:
    """The session, once made, as the consumers a fast replay waits for (the cameras are
    made before the session, which takes their tools)."""

    session: LiveSession | None = None

    async def wait_input_consumer(self) -> None:
        if self.session is not None:
            await self.session.wait_input_consumer()

    async def wait_inputs_idle(self) -> None:
        if self.session is not None:
            await self.session.wait_inputs_idle()

    async def wait_delivered(self) -> None:
        if self.session is not None:
            await self.session.wait_delivered()


__all__ = ["build_app"]
