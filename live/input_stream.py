"""The per-call input stream of an input-consuming streaming tool."""

from __future__ import annotations

import fnmatch
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import anyio

from live.requests import LiveRequest, RequestKind


@dataclass
class InputStats:
    received: int = 0
    dropped: int = 0
    delivered: int = 0
    max_depth: int = 0


class InputStream:
    """Bounded, latest-wins queue of realtime input for one tool call.

    Each call gets a fresh one, so a slow tool can only ever fall behind by
    ``maxsize`` items: older items are dropped (and counted) when a newer one
    arrives, and the tool always works on recent input. Only realtime requests
    whose MIME type matches ``accept`` get in — never the tool's own output,
    function responses or control messages.
    """

    def __init__(
        self, *, maxsize: int = 1, accept: Sequence[str] = ("image/*",), after_seq: int = 0
    ) -> None:
        if maxsize < 1:
            raise ValueError("maxsize must be at least 1")
        self.maxsize = maxsize
        # Requests with a sequence number at or below this predate the call.
        self.after_seq = after_seq
        self.accept = tuple(accept)
        self.stats = InputStats()
        self._items: deque[LiveRequest] = deque()
        self._latest: LiveRequest | None = None
        self._closed = False
        self._wakeup = anyio.Event()
        self._waiting = False
        self._idle = anyio.Event()

    def accepts(self, request: LiveRequest) -> bool:
        if request.kind is not RequestKind.REALTIME or request.blob is None:
            return False
        mime = request.mime_type
        return any(fnmatch.fnmatchcase(mime, pattern) for pattern in self.accept)

    def offer(self, request: LiveRequest) -> bool:
        """Put a request in if it is meant for tools; never blocks."""
        if self._closed or not self.accepts(request):
            return False
        self.stats.received += 1
        self._items.append(request)
        self._latest = request
        while len(self._items) > self.maxsize:
            self._items.popleft()
            self.stats.dropped += 1
        self.stats.max_depth = max(self.stats.max_depth, len(self._items))
        self._wakeup.set()
        return True

    @property
    def depth(self) -> int:
        return len(self._items)

    @property
    def closed(self) -> bool:
        return self._closed

    def latest(self) -> LiveRequest | None:
        """The newest item received so far (whether or not it was consumed)."""
        return self._latest

    def close(self) -> None:
        self._closed = True
        self._wakeup.set()
        self._idle.set()

    def get_nowait(self) -> LiveRequest | None:
        if not self._items:
            return None
        self.stats.delivered += 1
        return self._items.popleft()

    async def get(self) -> LiveRequest:
        """Next item; raises ``anyio.EndOfStream`` once closed and drained."""
        while True:
            item = self.get_nowait()
            if item is not None:
                return item
            if self._closed:
                raise anyio.EndOfStream
            self._wakeup = anyio.Event()
            self._waiting = True
            self._idle.set()
            try:
                await self._wakeup.wait()
            finally:
                self._waiting = False
                self._idle = anyio.Event()

    @property
    def idle(self) -> bool:
        """Nothing queued and the consumer is waiting for more (it finished its work)."""
        return self._closed or (not self._items and self._waiting)

    async def wait_idle(self) -> None:
        """Wait until the consumer has taken everything and asks for more.

        A file replayed "as fast as possible" uses this as back-pressure, so every
        sampled frame is processed and a replay gives the same results at any pace.
        """
        while not self.idle:
            await self._idle.wait()

    async def newest(self) -> LiveRequest:
        """Skip to the newest pending item (dropping older ones), waiting if none."""
        item = await self.get()
        while self._items:
            self.stats.dropped += 1
            item = self._items.popleft()
        return item

    def __aiter__(self) -> InputStream:
        return self

    async def __anext__(self) -> LiveRequest:
        try:
            return await self.get()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None
