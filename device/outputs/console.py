"""The console: a line for each thing a person watching the device should know.

Counts, source and model states (each connection attempt with its reason and
when the next one comes), what the model says, stream starts and stops, and
errors. When no model has been connected for ``fallback_after_s``, the device
says the count changes itself ("3 people in view (was 2)."), so a console with
an absent model still tells the story. On a terminal, a file replay also gets
a progress line.

What stops with the source is said once, on the source's line: when a camera goes away
the count, every zone and every line stop at the same moment for the same reason, and
one line says so (``source cam reconnecting: read failed; retry in 0.5 s — count, 1 zone
unknown; 2 lines not counting``), not one line per part repeating the reason. The count
coming back is said by the count (``count: 3``), as at the start.

A device with named cameras says whose each camera's line is (``door: count: 3``);
one with a single camera that names none says it as it always did.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

from device.events import (
    CameraEvent,
    ClockStep,
    CountChanged,
    DwellPassed,
    LineCrossed,
    LogProblem,
    SceneChanged,
    ZoneCount,
)
from device.outputs.transcripts import TranscriptLines, label
from device.vision.percept import MAIN_CAMERA
from live.events import (
    BudgetState,
    ConnectionState,
    Emission,
    ErrorEvent,
    Event,
    ModelText,
    StreamStarted,
    StreamStopped,
    ToolCall,
    Transcript,
)
from live.util.plural import counted
from live.util.printable import printable


def people(n: int) -> str:
    return "1 person" if n == 1 else f"{n} people"


def count_sentence(count: int, previous: int | None) -> str:
    """What is said of a count change: ``3 people in view (was 2).``"""
    if previous is None:
        return f"{people(count)} in view."
    return f"{people(count)} in view (was {previous})."


def _fmt_t(t: float) -> str:
    return f"[{t:7.1f}s]"


def _seconds(value: float) -> str:
    return f"{value:.0f} s" if value >= 10 else f"{value:g} s"


@dataclass
class CameraLines:
    """What the console knows of one camera: whether it is live (its media time says
    nothing to a reader), how many lines and zones it has (what stops with its source; a
    ``scene`` event says how many there are after an edit), whether the last thing said
    of its count was a number (an unknown count is said once, by whichever line says it
    first: the source's or the count's), and who stayed past each zone's dwell time."""

    live: bool = False
    lines: int = 0
    zones: int = 0
    count_known: bool = False
    dwells: dict[str, int] = field(default_factory=dict)


class ConsoleSink:
    """Human-readable lines, plus a progress line when replaying a file on a terminal."""

    def __init__(
        self,
        out: TextIO = sys.stdout,
        *,
        verbose: bool = False,
        fallback_after_s: float = 30.0,
        on_closed: Callable[[], None] = lambda: None,
        camera: bool = False,
        lines: int = 0,
        zones: int = 0,
        cameras: Mapping[str, CameraLines] | None = None,
        named: bool = False,
    ) -> None:
        """``cameras``: each camera's (``camera``, ``lines``, ``zones``: the one camera's,
        when not given); ``named``: the device names its cameras, and says whose a line is."""
        self.out = out
        self.cameras: dict[str, CameraLines] = (
            dict(cameras) if cameras else {MAIN_CAMERA: CameraLines(camera, lines, zones)}
        )
        self.named = named
        self.verbose = verbose
        self.fallback_after_s = fallback_after_s
        self.tty = bool(getattr(out, "isatty", lambda: False)())
        self.closed = False  # the reader went away (``lookout run | head -2``)
        self._on_closed = on_closed
        self._progress_shown = False
        self._model_connected = False
        self._model_away_since = 0.0  # event time since when no model has been connected
        self._transcripts = TranscriptLines()
        # A call's camera, said when it starts and again when it stops (its stop names none).
        self._call_cameras: dict[str, str] = {}

    def of(self, camera: str) -> CameraLines:
        """What the console knows of ``camera``."""
        return self.cameras.setdefault(camera, CameraLines())

    def _line(self, text: str) -> None:
        prefix = "\r\x1b[2K" if self._progress_shown else ""
        self._progress_shown = False
        # What the model says, a tool's arguments, an error's text: none of it may move
        # the cursor, clear the screen or start a line of its own (``[ 99.9s] count: 0``).
        self._write(prefix + printable(text) + "\n")

    def _write(self, text: str) -> None:
        if self.closed:
            return
        try:
            self.out.write(text)
            self.out.flush()
        except BrokenPipeError:
            # Like any Unix tool whose reader left: stop quietly. The run ends (the app
            # is told), and no later flush at exit may print a traceback.
            self.closed = True
            self._silence()
            self._on_closed()

    def _silence(self) -> None:
        fileno = getattr(self.out, "fileno", None)
        try:
            if fileno is not None:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, fileno())
                os.close(devnull)
        except (OSError, ValueError):
            pass

    def say(self, text: str, t: float) -> None:
        """A line of the device's own (an answer to a typed command)."""
        self._line(f"{_fmt_t(t)} {text}")

    def progress(self, done_s: float, total_s: float | None, count: int | None) -> None:
        if not self.tty:
            return
        shown = "-" if count is None else str(count)
        if total_s:
            share = min(1.0, max(0.0, done_s / total_s))
            bar = "#" * int(share * 30)
            text = f"  [{bar:<30}] {done_s:6.1f}/{total_s:.1f}s  people: {shown}"
        else:
            text = f"  {done_s:8.1f}s  people: {shown}"
        self._write("\r\x1b[2K" + text)
        self._progress_shown = not self.closed

    def write(self, event: Event) -> None:
        if isinstance(event, ConnectionState):
            self._track_model(event)
        if isinstance(event, DwellPassed):
            dwells = self.of(event.camera).dwells
            dwells[event.zone] = dwells.get(event.zone, 0) + 1
        if isinstance(event, SceneChanged):
            # Edited while running: what stops with the source is the scene as it is now.
            camera = self.of(event.camera)
            camera.lines, camera.zones = len(event.lines), len(event.zones)
        for direction, said in self._transcripts.lines(event):
            self._line(f"{_fmt_t(event.t)} {label(direction, said)}")
        text = self.describe(event)
        if text is not None:
            whose = f"{event.camera}: " if self.named and isinstance(event, CameraEvent) else ""
            self._line(f"{_fmt_t(event.t)} {whose}{text}")

    def _track_model(self, event: ConnectionState) -> None:
        if event.state == "connected":
            self._model_connected = True
        elif self._model_connected and event.state not in {"go_away"}:
            self._model_connected = False
            self._model_away_since = event.t

    def _narrating(self, t: float) -> bool:
        return not self._model_connected and t - self._model_away_since >= self.fallback_after_s

    def describe(self, event: Event) -> str | None:
        data: dict[str, Any] = event.to_dict()
        if isinstance(event, ModelText):
            # The offline model restating a change the console just printed says nothing
            # new (it is spoken on a loudspeaker and kept in the log).
            return None if event.narration else f"model: {event.text}"
        if isinstance(event, Transcript):
            return None  # a line per sentence (``write``), not per fragment
        if isinstance(event, CountChanged):
            return self._count(event)
        if isinstance(event, ZoneCount) and event.people is None:
            # A zone goes unknown only with the count (``Perception.forget``): the count's
            # line, or the source's, says how many zones went with it.
            return None
        if isinstance(event, LineCrossed):
            return (
                f"line {event.line}: person {event.track} {event.direction} "
                f"({event.total_in} in, {event.total_out} out){self._where(event)}"
            )
        if isinstance(event, ZoneCount):
            dwelling = f", {event.dwelling} dwelling" if event.dwelling else ""
            return f"zone {event.zone}: {event.people}{dwelling}{self._where(event)}"
        if isinstance(event, DwellPassed):
            return (
                f"zone {event.zone}: person {event.track} there for {event.seconds:g} s"
                f"{self._where(event)}"
            )
        if isinstance(event, SceneChanged):
            note = event.said()
            return note.replace("scene: ", "lines and zones edited: ", 1)
        if event.type == "source_state":
            reason = f": {data['reason']}" if data.get("reason") else ""
            text = f"source {data['source']} {data['state']}{reason}"
            camera = self.of(data.get("camera", MAIN_CAMERA))
            if data["state"] != "running" and camera.count_known:
                # The count (and the scene) goes unknown right after, for this reason:
                # said here, once, instead of a line for each part.
                camera.count_known = False
                text += f" — {self._stopped(camera, count=True)}"
            return text
        if isinstance(event, BudgetState):
            return f"budget: {event.message}"
        if isinstance(event, ErrorEvent):
            where = f" [{event.where}]" if event.where else ""
            return f"error{where}: {event.message}"
        if isinstance(event, LogProblem):
            return event.message if event.kind == "recovered" else f"warning: {event.message}"
        if isinstance(event, ClockStep):
            now = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(event.wall))
            return (
                f"the system clock stepped {_duration(event.step_s)} (now {now}): "
                "times from here on are on the new clock"
            )
        if isinstance(event, ConnectionState):
            return self._connection(event)
        if isinstance(event, StreamStarted):
            by = " by the device" if event.by == "device" else ""
            call_camera = event.args.get("camera")
            if isinstance(call_camera, str):
                self._call_cameras[event.id] = call_camera
            return f"{event.name}{self._of_camera(event.id)} started{by} (call {event.id})"
        if isinstance(event, StreamStopped):
            of = self._of_camera(event.id)
            self._call_cameras.pop(event.id, None)
            emissions = counted(event.emissions, "emission")
            return f"{event.name}{of} stopped: {event.reason} ({emissions})"
        if self.verbose and isinstance(event, ToolCall | Emission):
            return json.dumps(data)
        return None

    def _of_camera(self, call_id: str) -> str:
        camera = self._call_cameras.get(call_id)
        return "" if camera is None else f" of {printable(camera)}"

    def _where(self, event: CountChanged | LineCrossed | ZoneCount | DwellPassed) -> str:
        # A file's own time says where in it; a camera's clock says nothing to a reader.
        if event.t_media is None or self.of(event.camera).live:
            return ""
        return f"  at {event.t_media:.1f}s of the source"

    def _count(self, event: CountChanged) -> str | None:
        camera = self.of(event.camera)
        if event.count is None:
            if not camera.count_known:
                return None  # already said, with the source's state that caused it
            camera.count_known = False
            reason = f": {event.reason}" if event.reason else ""
            rest = self._stopped(camera, count=False)
            return f"count: unknown{reason}" + (f" — {rest}" if rest else "")
        camera.count_known = True
        where = self._where(event)
        if self._narrating(event.t):
            # No model to say it: the device does.
            return f"device: {count_sentence(event.count, event.previous)}{where}"
        was = "" if event.previous is None else f" (was {event.previous})"
        return f"count: {event.count}{was}{where}"

    def _stopped(self, camera: CameraLines, *, count: bool) -> str:
        """What an unknown count takes with it: ``count, 1 zone unknown; 2 lines not
        counting`` (their totals stay; crossings are counted again when frames are back)."""
        unknown = (["count"] if count else []) + (
            [counted(camera.zones, "zone")] if camera.zones else []
        )
        said = f"{', '.join(unknown)} unknown" if unknown else ""
        if camera.lines:
            said += ("; " if said else "") + f"{counted(camera.lines, 'line')} not counting"
        return said

    def _connection(self, event: ConnectionState) -> str | None:
        model = event.model or "the model"
        attempt = f" (attempt {event.attempt})" if event.attempt > 1 else ""
        retry = f"; next attempt in {_seconds(event.retry_in_s)}" if event.retry_in_s else ""
        if event.state == "connecting":
            return f"model: connecting to {model}{attempt}…"
        if event.state == "reconnecting":
            return f"model: reconnecting to {model}{attempt}…"
        if event.state == "connected":
            return f"model: connected ({model})"
        if event.state == "unreachable":
            return f"model: {model} unreachable: {event.reason}{retry}"
        if event.state == "refused":
            return f"model: {model} refused the session: {event.reason}{retry}"
        if event.state == "disconnected":
            code = f" (code {event.code})" if event.code is not None else ""
            return f"model: connection lost{code}: {event.reason}"
        if event.state == "failed":
            return f"model: gave up: {event.reason}"
        if event.state == "go_away" and self.verbose:
            return f"model: the server asked us to reconnect ({event.reason})"
        return None

    def close(self) -> None:
        if self._progress_shown:
            self._write("\n")


def _duration(seconds: float) -> str:
    """``+3 d 0 h 12 min`` or ``-40 s``: how far a clock stepped."""
    sign = "+" if seconds >= 0 else "-"
    left = round(abs(seconds))
    days, left = divmod(left, 86400)
    hours, left = divmod(left, 3600)
    minutes, secs = divmod(left, 60)
    if days:
        return f"{sign}{days} d {hours} h {minutes} min"
    if hours:
        return f"{sign}{hours} h {minutes} min"
    if minutes:
        return f"{sign}{minutes} min {secs} s"
    return f"{sign}{secs} s"


__all__ = ["CameraLines", "ConsoleSink", "count_sentence", "people"]
