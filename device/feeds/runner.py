"""The async side of a frame source: an explicit state, reconnects, the frames to read.

``SourceRunner`` owns what every source shares: its state (opening, running,
reconnecting, ended, failed) and the callback that reports it, the counters,
the backoff between attempts, and opening and closing in worker threads. How
frames are read is a strategy chosen by the kind of source:

- files and folders (``files.FileReading``): every frame in order, on demand,
  because a replay must give the same results at any speed;
- cameras and streams (``camera.CameraReading``): a reader task reads as fast as the
  camera delivers and keeps only the newest frame, with a stall watchdog.

Nothing here blocks the event loop, and all timing (backoff, watchdog) goes
through the injected Clock, so tests drive it in virtual time.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Protocol

import anyio
import anyio.to_thread
from anyio.abc import TaskStatus

from device.feeds.camera import CameraReading
from device.feeds.files import FileReading
from device.feeds.state import SourceState, SourceStats, StateChange, describe, size
from device.sources import FrameSource, SourceError
from device.vision.frame import Frame
from live.util.backoff import Backoff
from live.util.clock import Clock

log = logging.getLogger("lookout.source")

# The longest wait between two attempts to reopen a source. Short, so that a camera
# that comes back is counted again within a couple of seconds however long it was
# away (at 30 s it took up to half a minute): a failed open costs little, and what is
# said of the failures is bounded by counting them (FailureRun), not by waiting longer.
MAX_BACKOFF_S = 2.0


def _ignore_state(change: StateChange) -> None:
    pass


class Reading(Protocol):
    """How one kind of source is read (files in order; cameras newest-first)."""

    async def run(self) -> None: ...

    async def next_frame(self, not_before: float | None = None) -> Frame | None: ...

    def stop(self) -> None: ...


def _ignore_skipped(message: str) -> None:
    pass


class SourceRunner:
    """Drives one FrameSource; ``next_frame()`` is what the frame driver reads."""

    def __init__(
        self,
        source: FrameSource,
        *,
        clock: Clock,
        on_state: Callable[[StateChange], None] = _ignore_state,
        on_skipped: Callable[[str], None] = _ignore_skipped,
        loop: bool = False,
        stall_timeout_s: float = 5.0,
        max_backoff_s: float = MAX_BACKOFF_S,
        initial_backoff_s: float = 0.5,
        max_file_failures: int = 5,
        first_open_attempts: int | None = None,
    ) -> None:
        """``first_open_attempts``: a camera that has never delivered a frame fails after
        that many attempts (a one-shot question must not wait for a camera that is not
        there); None keeps trying, as a device should."""
        if stall_timeout_s <= 0 or initial_backoff_s <= 0 or max_backoff_s < initial_backoff_s:
            raise ValueError("timeouts must be positive and max_backoff_s >= initial_backoff_s")
        if max_file_failures < 1:
            raise ValueError("max_file_failures must be at least 1")
        self.source = source
        self.state = SourceState.OPENING
        self.stats = SourceStats()
        self.clock = clock
        self.initial_backoff_s = initial_backoff_s
        self.max_backoff_s = max_backoff_s
        self.failure = ""  # why the source FAILED
        self.closed = False
        # Read from worker threads: an open that finishes after close() undoes itself.
        self.closing = threading.Event()
        self.opened_before = False
        self._on_state = on_state
        self.on_skipped = on_skipped  # a frame or image left out (said, never silently)
        self._last_shape: tuple[int, ...] | None = None
        self._reading: Reading
        if source.is_camera:
            self._reading = CameraReading(
                self, stall_timeout_s=stall_timeout_s, first_open_attempts=first_open_attempts
            )
        else:
            self._reading = FileReading(self, loop=loop, max_failures=max_file_failures)
        self._running = False
        self._run_done: anyio.Event | None = None

    # ------------------------------------------------------------------ public

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """The reading strategy's own task (live sources: the reader); for files nothing."""
        if self.closed or not self.source.is_camera:
            task_status.started()
            return
        if self._running:
            raise RuntimeError("SourceRunner.run() is already running")
        self._running = True
        self._run_done = anyio.Event()
        try:
            task_status.started()
            await self._reading.run()
        finally:
            with anyio.CancelScope(shield=True):
                await self.close_source()
            self._run_done.set()

    async def next_frame(self, *, not_before: float | None = None) -> Frame | None:
        """The next frame; None once a file has ended or the runner is closed.

        Files: every frame in order. Live: the newest frame that has not been
        returned yet, waiting (cancellably) through reconnects for one; the
        frames come from ``run()``, which must be running.
        ``not_before``: frames earlier than this media time are not wanted; a
        source that can (``Grabs``) moves past them without decoding them.
        Raises SourceError once the source has FAILED.
        """
        return await self._reading.next_frame(not_before)

    @property
    def frames_undecoded(self) -> int:
        """Frames moved past without decoding them (before a ``not_before``)."""
        return self.stats.frames_undecoded

    async def close(self) -> None:
        """Stop reading and release the source; safe to call more than once."""
        if self.closed:
            return
        self.closed = True
        self.closing.set()
        self._reading.stop()
        with anyio.CancelScope(shield=True):
            if self._run_done is not None:
                await self._run_done.wait()
            await self.close_source()
        if self.state not in (SourceState.ENDED, SourceState.FAILED):
            self.set_state(SourceState.ENDED, "closed")

    # ----------------------------------------------------- for the strategies

    def backoff(self, failures: int) -> float:
        return Backoff(self.initial_backoff_s, self.max_backoff_s).delay(failures)

    async def open_source(self, *, abandon_on_cancel: bool = False) -> None:
        await anyio.to_thread.run_sync(
            self._open_unless_closing, abandon_on_cancel=abandon_on_cancel
        )
        if self.opened_before:
            self.stats.reopens += 1
        self.opened_before = True

    def _open_unless_closing(self) -> None:
        self.source.open()
        # close() may have run while this open was abandoned in its thread;
        # nobody else would release what it just opened.
        if self.closing.is_set():
            self.source.close()
            raise SourceError(f"{self.source.name}: closed")

    async def close_source(self) -> None:
        with anyio.CancelScope(shield=True):
            try:
                await anyio.to_thread.run_sync(self.source.close)
            except Exception as exc:
                log.warning("%s: close failed: %s", self.source.name, describe(exc))

    async def fail(self, reason: str, attempt: int) -> None:
        await self.close_source()
        self.failure = reason
        self.set_state(SourceState.FAILED, reason, attempt)

    def accept(self, frame: Frame) -> Frame:
        """Count a frame read, noticing a change of resolution."""
        self.stats.frames_read += 1
        shape = frame.shape
        if self._last_shape is not None and shape != self._last_shape:
            self.stats.resolution_changes += 1
            log.info(
                "%s: resolution changed from %s to %s",
                self.source.name,
                size(self._last_shape),
                size(shape),
            )
        self._last_shape = shape
        return frame

    def mark_running(self, frame: Frame, after: str = "") -> None:
        """Running, if it was not; ``after``: what it took (``after 12 failed attempts...``)."""
        if self.state is not SourceState.RUNNING:
            back = f", {after}" if after else ""
            self.set_state(SourceState.RUNNING, f"{size(frame.shape)} frames{back}")

    def set_state(
        self, state: SourceState, reason: str, attempt: int = 0, *, said: bool = True
    ) -> None:
        """The new state, handed to ``on_state``; logged only when ``said``."""
        self.state = state
        level = (
            logging.WARNING
            if state in (SourceState.RECONNECTING, SourceState.FAILED)
            else logging.INFO
        )
        if said:
            log.log(level, "%s: %s (%s)", self.source.name, state.value, reason)
        try:
            self._on_state(StateChange(state, reason, attempt, said))
        except Exception:
            log.exception("source state callback failed")


__all__ = ["MAX_BACKOFF_S", "SourceRunner", "SourceState", "SourceStats", "StateChange", "describe"]
