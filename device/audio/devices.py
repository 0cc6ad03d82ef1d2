"""Which sound devices PortAudio sees, and which one a spec ("default", "3", "usb") names.

sounddevice is imported here only, and only when a device is asked for: importing it
loads PortAudio (Debian's libportaudio2) and raises OSError when that library is
missing, which a replay from WAV files must never pay for or fail on.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from types import ModuleType
from typing import Any, Literal

from device.audio.ports import AudioError

Kind = Literal["input", "output"]
_ROLE = {"input": "microphone", "output": "loudspeaker"}


def portaudio() -> ModuleType:
    """The sounddevice module, or ``AudioError`` saying what to install."""
    try:
        return import_module("sounddevice")
    except OSError as exc:  # sounddevice found no PortAudio shared library
        raise AudioError(
            f"PortAudio is not available ({exc}); install Debian's libportaudio2"
        ) from None
    except ImportError as exc:
        raise AudioError(f"the sounddevice package is not installed ({exc})") from None


@dataclass(frozen=True)
class AudioDevice:
    """One PortAudio device: what it can do and whether it is the default."""

    index: int
    name: str
    host_api: str
    inputs: int
    outputs: int
    default_rate: int
    default_input: bool
    default_output: bool

    def channels(self, kind: Kind) -> int:
        return self.inputs if kind == "input" else self.outputs

    def label(self) -> str:
        return f"#{self.index} {self.name}"


def list_devices() -> list[AudioDevice]:
    """Every device PortAudio sees (raises ``AudioError`` when PortAudio is missing)."""
    sd = portaudio()
    try:
        found: list[dict[str, Any]] = list(sd.query_devices())
        apis: list[dict[str, Any]] = list(sd.query_hostapis())
        default_in, default_out = _defaults(sd)
    except sd.PortAudioError as exc:
        raise AudioError(f"PortAudio cannot list the sound devices: {exc}") from None
    devices = []
    for index, info in enumerate(found):
        api = int(info.get("hostapi", -1))
        devices.append(
            AudioDevice(
                index=index,
                name=str(info["name"]),
                host_api=str(apis[api]["name"]) if 0 <= api < len(apis) else "?",
                inputs=int(info["max_input_channels"]),
                outputs=int(info["max_output_channels"]),
                default_rate=round(float(info["default_samplerate"])),
                default_input=index == default_in,
                default_output=index == default_out,
            )
        )
    return devices


def _defaults(sd: ModuleType) -> tuple[int, int]:
    # query_devices(kind=...) answers PortAudio's default device (or whatever
    # sounddevice.default was set to), and raises when there is none.
    found = []
    for kind in ("input", "output"):
        try:
            found.append(int(sd.query_devices(kind=kind)["index"]))
        except (sd.PortAudioError, ValueError):
            found.append(-1)
    return found[0], found[1]


def resolve(spec: str, kind: Kind, devices: list[AudioDevice] | None = None) -> AudioDevice:
    """The device ``spec`` names: "default", a device number, or (part of) a name."""
    role = _ROLE[kind]
    usable = [d for d in (list_devices() if devices is None else devices) if d.channels(kind)]
    have = ", ".join(d.label() for d in usable) or "none"
    if not usable:
        raise AudioError(f"no {role} at all (PortAudio sees no {kind} device)")
    wanted = spec.strip()
    if wanted.lower() in ("", "default"):
        for device in usable:
            if device.default_input if kind == "input" else device.default_output:
                return device
        raise AudioError(f"no default {role} (have: {have})")
    if wanted.isdigit():
        for device in usable:
            if device.index == int(wanted):
                return device
        raise AudioError(f"no {role} number {wanted} (have: {have})")
    exact = [d for d in usable if d.name.lower() == wanted.lower()]
    if exact:
        return exact[0]
    partial = [d for d in usable if wanted.lower() in d.name.lower()]
    if len(partial) == 1:
        return partial[0]
    if partial:
        names = ", ".join(d.label() for d in partial)
        raise AudioError(f"{role} name {wanted!r} is ambiguous ({names}); give its number")
    raise AudioError(f"no {role} named {wanted!r} (have: {have})")


def describe_devices(devices: list[AudioDevice] | None = None) -> str:
    """One line per device, for a person choosing ``--mic``/``--speaker``."""
    lines = []
    for d in list_devices() if devices is None else devices:
        pairs = (("default in", d.default_input), ("default out", d.default_output))
        marks = [mark for mark, on in pairs if on]
        extra = f" [{', '.join(marks)}]" if marks else ""
        lines.append(
            f"{d.index:>3} {d.name} ({d.host_api}): {d.inputs} in, {d.outputs} out, "
            f"{d.default_rate} Hz{extra}"
        )
    return "\n".join(lines) if lines else "no sound devices"


def doctor_lines() -> list[tuple[bool, str]]:
    """What ``lookout doctor`` says about sound: the devices, or why there are none, each
    line with whether it is a warning (PortAudio itself missing: --mic, --speaker and a
    spoken model need it). Never raises: it is a finding, not a failure."""
    try:
        devices = list_devices()
    except AudioError as exc:
        return [(True, f"sound devices: {exc}")]
    lines = []
    for kind in ("input", "output"):
        role = _ROLE[kind]
        usable = [d for d in devices if d.channels(kind)]
        if not usable:
            lines.append((False, f"{role}s: none (PortAudio sees no {kind} device)"))
            continue
        default = next(
            (d for d in usable if (d.default_input if kind == "input" else d.default_output)),
            None,
        )
        listed = ", ".join(d.label() for d in usable)
        said = f"default {default.label()}, {default.default_rate} Hz" if default else "no default"
        lines.append((False, f"{role}s: {listed} ({said})"))
    return lines


__all__ = [
    "AudioDevice",
    "Kind",
    "describe_devices",
    "doctor_lines",
    "list_devices",
    "portaudio",
    "resolve",
]
