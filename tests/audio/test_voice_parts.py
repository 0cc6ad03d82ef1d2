"""The voice's own rules, on a virtual clock: the half-duplex mute and its echo tail,
push-to-talk, what /metrics counts, and what the loudspeaker is told by model events."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from device.app.voice import ECHO_TAIL_S, Voice
from device.audio.ports import AudioError
from live.events import Interrupted, ModelAudio, ModelText, TurnComplete
from live.requests import LiveRequestQueue
from live.util.clock import FakeClock, settle

pytestmark = pytest.mark.anyio


class HandMic:
    """A microphone the test speaks into, one chunk at a time."""

    name = "hand"

    def __init__(self) -> None:
        self.send, self.receive = anyio.create_memory_object_stream[bytes](100)

    async def chunks(self) -> AsyncIterator[bytes]:
        async with self.receive:
            async for chunk in self.receive:
                yield chunk


@dataclass
class SpeakerStatsLike:
    bytes_played: int = 0
    bytes_interrupted: int = 0
    underruns: int = 0


@dataclass
class NoteSpeaker:
    """Notes what the voice tells the loudspeaker; ``playing`` is the test's to set."""

    playing: bool = False
    rate: int = 24_000
    said: list[Any] = field(default_factory=list)
    stats: SpeakerStatsLike = field(default_factory=SpeakerStatsLike)

    def feed(self, pcm: bytes, rate: int) -> None:
        self.said.append(("feed", len(pcm), rate))

    def interrupt(self) -> int:
        self.said.append("interrupt")
        return 0

    def end_of_turn(self) -> None:
        self.said.append("end")

    async def run(self) -> None:
        await anyio.sleep_forever()

    async def wait_quiet(self) -> None:
        return None


async def speak(mic: HandMic, n: int) -> None:
    for _ in range(n):
        await mic.send.send(b"\0\0" * 320)
    await settle()


async def test_half_duplex_mutes_the_microphone_while_speaking_and_for_the_echo_tail() -> None:
    clock = FakeClock()
    queue: LiveRequestQueue[Any] = LiveRequestQueue(now=clock.now)
    mic, speaker = HandMic(), NoteSpeaker()
    voice = Voice(queue, clock, lambda text: None, mic=mic, speaker=speaker,  # type: ignore[arg-type]
                  half_duplex=True)  # fmt: skip
    async with anyio.create_task_group() as tg:
        await tg.start(voice.run)
        await speak(mic, 3)
        speaker.playing = True
        await speak(mic, 5)  # the device speaks: muted
        speaker.playing = False
        await speak(mic, 2)  # the room still rings: muted
        clock.advance(ECHO_TAIL_S + 0.01)
        await speak(mic, 4)
        tg.cancel_scope.cancel()
    assert voice.stats.chunks_sent == 7 and voice.stats.chunks_muted == 7
    assert queue.stats.audio_sent == 7
    counts = voice.counts()
    assert counts["mic_heard"] == 14 and counts["mic_muted"] == 7 and counts["mic_sent"] == 7


async def test_push_to_talk_sends_only_between_its_markers() -> None:
    clock = FakeClock()
    queue: LiveRequestQueue[Any] = LiveRequestQueue(now=clock.now)
    mic = HandMic()
    voice = Voice(queue, clock, lambda text: None, mic=mic, push_to_talk=True)
    async with anyio.create_task_group() as tg:
        await tg.start(voice.run)
        await speak(mic, 3)
        assert voice.talk(True) == "talking: say it now"
        await speak(mic, 4)
        assert voice.talk(False) == "talk ended"
        await speak(mic, 2)
        tg.cancel_scope.cancel()
    queue.close()
    kinds = [("audio" if r.is_audio else r.kind.value) async for r in queue]
    # Content (the markers) comes first in the queue's order; the audio keeps its own.
    assert kinds.count("activity_start") == 1 and kinds.count("activity_end") == 1
    assert kinds.count("audio") == 4 and voice.stats.chunks_held == 5
    no_ptt = Voice(queue, clock, lambda text: None, mic=mic)
    assert "always on" in no_ptt.talk(True)


async def test_model_events_drive_the_loudspeaker() -> None:
    clock = FakeClock()
    queue: LiveRequestQueue[Any] = LiveRequestQueue(now=clock.now)
    speaker = NoteSpeaker()
    voice = Voice(queue, clock, lambda text: None, speaker=speaker)  # type: ignore[arg-type]
    voice.write(ModelAudio(mime_type="audio/pcm;rate=24000", size=4, data=b"\1\0\2\0"))
    voice.write(ModelAudio(mime_type="audio/pcm", size=2, data=b"\1\0"))
    voice.write(Interrupted())
    voice.write(TurnComplete())
    voice.write(ModelText(text="no local voice: not said"))
    assert speaker.said == [("feed", 4, 24000), ("feed", 2, 24000), "interrupt", "end"]


class FlakyMic:
    """Two chunks, then lost; lost again at once; then three chunks and the end."""

    name = "usb"

    def __init__(self) -> None:
        self.opened = 0

    async def chunks(self) -> AsyncIterator[bytes]:
        self.opened += 1
        plan = {1: (2, True), 2: (0, True), 3: (3, False)}[self.opened]
        for _ in range(plan[0]):
            yield b"\0\0" * 320
        if plan[1]:
            raise AudioError(f"microphone 'usb' was lost: stream {self.opened} stopped")


async def test_a_lost_microphone_is_opened_again_and_said_once_lost_and_once_back() -> None:
    clock = FakeClock()
    queue: LiveRequestQueue[Any] = LiveRequestQueue(now=clock.now)
    said: list[str] = []
    mic = FlakyMic()
    voice = Voice(queue, clock, said.append, mic=mic)
    async with anyio.create_task_group() as tg:
        await tg.start(voice.run)
        await settle()
        assert mic.opened == 2  # lost, tried again at once: lost again, now waiting
        clock.advance(1.0)  # the second retry, after a second
        await settle()
        tg.cancel_scope.cancel()
    assert mic.opened == 3 and voice.stats.chunks_sent == 5
    assert said == [
        "microphone 'usb' was lost: stream 1 stopped; trying it again meanwhile",
        "microphone usb: back",
        "microphone usb: ended (5 chunks heard)",
    ]
