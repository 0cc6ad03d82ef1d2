"""A real loudspeaker: PCM16 mono played on a PortAudio output device.

``write`` blocks until PortAudio has taken the samples, so the device paces the
speaker thread by itself; it is called from that thread, never on the event loop.
"""

from __future__ import annotations

import contextlib
from typing import Any

from device.audio.devices import portaudio, resolve
from device.audio.ports import MODEL_AUDIO_RATE, SAMPLE_BYTES, AudioError
from device.audio.rate_convert import StreamResampler


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
        self.device_rate: int | None = None
        self.underflows = 0  # writes after which the device had run dry (a gap was heard)

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
            # Low latency: what PortAudio has buffered still plays after a barge-in, and
            # the player keeps its own 60 ms jitter buffer, so the device's can be small.
            stream = sd.RawOutputStream(
                device=device.index, samplerate=rate, channels=1, dtype="int16", latency="low"
            )
            stream.start()
        except (sd.PortAudioError, ValueError) as exc:
            reason = _one_line(exc)
            raise AudioError(f"cannot open loudspeaker {device.label()}: {reason}") from None
        self.device_rate = rate
        self._resampler = StreamResampler(self._rate, rate) if rate != self._rate else None
        self._stream = stream

    def write(self, pcm: bytes) -> None:
        if self._stream is None:
            raise AudioError(f"loudspeaker {self._name!r} is not open")
        if len(pcm) % SAMPLE_BYTES:
            raise AudioError(f"{len(pcm)} bytes is not whole PCM16 samples")
        if self._resampler is not None:
            pcm = self._resampler.feed(pcm)
        if not pcm:
            return
        sd = portaudio()
        try:
            if self._stream.write(pcm):
                self.underflows += 1
        except (sd.PortAudioError, ValueError) as exc:
            raise AudioError(f"loudspeaker {self._name!r} was lost: {_one_line(exc)}") from None

    def close(self) -> None:
        """Let what was written play out, then let the device go."""
        stream, self._stream = self._stream, None
        if stream is None:
            return
        # A device already gone has nothing left to stop or close.
        with contextlib.suppress(Exception):
            stream.stop(ignore_errors=True)
            stream.close(ignore_errors=True)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


__all__ = ["DeviceLoudspeaker"]
