"""espeak-ng as the device's offline voice."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from device.audio.ports import AudioError
from device.audio.tts import Espeak
from tests.audio.pulse import rms

needs_espeak = pytest.mark.skipif(
    not Espeak().available(), reason="espeak-ng is not installed (Debian: espeak-ng)"
)


@needs_espeak
@pytest.mark.anyio
async def test_hello_is_a_short_clip_of_speech() -> None:
    pcm, rate = await Espeak().synthesize("hello")
    assert 8_000 <= rate <= 48_000
    seconds = len(pcm) / 2 / rate
    assert 0.2 < seconds < 3
    assert rms(pcm) > 100


@needs_espeak
@pytest.mark.anyio
async def test_text_that_looks_like_an_option_is_spoken_and_no_file_is_left() -> None:
    before = _clips()
    pcm, _ = await Espeak(speed_wpm=220).synthesize("-w /tmp/x hello")
    assert pcm
    assert _clips() == before


def _clips() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob("lookout-say-*"))


@needs_espeak
@pytest.mark.anyio
async def test_an_unknown_voice_is_one_line() -> None:
    with pytest.raises(AudioError) as caught:
        # Not "no-such-voice": espeak-ng reads that as Norwegian with a variant.
        await Espeak(voice="qqqvoice").synthesize("hello")
    assert str(caught.value).startswith("espeak-ng failed: ")
    assert "\n" not in str(caught.value)


@pytest.mark.anyio
async def test_a_missing_binary_is_unavailable_and_says_what_to_install() -> None:
    voice = Espeak(binary="espeak-ng-not-installed")
    assert not voice.available()
    with pytest.raises(AudioError, match="not installed"):
        await voice.synthesize("hello")


@pytest.mark.anyio
async def test_nothing_to_say_is_an_error_not_a_silent_clip() -> None:
    with pytest.raises(AudioError, match="empty"):
        await Espeak().synthesize("  \n ")
