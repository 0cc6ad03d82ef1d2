"""The running device as its outputs see it: ``DeviceState``, the app's ``DeviceView``.

Built once by the wiring from the parts it made; it only reads them. The
session counts as there once it runs (before that the page says "starting").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from device.app.camera import Camera
from device.app.logs import EventLogs
from device.app.scene.editor import SceneEditor
from device.app.voice import Voice
from device.capture import FrameDriver
from device.config import Config
from device.feeds.runner import SourceRunner
from device.outputs.pictures.snapshots import Snapshots
from device.sources import FrameSource
from device.vision.perception import Perception
from live.session import LiveSession
from live.util.clock import Clock
from tools.look import Look


@dataclass(frozen=True)
class DeviceState:
    """A read-only view of one run's parts (``device/outputs/view.py:DeviceView``)."""

    config: Config
    clock: Clock
    live_session: LiveSession
    capture: FrameDriver
    source_runner: SourceRunner
    perception: Perception
    source: FrameSource
    logs: EventLogs
    look: Look | None = None  # the look tool (its outcomes), offered to the model or not
    voice: Voice | None = None  # the microphone and the loudspeaker, when there are any
    scene: SceneEditor | None = None  # the lines and zones, edited on the status page
    snapshots: Snapshots | None = None  # --snapshots (None: not asked, or privacy)
    # Every camera by name (the singular parts above are the first camera's).
    cameras: Mapping[str, Camera] = field(default_factory=dict)

    @property
    def session(self) -> LiveSession | None:
        """The live session once it runs (None: starting)."""
        return self.live_session if self.live_session.started else None

    @property
    def budget(self) -> Mapping[str, Any] | None:
        """The spending cap's state (None: no cap set)."""
        cap = self.live_session.budget
        return cap.snapshot() if cap.enabled else None

    @property
    def looks(self) -> Mapping[str, int]:
        return dict(self.look.outcomes) if self.look is not None else {}

    def talk(self, on: bool) -> tuple[str, bool]:
        if self.voice is None:
            return "no microphone (--mic)", False
        return self.voice.talk(on), self.voice.can_talk

    @property
    def push_to_talk(self) -> bool:
        return self.voice is not None and self.voice.can_talk

    @property
    def audio(self) -> Mapping[str, int]:
        if self.voice is None:
            return {}
        return self.voice.counts()

    @property
    def snapshot_counts(self) -> Mapping[str, int]:
        return self.snapshots.counts() if self.snapshots is not None else {}


__all__ = ["DeviceState"]
