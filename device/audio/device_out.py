"""A real loudspeaker: PCM16 mono played on a PortAudio output device.

``write`` blocks until PortAudio has taken the samples, so the device paces the
speaker thread by itself; it is called from that thread, never on the event loop.
"""

from __future__ import annotations

import contextlib
from typing import Any

from device.audio.devices import AudioDevice, portaudio, resolve
from device.audio.ports import MODEL_AUDIO_RATE, SAMPLE_BYTES, AudioError


class DeviceLoudspeaker:
    """A PortAudio output device as a ``Loudspeaker``.

    ``spec`` is "default", a device number, or (part of) a device name. It plays at
    ``preferred_rate`` (what the model speaks) when the device takes it, so nothing
    needs resampling; else at the device's own default rate, which ``rate`` then says.
    """

    def __init__(self, spec: str = "default", *, preferred_rate: int = MODEL_AUDIO_RATE) -> None:
        self._spec = spec
        self._name = spec
        self._preferred = preferred_rate
        self._device: AudioDevice | None = None
        self._rate: int | None = None
        self._stream: Any = None
        self.underflows = 0  # writes after which the device had run dry (a gap was heard)

    @property
    def name(self) -> str:
        return self._name

    @property
    def rate(self) -> int:
        """The rate ``write`` takes; before ``open`` this looks the device up (blocking)."""
        if self._rate is None:
            self._choose()
        assert self._rate is not None
        return self._rate

    @property
    def paces_itself(self) -> bool:
        return True

    def _choose(self) -> tuple[Any, AudioDevice]:
        sd = portaudio()
        if self._device is None:
            self._device = resolve(self._spec, "output")
            self._name = self._device.name
        if self._rate is None:
            try:
                sd.check_output_settings(
                    device=self._device.index, channels=1, dtype="int16", samplerate=self._preferred
                )
                self._rate = self._preferred
            except (sd.PortAudioError, ValueError):
                self._rate = self._device.default_rate
        return sd, self._device

    def open(self) -> None:
        if self._stream is not None:
            return
        sd, device = self._choose()
        try:
            stream = sd.RawOutputStream(
                device=device.index, samplerate=self._rate, channels=1, dtype="int16"
            )
            stream.start()
        except (sd.PortAudioError, ValueError) as exc:
            reason = _one_line(exc)
            raise AudioError(f"cannot open loudspeaker {device.label()}: {reason}") from None
        self._stream = stream

    def write(self, pcm: bytes) -> None:
        if self._stream is None:
            raise AudioError(f"loudspeaker {self._name!r} is not open")
        if len(pcm) % SAMPLE_BYTES:
            raise AudioError(f"{len(pcm)} bytes is not whole PCM16 samples")
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
