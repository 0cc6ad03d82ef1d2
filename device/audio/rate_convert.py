"""A small streaming resampler for a microphone that cannot open at 16 kHz.

Most devices (and ALSA's plug and pulse layers) take 16 kHz themselves; a raw USB or
HDMI device may only run at 44.1 or 48 kHz. scipy is no dependency of Lookout, so this
is numpy only: a windowed-sinc low-pass (when going down, so what is above the new
Nyquist frequency does not fold back into speech) and linear interpolation. That is
plenty for speech sent to a speech model; it is not a hi-fi converter.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

_TAPS = 63  # odd: a symmetric filter with a whole-sample delay


class StreamResampler:
    """PCM16 mono from ``source_rate`` to ``target_rate``, block by block, with no seams."""

    def __init__(self, source_rate: int, target_rate: int) -> None:
        if source_rate <= 0 or target_rate <= 0:
            raise ValueError(f"sample rates must be positive ({source_rate}, {target_rate})")
        self.source_rate = source_rate
        self.target_rate = target_rate
        self._step = source_rate / target_rate  # input samples per output sample
        self._taps: npt.NDArray[np.float64] | None = None
        if target_rate < source_rate:
            cutoff = 0.45 * target_rate / source_rate  # cycles per input sample, below Nyquist
            n = np.arange(_TAPS) - (_TAPS - 1) / 2
            taps = 2 * cutoff * np.sinc(2 * cutoff * n) * np.hamming(_TAPS)
            self._taps = taps / taps.sum()
        self._tail = np.zeros(_TAPS - 1)  # the filter's memory of the previous block
        self._last = 0.0  # the previous block's last (filtered) sample
        self._pos = 1.0  # next output position, where index 0 is ``_last``

    def feed(self, pcm: bytes) -> bytes:
        """The converted samples this block completes (a few more or fewer than a ratio's worth)."""
        if self.source_rate == self.target_rate:
            return pcm
        x = np.frombuffer(pcm, dtype="<i2").astype(np.float64)
        if x.size == 0:
            return b""
        if self._taps is not None:
            padded = np.concatenate([self._tail, x])
            self._tail = padded[-(_TAPS - 1) :]
            x = np.convolve(padded, self._taps, mode="valid")
        signal = np.concatenate([[self._last], x])
        end = signal.size - 1
        count = 0 if self._pos > end else int((end - self._pos) // self._step) + 1
        positions = self._pos + self._step * np.arange(count)
        left = np.floor(positions).astype(np.int64)
        frac = positions - left
        right = np.minimum(left + 1, end)
        out = signal[left] * (1 - frac) + signal[right] * frac
        self._pos = self._pos + self._step * count - end
        self._last = float(signal[-1])
        return bytes(np.clip(np.rint(out), -32768, 32767).astype("<i2").tobytes())


__all__ = ["StreamResampler"]
