"""Input fan-out: what the request queue delivers goes to whoever it is meant for.

Realtime input (camera frames) is offered to every running call that consumes
input (each has its own bounded, latest-wins ``InputStream``, which takes only
what its call wants: ``Tool.input_filter``, one camera's) and, only when frames
are forwarded, to the model lane (only those ``SessionConfig.model_input``
takes: one camera's): the newest frame, at most one per interval, never queued
for a model that is away. Microphone audio goes to the
model as it comes, in order (never rate-limited: speech with holes is not
speech), and to no tool but one whose input stream accepts ``audio/*``; while
the model is away, or in privacy mode, it is dropped and counted, as a frame
from before an outage would be worth nothing. Content and activity
markers go to the model, losslessly, through the outbox. Nothing the tools or
the model produce ever comes back in here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio

from live import wire
from live.config import SessionConfig
from live.link.connection import ModelLink
from live.link.outbox import Outbox
from live.model import SendActivity, SendContent, SendRealtime
from live.requests import LiveRequest, LiveRequestQueue, RequestKind
from live.streams import StreamRegistry
from live.util.buffer import LatestWins
from live.util.clock import Clock
from live.util.signal import Wakeup


class Fanout:
    def __init__(
        self,
        queue: LiveRequestQueue[Any],
        config: SessionConfig,
        clock: Clock,
        registry: StreamRegistry,
        outbox: Outbox,
        link: ModelLink,
        *,
        frames_allowed: Callable[[], bool] = lambda: True,
    ) -> None:
        self.queue = queue
        # The spending cap stops frames first (``live/link/budget.py``).
        self.frames_allowed = frames_allowed
        self.frames_budget_held = 0  # frames the cap kept from the model
        self.config = config
        self.clock = clock
        self.registry = registry
        self.outbox = outbox
        self.link = link
        self.frames_in = 0
        self.frames_to_model = 0
        self.audio_in = 0
        self.audio_to_model = 0
        self.audio_lost = 0  # chunks no model could take (away, or privacy mode)
        self.closing = False
        self._model_lane: LatestWins[LiveRequest[Any]] = LatestWins(1)
        self._model_lane_lost = 0  # frames the lane could not send (model away)
        self._pumped_seq = 0
        self._pumped = Wakeup()

    @property
    def frames_model_lane_dropped(self) -> int:
        return self._model_lane.stats.dropped + self._model_lane_lost

    async def pump(self) -> None:
        """Until the queue is closed and drained."""
        async for request in self.queue:
            self._route(request)
            self._pumped_seq = max(self._pumped_seq, request.seq)
            self._pumped.set()

    def _route(self, request: LiveRequest[Any]) -> None:
        if request.kind is RequestKind.REALTIME and request.is_audio:
            self._route_audio(request)
        elif request.kind is RequestKind.REALTIME:
            self.frames_in += 1
            for stream in self.registry.input_streams().values():
                stream.offer(request)
            if self.config.sends_frames and request.has_media and self._for_model(request):
                if self.frames_allowed():
                    self._model_lane.put(request)
                else:
                    self.frames_budget_held += 1
        elif request.kind is RequestKind.CONTENT and request.content is not None:
            self.outbox.post(SendContent(request.content, request.turn_complete))
        elif request.kind is RequestKind.ACTIVITY_START:
            self.outbox.post(SendActivity(start=True))
        elif request.kind is RequestKind.ACTIVITY_END:
            self.outbox.post(SendActivity(start=False))

    def _for_model(self, request: LiveRequest[Any]) -> bool:
        wanted = self.config.model_input
        return wanted is None or bool(wanted(request))

    def _route_audio(self, request: LiveRequest[Any]) -> None:
        self.audio_in += 1
        for stream in self.registry.input_streams().values():
            stream.offer(request)  # only a stream that accepts audio/* takes it
        blob = request.given_blob
        if self.config.privacy or not self.link.connected or blob is None:
            self.audio_lost += 1
            return
        self.outbox.post(SendRealtime(blob))
        self.audio_to_model += 1

    async def model_lane(self) -> None:
        """Newest frame only, at most one per interval, never kept for a model that is away."""
        last_sent: float | None = None
        interval = self.config.model_frame_interval_s
        while True:
            await self._model_lane.get()
            if last_sent is not None:
                await self.clock.sleep(last_sent + interval - self.clock.now())
            # Whatever arrived while we waited is newer: send that one.
            request = self._model_lane.get_nowait() or self._model_lane.latest
            assert request is not None
            if not self.link.connected:
                self._model_lane_lost += 1
                continue
            if not self.frames_allowed():
                self.frames_budget_held += 1  # the cap stopped frames while it waited
                continue
            if request.given_blob is not None:
                blob: wire.Blob | None = request.given_blob
            else:
                # A frame's JPEG may not exist yet; encoding blocks, so not on the loop.
                blob = await anyio.to_thread.run_sync(_blob_of, request)
            if blob is None:
                continue
            self.outbox.post(SendRealtime(blob))
            self.frames_to_model += 1
            last_sent = self.clock.now()

    async def wait_input_consumer(self) -> None:
        """Wait until an input-consuming call has started (it may have ended since)."""
        while not self.registry.input_calls_started and not self.closing:
            await self.registry.wait_changed()

    async def wait_inputs_idle(self) -> None:
        """Wait until every input-consuming call has processed what was queued so far."""
        target = self.queue.last_seq
        while self._pumped_seq < target and not self.closing:
            await self._pumped.wait()
        for stream in list(self.registry.input_streams().values()):
            await stream.wait_idle()

    async def wait_delivered(self) -> None:
        """While a model is connected, wait until it has taken everything queued for it."""
        while self.link.connected and not self.outbox.empty and not self.closing:
            await self.outbox.wait_change()

    def wake(self) -> None:
        """Release waiters at teardown."""
        self.closing = True
        self._pumped.set()


def _blob_of(request: LiveRequest[Any]) -> wire.Blob | None:
    return request.blob


__all__ = ["Fanout"]
