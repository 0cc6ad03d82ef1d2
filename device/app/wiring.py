"""One run's parts, built once, in dependency order, from the configuration: ``build_app``.

Each part is given what it needs when it is made and nothing is assigned to it
afterwards. The order is the dependencies' own:

    clock, bus                        (given, or made here)
    source, model, request queue
    perception                        -> bus (events, percepts), queue (unknown, in-band)
    tools (count_people, look, ...)   -> perception
    stop switch, console              -> bus (subscribed first: it says things first)
    event logs (JSONL, SQLite)        -> bus
    count freshness                   -> bus, perception, source
    source runner                     -> source, freshness (its state callback)
    live session                      -> model, tools, queue, bus (where its events go)
    voice (microphone, loudspeaker)   -> queue, console, session (a WAV waits for the model),
                                         bus (model audio, the local model's sentences)
    capture loop                      -> source runner, queue, perception, session (fast pace)
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

from device.app.freshness import CountFreshness
from device.app.logs import EventLogs
from device.app.operations import Operations, build_operations
from device.app.parts import (
    build_model,
    configured_perception,
    configured_runner,
    configured_source,
    look_tool,
    offers_look,
    preflight,
    session_config,
)
from device.app.run import App, StopSwitch
from device.app.scene_editor import SceneEditor
from device.app.scene_tools import scene_tools
from device.app.state import DeviceState
from device.app.voice import build_voice
from device.bus import EventBus
from device.capture import CaptureLoop
from device.config import Config
from device.outputs.console import ConsoleSink
from device.outputs.console_log import ConsoleLogs
from device.outputs.snapshots import open_snapshots
from device.percept import CountUnknown, Percept
from device.sources import FrameSource
from live import LiveRequestQueue, Runner
from live.clock import Clock, MonotonicClock
from live.events import ErrorEvent
from live.model import LiveModel
from live.tool import Tool
from live.walltime import StepWatch
from tools import FunctionTool
from tools.count_people import CountPeople, check_count_args, coalesce_counts


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
    source = source or configured_source(config, clock)
    model = model or build_model(config)
    queue: LiveRequestQueue[Percept | CountUnknown] = LiveRequestQueue()

    def tell_tools(unknown: CountUnknown) -> None:
        """The tools hear an unknown count in-band, in order with the percepts they read."""
        if not queue.closed:
            queue.send_realtime(percept=unknown)

    perception = configured_perception(
        config,
        config.detection_fps(),
        source,
        bus.publish,
        bus.percept,
        tell_tools,
        clock.now,
    )
    counter = CountPeople(current=perception.current, why_unknown=lambda: perception.unknown_reason)
    tools: list[Tool] = [
        FunctionTool(
            counter, name="count_people", check=check_count_args, coalesce=coalesce_counts
        ),
        FunctionTool(counter.count_people_now),
        *scene_tools(config, perception.current),
    ]
    look = look_tool(config, perception.current, lambda: perception.unknown_reason)
    if offers_look(config):
        tools.append(FunctionTool(look.look))
    stop = StopSwitch(queue)
    console = ConsoleSink(
        out,
        fallback_after_s=config.model.fallback_after,
        # Whoever read the console left (``| head -2``): end quietly, like other tools.
        on_closed=stop.request,
        camera=source.is_camera,
        lines=len(config.scene.lines),
        zones=len(config.scene.zones),
    )
    bus.subscribe(console)
    if console_logs is not None:
        # From here on (the outputs binding their ports, the whole run) a warning is a
        # timed console line like every other; the bus's end ends it.
        console_logs.attach(lambda line: console.say(line, bus.elapsed()))
        bus.subscribe(console_logs)
    run_id = uuid.uuid4().hex[:12]
    logs = EventLogs.open(config, bus, run_id)
    freshness = CountFreshness(bus, perception, source, clock)
    source_runner = configured_runner(
        config,
        source,
        clock,
        freshness.on_source_state,
        on_skipped=lambda message: bus.publish(ErrorEvent(message=message, where="source")),
    )
    sample_fps = config.detection_fps()
    if config.model.send_frames and not config.device.privacy:
        sample_fps = max(sample_fps, config.model.model_fps)
    request_fps = getattr(source, "request_fps", None)
    if request_fps is not None and config.source.camera_fps != 0:
        # A camera then sends little more than is sampled (0: leave it at its own rate).
        request_fps(sample_fps, config.source.camera_fps)
    runner = Runner(
        model,
        tools,
        session_config(config),
        clock=clock,
        on_event=bus.publish,  # the session's events reach every output, the logs among them
        epoch=bus.epoch,
    )
    session = runner.session(queue)
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
    capture = CaptureLoop(
        source_runner,
        queue,
        clock=clock,
        sample_fps=sample_fps,
        perceive=perception.process,
        max_side=config.source.max_side,
        jpeg_quality=config.source.jpeg_quality,
        pace=config.source.pace,
        is_camera=source.is_camera,
        consumers=session,  # a fast replay waits for the tools (and the model) to keep up
        media_duration_s=None if source.is_camera else config.source.duration,
    )
    scene = SceneEditor(config, perception, bus.publish, capture=capture, sample_fps=sample_fps)
    if check:
        preflight(perception, source)
    snapshots = open_snapshots(
        config, run_id, bus.publish, lambda line: console.say(line, bus.elapsed())
    )
    state = DeviceState(
        config=config,
        clock=clock,
        live_session=session,
        capture=capture,
        source_runner=source_runner,
        perception=perception,
        source=source,
        logs=logs,
        look=look,
        voice=voice,
        scene=scene,
        snapshots=snapshots,
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
        source=source,
        perception=perception,
        counter=counter,
        queue=queue,
        session=session,
        console=console,
        logs=logs,
        freshness=freshness,
        source_runner=source_runner,
        capture=capture,
        state=state,
        operations=ops,
        stop=stop,
        wall_steps=wall_steps or StepWatch(),
        voice=voice,
    )


__all__ = ["build_app"]
