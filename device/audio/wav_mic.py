"""A WAV file replayed as a microphone: what it holds, said at the pace it was spoken.

The file is read and converted when the microphone is made, so a wrong path or
an unusable file is said at start-up, in one line, before a session connects.
"""

from __future__ import annotations

import struct
import wave
from collections.abc import AsyncIterator
from pathlib import Path

from device.audio.pcm import decode_pcm, to_mono_pcm16
from device.audio.ports import CHUNK_MS, MIC_RATE, SAMPLE_BYTES, AudioError
from live.clock import Clock

# WAV format tags wave cannot read, named so the error says what the file is.
_FORMATS = {
    0x0002: "Microsoft ADPCM",
    0x0003: "32/64-bit float",
    0x0006: "A-law",
    0x0007: "µ-law",
    0x0011: "IMA ADPCM",
    0x0055: "MP3",
}
_EXTENSIBLE = 0xFFFE
_CONVERT = "convert it with: ffmpeg -i IN -ac 1 -ar 16000 -c:a pcm_s16le OUT.wav"


class WavMicrophone:
    """A ``Microphone`` that says a WAV file (PCM 8/16/24/32-bit, any rate and channels)."""

    def __init__(self, path: Path, clock: Clock, *, chunk_ms: int = CHUNK_MS) -> None:
        if chunk_ms <= 0:
            raise AudioError(f"a microphone chunk must last at least 1 ms, not {chunk_ms}")
        self._path = path
        self._clock = clock
        self._chunk_s = chunk_ms / 1000
        self._chunk_bytes = MIC_RATE * chunk_ms // 1000 * SAMPLE_BYTES
        self.pcm = read_wav(path, MIC_RATE)

    @property
    def name(self) -> str:
        return str(self._path)

    @property
    def duration_s(self) -> float:
        return len(self.pcm) / SAMPLE_BYTES / MIC_RATE

    async def chunks(self) -> AsyncIterator[bytes]:
        """Chunk n at start + n * chunk_ms; ends once the last sample has been said.

        Each release is due on an absolute schedule, so time lost to a slow
        consumer is made up rather than accumulated.
        """
        start = self._clock.now()
        for n, offset in enumerate(range(0, len(self.pcm), self._chunk_bytes)):
            await self._clock.sleep(start + n * self._chunk_s - self._clock.now())
            yield self.pcm[offset : offset + self._chunk_bytes]
        await self._clock.sleep(start + self.duration_s - self._clock.now())


def read_wav(path: Path, rate: int) -> bytes:
    """A WAV file's samples as mono PCM16 at ``rate``; ``AudioError`` says what is wrong."""
    try:
        with wave.open(str(path), "rb") as wav:
            channels = wav.getnchannels()
            width = wav.getsampwidth()
            file_rate = wav.getframerate()
            frames = wav.readframes(wav.getnframes())
    except FileNotFoundError:
        raise AudioError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise AudioError(f"{path}: is a directory, not a WAV file") from None
    except OSError as exc:
        raise AudioError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except (wave.Error, EOFError, struct.error) as exc:
        raise AudioError(f"{path}: {_why_unreadable(path, exc)}") from None
    if width not in (1, 2, 3, 4):
        raise AudioError(f"{path}: {width * 8}-bit samples are not supported; {_CONVERT}")
    if file_rate <= 0 or channels <= 0:
        raise AudioError(f"{path}: a broken header ({channels} channels at {file_rate} Hz)")
    samples = decode_pcm(frames, width)
    return to_mono_pcm16(samples, channels, file_rate, rate)


def _why_unreadable(path: Path, exc: Exception) -> str:
    tag = _format_tag(path)
    if tag is None:
        return f"not a WAV file ({exc})"
    if tag == _EXTENSIBLE:
        # Python 3.12's wave reads extensible PCM; 3.11's does not.
        return f"a WAVE_FORMAT_EXTENSIBLE file this Python cannot read; {_CONVERT}"
    if tag in _FORMATS:
        return f"{_FORMATS[tag]} WAV is not supported (integer PCM only); {_CONVERT}"
    return f"WAV format {tag:#06x} is not supported (integer PCM only); {_CONVERT}"


def _format_tag(path: Path) -> int | None:
    """The format tag in a RIFF/WAVE file's ``fmt `` chunk; None when it is not one."""
    try:
        with path.open("rb") as f:
            head = f.read(12)
            if len(head) < 12 or head[:4] != b"RIFF" or head[8:12] != b"WAVE":
                return None
            while True:
                chunk = f.read(8)
                if len(chunk) < 8:
                    return None
                size = int.from_bytes(chunk[4:8], "little")
                if chunk[:4] == b"fmt ":
                    fmt = f.read(2)
                    return int.from_bytes(fmt, "little") if len(fmt) == 2 else None
                f.seek(size + size % 2, 1)  # chunks are padded to an even length
    except OSError:
        return None


__all__ = ["WavMicrophone", "read_wav"]
