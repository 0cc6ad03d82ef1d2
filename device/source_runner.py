"""The async side of a frame source: an explicit state, reconnects, a stall watchdog.

Files and folders are read on demand, every frame in order, because a replay
must give the same results at any speed. Live sources are read by a reader
task as fast as the camera delivers, keeping only the newest frame: a capture
that is read more slowly than it produces queues stale frames in the driver.

Nothing here blocks the event loop: each open, read, seek and close runs in a
worker thread. All timing (backoff, watchdog) goes through the injected
Clock, so tests drive it in virtual time.
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread
from anyio.abc import TaskStatus

from device.sources import FrameSource, SourceError, SourceUnavailable, UnreadableFrame
from live.clock import Clock
from live.frame import Frame

log = logging.getLogger("lookout.source")


class SourceState(enum.Enum):
    OPENING = "opening"
    RUNNING = "running"
    RECONNECTING = "reconnecting"
    ENDED = "ended"
    FAILED = "failed"


@dataclass(frozen=True)
class StateChange:
    state: SourceState
    reason: str
    attempt: int = 0  # consecutive failures so far (RECONNECTING, FAILED)


@dataclass
class SourceStats:
    frames_read: int = 0
    read_errors: int = 0  # reads that raised (or gave nothing on a live source)
    reopens: int = 0  # successful opens after the first one
    stalls: int = 0  # live reads abandoned by the watchdog
    skipped_unreadable: int = 0  # single undecodable images skipped
    resolution_changes: int = 0


def _ignore_state(change: StateChange) -> None:
    pass


class _Stalled:
    """The watchdog gave up on a read."""


_STALLED = _Stalled()
_UNSET: Any = object()


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SourceError):
        return str(exc)
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class SourceRunner:
    """Drives one FrameSource; ``next_frame()`` is what the capture loop reads."""

    def __init__(
        self,
        source: FrameSource,
        *,
        clock: Clock,
        on_state: Callable[[StateChange], None] = _ignore_state,
        loop: bool = False,
        stall_timeout_s: float = 5.0,
        max_backoff_s: float = 30.0,
        initial_backoff_s: float = 0.5,
        max_file_failures: int = 5,
    ) -> None:
        if stall_timeout_s <= 0 or initial_backoff_s <= 0 or max_backoff_s < initial_backoff_s:
            raise ValueError("timeouts must be positive and max_backoff_s >= initial_backoff_s")
        if max_file_failures < 1:
            raise ValueError("max_file_failures must be at least 1")
        self.source = source
        self.state = SourceState.OPENING
        self.stats = SourceStats()
        self._clock = clock
        self._on_state = on_state
        self._loop = loop
        self._stall_timeout_s = stall_timeout_s
        self._max_backoff_s = max_backoff_s
        self._initial_backoff_s = initial_backoff_s
        self._max_file_failures = max_file_failures
        self._failure = ""  # why the source FAILED
        self._closed = False
        # Read from worker threads: an open that finishes after close() undoes itself.
        self._closing = threading.Event()
        self._announced = False
        self._opened_before = False
        self._last_shape: tuple[int, ...] | None = None
        # anyio primitives are made on first use: the runner may be built before the loop runs.
        self._file_lock: anyio.Lock | None = None
        self._new_frame: anyio.Event | None = None
        # Files: where the source stands and how loop passes shift time and index.
        self._is_open = False
        self._next_index = 0
        self._failures = 0
        self._pass_frames = 0
        self._pass_last: Frame | None = None
        self._pass_prev_t: float | None = None
        self._t_offset = 0.0
        self._index_offset = 0
        # Live: the newest frame, numbered so a reader never gets the same one twice.
        self._latest: Frame | None = None
        self._latest_seq = 0
        self._returned_seq = 0
        self._reader_scope: anyio.CancelScope | None = None
        self._reader_done: anyio.Event | None = None
        self._file_wait: anyio.CancelScope | None = None

    # ------------------------------------------------------------------ public

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """For live sources the reader loop (until close or cancel); for files nothing."""
        if not self.source.live or self._closed:
            task_status.started()
            return
        if self._reader_done is not None:
            raise RuntimeError("SourceRunner.run() is already running")
        self._reader_done = anyio.Event()
        try:
            with anyio.CancelScope() as scope:
                self._reader_scope = scope
                task_status.started()
                await self._read_forever()
        finally:
            self._reader_scope = None
            with anyio.CancelScope(shield=True):
                await self._close_source()
            self._reader_done.set()
            self._wake()

    async def next_frame(self) -> Frame | None:
        """The next frame; None once a file has ended or the runner is closed.

        Files: every frame in order. Live: the newest frame that has not been
        returned yet, waiting (cancellably) through reconnects for one; the
        frames come from ``run()``, which must be running.
        Raises SourceError once the source has FAILED.
        """
        if self.source.live:
            return await self._next_live()
        if self._file_lock is None:
            self._file_lock = anyio.Lock()
        async with self._file_lock:
            return await self._next_file()

    async def close(self) -> None:
        """Stop reading and release the source; safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        self._closing.set()
        for scope in (self._reader_scope, self._file_wait):
            if scope is not None:
                scope.cancel()
        with anyio.CancelScope(shield=True):
            if self._reader_done is not None:
                await self._reader_done.wait()
            await self._close_source()
        if self.state not in (SourceState.ENDED, SourceState.FAILED):
            self._set_state(SourceState.ENDED, "closed")
        self._wake()

    # ------------------------------------------------------------------ files

    async def _next_file(self) -> Frame | None:
        while True:
            if self._closed or self.state is SourceState.ENDED:
                return None
            if self.state is SourceState.FAILED:
                raise SourceError(self._failure)
            if not self._is_open:
                await self._open_file()
                continue
            try:
                frame = await anyio.to_thread.run_sync(self.source.read)
            except UnreadableFrame as exc:
                # One bad image is the file's fault, not the source's: skip it quietly.
                self.stats.skipped_unreadable += 1
                self._next_index = exc.index + 1
                log.warning("skipped: %s", exc)
                continue
            except Exception as exc:
                if self._closed:
                    return None
                self.stats.read_errors += 1
                await self._file_failure(_describe(exc))
                continue
            if self._closed:
                return None
            if frame is None:
                if self._loop and self._pass_frames > 0:
                    await self._rewind()
                    continue
                await self._close_source()
                self._set_state(SourceState.ENDED, "end of file")
                return None
            self._failures = 0
            self._next_index = frame.index + 1
            self._pass_prev_t = self._pass_last.t_media if self._pass_last is not None else None
            self._pass_last = frame
            self._pass_frames += 1
            if self.state is not SourceState.RUNNING:
                self._set_state(SourceState.RUNNING, self._running_reason(frame))
            return self._accept(self._shifted(frame))

    async def _open_file(self) -> None:
        if not self._announced:
            self._announced = True
            self._set_state(SourceState.OPENING, f"opening {self.source.name}")
        try:
            await anyio.to_thread.run_sync(self._open_unless_closing)
            if self._next_index:
                await anyio.to_thread.run_sync(self.source.seek, self._next_index)
        except SourceUnavailable as exc:
            await self._fail(str(exc), self._failures + 1)
            return
        except Exception as exc:
            await self._file_failure(_describe(exc))
            return
        self._is_open = True
        if self._opened_before:
            self.stats.reopens += 1
        self._opened_before = True

    async def _file_failure(self, reason: str) -> None:
        self._failures += 1
        await self._close_source()
        if self._failures >= self._max_file_failures:
            await self._fail(f"{reason} ({self._failures} failures in a row)", self._failures)
            return
        delay = self._backoff(self._failures)
        self._set_state(SourceState.RECONNECTING, f"{reason}; retry in {delay:g} s", self._failures)
        # close() cuts the wait short; next_frame() then sees the runner closed.
        with anyio.CancelScope() as scope:
            self._file_wait = scope
            if not self._closed:
                await self._clock.sleep(delay)
        self._file_wait = None

    async def _rewind(self) -> None:
        """Start the next loop pass: time and index go on from where this pass ended."""
        last = self._pass_last
        assert last is not None
        if self.source.fps:
            step = 1.0 / self.source.fps
        elif self._pass_prev_t is not None and last.t_media > self._pass_prev_t:
            step = last.t_media - self._pass_prev_t
        else:
            step = 1e-3  # only so that t keeps increasing
        # Unreadable images at the end of a folder still had their slots in the clip.
        frames_in_clip = max(self._next_index, last.index + 1)
        self._t_offset += last.t_media + step * (frames_in_clip - last.index)
        self._index_offset += frames_in_clip
        self._pass_frames = 0
        self._pass_last = None
        self._pass_prev_t = None
        self._next_index = 0
        log.info("%s: looping", self.source.name)
        try:
            await anyio.to_thread.run_sync(self.source.seek, 0)
        except Exception as exc:
            self.stats.read_errors += 1
            await self._file_failure(f"cannot rewind: {_describe(exc)}")

    def _shifted(self, frame: Frame) -> Frame:
        if not self._t_offset and not self._index_offset:
            return frame
        return frame.shifted(dt=self._t_offset, dindex=self._index_offset)

    # ------------------------------------------------------------------ live

    async def _read_forever(self) -> None:
        self._set_state(SourceState.OPENING, f"opening {self.source.name}")
        attempt = 0
        while True:
            try:
                reason, delivered = await self._open_and_read()
            except SourceUnavailable as exc:
                await self._fail(str(exc), attempt + 1)
                return
            await self._close_source()
            attempt = 1 if delivered else attempt + 1
            delay = self._backoff(attempt)
            self._set_state(SourceState.RECONNECTING, f"{reason}; retry in {delay:g} s", attempt)
            await self._clock.sleep(delay)

    async def _open_and_read(self) -> tuple[str, bool]:
        """Open, then read until the capture fails: (why it failed, whether it gave frames)."""
        try:
            await anyio.to_thread.run_sync(self._open_unless_closing, abandon_on_cancel=True)
        except SourceUnavailable:
            raise
        except Exception as exc:
            return _describe(exc), False
        if self._opened_before:
            self.stats.reopens += 1
        self._opened_before = True
        delivered = False
        while True:
            outcome = await self._read_watched()
            if outcome is _STALLED:
                self.stats.stalls += 1
                stall = f"no frame within {self._stall_timeout_s:g} s (read stalled)"
                return f"{self.source.name}: {stall}", delivered
            if isinstance(outcome, BaseException):
                self.stats.read_errors += 1
                if not isinstance(outcome, SourceError):
                    log.error("%s: read raised", self.source.name, exc_info=outcome)
                return _describe(outcome), delivered
            if not isinstance(outcome, Frame):
                self.stats.read_errors += 1
                return f"{self.source.name}: stream ended", delivered
            delivered = True
            self._publish(outcome)

    def _open_unless_closing(self) -> None:
        self.source.open()
        # close() may have run while this open was abandoned in its thread;
        # nobody else would release what it just opened.
        if self._closing.is_set():
            self.source.close()
            raise SourceError(f"{self.source.name}: closed")

    async def _read_watched(self) -> Frame | BaseException | _Stalled | None:
        """One read, given up after stall_timeout_s on the clock.

        A given-up read stays in its worker thread until the driver returns;
        the source releases that capture then (see FrameSource), and the
        runner never touches it again.
        """
        result: Frame | BaseException | None = _UNSET
        stalled = False
        async with anyio.create_task_group() as tg:

            async def watchdog() -> None:
                nonlocal stalled
                await self._clock.sleep(self._stall_timeout_s)
                stalled = True
                tg.cancel_scope.cancel()

            tg.start_soon(watchdog)
            try:
                result = await anyio.to_thread.run_sync(self.source.read, abandon_on_cancel=True)
            except Exception as exc:
                result = exc
            tg.cancel_scope.cancel()
        if result is _UNSET:
            return _STALLED if stalled else SourceError(f"{self.source.name}: read cancelled")
        return result

    def _publish(self, frame: Frame) -> None:
        if self.state is not SourceState.RUNNING:
            self._set_state(SourceState.RUNNING, self._running_reason(frame))
        self._latest = self._accept(frame)
        self._latest_seq += 1
        self._wake()

    async def _next_live(self) -> Frame | None:
        while True:
            if self._closed:
                return None
            if self._latest is not None and self._latest_seq > self._returned_seq:
                self._returned_seq = self._latest_seq
                return self._latest
            if self.state is SourceState.FAILED:
                raise SourceError(self._failure)
            if self._new_frame is None:
                self._new_frame = anyio.Event()
            await self._new_frame.wait()

    # ------------------------------------------------------------------ shared

    def _accept(self, frame: Frame) -> Frame:
        self.stats.frames_read += 1
        shape = frame.image.shape
        if self._last_shape is not None and shape != self._last_shape:
            self.stats.resolution_changes += 1
            log.info(
                "%s: resolution changed from %s to %s",
                self.source.name,
                _size(self._last_shape),
                _size(shape),
            )
        self._last_shape = shape
        return frame

    def _running_reason(self, frame: Frame) -> str:
        return f"{_size(frame.image.shape)} frames"

    def _wake(self) -> None:
        if self._new_frame is not None:
            self._new_frame.set()
            self._new_frame = None

    def _backoff(self, attempt: int) -> float:
        # The exponent is capped: a camera may stay away for days, and 2.0**1024 overflows.
        return min(self._max_backoff_s, self._initial_backoff_s * 2.0 ** min(attempt - 1, 64))

    async def _fail(self, reason: str, attempt: int) -> None:
        await self._close_source()
        self._failure = reason
        self._set_state(SourceState.FAILED, reason, attempt)
        self._wake()

    async def _close_source(self) -> None:
        self._is_open = False
        with anyio.CancelScope(shield=True):
            try:
                await anyio.to_thread.run_sync(self.source.close)
            except Exception as exc:
                log.warning("%s: close failed: %s", self.source.name, _describe(exc))

    def _set_state(self, state: SourceState, reason: str, attempt: int = 0) -> None:
        self.state = state
        level = (
            logging.WARNING
            if state in (SourceState.RECONNECTING, SourceState.FAILED)
            else logging.INFO
        )
        log.log(level, "%s: %s (%s)", self.source.name, state.value, reason)
        try:
            self._on_state(StateChange(state, reason, attempt))
        except Exception:
            log.exception("source state callback failed")


def _size(shape: tuple[int, ...]) -> str:
    return f"{shape[1]}x{shape[0]}" if len(shape) >= 2 else str(shape)
