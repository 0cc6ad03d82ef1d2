"""A real microphone: 16 kHz mono PCM16 chunks from a PortAudio input device.

PortAudio calls back on its own thread, which must never wait for the event loop (a
busy loop would stall the audio and overflow the device). So the callback only drops
its block into a bounded ``ChunkHandoff``; the async side waits for it on a worker
thread. A consumer that falls behind loses the oldest audio, counted, rather than
growing a backlog that would make the model hear the past.
"""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

import anyio

from device.audio.devices import AudioDevice, portaudio, resolve
from device.audio.ports import CHUNK_MS, MIC_RATE, SAMPLE_BYTES, AudioError
from device.audio.rate_convert import StreamResampler

_WAIT_S = 0.5  # how long one wait for audio lasts before the stream's health is checked
_QUEUE_CHUNKS = 50  # one second of audio waits for a slow consumer, then the oldest goes


class ChunkHandoff:
    """Blocks from PortAudio's thread to the consumer: bounded, dropping the oldest."""

    def __init__(self, capacity: int = _QUEUE_CHUNKS) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._capacity = capacity
        self._blocks: deque[bytes] = deque()
        self._ready = threading.Condition()
        self._failure: str | None = None
        self.dropped = 0

    def put(self, block: bytes) -> None:
        """Called on PortAudio's thread: never waits for the consumer."""
        with self._ready:
            if len(self._blocks) >= self._capacity:
                self._blocks.popleft()
                self.dropped += 1
            self._blocks.append(block)
            self._ready.notify()

    def fail(self, reason: str) -> None:
        """The stream ended on its own: the consumer hears it once what was queued is out."""
        with self._ready:
            if self._failure is None:
                self._failure = reason
            self._ready.notify()

    def take(self, timeout: float, limit: int | None = None) -> tuple[list[bytes], str | None]:
        """Up to ``limit`` queued blocks, oldest first (waiting up to ``timeout`` for one),
        or none and the failure, once nothing is left before it."""
        with self._ready:
            if timeout > 0:
                self._ready.wait_for(lambda: self._blocks or self._failure, timeout)
            count = len(self._blocks) if limit is None else min(limit, len(self._blocks))
            blocks = [self._blocks.popleft() for _ in range(count)]
            return blocks, self._failure if not blocks else None


class DeviceMicrophone:
    """A PortAudio input device as a ``Microphone``.

    ``spec`` is "default", a device number, or (part of) a device name. The device is
    opened at 16 kHz when it takes that rate, else at ``rate`` or its own default rate,
    and resampled to 16 kHz.
    """

    def __init__(
        self,
        spec: str = "default",
        *,
        chunk_ms: int = CHUNK_MS,
        rate: int | None = None,
        queue_chunks: int = _QUEUE_CHUNKS,
    ) -> None:
        if chunk_ms <= 0 or MIC_RATE * chunk_ms % 1000:
            raise AudioError(f"a microphone chunk of {chunk_ms} ms is not whole samples at 16 kHz")
        self._spec = spec
        self._name = spec
        self._chunk_ms = chunk_ms
        self._forced_rate = rate
        self._queue_chunks = queue_chunks
        self._dropped_before = 0
        self._handoff: ChunkHandoff | None = None
        self.device_rate: int | None = None
        self.overflows = 0  # blocks PortAudio flagged as overflowed (audio lost before us)

    @property
    def name(self) -> str:
        return self._name

    @property
    def dropped_chunks(self) -> int:
        """Blocks dropped because the consumer was slow (all streams this microphone opened)."""
        return self._dropped_before + (self._handoff.dropped if self._handoff else 0)

    def _open(self, handoff: ChunkHandoff) -> Any:
        sd = portaudio()
        device = resolve(self._spec, "input")
        self._name = device.name
        rate = self._rate_for(sd, device)
        self.device_rate = rate
        blocksize = rate * self._chunk_ms // 1000

        def on_block(data: Any, frames: int, time: Any, status: Any) -> None:
            if status.input_overflow:
                self.overflows += 1
            handoff.put(bytes(data))

        def on_finished() -> None:
            handoff.fail("its stream stopped")

        try:
            stream = sd.RawInputStream(
                device=device.index,
                samplerate=rate,
                blocksize=blocksize,
                channels=1,
                dtype="int16",
                # What is said should reach the model now: PortAudio's "high" default
                # buffers a few hundred ms on ALSA before the first callback.
                latency="low",
                callback=on_block,
                finished_callback=on_finished,
            )
            stream.start()
        except (sd.PortAudioError, ValueError) as exc:
            raise AudioError(f"cannot open microphone {device.label()}: {_one_line(exc)}") from None
        return stream

    def _rate_for(self, sd: Any, device: AudioDevice) -> int:
        if self._forced_rate:
            return self._forced_rate
        try:
            sd.check_input_settings(
                device=device.index, channels=1, dtype="int16", samplerate=MIC_RATE
            )
        except (sd.PortAudioError, ValueError):
            return device.default_rate
        return MIC_RATE

    async def chunks(self) -> AsyncIterator[bytes]:
        """16 kHz chunks of ``chunk_ms`` as they are spoken; ``AudioError`` once if it is lost."""
        if self._handoff is not None:
            self._dropped_before += self._handoff.dropped
        handoff = self._handoff = ChunkHandoff(self._queue_chunks)
        stream = await anyio.to_thread.run_sync(self._open, handoff)
        try:
            resampler = StreamResampler(self.device_rate or MIC_RATE, MIC_RATE)
            size = MIC_RATE * self._chunk_ms // 1000 * SAMPLE_BYTES
            pending = b""
            while True:
                # One block at a time, so a slow consumer's backlog stays in the handoff,
                # which bounds it; a block already there needs no thread to wait on.
                blocks, failure = handoff.take(0, 1)
                if not blocks and failure is None:
                    blocks, failure = await anyio.to_thread.run_sync(
                        handoff.take, _WAIT_S, 1, abandon_on_cancel=True
                    )
                if failure is None and not blocks and not stream.active:
                    failure = "its stream is no longer active"
                if failure is not None:
                    raise AudioError(f"microphone {self._name!r} was lost: {failure}")
                pending += b"".join(resampler.feed(block) for block in blocks)
                while len(pending) >= size:
                    chunk, pending = pending[:size], pending[size:]
                    yield chunk
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(_close, stream)


def _close(stream: Any) -> None:
    # Closing may fail when the device is already gone; there is nothing left to do then.
    with contextlib.suppress(Exception):
        stream.close(ignore_errors=True)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


__all__ = ["ChunkHandoff", "DeviceMicrophone"]
