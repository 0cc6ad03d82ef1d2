"""What the device's voice is made of: the audio formats, and the two ports.

A ``Microphone`` gives what is said to the device, a ``Loudspeaker`` plays what the
device says. Each has a device form (sounddevice over PortAudio) and a file form (a
WAV replayed as if spoken, a WAV written with exactly what was played), so a replay
and a test hear and say the same as a kiosk does. The session only ever sees
``audio/pcm;rate=16000`` chunks going in and model audio coming out.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

# What Gemini Live takes in and gives out: 16-bit little-endian mono PCM.
MIC_RATE = 16_000
MIC_MIME = f"audio/pcm;rate={MIC_RATE}"
MODEL_AUDIO_RATE = 24_000  # what Live models speak at (when the mime type does not say)
SAMPLE_BYTES = 2  # PCM16
CHUNK_MS = 20  # one microphone chunk: 20-40 ms is what Live expects


class AudioError(Exception):
    """An audio device or file cannot be used (one line: what and why)."""


class Microphone(Protocol):
    """What is said to the device, as 16 kHz mono PCM16 chunks of ``CHUNK_MS``."""

    @property
    def name(self) -> str:
        """The device's or file's name, for the console and the log."""
        ...

    def chunks(self) -> AsyncIterator[bytes]:
        """Chunks as they are spoken (a file: at real-time pace); ends when a file ends.

        Raises ``AudioError`` when the device or file cannot be opened or is lost.
        """
        ...


class Loudspeaker(Protocol):
    """Where played samples go (PCM16 mono at ``rate``); ``write`` is called from a thread."""

    @property
    def name(self) -> str: ...

    @property
    def rate(self) -> int: ...

    @property
    def paces_itself(self) -> bool:
        """True for a device (``write`` blocks until it has room); a file is paced for it."""
        ...

    def open(self) -> None:
        """Raises ``AudioError``."""
        ...

    def write(self, pcm: bytes) -> None:
        """Play (or record) these samples; raises ``AudioError`` when the device is lost."""
        ...

    def close(self) -> None: ...


def pcm_rate(mime_type: str, default: int = MODEL_AUDIO_RATE) -> int:
    """The sample rate an ``audio/pcm;rate=N`` mime type names (``default`` when it names none)."""
    for param in mime_type.split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "rate":
            try:
                rate = int(value.strip())
            except ValueError:
                return default
            return rate if rate > 0 else default
    return default


__all__ = [
    "CHUNK_MS",
    "MIC_MIME",
    "MIC_RATE",
    "MODEL_AUDIO_RATE",
    "SAMPLE_BYTES",
    "AudioError",
    "Loudspeaker",
    "Microphone",
    "pcm_rate",
]
