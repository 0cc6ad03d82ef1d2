"""From a setting to a port: ``--mic`` and ``--speaker`` name a device or a WAV file.

A value ending in ``.wav`` (or naming an existing file) is a file; anything else is a
device (``default``, a number, part of a name). Devices need PortAudio, imported only
here and only then, so a replay with WAV files never loads it.
"""

from __future__ import annotations

from pathlib import Path

from device.audio.ports import MODEL_AUDIO_RATE, Loudspeaker, Microphone
from live.util.clock import Clock


def is_file(spec: str) -> bool:
    return spec.lower().endswith(".wav") or Path(spec).is_file()


def open_microphone(spec: str, clock: Clock) -> Microphone:
    """Raises ``AudioError`` (one line) for a file that cannot be read or a missing device."""
    if is_file(spec):
        from device.audio.wav_mic import WavMicrophone

        return WavMicrophone(Path(spec), clock)
    from device.audio.sound_devices import DeviceMicrophone

    return DeviceMicrophone(spec)


def open_loudspeaker(spec: str, rate: int = MODEL_AUDIO_RATE) -> Loudspeaker:
    """Not opened yet (the player opens it, in a thread)."""
    if is_file(spec):
        from device.audio.wav_out import WavLoudspeaker

        return WavLoudspeaker(Path(spec), rate)
    from device.audio.sound_devices import DeviceLoudspeaker

    return DeviceLoudspeaker(spec)


__all__ = ["is_file", "open_loudspeaker", "open_microphone"]
