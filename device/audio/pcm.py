"""Sample conversions: PCM of any integer width in, 16-bit mono at the rate wanted out.

Samples travel as float64 in [-1, 1) between decoding and encoding, so that
mixing and resampling never overflow and PCM16 that needs no resampling comes
back bit for bit.

The resampler is linear interpolation, preceded by a windowed-sinc low-pass
when the rate goes down. That is enough for speech into a speech model and out
of a kiosk's loudspeaker, and it keeps numpy the only dependency (no scipy on a
Pi); linear interpolation alone would fold everything above the new Nyquist
back into the band as noise, which is why downsampling filters first.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from device.audio.ports import SAMPLE_BYTES, AudioError

Samples = npt.NDArray[np.float64]

_TAPS = 63  # odd, so the filter has a whole-sample delay; ~1.3 ms at 24 kHz
_PCM16_MAX = 32767 / 32768


def decode_pcm(frames: bytes, sample_width: int) -> Samples:
    """Interleaved little-endian integer PCM (WAV's 8-bit is unsigned) as floats."""
    usable = len(frames) - len(frames) % sample_width  # a truncated file's last half-sample
    raw = frames[:usable]
    if sample_width == 1:
        return (np.frombuffer(raw, dtype=np.uint8).astype(np.float64) - 128.0) / 128.0
    if sample_width == 2:
        return np.frombuffer(raw, dtype="<i2").astype(np.float64) / 32768.0
    if sample_width == 3:
        # numpy has no 24-bit type: assemble each sample from its three bytes.
        b = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 3).astype(np.int32)
        value = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
        value = (value ^ 0x800000) - 0x800000  # sign-extend bit 23
        return value.astype(np.float64) / float(1 << 23)
    if sample_width == 4:
        return np.frombuffer(raw, dtype="<i4").astype(np.float64) / float(1 << 31)
    raise AudioError(f"{sample_width * 8}-bit samples are not supported (8, 16, 24 or 32-bit)")


def to_mono(samples: Samples, channels: int) -> Samples:
    """Interleaved frames mixed down to one channel (the mean, so it cannot clip)."""
    if channels < 1:
        raise AudioError(f"a recording needs at least one channel, not {channels}")
    if channels == 1:
        return samples
    frames = len(samples) // channels
    mixed: Samples = samples[: frames * channels].reshape(frames, channels).mean(axis=1)
    return mixed


def low_pass(samples: Samples, from_rate: int, to_rate: int) -> Samples:
    """Removes what ``to_rate`` cannot carry, keeping the length and timing."""
    return np.convolve(samples, _low_pass_taps(from_rate, to_rate), mode="same")


def _low_pass_taps(from_rate: int, to_rate: int) -> Samples:
    # Cut a little below the new Nyquist so the Hann window's transition band
    # is over before aliasing starts.
    cutoff = 0.5 * 0.9 * to_rate / from_rate  # cycles per input sample
    n = np.arange(_TAPS) - (_TAPS - 1) / 2
    taps = 2 * cutoff * np.sinc(2 * cutoff * n) * np.hanning(_TAPS)
    result: Samples = taps / taps.sum()  # unity gain at DC
    return result


def interpolate(samples: Samples, from_rate: int, to_rate: int) -> Samples:
    """Linear interpolation onto the new rate's sample times (no filtering)."""
    count = round(len(samples) * to_rate / from_rate)
    if count == 0 or len(samples) == 0:
        return np.zeros(0)
    times = np.arange(count) * (from_rate / to_rate)
    result: Samples = np.interp(times, np.arange(len(samples)), samples)
    return result


def resample(samples: Samples, from_rate: int, to_rate: int) -> Samples:
    """A whole recording at ``to_rate``; same length in time (to the nearest sample)."""
    _check_rates(from_rate, to_rate)
    if from_rate == to_rate:
        return samples
    if to_rate < from_rate:
        samples = low_pass(samples, from_rate, to_rate)
    return interpolate(samples, from_rate, to_rate)


def encode_pcm16(samples: Samples) -> bytes:
    """Floats as 16-bit little-endian PCM, clipped rather than wrapped."""
    clipped = np.clip(samples, -1.0, _PCM16_MAX)
    return np.round(clipped * 32768.0).astype("<i2").tobytes()


def decode_pcm16(pcm: bytes) -> Samples:
    return decode_pcm(pcm, SAMPLE_BYTES)


def to_mono_pcm16(samples: Samples, channels: int, from_rate: int, to_rate: int) -> bytes:
    """Decoded interleaved samples as mono PCM16 at ``to_rate`` (a WAV to the mic's format)."""
    return encode_pcm16(resample(to_mono(samples, channels), from_rate, to_rate))


def resample_pcm16(pcm: bytes, from_rate: int, to_rate: int) -> bytes:
    """One piece of mono PCM16 at another rate; the same bytes when the rates match."""
    _check_rates(from_rate, to_rate)
    if from_rate == to_rate:
        return pcm
    return encode_pcm16(resample(decode_pcm16(pcm), from_rate, to_rate))


class PcmResampler:
    """Resamples a stream of mono PCM16 pieces as if they were one recording.

    Resampling each piece on its own would restart the interpolation (and the
    filter) at every boundary: a small click every 20 ms. This keeps the last
    input sample, the position of the next output sample between pieces and,
    when downsampling, the filter's history. The filter delays the stream by
    ``(_TAPS - 1) / 2`` input samples; ``flush`` gives that tail back at the end.
    """

    def __init__(self, from_rate: int, to_rate: int) -> None:
        _check_rates(from_rate, to_rate)
        self.from_rate = from_rate
        self.to_rate = to_rate
        self._step = from_rate / to_rate  # input samples per output sample
        self._taps = _low_pass_taps(from_rate, to_rate) if to_rate < from_rate else None
        self._history = np.zeros(_TAPS - 1)
        self._held = np.zeros(0)  # the last input sample, the next piece interpolates from it
        self._next = 0.0  # the next output's time, in input samples from _held's start
        self._odd = b""  # half a sample, when a piece had an odd length
        self._skip = (_TAPS - 1) // 2  # the filter's delay, still to drop at the start

    def push(self, pcm: bytes) -> bytes:
        pcm = self._odd + pcm
        whole = len(pcm) - len(pcm) % SAMPLE_BYTES
        self._odd = pcm[whole:]
        if self.from_rate == self.to_rate:
            return pcm[:whole]
        return encode_pcm16(self._push(decode_pcm16(pcm[:whole])))

    def push_samples(self, samples: Samples) -> Samples:
        """``push`` for decoded samples (a file read block by block: no PCM16 in between)."""
        return samples if self.from_rate == self.to_rate else self._push(samples)

    def flush(self) -> bytes:
        """What the filter still holds, and the last sample's share; then starts afresh."""
        return encode_pcm16(self.flush_samples())

    def flush_samples(self) -> Samples:
        """``flush`` as samples."""
        self._odd = b""
        if self.from_rate == self.to_rate:
            return np.zeros(0)
        out = self._push(np.zeros(0 if self._taps is None else (_TAPS - 1) // 2))
        if self._held.size and self._next < 1:
            # The last input sample's own period, as a whole-recording resample would give.
            count = int(np.ceil((1 - self._next) / self._step))
            out = np.concatenate([out, np.full(count, self._held[0])])
        self.reset()
        return out

    def reset(self) -> None:
        """Forgets the stream (barge-in: what comes next is not a continuation)."""
        self._history = np.zeros(_TAPS - 1)
        self._held = np.zeros(0)
        self._next = 0.0
        self._odd = b""
        self._skip = (_TAPS - 1) // 2

    def _push(self, samples: Samples) -> Samples:
        if self._taps is not None and samples.size:  # (numpy's "valid" swaps a short input)
            padded = np.concatenate([self._history, samples])
            self._history = padded[len(padded) - (_TAPS - 1) :]
            samples = np.convolve(padded, self._taps, mode="valid")
            # The stream's first outputs are the filter's delay, fed only by the
            # zero history: dropped so output lines up with input.
            skip = min(self._skip, len(samples))
            self._skip -= skip
            samples = samples[skip:]
        buf = np.concatenate([self._held, samples])
        if buf.size == 0:
            return np.zeros(0)
        last = buf.size - 1
        count = int(np.floor((last - self._next) / self._step)) + 1 if self._next <= last else 0
        times = self._next + np.arange(count) * self._step
        out: Samples = np.interp(times, np.arange(buf.size), buf)
        # Keep the last sample so the next piece interpolates across the boundary.
        self._next = self._next + count * self._step - last
        self._held = buf[last:]
        return out


def _check_rates(from_rate: int, to_rate: int) -> None:
    if from_rate <= 0 or to_rate <= 0:
        raise AudioError(f"a sample rate must be positive ({from_rate} Hz -> {to_rate} Hz)")


__all__ = [
    "PcmResampler",
    "decode_pcm",
    "decode_pcm16",
    "encode_pcm16",
    "interpolate",
    "low_pass",
    "resample",
    "resample_pcm16",
    "to_mono",
    "to_mono_pcm16",
]
