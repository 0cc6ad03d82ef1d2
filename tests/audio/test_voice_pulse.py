"""`lookout run --mic --speaker` on real sound devices: the CLI process reaches PulseAudio
(run as an ordinary process) the way a kiosk reaches its sound card, sounddevice →
PortAudio → ALSA → pulse, while the real google-genai SDK talks to the TLS fake."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.audio.pulse import (
    Feeder,
    MonitorRecorder,
    PulseServer,
    dominant_hz,
    rms,
    running_pulse,
    tone,
)
from tests.audio.test_voice_run import answered, audio_inputs, connected, quit_and_finish, start
from tests.fakelive import FakeLiveServer, ThreadedFakeLiveServer

pytestmark = pytest.mark.slow


@pytest.fixture
def pulse() -> Iterator[PulseServer]:
    with running_pulse() as server:
        yield server


@pytest.fixture
def server() -> Iterator[ThreadedFakeLiveServer]:
    with FakeLiveServer.run_in_thread() as srv:
        yield srv


def test_the_microphone_is_heard_by_the_model_and_the_model_by_the_room(
    server: ThreadedFakeLiveServer,
    pulse: PulseServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The fake's certificate authority, and PulseAudio's server, home and ALSA settings.
    own = ("PULSE", "ALSA", "XDG")
    env = server.subprocess_env()
    env.update({k: v for k, v in pulse.env.items() if k.startswith(own) or k == "HOME"})
    monkeypatch.setattr(server, "subprocess_env", lambda: env)
    with Feeder(pulse.fifo, freq=1000), MonitorRecorder(pulse) as room:
        proc = start(server, tmp_path, "--mic", "default", "--speaker", "default")
        connected(server)
        # A second of what the microphone hears reaches the model, as 16 kHz chunks.
        server.wait_for(lambda: len(audio_inputs(server)) >= 50, timeout=30)
        # The model answers with a second of 440 Hz; the room hears it.
        server.send_server_content(audio=tone(440, 1.0, 24000), turn_complete=True)
        answered(server, "count_people_now")
        quit_and_finish(proc)  # the loudspeaker says it all before the run ends
    chunks = audio_inputs(server)
    assert all(c.mime_type == "audio/pcm;rate=16000" for c in chunks)
    heard = b"".join(c.data or b"" for c in chunks[10:50])
    assert abs(dominant_hz(heard, 16000) - 1000) < 20 and rms(heard) > 1000
    played = room.pcm()
    loud = [played[i : i + 3200] for i in range(0, len(played) - 3200, 3200)]
    sounding = [p for p in loud if rms(p) > 1000]
    assert len(sounding) >= 7, "about a second of the answer was played"  # 0.1 s pieces
    assert abs(dominant_hz(b"".join(sounding), 16000) - 440) < 20
