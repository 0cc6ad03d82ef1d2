"""What flows into a live session: LiveRequest and the two-lane LiveRequestQueue."""

from __future__ import annotations

import enum
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import anyio

from live import wire
from live.picture import JPEG_MIME, Picture
from live.util.buffer import LatestWins
from live.util.signal import Wakeup, take_when_ready

# What rides beside a frame for the tools (the device's percepts); the runtime never
# looks inside, so it takes whatever type the device gives it, and keeps it typed.
P = TypeVar("P")


class RequestKind(enum.Enum):
    CONTENT = "content"
    REALTIME = "realtime"
    ACTIVITY_START = "activity_start"
    ACTIVITY_END = "activity_end"


@dataclass(frozen=True, slots=True)
class LiveRequest(Generic[P]):
    """One item put into a session.

    A realtime request carries a ``blob`` (what a model would receive) and,
    inside the process only, the decoded ``frame`` (so no tool decodes a JPEG
    again) and ``percept``: what the device's perception made of the frame, for
    the tools that consume it. Neither is ever sent to a model. When only a
    frame (a ``live/picture.py:Picture``) is given, the blob is its JPEG, made
    on first use. ``t_enqueue`` is when the request entered the queue (queue
    clock). ``origin`` says where realtime input comes from (the device: its
    camera's name; "": not said): the runtime never reads it, a
    call's input filter and the model lane's may.
    """

    kind: RequestKind
    content: wire.Content | None = None
    turn_complete: bool = False
    given_blob: wire.Blob | None = None
    frame: Any = None
    percept: P | None = None
    mime: str = ""
    t_enqueue: float = 0.0
    seq: int = 0
    origin: str = ""

    @property
    def blob(self) -> wire.Blob | None:
        if self.given_blob is not None:
            return self.given_blob
        if isinstance(self.frame, Picture):
            return wire.Blob(data=self.frame.jpeg(), mime_type=self.mime or JPEG_MIME)
        return None

    @property
    def mime_type(self) -> str:
        if self.given_blob is not None:
            return self.given_blob.mime_type or ""
        return self.mime

    @property
    def has_media(self) -> bool:
        return self.given_blob is not None or isinstance(self.frame, Picture)

    @property
    def for_tools(self) -> bool:
        """Realtime input a tool can consume: media, or a perception update without any."""
        return self.kind is RequestKind.REALTIME and (self.has_media or self.percept is not None)

    @property
    def is_audio(self) -> bool:
        return self.kind is RequestKind.REALTIME and self.mime_type.startswith("audio/")

    @property
    def t_media(self) -> float | None:
        """The frame's time in its source, when a frame rides along."""
        return self.frame.t_media if isinstance(self.frame, Picture) else None


@dataclass
class QueueStats:
    content_sent: int = 0
    realtime_sent: int = 0
    realtime_dropped: int = 0
    audio_sent: int = 0
    audio_dropped: int = 0  # the oldest chunks, when the session fell behind by audio_maxsize


@dataclass
class LiveRequestQueue(Generic[P]):
    """Three lanes into a session.

    The content/control lane is lossless: text, activity markers and
    turn-completion must all arrive in order. The realtime lane (camera
    frames) is a ``LatestWins`` buffer: when the session falls behind, old
    frames are dropped and counted. The audio lane (a microphone) keeps its
    chunks in order, because speech with holes is not speech: only when the
    session falls behind by ``audio_maxsize`` chunks does the oldest go,
    counted. ``P`` is the type of the percepts that ride beside the frames
    (``LiveRequestQueue[Percept]``); the tools' input streams carry the same
    ``LiveRequest[P]``.
    """

    realtime_maxsize: int = 2
    # Two seconds of 20 ms chunks: more than a loop hiccup, less than a stale sentence.
    audio_maxsize: int = 100
    now: Callable[[], float] = field(default=time.monotonic, repr=False)
    stats: QueueStats = field(default_factory=QueueStats)

    def __post_init__(self) -> None:
        if self.realtime_maxsize < 1 or self.audio_maxsize < 1:
            raise ValueError("realtime_maxsize and audio_maxsize must be at least 1")
        self._audio: deque[LiveRequest[P]] = deque()
        self._content: deque[LiveRequest[P]] = deque()
        self._realtime: LatestWins[LiveRequest[P]] = LatestWins(self.realtime_maxsize)
        self._closed = False
        self._wakeup = Wakeup()
        self._seq = 0

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def last_seq(self) -> int:
        """Sequence number of the newest request put in so far."""
        return self._seq

    def _check_open(self) -> None:
        if self._closed:
            raise anyio.ClosedResourceError("LiveRequestQueue is closed")

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _wake(self) -> None:
        self._wakeup.set()

    def _put_content(self, request: LiveRequest[P]) -> None:
        self._content.append(request)
        self._wake()

    def send_content(self, content: wire.Content | str, *, turn_complete: bool = True) -> None:
        self._check_open()
        if isinstance(content, str):
            content = wire.Content(role="user", parts=[wire.Part(text=content)])
        self._put_content(
            LiveRequest(
                RequestKind.CONTENT,
                content=content,
                turn_complete=turn_complete,
                t_enqueue=self.now(),
                seq=self._next_seq(),
            )
        )
        self.stats.content_sent += 1

    def send_realtime(
        self,
        blob: wire.Blob | None = None,
        *,
        frame: Any = None,
        percept: P | None = None,
        origin: str = "",
    ) -> None:
        """A frame (or other media) for the tools and, if asked, the model.

        Give a ``blob`` or a frame (whose JPEG becomes the blob when needed), or
        only a ``percept``: a perception update for the tools (it has no picture, so
        it never reaches a model). ``origin``: where it comes from (a camera's name).
        """
        self._check_open()
        if blob is None and not isinstance(frame, Picture) and percept is None:
            raise ValueError("send_realtime needs a blob, a frame or a percept")
        request = LiveRequest(
            RequestKind.REALTIME,
            given_blob=blob,
            frame=frame,
            percept=percept,
            mime=(blob.mime_type or "") if blob is not None else JPEG_MIME,
            t_enqueue=self.now(),
            seq=self._next_seq(),
            origin=origin,
        )
        self.stats.realtime_sent += 1
        before = self._realtime.stats.dropped
        self._realtime.put(request)
        self.stats.realtime_dropped += self._realtime.stats.dropped - before
        self._wake()

    def send_audio(self, blob: wire.Blob) -> None:
        """A chunk of what is said to the device (``audio/pcm;rate=16000``), kept in order."""
        self._check_open()
        if not (blob.mime_type or "").startswith("audio/"):
            raise ValueError(f"send_audio needs an audio/* blob, not {blob.mime_type!r}")
        request: LiveRequest[P] = LiveRequest(
            RequestKind.REALTIME,
            given_blob=blob,
            mime=blob.mime_type or "",
            t_enqueue=self.now(),
            seq=self._next_seq(),
        )
        self.stats.audio_sent += 1
        if len(self._audio) >= self.audio_maxsize:
            self._audio.popleft()
            self.stats.audio_dropped += 1
        self._audio.append(request)
        self._wake()

    def send_activity_start(self) -> None:
        self._check_open()
        self._put_content(
            LiveRequest(RequestKind.ACTIVITY_START, t_enqueue=self.now(), seq=self._next_seq())
        )

    def send_activity_end(self) -> None:
        self._check_open()
        self._put_content(
            LiveRequest(RequestKind.ACTIVITY_END, t_enqueue=self.now(), seq=self._next_seq())
        )

    def close(self) -> None:
        """End the session once the content already queued has been taken."""
        self._closed = True
        self._wake()

    def get_nowait(self) -> LiveRequest[P] | None:
        if self._content:
            return self._content.popleft()
        if self._audio:
            return self._audio.popleft()
        return self._realtime.get_nowait()

    async def get(self) -> LiveRequest[P]:
        """Next request, content first, then audio. Raises ``anyio.EndOfStream`` after close."""
        return await take_when_ready(self.get_nowait, lambda: self._closed, self._wakeup)

    def __aiter__(self) -> LiveRequestQueue[P]:
        return self

    async def __anext__(self) -> LiveRequest[P]:
        try:
            return await self.get()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None
