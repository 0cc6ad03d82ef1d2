"""A real loudspeaker: PCM16 mono played on a PortAudio output device.

The device pulls what it plays (PortAudio's callback, in PortAudio's thread) from a small
buffer that ``write`` fills; when the buffer is empty the device plays silence. Why not
PortAudio's blocking writes: a blocking stream left without data between two answers
underruns, and through ALSA's pulse plugin the third write of the next answer then
blocked for about 2 s (scripts/bench/voice.py), so every answer started late and a
barge-in waited for it. Pulled, the stream never underruns, ``write`` blocks only while
the buffer is full (the device paces the player's thread by itself), and a barge-in
empties the buffer at once (``flush``): only PortAudio's own low latency still sounds.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from device.audio.devices import portaudio, resolve
from device.audio.ports import MODEL_AUDIO_RATE, SAMPLE_BYTES, AudioError
from device.audio.rate_convert import StreamResampler

BUFFER_MS = 40  # what write() may put ahead of the device: two 20 ms chunks
WAIT_S = 0.5  # how often a waiting write checks that the device is still there
CLOSE_MARGIN_S = 0.5  # at close, how long past the buffered audio's end to wait


class DeviceLoudspeaker:
    """A PortAudio output device as a ``Loudspeaker``.

    ``spec`` is "default", a device number, or (part of) a device name. ``write`` always
    takes ``rate`` (the model's 24 kHz unless told otherwise), known before the device is
    touched: the player reads it when it is built, on the event loop, where looking a
    device up (loading PortAudio) must not happen. ``open`` plays at that rate when the
    device takes it (ALSA's default and pulse devices take any), else at the device's
    own rate (``device_rate``), resampled here.
    """

    def __init__(self, spec: str = "default", *, rate: int = MODEL_AUDIO_RATE) -> None:
        if rate <= 0:
            raise AudioError(f"a loudspeaker rate of {rate} Hz is not a rate")
        self._spec = spec
        self._name = spec
        self._rate = rate
        self._stream: Any = None
        self._resampler: StreamResampler | None = None
        self._buffer = bytearray()  # written, not yet pulled by the device
        self._limit = 0  # bytes the buffer may hold (BUFFER_MS at the device's rate)
        self._room = threading.Condition()
        self.device_rate: int | None = None
        self.underflows = 0  # device callbacks that ran dry mid-sound (a gap was heard)

    @property
    def name(self) -> str:
        return self._name

    @property
    def rate(self) -> int:
        return self._rate

    @property
    def paces_itself(self) -> bool:
        return True

    def open(self) -> None:
        if self._stream is not None:
            return
        sd = portaudio()
        device = resolve(self._spec, "output")
        self._name = device.name
        try:
            sd.check_output_settings(
                device=device.index, channels=1, dtype="int16", samplerate=self._rate
            )
            rate = self._rate
        except (sd.PortAudioError, ValueError):
            rate = device.default_rate
        try:
            # Low latency: what PortAudio holds still plays after a barge-in.
            stream = sd.RawOutputStream(
                device=device.index,
                samplerate=rate,
                channels=1,
                dtype="int16",
                latency="low",
                callback=self._pull,
            )
            stream.start()
        except (sd.PortAudioError, ValueError) as exc:
            reason = _one_line(exc)
            raise AudioError(f"cannot open loudspeaker {device.label()}: {reason}") from None
        self.device_rate = rate
        self._limit = max(1, rate * BUFFER_MS // 1000) * SAMPLE_BYTES
        self._resampler = StreamResampler(self._rate, rate) if rate != self._rate else None
        self._stream = stream

    def _pull(self, outdata: Any, frames: int, time: Any, status: Any) -> None:
        """PortAudio's thread: the next ``frames`` samples, silence where there are none."""
        wanted = len(outdata)
        with self._room:
            given = min(wanted, len(self._buffer))
            outdata[:given] = self._buffer[:given]
            del self._buffer[:given]
            self._room.notify_all()
        if given < wanted:
            outdata[given:] = bytes(wanted - given)
            if given:
                self.underflows += 1  # ran dry mid-sound (between answers is not a gap)

    def write(self, pcm: bytes) -> None:
        """Blocks while the buffer is full: the device's pace."""
        stream = self._stream
        if stream is None:
            raise AudioError(f"loudspeaker {self._name!r} is not open")
        if len(pcm) % SAMPLE_BYTES:
            raise AudioError(f"{len(pcm)} bytes is not whole PCM16 samples")
        if self._resampler is not None:
            pcm = self._resampler.feed(pcm)
        view = memoryview(pcm)
        with self._room:
            while view:
                room = self._limit - len(self._buffer)
                if room <= 0:
                    self._room.wait(WAIT_S)
                    if not stream.active:
                        raise AudioError(f"loudspeaker {self._name!r} was lost: it stopped")
                    continue
                self._buffer += view[:room]
                view = view[room:]

    def flush(self) -> int:
        """Barge-in: drop what was written and not yet played; returns the bytes dropped."""
        with self._room:
            dropped = len(self._buffer)
            self._buffer.clear()
            self._room.notify_all()
        return dropped

    def close(self) -> None:
        """Let what was written play out, then let the device go."""
        stream, self._stream = self._stream, None
        if stream is None:
            return
        rate = self.device_rate or self._rate
        with self._room:
            deadline = len(self._buffer) / SAMPLE_BYTES / rate + CLOSE_MARGIN_S
            self._room.wait_for(lambda: not self._buffer, timeout=deadline)
        # A device already gone has nothing left to stop or close.
        with contextlib.suppress(Exception):
            stream.stop(ignore_errors=True)
            stream.close(ignore_errors=True)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


__all__ = ["DeviceLoudspeaker"]
