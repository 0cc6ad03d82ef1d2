"""What flows into a live session: LiveRequest and the two-lane LiveRequestQueue."""

from __future__ import annotations

import enum
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from google.genai import types


class RequestKind(enum.Enum):
    CONTENT = "content"
    REALTIME = "realtime"
    ACTIVITY_START = "activity_start"
    ACTIVITY_END = "activity_end"


@dataclass(frozen=True, slots=True)
class LiveRequest:
    """One item put into a session.

    ``frame`` and ``t_capture`` ride beside a realtime blob inside the process
    only (the decoded image, so no tool has to decode the JPEG again, and the
    capture time, so tools can reason in media time). They are never sent to a
    model. ``t_enqueue`` is when the request entered the queue (queue clock).
    """

    kind: RequestKind
    content: types.Content | None = None
    turn_complete: bool = False
    blob: types.Blob | None = None
    frame: Any = None
    t_capture: float | None = None
    t_enqueue: float = 0.0
    seq: int = 0

    @property
    def mime_type(self) -> str:
        if self.blob is None or self.blob.mime_type is None:
            return ""
        return self.blob.mime_type


@dataclass
class QueueStats:
    content_sent: int = 0
    realtime_sent: int = 0
    realtime_dropped: int = 0


@dataclass
class LiveRequestQueue:
    """Two lanes into a session.

    The content/control lane is lossless: text, activity markers and
    turn-completion must all arrive in order. The realtime lane (camera
    frames) is bounded and latest-wins: when the session falls behind, old
    frames are dropped and counted, because a stale frame is worth nothing to a
    live agent and an unbounded backlog is how latency grows without limit.
    """

    realtime_maxsize: int = 2
    now: Callable[[], float] = field(default=time.monotonic, repr=False)
    stats: QueueStats = field(default_factory=QueueStats)

    def __post_init__(self) -> None:
        if self.realtime_maxsize < 1:
            raise ValueError("realtime_maxsize must be at least 1")
        self._content: deque[LiveRequest] = deque()
        self._realtime: deque[LiveRequest] = deque()
        self._closed = False
        self._wakeup = anyio.Event()
        self._seq = 0

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def last_seq(self) -> int:
        """Sequence number of the newest request put in so far."""
        return self._seq

    def _put(self, lane: deque[LiveRequest], request: LiveRequest) -> None:
        if self._closed:
            raise anyio.ClosedResourceError("LiveRequestQueue is closed")
        lane.append(request)
        self._wakeup.set()

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def send_content(self, content: types.Content | str, *, turn_complete: bool = True) -> None:
        if isinstance(content, str):
            content = types.Content(role="user", parts=[types.Part(text=content)])
        self._put(
            self._content,
            LiveRequest(
                RequestKind.CONTENT,
                content=content,
                turn_complete=turn_complete,
                t_enqueue=self.now(),
                seq=self._next_seq(),
            ),
        )
        self.stats.content_sent += 1

    def send_realtime(
        self,
        blob: types.Blob,
        *,
        frame: Any = None,
        t: float | None = None,
    ) -> None:
        request = LiveRequest(
            RequestKind.REALTIME,
            blob=blob,
            frame=frame,
            t_capture=t,
            t_enqueue=self.now(),
            seq=self._next_seq(),
        )
        self._put(self._realtime, request)
        self.stats.realtime_sent += 1
        while len(self._realtime) > self.realtime_maxsize:
            self._realtime.popleft()
            self.stats.realtime_dropped += 1

    def send_activity_start(self) -> None:
        self._put(
            self._content,
            LiveRequest(RequestKind.ACTIVITY_START, t_enqueue=self.now(), seq=self._next_seq()),
        )

    def send_activity_end(self) -> None:
        self._put(
            self._content,
            LiveRequest(RequestKind.ACTIVITY_END, t_enqueue=self.now(), seq=self._next_seq()),
        )

    def close(self) -> None:
        """End the session once the content already queued has been taken."""
        self._closed = True
        self._wakeup.set()

    def get_nowait(self) -> LiveRequest | None:
        if self._content:
            return self._content.popleft()
        if self._realtime:
            return self._realtime.popleft()
        return None

    async def get(self) -> LiveRequest:
        """Next request, content first. Raises ``anyio.EndOfStream`` after close."""
        while True:
            request = self.get_nowait()
            if request is not None:
                return request
            if self._closed:
                raise anyio.EndOfStream
            self._wakeup = anyio.Event()
            await self._wakeup.wait()

    def __aiter__(self) -> LiveRequestQueue:
        return self

    async def __anext__(self) -> LiveRequest:
        try:
            return await self.get()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None
