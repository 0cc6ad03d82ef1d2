"""When the count stops holding: the source's states and frames that stop coming.

The two triggers of an unknown count (``docs/architecture.md``, contract 12):
``on_source_state`` publishes each state of the source and, while it is not
running, makes the count unknown with the reason (``camera reconnecting since
12:03:10 (read failed)``); ``watch`` makes it unknown when no usable frame came
for a detection period and the hold although the source says it runs.
Perception decides what unknown means (``Perception.forget``).
"""

from __future__ import annotations

import re
import time

from device.bus import EventBus
from device.events import SourceStateEvent
from device.feeds.runner import SourceState, StateChange
from device.sources import FrameSource
from device.vision.percept import MAIN_CAMERA
from device.vision.perception import Perception
from live.util.clock import Clock

RETRY_SUFFIX = re.compile(r";? *retry in [^;)]*$")


class CountFreshness:
    """Makes the count unknown while the source is down or its frames stop coming."""

    def __init__(
        self,
        bus: EventBus,
        perception: Perception,
        source: FrameSource,
        clock: Clock,
        camera: str = MAIN_CAMERA,
    ) -> None:
        self.bus = bus
        self.camera = camera
        self.perception = perception
        self.source = source
        self.clock = clock
        self._down_since: float | None = None  # wall time the source stopped running

    def on_source_state(self, change: StateChange) -> None:
        """The source runner's state callback."""
        if not change.said:
            return  # one more attempt of a run already said: nothing new to tell or forget
        self.bus.publish(SourceStateEvent.of(self.source.name, change, camera=self.camera))
        if change.state is SourceState.RUNNING:
            self._down_since = None
            return
        if self._down_since is None:
            self._down_since = time.time()
        kind = "camera" if self.source.is_camera else "source"
        when = time.strftime("%H:%M:%S", time.localtime(self._down_since))
        # Still trying (opening, reconnecting) is "since"; done (failed, ended) is "at".
        done = change.state in (SourceState.FAILED, SourceState.ENDED)
        # The reason without its next retry time, which is stale a second later.
        why = RETRY_SUFFIX.sub("", change.reason)
        detail = f" ({why})" if why else ""
        # ``outage``: the source may be back in a moment (perception keeps the tracks).
        self.perception.forget(
            f"{kind} {change.state.value} {'at' if done else 'since'} {when}{detail}",
            outage=not done,
        )

    async def watch(self) -> None:
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
            self.perception.forget(
                f"no usable frame from {self.source.name} for {self.clock.now() - last:.0f} s",
                outage=True,
            )


__all__ = ["RETRY_SUFFIX", "CountFreshness"]
