"""The one read-only view of the running device that the outputs read (page, /metrics, MQTT).

Outputs take what changes from the bus (events and percepts); what they read
besides, at a request or a scrape, is this view: counters the device keeps
anyway (capture, perception, the session's), the source's state and rate, the
event logs' health, the configuration; what is one camera's (its source, capture,
perception, scene) is read per camera (``DeviceView.cameras``). The app builds one
(``device/app/state.py:DeviceState``) and hands it to each output; tests drive
the outputs with small fakes of it. No output ever sees the app itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from device.capture import CaptureStats
from device.config import Config
from device.feeds.runner import SourceState
from device.vision.perception import PerceptionStats
from device.vision.tracker import TrackerStats
from live.calls import DeviceCall
from live.stats import SessionStats
from live.util.clock import Clock


class SessionView(Protocol):
    """The live session: its counters and states, and the device calls the page makes."""

    @property
    def stats(self) -> SessionStats: ...

    @property
    def connection_state(self) -> str: ...

    @property
    def model_connected(self) -> bool: ...

    @property
    def started_at(self) -> float: ...

    def running_streams(self) -> list[dict[str, Any]]: ...

    def streaming_tools(self) -> list[str]: ...

    async def stop_streaming(
        self, function_name: str | None = None, call_id: str | None = None
    ) -> dict[str, Any]: ...

    async def call_tool(self, name: str, args: dict[str, Any] | None = None) -> DeviceCall: ...


class CaptureView(Protocol):
    @property
    def stats(self) -> CaptureStats: ...


class SourceRunnerView(Protocol):
    @property
    def state(self) -> SourceState: ...


class TrackerView(Protocol):
    @property
    def stats(self) -> TrackerStats: ...


class PerceptionView(Protocol):
    @property
    def stats(self) -> PerceptionStats: ...

    @property
    def tracker(self) -> TrackerView | None: ...


class LogCountsView(Protocol):
    """One event log's counts (``device/app/logs.py:LogCounts``)."""

    @property
    def log(self) -> str: ...

    @property
    def written(self) -> int: ...

    @property
    def lost(self) -> int: ...

    @property
    def pending(self) -> int: ...

    @property
    def failing(self) -> bool: ...


class LogsView(Protocol):
    """The run's event logs: what is wrong with them now, and their counts."""

    def problems(self) -> list[str]: ...

    def counts(self) -> Sequence[LogCountsView]: ...


class NoLogs:
    """A device without event logs."""

    def problems(self) -> list[str]:
        return []

    def counts(self) -> Sequence[LogCountsView]:
        return []


class SceneControl(Protocol):
    """The running device's lines and zones, read and edited (``device/app/scene/editor.py``)."""

    def current(self) -> dict[str, Any]: ...

    async def edit(self, body: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        """Apply an edit: (HTTP status, the answer)."""
        ...


class CameraView(Protocol):
    """One camera of the device as the outputs read it (``device/app/camera.py:Camera``)."""

    @property
    def name(self) -> str: ...

    @property
    def config(self) -> Config:
        """Its settings: the device's with its own over them (privacy, lines, rates)."""
        ...

    @property
    def live(self) -> bool:
        """A camera or stream (wall-clock time), rather than a file or a folder."""
        ...

    @property
    def capture(self) -> CaptureView: ...

    @property
    def source_runner(self) -> SourceRunnerView: ...

    @property
    def perception(self) -> PerceptionView: ...

    @property
    def source_fps(self) -> float | None:
        """The source's frame rate (a camera's, as it gave it)."""
        ...

    @property
    def source_fps_note(self) -> str | None:
        """What the camera was asked for and what it gave (None: nothing asked)."""
        ...

    @property
    def decode_ms(self) -> float | None:
        """Mean time to decode a frame that was read (None: not measured)."""
        ...

    @property
    def detect_fps(self) -> float:
        """The detections a second its perception asks for now."""
        ...

    @property
    def achieved_fps(self) -> float | None:
        """The detections a second it got over the last window (None: not measured)."""
        ...

    @property
    def behind(self) -> bool:
        """The shared detector does not keep up with its rate (``detector_load.py``)."""
        ...

    @property
    def scene(self) -> SceneControl | None:
        """Where the page reads and edits its lines and zones (None: it cannot)."""
        ...


class DeviceView(Protocol):
    """What the outputs read of the running device; read-only."""

    @property
    def config(self) -> Config: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def session(self) -> SessionView | None:
        """The live session once it runs (None: starting)."""
        ...

    @property
    def budget(self) -> Mapping[str, Any] | None:
        """The spending cap's state (``live/link/budget.py:SpendingCap.snapshot``); None: no cap."""
        ...

    @property
    def cameras(self) -> Mapping[str, CameraView]:
        """Every camera by name, in the order configured (at least one: ``main`` on a
        device that names none)."""
        ...

    @property
    def logs(self) -> LogsView: ...

    @property
    def looks(self) -> Mapping[str, int]:
        """How the model's looks ended, by outcome (``tools/look.py:OUTCOMES``)."""
        ...

    def talk(self, on: bool) -> tuple[str, bool]:
        """Push-to-talk: start (``on``) or end what is said; what happened, and whether
        it could (no push-to-talk, no microphone: False)."""
        ...

    @property
    def push_to_talk(self) -> bool:
        """The page offers a talk button: push-to-talk with a microphone in use."""
        ...

    @property
    def audio(self) -> Mapping[str, int]:
        """The voice's counters (``device/app/voice.py:Voice.counts``); none without one."""
        ...

    @property
    def snapshot_counts(self) -> Mapping[str, int]:
        """What became of the pictures (``device/outputs/pictures/snapshots.py:Snapshots.counts``),
        by outcome; none without ``--snapshots``."""
        ...


__all__ = [
    "CameraView",
    "CaptureView",
    "DeviceView",
    "LogCountsView",
    "LogsView",
    "NoLogs",
    "PerceptionView",
    "SceneControl",
    "SessionView",
    "SourceRunnerView",
    "TrackerView",
]
