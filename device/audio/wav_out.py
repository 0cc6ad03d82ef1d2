"""A WAV file as the loudspeaker: it receives exactly what a device would have played.

Crash safety: stdlib ``wave`` rewrites the header's two sizes after every
``writeframes``, and each write is flushed to the operating system, so a
process that is killed (not a machine that loses power: there is no fsync)
leaves a file whose header matches the samples in it. A flush per 20 ms chunk
is one small write system call, nothing next to the audio's own pace.
"""

from __future__ import annotations

import wave
from pathlib import Path
from typing import BinaryIO

from device.audio.ports import MODEL_AUDIO_RATE, SAMPLE_BYTES, AudioError


class WavLoudspeaker:
    """A ``Loudspeaker`` that records PCM16 mono at ``rate`` into ``path``."""

    def __init__(self, path: Path, rate: int = MODEL_AUDIO_RATE) -> None:
        if rate <= 0:
            raise AudioError(f"{path}: a sample rate must be positive, not {rate}")
        self._path = path
        self._rate = rate
        self._file: BinaryIO | None = None
        self._wav: wave.Wave_write | None = None
        self.frames_written = 0

    @property
    def name(self) -> str:
        return str(self._path)

    @property
    def rate(self) -> int:
        return self._rate

    @property
    def paces_itself(self) -> bool:
        return False

    def open(self) -> None:
        if self._wav is not None:
            return
        try:
            file = self._path.open("wb")
        except OSError as exc:
            raise AudioError(f"{self._path}: cannot be written ({exc.strerror or exc})") from None
        wav = wave.open(file, "wb")  # noqa: SIM115 (kept open until close())
        wav.setnchannels(1)
        wav.setsampwidth(SAMPLE_BYTES)
        wav.setframerate(self._rate)
        try:
            # Writes the header now, so even a file that never gets audio is a valid WAV.
            wav.writeframes(b"")
            file.flush()
        except OSError as exc:
            file.close()
            raise AudioError(f"{self._path}: cannot be written ({exc.strerror or exc})") from None
        self._file, self._wav = file, wav

    def write(self, pcm: bytes) -> None:
        if self._wav is None or self._file is None:
            raise AudioError(f"{self._path}: written to before it was opened")
        if len(pcm) % SAMPLE_BYTES:
            raise AudioError(f"{self._path}: {len(pcm)} bytes is not a whole number of samples")
        try:
            self._wav.writeframes(pcm)  # also patches the header's sizes
            self._file.flush()
        except OSError as exc:
            raise AudioError(f"{self._path}: writing failed ({exc.strerror or exc})") from None
        self.frames_written += len(pcm) // SAMPLE_BYTES

    def close(self) -> None:
        wav, file = self._wav, self._file
        self._wav = self._file = None
        if wav is None or file is None:
            return
        try:
            try:
                wav.close()
            finally:
                # On a full disk this fails too (what is still buffered), after
                # closing the descriptor: said like the first failure, not raised past it.
                file.close()
        except OSError as exc:
            raise AudioError(f"{self._path}: closing failed ({exc.strerror or exc})") from None


__all__ = ["WavLoudspeaker"]
