"""Sound devices in one place: the device microphone and loudspeaker, the device list,
and what ``lookout doctor`` says about them.

Importing this module does not load PortAudio; that happens when a device is used.
"""

from __future__ import annotations

from device.audio.device_mic import DeviceMicrophone
from device.audio.device_out import DeviceLoudspeaker
from device.audio.devices import (
    AudioDevice,
    describe_devices,
    doctor_lines,
    list_devices,
    resolve,
)

__all__ = [
    "AudioDevice",
    "DeviceLoudspeaker",
    "DeviceMicrophone",
    "describe_devices",
    "doctor_lines",
    "list_devices",
    "resolve",
]
