"""The sound devices against a real PulseAudio server (a null sink, a pipe source),
reached the way a kiosk reaches its sound card: sounddevice → PortAudio → ALSA → pulse.

The device code runs in a child process (``sound_probe``), so PortAudio sees this
server; the tone is checked by its pitch and loudness, never byte for byte, because
PulseAudio resamples and mixes.
"""

from __future__ import annotations

import json
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.audio.pulse import (
    FEED_RATE,
    Feeder,
    MonitorRecorder,
    PulseServer,
    dominant_hz,
    rms,
    running_pulse,
)

ROOT = Path(__file__).resolve().parents[2]
CHUNK_BYTES = 640  # 20 ms at 16 kHz, PCM16


@pytest.fixture(scope="module")
def pulse() -> Iterator[PulseServer]:
    with running_pulse() as server:
        yield server


def probe(server: PulseServer, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "tests.audio.sound_probe", *args],
        cwd=ROOT,
        env=server.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_the_devices_list_shows_the_pulse_device_both_ways(pulse: PulseServer) -> None:
    found = probe(pulse, "list")
    names = {d["name"]: d for d in found["devices"]}
    assert "pulse" in names
    assert names["pulse"]["inputs"] >= 1 and names["pulse"]["outputs"] >= 1
    assert any(d["default_input"] for d in found["devices"])
    assert "pulse" in found["describe"]
    doctor = found["doctor"]
    assert [line.split(":")[0] for _, line in doctor] == ["microphones", "loudspeakers"]
    assert all("pulse" in line and not warning for warning, line in doctor)


def test_the_loudspeaker_plays_a_tone_that_the_sink_hears(pulse: PulseServer) -> None:
    with MonitorRecorder(pulse) as recorder:
        played = probe(pulse, "play", "default", "--freq", "1000", "--seconds", "1")
    assert "error" not in played, played
    assert played["rate"] == played["device_rate"] == 24_000  # pulse takes the model's rate
    heard = recorder.pcm()
    assert len(heard) > 0.5 * recorder.rate * 2  # at least half the second came through
    assert dominant_hz(heard, recorder.rate) == pytest.approx(1000, abs=15)
    assert rms(heard) > 2000


@pytest.mark.parametrize(("spec", "rate"), [("default", None), ("pulse", 44_100)])
def test_the_microphone_hears_the_tone_fed_in_as_16_khz_chunks_of_20_ms(
    pulse: PulseServer, tmp_path: Path, spec: str, rate: int | None
) -> None:
    # 44.1 kHz: the device opened at a rate other than 16 kHz, resampled by Lookout.
    out = tmp_path / "heard.raw"
    extra = ["--rate", str(rate)] if rate else []
    with Feeder(pulse.fifo, freq=1000) as feeder:
        got = probe(pulse, "capture", spec, str(out), "--chunks", "50", *extra)
    assert "error" not in got, got
    assert feeder.written > 0
    assert got["device_rate"] == (rate or FEED_RATE)
    assert got["sizes"] == [CHUNK_BYTES] * 50
    assert 0.3 < got["span_s"] < 5  # paced by the feeder's real time, not read in a burst
    heard = out.read_bytes()
    assert dominant_hz(heard, FEED_RATE) == pytest.approx(1000, abs=15)
    assert rms(heard) > 2000


def test_a_slow_consumer_loses_the_oldest_audio_counted_not_a_backlog(
    pulse: PulseServer, tmp_path: Path
) -> None:
    # Takes 60 ms per 20 ms chunk with room for 5 chunks: most of the audio must go.
    args = ["--chunks", "15", "--queue", "5", "--slow-ms", "60"]
    with Feeder(pulse.fifo):
        got = probe(pulse, "capture", "default", str(tmp_path / "heard.raw"), *args)
    assert "error" not in got, got
    assert got["sizes"] == [CHUNK_BYTES] * 15
    assert got["dropped"] > 5
    assert got["span_s"] < 15 * 0.06 * 2  # no more than its own slowness: no backlog replayed


def test_an_unknown_device_name_is_one_line_naming_what_there_is(pulse: PulseServer) -> None:
    found = probe(pulse, "resolve", "usb", "input")
    assert found["error"].startswith("no microphone named 'usb' (have: ")
    assert "pulse" in found["error"] and "\n" not in found["error"]


def test_a_microphone_that_cannot_be_found_fails_as_it_starts(
    pulse: PulseServer, tmp_path: Path
) -> None:
    got = probe(pulse, "capture", "no-such-card", str(tmp_path / "x.raw"), "--chunks", "1")
    assert got["error"].startswith("no microphone named 'no-such-card'")


def test_a_loudspeaker_number_that_is_not_there(pulse: PulseServer) -> None:
    found = probe(pulse, "resolve", "99", "output")
    assert found["error"].startswith("no loudspeaker number 99 (have: ")


def test_a_microphone_whose_server_goes_away_ends_with_one_clear_error(tmp_path: Path) -> None:
    # A server of its own: this one is killed while the microphone listens.
    command = ["capture", "default", str(tmp_path / "heard.raw"), "--chunks", "100000"]
    with running_pulse() as server, Feeder(server.fifo):
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.audio.sound_probe", *command],
            cwd=ROOT,
            env=server.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert child.stdout is not None
            ready, _, _ = select.select([child.stdout], [], [], 30)
            assert ready and child.stdout.readline().strip() == "listening"
            server.process.kill()
            out, err = child.communicate(timeout=30)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
    assert child.returncode == 0, err[-2000:]
    got = json.loads(out.strip().splitlines()[-1])
    assert got["error"].startswith("microphone 'default' was lost: ")
    assert "\n" not in got["error"] and got["chunks"] > 0
