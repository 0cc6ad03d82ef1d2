"""Writing test WAV files: a sine at any rate, width and channel count, and broken ones."""

from __future__ import annotations

import struct
import wave
from pathlib import Path

import numpy as np


def sine(freq: float, rate: int, seconds: float, amplitude: float = 0.5) -> np.ndarray:
    t = np.arange(round(rate * seconds)) / rate
    return amplitude * np.sin(2 * np.pi * freq * t)


def encode(samples: np.ndarray, width: int) -> bytes:
    """Floats in [-1, 1) as WAV integer PCM of ``width`` bytes (8-bit is unsigned)."""
    scale = float(1 << (8 * width - 1))
    ints = np.clip(np.round(samples * scale), -scale, scale - 1).astype(np.int64)
    if width == 1:
        return (ints + 128).astype(np.uint8).tobytes()
    if width == 3:
        u = (ints & 0xFFFFFF).astype(np.uint32)
        triples = np.stack([u & 0xFF, (u >> 8) & 0xFF, (u >> 16) & 0xFF], axis=1)
        return triples.astype(np.uint8).tobytes()
    return ints.astype({2: "<i2", 4: "<i4"}[width]).tobytes()


def write_wav(path: Path, channels: list[np.ndarray], rate: int, width: int = 2) -> Path:
    interleaved = np.stack(channels, axis=1).reshape(-1)
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(len(channels))
        wav.setsampwidth(width)
        wav.setframerate(rate)
        wav.writeframes(encode(interleaved, width))
    return path


def write_float_wav(path: Path, samples: np.ndarray, rate: int) -> Path:
    """A 32-bit float WAV (format tag 3), which ``wave`` cannot read."""
    data = samples.astype("<f4").tobytes()
    fmt = struct.pack("<HHIIHH", 3, 1, rate, rate * 4, 4, 32)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt
    body += b"data" + struct.pack("<I", len(data)) + data
    path.write_bytes(b"RIFF" + struct.pack("<I", len(body)) + body)
    return path


def read_wav(path: Path) -> tuple[bytes, int, int, int]:
    """(frames, rate, channels, width) as stdlib wave reads them."""
    with wave.open(str(path), "rb") as wav:
        frames = wav.readframes(wav.getnframes())
        return frames, wav.getframerate(), wav.getnchannels(), wav.getsampwidth()


def dominant_hz(samples: np.ndarray, rate: int) -> float:
    spectrum = np.abs(np.fft.rfft(samples * np.hanning(len(samples))))
    return float(np.fft.rfftfreq(len(samples), 1 / rate)[int(np.argmax(spectrum))])
