"""Events the device side adds to a session's stream (beside live.events)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from device.vision.percept import MAIN_CAMERA
from live.events import Event
from live.util.redact import safe_url, strip_credentials

if TYPE_CHECKING:
    from device.feeds.runner import StateChange


@dataclass(frozen=True, kw_only=True)
class CameraEvent(Event):
    """An event of one camera: ``camera`` names it (``main`` on a device that names none)."""

    camera: str = MAIN_CAMERA


@dataclass(frozen=True, kw_only=True)
class SourceStateEvent(CameraEvent):
    type: ClassVar[str] = "source_state"
    source: str
    state: str
    reason: str = ""
    attempt: int = 0

    @classmethod
    def of(cls, source: str, change: StateChange, camera: str = MAIN_CAMERA) -> SourceStateEvent:
        # Made safe here, once, for every output: a reason is often a driver's error
        # text (OpenCV, FFmpeg), which may quote the URL it was given.
        return cls(
            source=safe_url(source),
            state=change.state.value,
            reason=strip_credentials(change.reason),
            attempt=change.attempt,
            camera=camera,
        )


@dataclass(frozen=True, kw_only=True)
class CountChanged(CameraEvent):
    """The device's people count changed at a frame (``t_media``: its time in its source,
    ``frame``: its index there).

    ``count`` is null when the count became unknown (``reason`` says why).
    """

    type: ClassVar[str] = "count"
    count: int | None
    previous: int | None
    raw: int | None = None
    t_media: float | None = None
    frame: int | None = None
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class LineCrossed(CameraEvent):
    """A tracked person crossed a named line (``direction``: in or out; totals after it).

    ``t_media``: when the path met the line (between two frames); ``t_counted``: the frame
    that made it sure (the far side reached by a confirmed track), a few frames later."""

    type: ClassVar[str] = "crossing"
    line: str
    direction: str
    track: int
    t_media: float
    total_in: int
    total_out: int
    t_counted: float | None = None


@dataclass(frozen=True, kw_only=True)
class ZoneCount(CameraEvent):
    """The number of people in a named zone (or of those dwelling) changed.

    ``people`` is null when the count became unknown (the source is down).
    """

    type: ClassVar[str] = "zone"
    zone: str
    people: int | None
    previous: int | None
    dwelling: int
    longest_s: float
    t_media: float | None = None


@dataclass(frozen=True, kw_only=True)
class DwellPassed(CameraEvent):
    """A tracked person has stayed in a zone for longer than its dwell time."""

    type: ClassVar[str] = "dwell"
    zone: str
    track: int
    seconds: float
    t_media: float


@dataclass(frozen=True, kw_only=True)
class SnapshotSaved(CameraEvent):
    """A JPEG of the frame an event happened at was written (``--snapshots``).

    Published once the file is on disk (not when it was queued), so whatever links to it
    (the page, MQTT, the report) links to a file that was there; a write that failed is
    said once as an ``error`` event (``where``: snapshots) and named by no ``snapshot``.

    ``file``: its name in the snapshots folder; ``of``: the event's type (``crossing``,
    ``dwell``, ``count``), ``name`` its line or zone ("" for a count), ``track`` the
    person (None for a count), ``direction`` a crossing's (in, out), ``count`` a count
    change's new count, ``t_media`` and ``frame`` the frame's time and index.
    """

    type: ClassVar[str] = "snapshot"
    file: str
    of: str
    name: str = ""
    track: int | None = None
    t_media: float
    frame: int | None = None
    direction: str | None = None
    count: int | None = None


@dataclass(frozen=True, kw_only=True)
class SceneChanged(CameraEvent):
    """The lines and zones were edited while running (the status page, ``PUT /api/scene``).

    ``lines``: each line's two points now; ``zones``: each zone's points and dwell time
    now (the whole scene, so a reader of the log needs nothing before it); ``changes``:
    what changed (``{"kind", "name", "how", "was"}``, see ``device/vision/scene.py:SceneEdit``);
    ``saved``: the configuration file it was written to ("" when it was not, and
    ``not_saved`` says why); ``revision``: how many edits this run has applied.
    """

    type: ClassVar[str] = "scene"
    lines: dict[str, list[list[float]]]
    zones: dict[str, dict[str, Any]]
    changes: list[dict[str, str]]
    saved: str = ""
    not_saved: str = ""
    revision: int = 0

    def said(self) -> str:
        """The edit in a line: what changed, and whether it was saved."""
        parts = [str(c.get("said", "")) for c in self.changes] or ["no change"]
        where = f"saved to {self.saved}" if self.saved else f"not saved: {self.not_saved}"
        return "scene: " + "; ".join(parts) + f" ({where})"

    def before(self, kind: str, name: str) -> tuple[str, bool]:
        """What the line or zone ``name`` of the edited scene was before this edit: the name
        it had ("" when it was added) and whether it keeps what it had (a line's totals, a
        zone's visits). A renamed one keeps it; an added or moved one starts afresh; one the
        edit did not change (or changed only the dwell time of) is itself, kept."""
        for change in self.changes:
            if change.get("kind") != kind or change.get("name") != name:
                continue
            how, was = change.get("how"), change.get("was", "")
            if how == "renamed" and was:
                return was, True
            if how == "moved":
                return was or name, False
            if how == "added":
                return "", False
        return name, True


@dataclass(frozen=True, kw_only=True)
class CaptureStatsEvent(CameraEvent):
    """Capture counters, reported at the end of a run (and on request)."""

    type: ClassVar[str] = "capture_stats"
    frames_read: int
    frames_sampled: int
    frames_detected: int
    dropped: dict[str, int]
    detect_ms_mean: float


@dataclass(frozen=True, kw_only=True)
class ClockStep(Event):
    """The system's wall clock stepped by ``step_s`` seconds (NTP after a boot without a
    real-time clock, a manual change): an event's wall time is its run's start plus its
    ``t`` plus the steps the run logged, the newest clock being the true one for the
    whole run (``live/util/walltime.py``). ``wall`` is the wall-clock time now, after the step."""

    type: ClassVar[str] = "clock_step"
    step_s: float
    wall: float


@dataclass(frozen=True, kw_only=True)
class LogProblem(Event):
    """Writing an event log (SQLite, JSON lines) started or stopped failing.

    ``kind``: ``degraded`` (writing fails; events kept in memory and retried),
    ``recovered`` (writing again, caught up), ``dropped`` (the memory backlog
    overflowed, or the file was deleted while open: some events are lost, counted),
    ``lost`` (it closed incomplete), ``reopened`` (the file under the name changed:
    renamed by a rotation, or deleted; a new one is written there). Said once per
    problem, never per event.
    """

    type: ClassVar[str] = "log_problem"
    kind: str
    message: str


@dataclass(frozen=True, kw_only=True)
class RunStarted(Event):
    """A run began: what tells two runs in one log apart.

    ``started``: wall-clock time (ISO, local), ``started_wall`` the same in
    seconds since the epoch; ``source`` without credentials; ``live``: a camera
    or stream (time is wall-clock) rather than a file or folder (time is media
    time); ``config``: the effective configuration, secrets masked.
    """

    type: ClassVar[str] = "run"
    run_id: str
    started: str
    started_wall: float
    source: str
    live: bool
    model: str
    command: str = "run"
    config: dict[str, Any] = field(default_factory=dict)
    # Every camera's source (without credentials) and whether it is live, by name.
    cameras: dict[str, dict[str, Any]] = field(default_factory=dict)
