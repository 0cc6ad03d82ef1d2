"""The device's voice: what reaches the loudspeaker, when, and what a barge-in cuts.

Time is virtual (FakeClock). Writes run in a worker thread, so ``pump`` only
moves the clock to the speaker's next due write once the speaker is asleep on
the clock again; that makes every write's virtual time exact.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import numpy as np
import pytest

from device.audio.pcm import decode_pcm16, encode_pcm16
from device.audio.ports import AudioError
from device.audio.speaker import Speaker
from device.audio.wav_out import WavLoudspeaker
from live.util.clock import FakeClock, settle
from tests.audio.wavs import dominant_hz, read_wav, sine

pytestmark = pytest.mark.anyio

GUARD_S = 10.0  # real-time bound on a whole pump: a hang fails instead of stalling the run
CHUNK_24K = 960  # 20 ms of PCM16 at 24 kHz


class TimedWav(WavLoudspeaker):
    """The real WAV loudspeaker, also noting the virtual time of every write."""

    def __init__(self, path: Path, clock: FakeClock, rate: int = 24_000) -> None:
        super().__init__(path, rate)
        self.clock = clock
        self.writes: list[tuple[float, int]] = []

    def write(self, pcm: bytes) -> None:
        super().write(pcm)
        self.writes.append((self.clock.now(), len(pcm)))


class FakeOut:
    """A loudspeaker that keeps what it got, can hold a write, and can break."""

    def __init__(self, *, rate: int = 24_000, fail_on_write: int | None = None) -> None:
        self.name = "fake loudspeaker"
        self.rate = rate
        self.paces_itself = False
        self.got: list[bytes] = []
        self.fail_on_write = fail_on_write
        self.hold_write: int | None = None  # this write waits for ``release``
        self.holding = threading.Event()
        self.release = threading.Event()
        self.closed = 0

    def open(self) -> None:
        pass

    def write(self, pcm: bytes) -> None:
        n = len(self.got) + 1
        if n == self.fail_on_write:
            raise AudioError("fake loudspeaker: the device was unplugged")
        if n == self.hold_write:
            self.holding.set()
            self.release.wait(GUARD_S)
        self.got.append(pcm)

    def close(self) -> None:
        self.closed += 1


def noise(ms: int, rate: int = 24_000, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    return encode_pcm16(rng.uniform(-0.5, 0.5, rate * ms // 1000))


def pieces(pcm: bytes, sizes: list[int]) -> list[bytes]:
    """``pcm`` cut into pieces of the given sizes, round and round, the rest last."""
    out, i, k = [], 0, 0
    while i < len(pcm):
        out.append(pcm[i : i + sizes[k % len(sizes)]])
        i += sizes[k % len(sizes)]
        k += 1
    return out


async def pump(clock: FakeClock, until: Callable[[], bool]) -> None:
    with anyio.fail_after(GUARD_S):
        while True:
            await settle()
            if until():
                return
            deadline = clock.next_deadline()
            if deadline is None:
                await anyio.sleep(0.001)  # a write is in its thread (real time, not asserted)
            else:
                clock.set(deadline)


async def idle(clock: FakeClock, speaker: Speaker, seconds: float) -> None:
    """Lets ``seconds`` of virtual time pass once nothing is being written."""
    await pump(clock, lambda: not speaker._writing)
    await clock.run_for(seconds)
    await pump(clock, lambda: not speaker._writing)


@asynccontextmanager
async def running(speaker: Speaker) -> AsyncIterator[None]:
    async with anyio.create_task_group() as tg:
        tg.start_soon(speaker.run)
        yield
        tg.cancel_scope.cancel()


async def test_the_file_holds_exactly_what_was_fed_at_the_pace_it_was_played(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    out = TimedWav(tmp_path / "said.wav", clock)
    speaker = Speaker(out, clock)
    audio = noise(500)
    async with running(speaker):
        await settle()
        for piece in pieces(audio, [2000, 3998, 2, 1202]):
            speaker.feed(piece, 24_000)
        speaker.end_of_turn()
        await pump(clock, lambda: out.frames_written * 2 == len(audio))
        assert speaker.playing  # the last chunk is still sounding
        clock.advance(0.02)
        assert not speaker.playing
    assert read_wav(tmp_path / "said.wav") == (audio, 24_000, 1, 2)
    assert [t for t, _ in out.writes] == pytest.approx([k * 0.02 for k in range(25)])
    assert {n for _, n in out.writes} == {CHUNK_24K}
    assert speaker.stats.chunks_played == 25 and speaker.stats.bytes_played == len(audio)
    assert speaker.stats.underruns == 0


async def test_playing_starts_once_the_prebuffer_is_full(tmp_path: Path) -> None:
    clock = FakeClock()
    out = TimedWav(tmp_path / "said.wav", clock)
    speaker = Speaker(out, clock, prebuffer_ms=60)
    async with running(speaker):
        for _ in range(2):
            speaker.feed(noise(20), 24_000)
            await idle(clock, speaker, 0.5)
        assert out.writes == [] and speaker.playing  # 40 ms queued, waiting for 60
        speaker.feed(noise(20), 24_000)
        await pump(clock, lambda: len(out.writes) == 3)
    assert [t for t, _ in out.writes] == pytest.approx([1.0, 1.02, 1.04])
    # Each piece's wait from feed() to its first sample being written.
    assert speaker.stats.latencies_s == pytest.approx([1.0, 0.52, 0.04])
    assert speaker.stats.latency_s(0.5) == pytest.approx(0.52)


async def test_end_of_turn_plays_what_is_below_the_prebuffer(tmp_path: Path) -> None:
    clock = FakeClock()
    out = TimedWav(tmp_path / "said.wav", clock)
    speaker = Speaker(out, clock, prebuffer_ms=60)
    audio = noise(30)
    async with running(speaker):
        speaker.feed(audio, 24_000)
        await idle(clock, speaker, 1.0)
        assert out.writes == []
        speaker.end_of_turn()
        await pump(clock, lambda: out.frames_written * 2 == len(audio))
    assert [n for _, n in out.writes] == [CHUNK_24K, CHUNK_24K // 2]
    assert read_wav(tmp_path / "said.wav")[0] == audio


async def test_a_turn_that_runs_dry_rebuffers_and_counts_an_underrun(tmp_path: Path) -> None:
    clock = FakeClock()
    out = TimedWav(tmp_path / "said.wav", clock)
    speaker = Speaker(out, clock, prebuffer_ms=40)
    audio = noise(100)
    async with running(speaker):
        speaker.feed(audio[:1920], 24_000)  # 40 ms, then the model is late
        await pump(clock, lambda: len(out.writes) == 2)
        await idle(clock, speaker, 0.5)
        speaker.feed(audio[1920:], 24_000)
        speaker.end_of_turn()
        await pump(clock, lambda: out.frames_written * 2 == len(audio))
    assert speaker.stats.underruns == 1
    assert read_wav(tmp_path / "said.wav")[0] == audio


async def test_a_barge_in_stops_the_voice_and_the_next_turn_plays(tmp_path: Path) -> None:
    clock = FakeClock()
    out = TimedWav(tmp_path / "said.wav", clock)
    speaker = Speaker(out, clock)
    first, second = noise(1000, seed=1), noise(100, seed=2)
    async with running(speaker):
        speaker.feed(first, 24_000)
        speaker.end_of_turn()
        await pump(clock, lambda: len(out.writes) == 5)
        dropped = speaker.interrupt()
        assert dropped == len(first) - 5 * CHUNK_24K
        await idle(clock, speaker, 1.0)
        assert len(out.writes) == 5 and not speaker.playing

        speaker.feed(second, 24_000)
        speaker.end_of_turn()
        await pump(clock, lambda: out.frames_written * 2 == 5 * CHUNK_24K + len(second))
    assert read_wav(tmp_path / "said.wav")[0] == first[: 5 * CHUNK_24K] + second
    assert speaker.stats.interruptions == 1
    assert speaker.stats.bytes_interrupted == dropped


async def test_a_barge_in_during_a_write_lets_only_that_chunk_finish() -> None:
    clock = FakeClock()
    out = FakeOut()
    out.hold_write = 3
    speaker = Speaker(out, clock)
    audio = noise(400)
    async with running(speaker):
        speaker.feed(audio, 24_000)
        await pump(clock, out.holding.is_set)
        assert speaker.interrupt() == len(audio) - 3 * CHUNK_24K
        assert speaker.playing  # the chunk in the loudspeaker's hands still sounds
        out.release.set()
        await idle(clock, speaker, 1.0)
    assert b"".join(out.got) == audio[: 3 * CHUNK_24K]
    assert out.closed == 1


async def test_model_audio_at_24k_is_played_at_48k(tmp_path: Path) -> None:
    clock = FakeClock()
    out = TimedWav(tmp_path / "said.wav", clock, rate=48_000)
    speaker = Speaker(out, clock)
    audio = encode_pcm16(sine(440, 24_000, 0.5))
    async with running(speaker):
        for piece in pieces(audio, [1920, 962, 478]):
            speaker.feed(piece, 24_000)
        speaker.end_of_turn()
        await pump(clock, lambda: out.frames_written == 24_000)
    frames, rate, _, _ = read_wav(tmp_path / "said.wav")
    played = decode_pcm16(frames)
    assert rate == 48_000 and len(played) == 24_000
    assert dominant_hz(played, 48_000) == pytest.approx(440, abs=2)
    assert np.array_equal(played[::2], decode_pcm16(audio))  # the 24 kHz samples, in place
    assert [t for t, _ in out.writes] == pytest.approx([k * 0.02 for k in range(25)])


async def test_a_loudspeaker_that_breaks_is_said_once_and_the_device_goes_on() -> None:
    clock = FakeClock()
    out = FakeOut(fail_on_write=3)
    said: list[str] = []
    speaker = Speaker(out, clock, on_error=said.append)
    async with running(speaker):
        speaker.feed(noise(200), 24_000)
        await pump(clock, lambda: bool(said))
        speaker.feed(noise(100), 24_000)
        speaker.end_of_turn()
        await idle(clock, speaker, 1.0)
        assert not speaker.playing
    assert said == ["fake loudspeaker: the device was unplugged"]
    assert len(out.got) == 2
    # Lost: the chunk that failed, what was still queued, and what came after.
    assert speaker.stats.bytes_lost == (4800 * 2 - 2 * CHUNK_24K) + 4800
    assert out.closed == 1


async def test_a_loudspeaker_that_cannot_open_is_said_once(tmp_path: Path) -> None:
    clock = FakeClock()
    said: list[str] = []
    speaker = Speaker(WavLoudspeaker(tmp_path / "gone" / "x.wav"), clock, on_error=said.append)
    async with running(speaker):
        await pump(clock, lambda: bool(said))
        speaker.feed(noise(100), 24_000)
        await idle(clock, speaker, 1.0)
    assert len(said) == 1 and "cannot be written" in said[0]
    assert speaker.stats.bytes_lost == 4800


async def test_a_device_that_paces_itself_is_written_to_without_waiting() -> None:
    # A sound card's write blocks until it has room; the speaker adds no pacing of its own.
    clock = FakeClock()
    out = FakeOut()
    out.paces_itself = True
    speaker = Speaker(out, clock)
    audio = noise(200)
    async with running(speaker):
        speaker.feed(audio, 24_000)
        speaker.end_of_turn()
        await pump(clock, lambda: b"".join(out.got) == audio)
        assert clock.now() == 0.0  # the speaker never slept on the clock
    assert len(out.got) == 10


async def test_a_turn_fed_before_the_last_one_played_out_is_buffered_afresh(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    out = TimedWav(tmp_path / "said.wav", clock)
    speaker = Speaker(out, clock)
    first, second = noise(50, seed=1), noise(105, seed=2)
    async with running(speaker):
        speaker.feed(first, 24_000)
        speaker.end_of_turn()
        speaker.feed(second[:240], 24_000)  # 5 ms of the next turn, well below the prebuffer
        await pump(clock, lambda: out.frames_written * 2 == len(first))
        await idle(clock, speaker, 1.0)
        assert out.frames_written * 2 == len(first)  # the next turn waits for its prebuffer
        speaker.feed(second[240:], 24_000)
        speaker.end_of_turn()
        await pump(clock, lambda: out.frames_written * 2 == len(first) + len(second))
    assert [n for _, n in out.writes] == [960, 960, 480] + [960] * 5 + [240]
    assert read_wav(tmp_path / "said.wav")[0] == first + second
    assert speaker.stats.underruns == 0


async def test_a_device_that_breaks_is_opened_again_and_plays_the_next_turn() -> None:
    # A sound card that fails (unplugged, its sound server restarted) is tried again after
    # 1, 2, 4... s; what came meanwhile is lost and counted; once back, it plays again.
    clock = FakeClock()
    out = FakeOut(fail_on_write=2)
    out.paces_itself = True
    said: list[str] = []
    speaker = Speaker(out, clock, on_error=said.append, on_back=lambda: said.append("back"))
    async with running(speaker):
        speaker.feed(noise(100), 24_000)
        speaker.end_of_turn()
        await pump(clock, lambda: bool(said))
        await idle(clock, speaker, 1.0)  # the first reopen, after a second
        await pump(clock, lambda: said[-1] == "back")
        out.fail_on_write = None  # plugged in again
        again = noise(60, seed=3)
        speaker.feed(again, 24_000)
        speaker.end_of_turn()
        await pump(clock, lambda: b"".join(out.got).endswith(again))
    assert said == ["fake loudspeaker: the device was unplugged", "back"]
    assert out.closed == 2  # once when it broke, once at the end
