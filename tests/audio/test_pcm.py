"""The conversions a WAV file and the model's voice go through."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from device.audio.pcm import (
    PcmResampler,
    decode_pcm,
    decode_pcm16,
    encode_pcm16,
    resample_pcm16,
    to_mono_pcm16,
)
from device.audio.ports import AudioError
from device.audio.wav_mic import read_wav
from tests.audio.wavs import dominant_hz, encode, sine, write_wav


def test_stereo_44k1_becomes_16k_mono_of_the_same_length_and_pitch(tmp_path: Path) -> None:
    left, right = sine(440, 44_100, 1.5), sine(440, 44_100, 1.5, amplitude=0.3)
    path = write_wav(tmp_path / "stereo.wav", [left, right], 44_100)

    pcm = read_wav(path, 16_000)

    samples = decode_pcm16(pcm)
    assert len(samples) == 24_000  # 1.5 s at 16 kHz
    assert dominant_hz(samples, 16_000) == pytest.approx(440, abs=2)
    # The mix is the mean of both channels' amplitudes, not their sum.
    assert np.abs(samples[1000:-1000]).max() == pytest.approx(0.4, abs=0.01)


def test_a_tone_above_the_new_nyquist_is_filtered_not_folded_back() -> None:
    # 7.5 kHz at 16 kHz is fine; 10 kHz would alias to 6 kHz without the low-pass.
    tone = encode_pcm16(sine(10_000, 48_000, 0.5))
    down = decode_pcm16(resample_pcm16(tone, 48_000, 16_000))
    assert np.abs(down[200:-200]).max() < 0.05


@pytest.mark.parametrize("width", [1, 2, 3, 4])
def test_every_integer_width_decodes_to_the_same_tone(width: int) -> None:
    tone = sine(1000, 16_000, 0.1)
    decoded = decode_pcm(encode(tone, width), width)
    tolerance = 1 / 100 if width == 1 else 1 / 30_000
    assert np.abs(decoded - tone).max() < tolerance


@pytest.mark.parametrize("width", [1, 3, 4])
def test_wav_files_of_other_widths_read_as_16_bit(tmp_path: Path, width: int) -> None:
    path = write_wav(tmp_path / f"w{width}.wav", [sine(300, 16_000, 0.2)], 16_000, width)
    pcm = read_wav(path, 16_000)
    expected = encode_pcm16(sine(300, 16_000, 0.2))
    assert len(pcm) == len(expected)
    diff = np.abs(decode_pcm16(pcm) - decode_pcm16(expected)).max()
    assert diff < (1 / 100 if width == 1 else 1 / 16_000)


def test_pcm16_at_its_own_rate_is_kept_bit_for_bit() -> None:
    pcm = encode_pcm16(np.random.default_rng(1).uniform(-1, 1, 4000))
    assert resample_pcm16(pcm, 24_000, 24_000) == pcm
    assert to_mono_pcm16(decode_pcm16(pcm), 1, 16_000, 16_000) == pcm


@pytest.mark.parametrize(("src", "dst"), [(24_000, 48_000), (22_050, 48_000), (24_000, 16_000)])
def test_a_stream_resampled_piece_by_piece_equals_the_whole(src: int, dst: int) -> None:
    pcm = encode_pcm16(sine(440, src, 0.5))
    whole = decode_pcm16(resample_pcm16(pcm, src, dst))
    resampler = PcmResampler(src, dst)
    pieces, i = b"", 0
    for size in [481, 960, 2, 77, 1600] * 20:  # odd sizes split samples in half
        pieces += resampler.push(pcm[i : i + size])
        i += size
    pieces += resampler.push(pcm[i:]) + resampler.flush()
    streamed = decode_pcm16(pieces)
    assert abs(len(streamed) - len(whole)) <= 1
    n = min(len(whole), len(streamed))
    assert np.abs(streamed[:n] - whole[:n]).max() <= 2 / 32768
    assert dominant_hz(streamed, dst) == pytest.approx(440, abs=3)


def test_24k_doubles_to_48k_with_the_original_samples_in_place() -> None:
    pcm = encode_pcm16(sine(440, 24_000, 0.1))
    up = decode_pcm16(resample_pcm16(pcm, 24_000, 48_000))
    assert len(up) == 2 * len(pcm) // 2
    assert np.array_equal(up[::2], decode_pcm16(pcm))


def test_a_rate_of_zero_is_said_in_one_line() -> None:
    with pytest.raises(AudioError, match="positive"):
        resample_pcm16(b"\0\0", 0, 16_000)
