"""A WAV file replayed as a microphone: what it holds, said at the pace it was spoken.

The file is read and converted when the microphone is made, so a wrong path or
an unusable file is said at start-up, in one line, before a session connects.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import BinaryIO

from device.audio.pcm import PcmResampler, decode_pcm, encode_pcm16, to_mono
from device.audio.ports import CHUNK_MS, MIC_RATE, SAMPLE_BYTES, AudioError
from device.audio.wav_header import WavFormat, read_header
from device.files.input_file import WAV_MAX, InputRefused, open_input
from live.util.clock import Clock


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
    """A WAV file's samples as mono PCM16 at ``rate``; ``AudioError`` says what is wrong.

    Read and converted a second at a time: what is held is the result (at most an hour
    at ``rate``), never the whole file as floats.
    """
    try:
        with open_input(path, WAV_MAX) as file:
            found = read_header(file, os.fstat(file.fileno()).st_size)
            return _converted(file, found, rate)
    except AudioError as exc:
        raise AudioError(f"{path}: {exc}") from None
    except FileNotFoundError:
        raise AudioError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise AudioError(f"{path}: is a directory, not a WAV file") from None
    except InputRefused as exc:
        raise AudioError(f"{path}: {exc.strerror}") from None
    except OSError as exc:
        raise AudioError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def _converted(file: BinaryIO, found: WavFormat, rate: int) -> bytes:
    resampler = PcmResampler(found.rate, rate)
    out: list[bytes] = []
    left = found.frames
    while left > 0:
        block = file.read(min(left, found.rate) * found.frame_bytes)
        if len(block) < found.frame_bytes:
            break  # the file shrank while being read
        left -= len(block) // found.frame_bytes
        mono = to_mono(decode_pcm(block, found.width), found.channels)
        out.append(encode_pcm16(resampler.push_samples(mono)))
    out.append(encode_pcm16(resampler.flush_samples()))
    pcm = b"".join(out)
    # As long as a whole-recording resample makes it (the stream may differ by a sample).
    length = round((found.frames - left) * rate / found.rate) * SAMPLE_BYTES
    return pcm[:length] + bytes(max(0, length - len(pcm)))


__all__ = ["WavMicrophone", "read_wav"]
