"""The device's voice in a run: what the microphone hears goes to the session, what the
model says comes out of the loudspeaker.

``Voice`` is a bus sink (it hears the session's events: model audio, barge-in, the end
of a turn, the local model's sentences) and runs three things in its own task group:
the microphone's pump into the request queue, the player, and the local voice (espeak-ng
speaking the offline model's sentences). Each says once what it cannot do and the rest
of the device goes on: counting never waits for audio.

What is sent: nothing unless a microphone is given, a model that hears is connected
and privacy mode is off. With ``--half-duplex`` the microphone is muted while the
device speaks and for ``ECHO_TAIL_S`` after (a kiosk without echo cancellation would
otherwise answer itself); with ``--push-to-talk`` only what is said while talk is held
is sent, between activity start and end markers.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio
from anyio.abc import TaskStatus

from device.audio.ports import MIC_MIME, AudioError, Microphone, pcm_rate
from device.config import Config, ConfigError
from live import wire
from live.events import Event, Interrupted, ModelAudio, ModelText, TurnComplete
from live.requests import LiveRequestQueue
from live.util.backoff import Backoff
from live.util.buffer import LatestWins
from live.util.clock import Clock

if TYPE_CHECKING:
    from device.audio.speaker import Speaker

log = logging.getLogger("lookout.voice")

# After the loudspeaker stops, the room still rings and the device's own output buffer
# is still playing: the half-duplex mute lasts this much longer.
ECHO_TAIL_S = 0.3
# A microphone that fails is opened again after 1, 2, 4... s, at most every 30 s.
MIC_RETRY = Backoff(1.0, 30.0)


class LocalVoice(Protocol):
    """Offline speech (``device/audio/tts.py``)."""

    async def synthesize(self, text: str) -> tuple[bytes, int]: ...


@dataclass
class VoiceStats:
    chunks_heard: int = 0  # from the microphone
    chunks_sent: int = 0  # into the session
    chunks_muted: int = 0  # half-duplex: the device was speaking
    chunks_held: int = 0  # push-to-talk: talk was not held
    sentences_spoken: int = 0  # by the local voice
    sentences_failed: int = 0

    # Sentences the local voice skipped, because a newer one came while it spoke, are the
    # buffer's drops: ``Voice.sentences_skipped``.


class Voice:
    def __init__(
        self,
        queue: LiveRequestQueue[Any],
        clock: Clock,
        say: Callable[[str], None],
        *,
        mic: Microphone | None = None,
        speaker: Speaker | None = None,
        local_voice: LocalVoice | None = None,
        half_duplex: bool = False,
        push_to_talk: bool = False,
        wait_listener: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """``wait_listener``: a recording (a WAV) is spoken once someone listens (the
        model is connected), where a microphone is live from the start."""
        self.wait_listener = wait_listener
        self.queue = queue
        self.clock = clock
        self.say = say
        self.mic = mic
        self.speaker = speaker
        self.local_voice = local_voice if speaker is not None else None
        self.half_duplex = half_duplex
        self.push_to_talk = push_to_talk
        self.stats = VoiceStats()
        self._talking = not push_to_talk
        self._quiet_since: float | None = -math.inf  # when the loudspeaker last stopped
        # The local voice says the newest sentence once the last one is said: an update
        # that came meanwhile is already old (the count moved on), so it is skipped.
        self._sentences: LatestWins[str] = LatestWins(1)

    # ------------------------------------------------------------------ the bus

    def write(self, event: Event) -> None:
        speaker = self.speaker
        if speaker is None:
            return
        if isinstance(event, ModelAudio) and event.data:
            speaker.feed(event.data, pcm_rate(event.mime_type))
        elif isinstance(event, Interrupted):
            speaker.interrupt()
        elif isinstance(event, TurnComplete):
            speaker.end_of_turn()
        elif isinstance(event, ModelText) and self.local_voice is not None:
            self._sentences.put(event.text)

    def close(self) -> None:
        self._sentences.close()

    def counts(self) -> dict[str, int]:
        """What ``/metrics`` shows: microphone chunks by what became of them, and the
        loudspeaker's milliseconds played and cut by a barge-in."""
        stats = self.stats
        counts = {
            "mic_heard": stats.chunks_heard,
            "mic_sent": stats.chunks_sent,
            "mic_muted": stats.chunks_muted,
            "mic_held": stats.chunks_held,
            "sentences_spoken": stats.sentences_spoken,
            "sentences_skipped": self.sentences_skipped,
        }
        if self.speaker is not None:
            per_ms = self.speaker.rate * 2 / 1000  # PCM16 mono
            counts["speaker_ms_played"] = int(self.speaker.stats.bytes_played / per_ms)
            counts["speaker_ms_interrupted"] = int(self.speaker.stats.bytes_interrupted / per_ms)
            counts["speaker_underruns"] = self.speaker.stats.underruns
        return counts

    @property
    def sentences_skipped(self) -> int:
        return self._sentences.stats.dropped

    # ------------------------------------------------------------------ talk

    @property
    def talking(self) -> bool:
        return self._talking

    @property
    def can_talk(self) -> bool:
        """Push-to-talk with a microphone in use: talk starts and ends speech."""
        return self.push_to_talk and self.mic is not None

    def talk(self, on: bool) -> str:
        """Push-to-talk: start or end what is said (activity start/end for the model)."""
        if not self.push_to_talk:
            return "talk is always on (the model detects speech); --push-to-talk makes it a key"
        if self.mic is None:
            return "no microphone (--mic)"
        if on == self._talking:
            return "talking" if on else "not talking"
        if not self.queue.closed:
            if on:
                self.queue.send_activity_start()
            else:
                self.queue.send_activity_end()
        self._talking = on
        return "talking: say it now" if on else "talk ended"

    def _muted(self) -> bool:
        """Half-duplex: the device is speaking, or just stopped."""
        if not self.half_duplex or self.speaker is None:
            return False
        now = self.clock.now()
        if self.speaker.playing:
            self._quiet_since = None
            return True
        if self._quiet_since is None:
            self._quiet_since = now
        return now - self._quiet_since < ECHO_TAIL_S

    async def finish(self) -> None:
        """Until the loudspeaker has played what it was given (the caller bounds the wait)."""
        speaker = self.speaker
        if speaker is None:
            return
        speaker.end_of_turn()
        if not speaker.to_file:  # a file gets the rest when it is closed
            await speaker.wait_quiet()

    # ------------------------------------------------------------------ running

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg:
            if self.speaker is not None:
                tg.start_soon(self._play)
            if self.local_voice is not None:
                tg.start_soon(self._speak)
            task_status.started()
            if self.mic is not None:
                if self.wait_listener is not None:
                    await self.wait_listener()
                await self._listen(self.mic)

    async def _play(self) -> None:
        assert self.speaker is not None
        await self.speaker.run()

    async def _listen(self, mic: Microphone) -> None:
        """Until the microphone ends (a WAV); a device that fails is opened again, with a
        growing wait, said when it is lost and when it is back."""
        failures = 0
        while not self.queue.closed:
            heard_before = self.stats.chunks_heard
            try:
                await self._pump(mic, lost=failures > 0)
            except AudioError as exc:
                if self.stats.chunks_heard > heard_before:
                    failures = 0  # it worked for a while: a new loss, said again
                failures += 1
                if failures == 1:
                    # The error names the microphone ("microphone 'usb' was lost: ...").
                    self.say(f"{exc}; trying it again meanwhile")
                await self.clock.sleep(MIC_RETRY.delay(failures - 1))
                continue
            except anyio.ClosedResourceError:
                return  # the run ended while a chunk was on its way
            self.say(f"microphone {mic.name}: ended ({self.stats.chunks_heard} chunks heard)")
            return

    async def _pump(self, mic: Microphone, *, lost: bool) -> None:
        async for chunk in mic.chunks():
            if lost:
                self.say(f"microphone {mic.name}: back")
                lost = False
            self.stats.chunks_heard += 1
            if self.queue.closed:
                return
            if self._muted():
                self.stats.chunks_muted += 1
                continue
            if not self._talking:
                self.stats.chunks_held += 1
                continue
            self.queue.send_audio(wire.Blob(data=chunk, mime_type=MIC_MIME))
            self.stats.chunks_sent += 1

    async def _speak(self) -> None:
        voice, speaker = self.local_voice, self.speaker
        assert voice is not None and speaker is not None
        async for text in self._sentences:
            try:
                pcm, rate = await voice.synthesize(text)
            except AudioError as exc:
                self.stats.sentences_failed += 1
                log.warning("local voice: %s", exc)
                continue
            speaker.feed(pcm, rate)
            speaker.end_of_turn()
            self.stats.sentences_spoken += 1
            await speaker.wait_quiet()


def build_voice(
    config: Config,
    queue: LiveRequestQueue[Any],
    clock: Clock,
    say: Callable[[str], None],
    *,
    model_hears: bool,
    wait_model: Callable[[], Awaitable[None]] | None = None,
) -> Voice | None:
    """The run's voice from ``[audio]`` (None: no microphone and no loudspeaker).

    ``model_hears``: the model understands speech (Gemini; the local model does not).
    ``wait_model``: until a model is connected (a WAV is spoken to it, not to no one).
    Raises ConfigError (one line, exit 2) for a WAV that cannot be read or written, or a
    device that does not exist.
    """
    audio = config.audio
    if audio.mic is None and audio.speaker is None:
        return None
    from device.audio.open import is_file, open_loudspeaker, open_microphone
    from device.audio.speaker import Speaker

    mic: Microphone | None = None
    if audio.mic is not None:
        if config.device.privacy:
            say("privacy mode: no audio leaves the device, so the microphone is not used")
        elif not model_hears:
            say(
                "the local model cannot understand speech: the microphone is not used "
                "(a Gemini model hears it; typed questions work offline)"
            )
        else:
            try:
                mic = open_microphone(audio.mic, clock)
            except AudioError as exc:
                why = str(exc).removeprefix(f"{audio.mic}: ")  # a file's error names it
                raise ConfigError(f"--mic {audio.mic}: {why}") from None
    speaker: Speaker | None = None
    if audio.speaker is not None:
        if is_file(audio.speaker):
            folder = Path(audio.speaker).expanduser().absolute().parent
            if not folder.is_dir() or not os.access(folder, os.W_OK):
                raise ConfigError(f"--speaker {audio.speaker}: cannot write in {folder}")
        try:
            out = open_loudspeaker(audio.speaker)
        except AudioError as exc:
            raise ConfigError(f"--speaker {audio.speaker}: {exc}") from None

        def lost(message: str) -> None:
            retry = "; trying it again meanwhile" if out.paces_itself else ""
            why = message.removeprefix(f"{out.name}: ")  # a file's error names it
            say(f"loudspeaker {out.name}: {why}{retry}")

        def back() -> None:
            say(f"loudspeaker {out.name}: back")

        speaker = Speaker(out, clock, on_error=lost, on_back=back)
    local_voice = None
    if speaker is not None and not model_hears and audio.tts == "on":
        from device.audio.tts import Espeak

        espeak = Espeak()
        if espeak.available():
            local_voice = espeak
        else:
            say(
                "no espeak-ng: the local model's sentences are printed, not spoken "
                "(Debian: apt install espeak-ng)"
            )
    return Voice(
        queue,
        clock,
        say,
        mic=mic,
        speaker=speaker,
        local_voice=local_voice,
        half_duplex=audio.half_duplex,
        push_to_talk=audio.push_to_talk,
        wait_listener=wait_model if mic is not None and is_file(audio.mic or "") else None,
    )


__all__ = ["ECHO_TAIL_S", "LocalVoice", "Voice", "VoiceStats", "build_voice"]
