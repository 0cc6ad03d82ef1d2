"""A source read frame by frame in order, each failure said and moved past: ``InOrderFeed``.

What ``lookout count`` and the benchmarks read: a recording or a folder judged
frame by frame, where a frame that cannot be read is one result (said, and
counted) rather than a reason to retry or reconnect as ``SourceRunner`` does
for a device that must keep running. Reads block, so they run in a worker
thread; nothing is skipped undecoded (every frame is the caller's to judge).
"""

from __future__ import annotations

from collections.abc import Callable

import anyio.to_thread

from device.sources import FrameSource, SourceError, UnreadableFrame
from device.vision.frame import Frame


class InOrderFeed:
    """``source``'s frames in order; ``on_error(index, error)`` hears each one left out.
    ``until``: the frames end before this index (None: at the end of the source)."""

    def __init__(
        self,
        source: FrameSource,
        on_error: Callable[[int, SourceError], None],
        *,
        until: int | None = None,
    ) -> None:
        self.source = source
        self.on_error = on_error
        self.until = until
        self._index = 0  # the index of the next frame, as far as is known

    @property
    def frames_undecoded(self) -> int:
        return 0

    async def next_frame(self, *, not_before: float | None = None) -> Frame | None:
        while True:
            try:
                frame = await anyio.to_thread.run_sync(self.source.read)
            except UnreadableFrame as exc:
                self.on_error(exc.index, exc)
                self._index = exc.index + 1
                continue
            except SourceError as exc:
                self.on_error(self._index, exc)
                self._index += 1
                continue
            if frame is None or (self.until is not None and frame.index >= self.until):
                return None
            self._index = frame.index + 1
            return frame


__all__ = ["InOrderFeed"]
