"""The sound devices' parts that need no sound server: the missing-PortAudio message,
choosing a device from a list, the drop-oldest handoff, and the resampler."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from device.audio import devices
from device.audio.device_mic import ChunkHandoff, DeviceMicrophone
from device.audio.device_out import DeviceLoudspeaker
from device.audio.devices import AudioDevice, describe_devices, doctor_lines, resolve
from device.audio.ports import AudioError
from device.audio.rate_convert import StreamResampler
from tests.audio.pulse import dominant_hz, tone

ROOT = Path(__file__).resolve().parents[2]


def _no_portaudio(name: str) -> ModuleType:
    # What sounddevice itself raises when ctypes finds no PortAudio library.
    raise OSError("PortAudio library not found")


@pytest.fixture
def without_portaudio(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(devices, "import_module", _no_portaudio)


@pytest.mark.usefixtures("without_portaudio")
def test_missing_portaudio_says_what_to_install() -> None:
    with pytest.raises(AudioError) as caught:
        devices.list_devices()
    message = str(caught.value)
    assert "libportaudio2" in message and "PortAudio library not found" in message
    assert "\n" not in message


@pytest.mark.usefixtures("without_portaudio")
def test_doctor_says_why_there_are_no_sound_devices_without_raising() -> None:
    lines = doctor_lines()
    assert len(lines) == 1
    warning, line = lines[0]
    assert warning and line.startswith("sound devices: PortAudio is not available")


@pytest.mark.usefixtures("without_portaudio")
@pytest.mark.anyio
async def test_a_device_microphone_without_portaudio_fails_with_the_same_line() -> None:
    with pytest.raises(AudioError, match="libportaudio2"):
        async for _ in DeviceMicrophone("default").chunks():
            pass


@pytest.mark.usefixtures("without_portaudio")
def test_a_device_loudspeaker_without_portaudio_fails_with_the_same_line() -> None:
    speaker = DeviceLoudspeaker("default")
    assert speaker.rate == 24_000  # known before the device is touched (the player asks first)
    with pytest.raises(AudioError, match="libportaudio2"):
        speaker.open()
    with pytest.raises(AudioError, match="not open"):
        speaker.write(b"\0\0")


def test_importing_the_sound_devices_does_not_load_portaudio() -> None:
    probe = (
        "import sys, device.audio.sound_devices, device.audio.tts;"
        " print('sounddevice' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False"


def _device(index: int, name: str, inputs: int, outputs: int, default: bool = False) -> AudioDevice:
    return AudioDevice(index, name, "ALSA", inputs, outputs, 48_000, default, default)


CARDS = [
    _device(0, "HDA Intel PCH: ALC3246 Analog (hw:0,0)", 2, 2),
    _device(1, "USB Audio Device: - (hw:1,0)", 1, 0),
    _device(2, "HDMI 0 (hw:0,3)", 0, 8),
    _device(3, "default", 32, 32, default=True),
]


def test_a_device_is_found_by_default_number_or_part_of_its_name() -> None:
    assert resolve("default", "input", CARDS).index == 3
    assert resolve("1", "input", CARDS).index == 1
    assert resolve("usb", "input", CARDS).index == 1
    assert resolve("HDMI", "output", CARDS).index == 2
    assert resolve("DEFAULT", "output", CARDS).index == 3


def test_a_wrong_spec_is_one_clear_line() -> None:
    with pytest.raises(AudioError, match=r"^no microphone named 'hdmi' \(have: #0 HDA"):
        resolve("hdmi", "input", CARDS)
    with pytest.raises(AudioError, match=r"^no loudspeaker number 1 "):
        resolve("1", "output", CARDS)  # the USB device has no output
    with pytest.raises(AudioError, match="ambiguous"):
        resolve("hw:0", "output", CARDS)
    with pytest.raises(AudioError, match=r"^no microphone at all"):
        resolve("default", "input", [CARDS[2]])
    with pytest.raises(AudioError, match=r"^no default loudspeaker"):
        resolve("default", "output", CARDS[:3])


def test_the_description_marks_the_defaults() -> None:
    text = describe_devices(CARDS)
    assert (
        text.splitlines()[3]
        == "  3 default (ALSA): 32 in, 32 out, 48000 Hz [default in, default out]"
    )
    assert describe_devices([]) == "no sound devices"


def test_the_handoff_drops_the_oldest_when_the_consumer_is_slow() -> None:
    handoff = ChunkHandoff(capacity=3)
    for n in range(5):
        handoff.put(bytes([n]))
    assert handoff.take(timeout=0, limit=1) == ([b"\x02"], None)
    blocks, failure = handoff.take(timeout=0)
    assert blocks == [b"\x03", b"\x04"] and failure is None
    assert handoff.dropped == 2
    assert handoff.take(timeout=0.01) == ([], None)


def test_the_handoff_says_the_stream_ended_after_what_was_queued() -> None:
    handoff = ChunkHandoff()
    handoff.put(b"a")
    handoff.fail("its stream stopped")
    handoff.fail("a second reason is not kept")
    assert handoff.take(timeout=0) == ([b"a"], None)
    assert handoff.take(timeout=0) == ([], "its stream stopped")


@pytest.mark.parametrize("source", [48_000, 44_100, 22_050, 8_000])
def test_the_resampler_keeps_a_tone_and_the_length_block_by_block(source: int) -> None:
    resampler = StreamResampler(source, 16_000)
    pcm = tone(1000, 2.0, source)
    block = source * 20 // 1000 * 2
    out = b"".join(resampler.feed(pcm[i : i + block]) for i in range(0, len(pcm), block))
    assert abs(len(out) // 2 - 32_000) <= 2
    assert dominant_hz(out, 16_000) == pytest.approx(1000, abs=5)


def test_the_resampler_does_not_fold_high_sound_into_speech() -> None:
    out = StreamResampler(48_000, 16_000).feed(tone(12_000, 1.0, 48_000))
    x = np.frombuffer(out, dtype="<i2").astype(np.float64)[200:]
    assert np.sqrt(np.mean(x**2)) < 100  # a 12 kHz tone would alias to 4 kHz at 8500 rms


def test_a_microphone_chunk_must_be_whole_samples() -> None:
    with pytest.raises(AudioError, match="whole samples"):
        DeviceMicrophone("default", chunk_ms=0)
