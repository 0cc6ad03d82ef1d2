"""A WAV file as the microphone (said at real-time pace) and as the loudspeaker."""

from __future__ import annotations

import os
import wave
from pathlib import Path

import anyio
import pytest

from device.audio.ports import MIC_RATE, AudioError, Loudspeaker, Microphone
from device.audio.wav_mic import WavMicrophone, read_wav
from device.audio.wav_out import WavLoudspeaker
from live.util.clock import FakeClock
from tests.audio.wavs import read_wav as read_frames
from tests.audio.wavs import sine, write_float_wav, write_wav


async def _say(mic: WavMicrophone, clock: FakeClock) -> tuple[list[bytes], list[float], float]:
    """Every chunk and when it came, and when the file ended, letting virtual time run."""
    chunks: list[bytes] = []
    times: list[float] = []
    ended: list[float] = []

    async def listen() -> None:
        async for chunk in mic.chunks():
            chunks.append(chunk)
            times.append(clock.now())
        ended.append(clock.now())

    async with anyio.create_task_group() as tg:
        tg.start_soon(listen)
        while not ended:
            await clock.run_for(0.1)
    return chunks, times, ended[0]


@pytest.mark.anyio
async def test_a_wav_is_said_one_chunk_every_20_ms_as_if_spoken(tmp_path: Path) -> None:
    path = write_wav(tmp_path / "hello.wav", [sine(220, 44_100, 1.01)], 44_100)
    clock = FakeClock(100.0)
    mic = WavMicrophone(path, clock)
    mic_port: Microphone = mic  # what the session sees

    chunks, times, ended = await _say(mic, clock)

    assert mic_port.name.endswith("hello.wav")
    assert mic.duration_s == pytest.approx(1.01)
    assert len(chunks) == 51  # 50 whole chunks, and the last 10 ms
    assert [len(c) for c in chunks[:-1]] == [640] * 50 and len(chunks[-1]) == 320
    assert times == pytest.approx([100.0 + n * 0.02 for n in range(51)])
    assert ended == pytest.approx(100.0 + 1.01)  # ends once the last sample was said
    assert b"".join(chunks) == read_wav(path, MIC_RATE)


@pytest.mark.anyio
async def test_a_slow_listener_catches_up_instead_of_drifting(tmp_path: Path) -> None:
    path = write_wav(tmp_path / "a.wav", [sine(220, 16_000, 0.2)], 16_000)
    clock = FakeClock()
    mic = WavMicrophone(path, clock, chunk_ms=40)
    times: list[float] = []

    async def listen() -> None:
        async for _ in mic.chunks():
            times.append(clock.now())
            if len(times) == 1:
                await clock.sleep(0.1)  # busy for two and a half chunks

    async with anyio.create_task_group() as tg:
        tg.start_soon(listen)
        await clock.run_for(1.0)
    assert times == pytest.approx([0.0, 0.1, 0.1, 0.12, 0.16])


def test_a_missing_file_is_said_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(AudioError, match=r"nope\.wav: no such file$"):
        WavMicrophone(tmp_path / "nope.wav", FakeClock())


def test_a_file_that_is_not_a_wav_is_said(tmp_path: Path) -> None:
    path = tmp_path / "song.wav"
    path.write_bytes(b"ID3\x03" + bytes(200))
    with pytest.raises(AudioError, match="not a WAV file"):
        WavMicrophone(path, FakeClock())


def test_a_float_wav_is_named_and_a_conversion_suggested(tmp_path: Path) -> None:
    path = write_float_wav(tmp_path / "float.wav", sine(220, 16_000, 0.1), 16_000)
    with pytest.raises(AudioError) as caught:
        WavMicrophone(path, FakeClock())
    message = str(caught.value)
    assert "float WAV is not supported" in message and "pcm_s16le" in message
    assert "\n" not in message


def test_a_directory_is_not_a_wav(tmp_path: Path) -> None:
    with pytest.raises(AudioError, match="directory"):
        WavMicrophone(tmp_path, FakeClock())


def test_the_loudspeaker_file_holds_exactly_what_was_written(tmp_path: Path) -> None:
    out = WavLoudspeaker(tmp_path / "said.wav", rate=24_000)
    port: Loudspeaker = out
    assert port.rate == 24_000 and not port.paces_itself
    out.open()
    pieces = [bytes([n % 256, n // 256]) * 480 for n in range(10)]
    for piece in pieces:
        out.write(piece)
    out.close()
    out.close()  # a second close is harmless
    frames, rate, channels, width = read_frames(tmp_path / "said.wav")
    assert (frames, rate, channels, width) == (b"".join(pieces), 24_000, 1, 2)


def test_the_file_is_readable_while_still_being_written(tmp_path: Path) -> None:
    # What a killed process leaves: the header already matches the samples so far.
    path = tmp_path / "live.wav"
    out = WavLoudspeaker(path, rate=16_000)
    out.open()
    assert read_frames(path)[0] == b""
    out.write(b"\x01\x00" * 320)
    out.write(b"\x02\x00" * 320)
    with wave.open(str(path), "rb") as wav:
        assert wav.getnframes() == 640
    assert read_frames(path)[0] == b"\x01\x00" * 320 + b"\x02\x00" * 320
    out.close()


def test_an_unwritable_path_is_said_in_one_line(tmp_path: Path) -> None:
    out = WavLoudspeaker(tmp_path / "no" / "such" / "dir" / "out.wav")
    with pytest.raises(AudioError, match=r"out\.wav: cannot be written \(No such file"):
        out.open()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_a_read_only_directory_is_said(tmp_path: Path) -> None:
    tmp_path.chmod(0o500)
    try:
        with pytest.raises(AudioError, match="Permission denied"):
            WavLoudspeaker(tmp_path / "out.wav").open()
    finally:
        tmp_path.chmod(0o700)
