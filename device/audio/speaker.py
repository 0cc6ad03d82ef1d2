"""The device's voice: model audio played on a loudspeaker, with a small jitter buffer.

Model audio arrives in bursts, faster or slower than it plays. The speaker
holds ``prebuffer_ms`` before it starts a turn, so a late piece does not cut
the voice, then plays ``chunk_ms`` at a time. A barge-in (``interrupt``) drops
everything queued: only the chunk already handed to the loudspeaker still
sounds, so the device stops talking within one chunk of being spoken over.

A file does not pace itself, so the speaker paces it on the clock: chunk k of
a burst is written at start + k * chunk_ms, and at any moment the file holds
what a device would have played by then.
"""

from __future__ import annotations

import contextlib
import logging
import math
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio
import anyio.to_thread

from device.audio.pcm import PcmResampler
from device.audio.ports import SAMPLE_BYTES, AudioError, Loudspeaker
from live.util.backoff import Backoff
from live.util.clock import Clock

log = logging.getLogger(__name__)

REOPEN = Backoff(1.0, 30.0)  # a device that failed is opened again after 1, 2, 4... s
LATENCY_RESERVOIR = 4096  # latencies kept for percentiles: a long run stays small


@dataclass
class SpeakerStats:
    """What was played and what was not, for the log and a benchmark."""

    chunks_played: int = 0
    bytes_played: int = 0
    interruptions: int = 0  # barge-ins that cut audio short
    bytes_interrupted: int = 0  # queued audio a barge-in dropped
    bytes_lost: int = 0  # audio dropped because the loudspeaker failed
    underruns: int = 0  # a turn ran dry mid-way (the model fell behind playback)
    # Per fed piece: seconds from feed() until its first sample was written. A
    # reservoir sample once there are more than LATENCY_RESERVOIR.
    latencies_s: list[float] = field(default_factory=list)
    latencies_seen: int = 0
    _rng: random.Random = field(default_factory=lambda: random.Random(0), repr=False)

    def record_latency(self, seconds: float) -> None:
        self.latencies_seen += 1
        if len(self.latencies_s) < LATENCY_RESERVOIR:
            self.latencies_s.append(seconds)
            return
        slot = self._rng.randrange(self.latencies_seen)
        if slot < LATENCY_RESERVOIR:
            self.latencies_s[slot] = seconds

    def latency_s(self, quantile: float) -> float | None:
        """The latency at ``quantile`` (0.5: the median), nearest rank; None before any."""
        if not self.latencies_s:
            return None
        ordered = sorted(self.latencies_s)
        rank = min(len(ordered) - 1, max(0, math.ceil(quantile * len(ordered)) - 1))
        return ordered[rank]


class Speaker:
    """Plays what ``feed`` is given on ``out``; ``run`` must be running for it to sound."""

    def __init__(
        self,
        out: Loudspeaker,
        clock: Clock,
        *,
        chunk_ms: int = 20,
        prebuffer_ms: int = 60,
        on_error: Callable[[str], None] | None = None,
        on_back: Callable[[], None] | None = None,
    ) -> None:
        if chunk_ms <= 0 or prebuffer_ms < 0:
            raise AudioError(
                f"a speaker needs chunk_ms > 0 and prebuffer_ms >= 0 ({chunk_ms}, {prebuffer_ms})"
            )
        self._out = out
        self._clock = clock
        self._rate = out.rate
        self._chunk_bytes = max(1, self._rate * chunk_ms // 1000) * SAMPLE_BYTES
        self._chunk_s = self._chunk_bytes / SAMPLE_BYTES / self._rate
        # At least one chunk: starting below it would run dry at the first write.
        self._prebuffer_bytes = max(
            self._chunk_bytes, self._rate * prebuffer_ms // 1000 * SAMPLE_BYTES
        )
        self._on_error = on_error or _log_error
        self._on_back = on_back or (lambda: None)
        self.stats = SpeakerStats()
        self._queue = bytearray()
        self._resampler: PcmResampler | None = None
        # Where the last finished turn ends in the stream: audio before it plays even
        # below the prebuffer or a chunk. A position, not a flag, so a next turn fed
        # before the last one has played out is buffered like any other.
        self._end_at = 0
        self._turn = 0  # bumped by every interrupt, so a burst in progress knows it is over
        self._fed = 0  # bytes ever queued: the stream position just past the queue's end
        self._marks: deque[tuple[int, float]] = deque()  # (stream position, fed at)
        self._writing = False
        self._sounding_until = -math.inf  # when the last chunk written has played out
        self._failed = False
        self._wake: anyio.Event | None = None

    @property
    def rate(self) -> int:
        """The loudspeaker's sample rate (what is played is PCM16 mono at it)."""
        return self._rate

    @property
    def playing(self) -> bool:
        """Audio is queued, being written, or still sounding from the last write."""
        if self._failed:
            return False
        return bool(self._queue) or self._writing or self._clock.now() < self._sounding_until

    def feed(self, pcm: bytes, rate: int) -> None:
        """Queues model audio (PCM16 mono at ``rate``); never blocks."""
        if self._failed:
            self.stats.bytes_lost += len(pcm)
            return
        resampler = self._resampler
        if resampler is None or resampler.from_rate != rate:
            if resampler is not None:
                self._enqueue(resampler.flush(), mark=False)
            resampler = self._resampler = PcmResampler(rate, self._rate)
        self._enqueue(resampler.push(pcm), mark=True)

    def end_of_turn(self) -> None:
        """The model finished speaking: play what is buffered, even below the prebuffer."""
        if self._failed:
            return
        if self._resampler is not None:
            self._enqueue(self._resampler.flush(), mark=False)
            self._resampler = None
        self._end_at = self._fed
        self._poke()

    def interrupt(self) -> int:
        """Barge-in: drops everything queued and returns how many bytes that was."""
        dropped = len(self._queue)
        if self.playing:
            self.stats.interruptions += 1
        self.stats.bytes_interrupted += dropped
        self._queue.clear()
        self._marks.clear()
        # A device that buffers ahead (device_out.py) drops that too: otherwise its
        # buffer, a chunk or two, would still be heard after the barge-in.
        flush = getattr(self._out, "flush", None)
        if callable(flush):
            self.stats.bytes_interrupted += int(flush())
        self._resampler = None  # the next turn is no continuation of this one
        self._end_at = self._fed
        self._turn += 1
        self._poke()
        return dropped

    async def wait_quiet(self) -> None:
        """Until nothing is queued, written or sounding (the caller bounds the wait).

        Checked once a chunk on the clock: a chunk is the finest step playback has."""
        while self.playing:
            await self._clock.sleep(max(self._chunk_s, self._sounding_until - self._clock.now()))

    async def run(self) -> None:
        """Opens the loudspeaker and plays until cancelled; closes it at the end."""
        self._wake = anyio.Event()
        opened = False
        failures = 0
        try:
            while True:
                try:
                    await anyio.to_thread.run_sync(self._out.open)
                    opened = True
                except AudioError as exc:
                    self._fail(exc)
                if opened and failures:
                    self._failed = False
                    self._on_back()
                while not self._failed:
                    failures = 0
                    while not self._ready():
                        await self._wake.wait()
                    await self._play_burst()
                if not self._out.paces_itself:
                    await anyio.sleep_forever()  # a file that cannot be written stays so
                # A device that failed (unplugged, its server restarted) is opened again
                # after 1, 2, 4... s; meanwhile feed() counts what it drops.
                failures += 1
                if opened:
                    opened = False
                    with contextlib.suppress(AudioError):
                        await anyio.to_thread.run_sync(self._out.close)
                await self._clock.sleep(REOPEN.delay(failures))
        finally:
            if opened:
                with anyio.CancelScope(shield=True):
                    try:
                        await anyio.to_thread.run_sync(self._close_out)
                    except AudioError as exc:
                        self._fail(exc)

    @property
    def to_file(self) -> bool:
        """The loudspeaker is a file (paced by the clock, not by a device)."""
        return not self._out.paces_itself

    def _close_out(self) -> None:
        """A file gets what was said and not yet played, at once: it holds exactly what the
        model said even when the run ends (a signal) before it was all played. A device
        does not: a sentence cut by the end of a run is not finished in silence."""
        if self.to_file and not self._failed:
            if self._resampler is not None:
                self._enqueue(self._resampler.flush(), mark=False)
                self._resampler = None
            if self._queue:
                rest = bytes(self._queue)
                self._queue.clear()
                self._marks.clear()
                self._out.write(rest)
                self.stats.bytes_played += len(rest)
        self._out.close()

    def _ready(self) -> bool:
        return bool(self._queue) and (len(self._queue) >= self._prebuffer_bytes or self._ending)

    @property
    def _ending(self) -> bool:
        return self._fed - len(self._queue) < self._end_at

    async def _play_burst(self) -> None:
        """Plays until the turn ends, runs dry, or is interrupted."""
        turn = self._turn
        paced = not self._out.paces_itself
        start = max(self._clock.now(), self._sounding_until)  # not over the last chunk
        k = 0
        while True:
            if paced:
                await self._clock.sleep(start + k * self._chunk_s - self._clock.now())
            if self._turn != turn or self._failed:
                return  # barge-in: the next turn prebuffers afresh
            if k and self._fed - len(self._queue) == self._end_at:
                return  # the turn played out; what follows is a new turn, buffered afresh
            if len(self._queue) < self._chunk_bytes and not self._ending:
                self.stats.underruns += 1  # mid-turn and dry: rebuffer rather than stutter
                return
            await self._write(self._take())
            k += 1

    def _take(self) -> tuple[bytes, list[float]]:
        """The next chunk, and when each piece that starts in it was fed."""
        head = self._fed - len(self._queue)
        size = self._chunk_bytes
        if head < self._end_at:
            size = min(size, self._end_at - head)  # a chunk never spans two turns
        chunk = bytes(self._queue[:size])
        del self._queue[:size]
        fed_at = []
        while self._marks and self._marks[0][0] < head + len(chunk):
            fed_at.append(self._marks.popleft()[1])
        return chunk, fed_at

    async def _write(self, taken: tuple[bytes, list[float]]) -> None:
        chunk, fed_at = taken
        self._writing = True
        try:
            await anyio.to_thread.run_sync(self._out.write, chunk)
        except AudioError as exc:
            self.stats.bytes_lost += len(chunk)  # it did not sound either
            self._fail(exc)
            return
        finally:
            self._writing = False
        now = self._clock.now()
        self.stats.chunks_played += 1
        self.stats.bytes_played += len(chunk)
        for when in fed_at:
            self.stats.record_latency(now - when)
        self._sounding_until = now + len(chunk) / SAMPLE_BYTES / self._rate

    def _enqueue(self, pcm: bytes, *, mark: bool) -> None:
        if not pcm:
            return
        if mark:
            self._marks.append((self._fed, self._clock.now()))
        self._queue += pcm
        self._fed += len(pcm)
        self._poke()

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()
            self._wake = anyio.Event()

    def _fail(self, exc: AudioError) -> None:
        """Says the loudspeaker's failure once; the speaker is quiet until it is back."""
        if self._failed:
            return
        self._failed = True
        self.stats.bytes_lost += len(self._queue)
        self._queue.clear()
        self._marks.clear()
        self._resampler = None
        self._poke()
        self._on_error(str(exc))


def _log_error(message: str) -> None:
    log.warning("loudspeaker failed, the device goes quiet: %s", message)


__all__ = ["LATENCY_RESERVOIR", "Speaker", "SpeakerStats"]
