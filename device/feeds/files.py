"""Reading a file or a folder: every frame in order, on demand, with loop passes.

A replay must give the same results at any speed, so nothing is dropped here:
the frame driver asks for the next frame when it wants one, and says from
which media time on it wants one (``not_before``): the frames before are
moved past without being decoded into pixels (``Grabs``), exactly those the
loop's sampler would have dropped. A read that fails
(a file on a flaky disk) is retried from the same frame with backoff, up to a
number of failures in a row; one undecodable image is skipped and counted. A
looped file's passes follow each other in time and index, as one long clip, each pass's
first frame a cut (``Frame.cut``): nobody is followed from the end back to the start.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from device.feeds.state import SourceState, describe
from device.sources import Grabbed, Grabs, SourceError, SourceUnavailable, UnreadableFrame
from device.vision.frame import Frame

if TYPE_CHECKING:
    from device.feeds.runner import SourceRunner

log = logging.getLogger("lookout.source")


class FileReading:
    def __init__(self, runner: SourceRunner, *, loop: bool, max_failures: int) -> None:
        self.runner = runner
        self.source = runner.source
        self._loop = loop
        self._max_failures = max_failures
        self._lock: anyio.Lock | None = None  # made on first use: needs a running loop
        self._wait: anyio.CancelScope | None = None
        self._announced = False
        self._is_open = False
        self._next_index = 0
        self._failures = 0
        # Where the current loop pass stands, and how passes shift time and index.
        self._pass_frames = 0
        self._pass_last: Grabbed | None = None  # the pass's newest frame, decoded or not
        self._pass_prev_t: float | None = None
        self._t_offset = 0.0
        self._index_offset = 0
        self._passes = 1
        self._cut = False  # the next frame returned begins a pass: a cut

    async def run(self) -> None:
        """Files have no task of their own: frames are read when asked for."""

    def stop(self) -> None:
        if self._wait is not None:
            self._wait.cancel()

    async def next_frame(self, not_before: float | None = None) -> Frame | None:
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            return await self._next(not_before)

    def _read(self, not_before: float | None) -> tuple[Frame | Grabbed | None, float]:
        """In a worker thread: the next frame, or only where it is when it comes before
        ``not_before`` (not decoded); and the ms spent decoding."""
        source = self.source
        if not_before is None or not isinstance(source, Grabs):
            start = time.perf_counter()
            frame = source.read()
            return frame, (time.perf_counter() - start) * 1000
        grabbed = source.grab()
        # The frame driver's own test, on the same (looped) time: it drops just these. A
        # pass's first frame is a cut, where the driver starts sampling afresh: decoded.
        if grabbed is None or (
            grabbed.t_media + self._t_offset < not_before - 1e-6 and not self._cut
        ):
            return grabbed, 0.0
        start = time.perf_counter()
        frame = source.retrieve()
        return frame, (time.perf_counter() - start) * 1000

    async def _next(self, not_before: float | None) -> Frame | None:
        runner = self.runner
        while True:
            if runner.closed or runner.state is SourceState.ENDED:
                return None
            if runner.state is SourceState.FAILED:
                raise SourceError(runner.failure)
            if not self._is_open:
                await self._open()
                continue
            try:
                frame, decode_ms = await anyio.to_thread.run_sync(self._read, not_before)
            except UnreadableFrame as exc:
                # One bad image is the file's fault, not the source's: skip it, counted.
                runner.stats.skipped_unreadable += 1
                self._next_index = exc.index + 1
                log.info("skipped: %s", exc)
                runner.on_skipped(f"skipped: {exc}")
                continue
            except Exception as exc:
                if runner.closed:
                    return None
                runner.stats.read_errors += 1
                await self._failure(describe(exc))
                continue
            if runner.closed:
                return None
            if frame is None:
                if self._loop and self._pass_frames > 0:
                    await self._rewind()
                    continue
                await runner.close_source()
                runner.set_state(SourceState.ENDED, "end of file")
                return None
            self._failures = 0
            self._next_index = frame.index + 1
            self._pass_prev_t = self._pass_last.t_media if self._pass_last is not None else None
            self._pass_last = Grabbed(frame.index, frame.t_media)
            self._pass_frames += 1
            if isinstance(frame, Grabbed):
                runner.stats.frames_undecoded += 1
                continue
            runner.stats.decode_ms_total += decode_ms
            runner.mark_running(frame)
            return runner.accept(self._shifted(frame))

    async def _open(self) -> None:
        runner = self.runner
        if not self._announced:
            self._announced = True
            runner.set_state(SourceState.OPENING, "")
        try:
            await runner.open_source()
            if self._next_index:
                await anyio.to_thread.run_sync(self.source.seek, self._next_index)
        except SourceUnavailable as exc:
            await runner.fail(str(exc), self._failures + 1)
            return
        except Exception as exc:
            await self._failure(describe(exc))
            return
        self._is_open = True

    async def _failure(self, reason: str) -> None:
        runner = self.runner
        self._failures += 1
        self._is_open = False
        await runner.close_source()
        if self._failures >= self._max_failures:
            await runner.fail(f"{reason} ({self._failures} failures in a row)", self._failures)
            return
        delay = runner.backoff(self._failures)
        runner.set_state(
            SourceState.RECONNECTING, f"{reason}; retry in {delay:g} s", self._failures
        )
        # close() cuts the wait short; next_frame() then sees the runner closed.
        with anyio.CancelScope() as scope:
            self._wait = scope
            if not runner.closed:
                await runner.clock.sleep(delay)
        self._wait = None

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
        self._passes += 1
        self._cut = True
        # Said, not only logged: a replay that starts again is news to whoever watches.
        self.runner.set_state(
            SourceState.RUNNING,
            f"loop pass {self._passes} from the start ({self._t_offset:.1f} s of media so far)",
        )
        try:
            await anyio.to_thread.run_sync(self.source.seek, 0)
        except Exception as exc:
            self.runner.stats.read_errors += 1
            await self._failure(f"cannot rewind: {describe(exc)}")

    def _shifted(self, frame: Frame) -> Frame:
        cut, self._cut = self._cut, False
        if not self._t_offset and not self._index_offset and not cut:
            return frame
        return frame.shifted(dt=self._t_offset, dindex=self._index_offset, cut=cut)


__all__ = ["FileReading"]
