"""Reading a camera or a stream: a reader task keeps the newest frame, with a stall watchdog.

A capture that is read more slowly than it produces queues stale frames in
the driver, so a reader task reads as fast as the camera delivers and keeps
only the newest frame (a ``LatestWins`` of one): ``next_frame`` is always the
freshest picture not returned yet. A source that can (``Grabs``) is read in two
steps: every frame is grabbed (dequeued, which keeps the driver's queue short),
and only a frame someone waits for is decoded: at most the sampling rate, not
the camera's 30 fps. A read that blocks longer than the stall timeout is
abandoned and the camera reopened; reopening backs off while the camera stays
away (up to a couple of seconds, so it is counted again soon after it is back),
and starts fresh once it delivered again. Each attempt is a state change, but
only some are said (``FailureRun``): the 1st, 10th, 100th... and the first of
each kind, so a camera away for a day costs a few lines, not one every 2 s.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from device.feeds.state import SourceState, describe
from device.sources import Grabbed, Grabs, SourceError, SourceUnavailable, UnreadableFrame
from device.vision.frame import Frame
from live.util.backoff import FailureRun, milestone
from live.util.buffer import LatestWins

if TYPE_CHECKING:
    from device.feeds.runner import SourceRunner

log = logging.getLogger("lookout.source")


class _Stalled:
    """The watchdog gave up on a read."""


_STALLED = _Stalled()
_UNSET: Any = object()


class CameraReading:
    def __init__(
        self, runner: SourceRunner, *, stall_timeout_s: float, first_open_attempts: int | None
    ) -> None:
        self.runner = runner
        self.source = runner.source
        self.stall_timeout_s = stall_timeout_s
        self.first_open_attempts = first_open_attempts
        self._ever_delivered = False
        self._failures = FailureRun(runner.clock.now)
        self.newest: LatestWins[Frame] = LatestWins(1)
        self._scope: anyio.CancelScope | None = None
        # From which time (the device clock, a live frame's t_media) the waiting
        # consumer wants a frame; None while nobody waits: frames are only grabbed.
        self._wanted_from: float | None = None

    def stop(self) -> None:
        if self._scope is not None:
            self._scope.cancel()
        self.newest.close()

    async def next_frame(self, not_before: float | None = None) -> Frame | None:
        self._wanted_from = -math.inf if not_before is None else not_before
        try:
            return await self.newest.get()
        except anyio.EndOfStream:
            if self.runner.state is SourceState.FAILED and not self.runner.closed:
                raise SourceError(self.runner.failure) from None
            return None
        finally:
            self._wanted_from = None

    async def run(self) -> None:
        """Until closed or cancelled: open, read, and reopen with backoff when it fails."""
        runner = self.runner
        with anyio.CancelScope() as scope:
            self._scope = scope
            runner.set_state(SourceState.OPENING, "")
            run = self._failures
            while True:
                try:
                    reason, delivered = await self._open_and_read()
                except SourceUnavailable as exc:
                    await runner.fail(str(exc), run.failures + 1)
                    self.newest.close()  # wakes the reader with the failure
                    return
                await runner.close_source()
                self._ever_delivered = self._ever_delivered or delivered
                if delivered:
                    run.reset()  # it worked for a while: this failure starts a new run
                attempt = run.fail()
                limit = self.first_open_attempts
                if not self._ever_delivered and limit is not None and attempt >= limit:
                    await runner.fail(reason, attempt)
                    self.newest.close()
                    return
                delay = runner.backoff(attempt)
                runner.set_state(
                    SourceState.RECONNECTING,
                    f"{run.counted(reason)}; retry in {delay:g} s",
                    attempt,
                    said=run.say(reason),
                )
                await runner.clock.sleep(delay)

    async def _open_and_read(self) -> tuple[str, bool]:
        """Open, then read until the capture fails: (why it failed, whether it gave frames)."""
        runner = self.runner
        try:
            await runner.open_source(abandon_on_cancel=True)
        except SourceUnavailable:
            raise
        except Exception as exc:
            return describe(exc), False
        delivered = False
        source = self.source
        first: Callable[[], Frame | Grabbed | None] = source.read
        retrieve: Callable[[], Frame] | None = None
        decode_ms = 0.0
        if isinstance(source, Grabs):
            grabbing = source

            def timed_retrieve() -> Frame:
                nonlocal decode_ms
                start = time.perf_counter()
                frame = grabbing.retrieve()
                decode_ms = (time.perf_counter() - start) * 1000
                return frame

            first, retrieve = source.grab, timed_retrieve
        while True:
            outcome = await self._read_watched(first)
            if isinstance(outcome, Grabbed) and retrieve is not None:
                wanted = self._wanted_from
                # The first frame is decoded whether or not it is wanted: it says the
                # camera runs, and at what size.
                if delivered and (wanted is None or outcome.t_media < wanted - 1e-6):
                    runner.stats.frames_undecoded += 1
                    continue
                outcome = await self._read_watched(retrieve)
                if isinstance(outcome, Frame):
                    runner.stats.decode_ms_total += decode_ms
                if isinstance(outcome, Frame) and wanted is None:
                    delivered = True
                    self._running(outcome)
                    runner.accept(outcome)  # not kept: by the time it is wanted it is old
                    continue
            if outcome is _STALLED:
                runner.stats.stalls += 1
                stall = f"no frame within {self.stall_timeout_s:g} s (read stalled)"
                return f"{self.source.name}: {stall}", delivered
            if isinstance(outcome, UnreadableFrame):
                # One frame the camera could not give usably (too big to use): left out
                # and said, at 1, 10, 100, ... of them; the camera itself goes on.
                runner.stats.skipped_unreadable += 1
                skipped = runner.stats.skipped_unreadable
                if milestone(skipped) or skipped % 10_000 == 0:
                    runner.on_skipped(f"skipped ({skipped} so far): {outcome}")
                continue
            if isinstance(outcome, BaseException):
                runner.stats.read_errors += 1
                if not isinstance(outcome, SourceError):
                    log.error("%s: read raised", self.source.name, exc_info=outcome)
                return describe(outcome), delivered
            if not isinstance(outcome, Frame):
                runner.stats.read_errors += 1
                return f"{self.source.name}: stream ended", delivered
            delivered = True
            self._running(outcome)
            self.newest.put(runner.accept(outcome))

    def _running(self, frame: Frame) -> None:
        """A frame came: running again, saying what the failures before it were."""
        if self.runner.state is not SourceState.RUNNING:
            self.runner.mark_running(frame, self._failures.summary())
            self._failures.reset()

    async def _read_watched(
        self, read: Callable[[], Frame | Grabbed | None]
    ) -> Frame | Grabbed | BaseException | _Stalled | None:
        """One read (or grab, or retrieve), given up after the stall timeout on the clock.

        A given-up read stays in its worker thread until the driver returns;
        the source releases that capture then (see FrameSource), and the
        runner never touches it again.
        """
        result: Frame | Grabbed | BaseException | None = _UNSET
        stalled = False
        async with anyio.create_task_group() as tg:

            async def watchdog() -> None:
                nonlocal stalled
                await self.runner.clock.sleep(self.stall_timeout_s)
                stalled = True
                tg.cancel_scope.cancel()

            tg.start_soon(watchdog)
            try:
                result = await anyio.to_thread.run_sync(read, abandon_on_cancel=True)
            except Exception as exc:
                result = exc
            tg.cancel_scope.cancel()
        if result is _UNSET:
            return _STALLED if stalled else SourceError(f"{self.source.name}: read cancelled")
        return result


__all__ = ["CameraReading"]
