"""A WAV file's header, read and checked before its samples are: what the file says it holds.

Everything after depends on these numbers: a header saying 1 Hz had the converter
make 16,000 samples of each one (3.85 GB from a 200 KB file), one saying 0 channels
or 0 bits divides by zero. So each is checked against what a recording can be, and
the samples are read only where the file has them.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import BinaryIO

from device.audio.ports import AudioError

MIN_RATE = 8_000  # telephone speech
MAX_RATE = 192_000  # studio recorders
MAX_CHANNELS = 8
MAX_SECONDS = 3600  # an hour said as the microphone; it is held converted (115 MB)
CONVERT = "convert it with: ffmpeg -i IN -ac 1 -ar 16000 -c:a pcm_s16le OUT.wav"

_PCM = 0x0001
_EXTENSIBLE = 0xFFFE
# WAV format tags that are not integer PCM, named so the error says what the file is.
_FORMATS = {
    0x0002: "Microsoft ADPCM",
    0x0003: "32/64-bit float",
    0x0006: "A-law",
    0x0007: "µ-law",
    0x0011: "IMA ADPCM",
    0x0055: "MP3",
}
_MAX_CHUNKS = 64  # chunks looked through for fmt and data (LIST, fact, bext... come first)


@dataclass(frozen=True)
class WavFormat:
    """Integer PCM: ``channels`` interleaved samples of ``width`` bytes, ``rate`` a second;
    ``frames`` of them start at byte ``data_offset``."""

    channels: int
    width: int
    rate: int
    data_offset: int
    frames: int

    @property
    def frame_bytes(self) -> int:
        return self.channels * self.width

    @property
    def seconds(self) -> float:
        return self.frames / self.rate


def read_header(file: BinaryIO, size: int) -> WavFormat:
    """The checked format of the WAV file open as ``file`` (``size`` bytes long), left
    at its first sample; ``AudioError`` says what is wrong, without the path."""
    head = file.read(12)
    if len(head) < 12 or head[:4] != b"RIFF" or head[8:12] != b"WAVE":
        raise AudioError("not a WAV file (no RIFF/WAVE header)")
    fmt: bytes | None = None
    for _ in range(_MAX_CHUNKS):
        chunk = file.read(8)
        if len(chunk) < 8:
            break
        kind, length = chunk[:4], int.from_bytes(chunk[4:], "little")
        if kind == b"fmt ":
            fmt = file.read(min(length, 40))
            if len(fmt) < min(length, 16):
                break
            file.seek(length - len(fmt) + length % 2, 1)
        elif kind == b"data":
            if fmt is None:
                raise AudioError("a broken WAV header (the samples come before their format)")
            return _format(fmt, file.tell(), length, size)
        else:
            file.seek(length + length % 2, 1)  # chunks are padded to an even length
    if fmt is None:
        raise AudioError("a truncated or broken WAV header (no format chunk)")
    if len(fmt) < 16:
        raise AudioError("a truncated WAV header (its format chunk is cut short)")
    raise AudioError("a truncated WAV file (no samples chunk)")


def _format(fmt: bytes, offset: int, claimed: int, size: int) -> WavFormat:
    if len(fmt) < 16:
        raise AudioError("a truncated WAV header (its format chunk is cut short)")
    tag, channels, rate, _, align, bits = struct.unpack("<HHIIHH", fmt[:16])
    if tag == _EXTENSIBLE and len(fmt) >= 26:
        tag = int.from_bytes(fmt[24:26], "little")  # the sub-format GUID's first two bytes
    if tag != _PCM:
        name = f"{_FORMATS[tag]} WAV" if tag in _FORMATS else f"WAV format {tag:#06x}"
        raise AudioError(f"{name} is not supported (integer PCM only); {CONVERT}")
    if not 1 <= channels <= MAX_CHANNELS:
        raise AudioError(f"a broken WAV header: {channels} channels (1 to {MAX_CHANNELS} are read)")
    if bits not in (8, 16, 24, 32):
        raise AudioError(
            f"a broken WAV header: {bits}-bit samples (8, 16, 24 or 32-bit are read); {CONVERT}"
        )
    if not MIN_RATE <= rate <= MAX_RATE:
        raise AudioError(
            f"a broken WAV header: {rate} Hz ({MIN_RATE} to {MAX_RATE} Hz are read); {CONVERT}"
        )
    width = bits // 8
    if align != channels * width:
        raise AudioError(
            f"a broken WAV header: {align} bytes a frame for {channels} channels of {bits} bits"
        )
    # A recording cut short (or one whose writer never wrote the size) has fewer samples
    # than its header says: only those present are read.
    present = max(0, min(claimed, size - offset))
    found = WavFormat(channels, width, rate, offset, present // (channels * width))
    if found.seconds > MAX_SECONDS:
        raise AudioError(
            f"{found.seconds / 60:.0f} minutes of audio, over the limit of "
            f"{MAX_SECONDS // 60} (cut it shorter)"
        )
    return found


__all__ = ["CONVERT", "MAX_RATE", "MAX_SECONDS", "MIN_RATE", "WavFormat", "read_header"]
