"""The sound-device code run in a child process against the test's PulseAudio server.

``python -m tests.audio.sound_probe COMMAND ...`` prints one JSON object on its last
line; an ``AudioError`` is a finding (``{"error": ...}``), anything else a traceback.
A child, because PortAudio and ALSA read their devices once per process (see
``tests/audio/pulse.py``).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from device.audio.ports import AudioError
from device.audio.sound_devices import (
    DeviceLoudspeaker,
    DeviceMicrophone,
    describe_devices,
    doctor_lines,
    list_devices,
    resolve,
)


def _list(_: argparse.Namespace) -> dict[str, Any]:
    return {
        "devices": [asdict(d) for d in list_devices()],
        "describe": describe_devices(),
        "doctor": doctor_lines(),
    }


def _resolve(args: argparse.Namespace) -> dict[str, Any]:
    return {"device": asdict(resolve(args.spec, args.kind))}


def _play(args: argparse.Namespace) -> dict[str, Any]:
    speaker = DeviceLoudspeaker(args.spec, rate=args.rate)
    speaker.open()
    rate = speaker.rate
    t = np.arange(round(args.seconds * rate)) / rate
    pcm = (np.sin(2 * np.pi * args.freq * t) * 12_000).astype("<i2").tobytes()
    piece = rate * 20 // 1000 * 2
    started = time.monotonic()
    try:
        for i in range(0, len(pcm), piece):
            speaker.write(pcm[i : i + piece])
    finally:
        speaker.close()
    return {
        "name": speaker.name,
        "rate": rate,
        "device_rate": speaker.device_rate,
        "seconds": time.monotonic() - started,
        "underflows": speaker.underflows,
    }


def _capture(args: argparse.Namespace) -> dict[str, Any]:
    mic = DeviceMicrophone(args.spec, rate=args.rate, queue_chunks=args.queue)
    sizes: list[int] = []
    stamps: list[float] = []

    errors: list[str] = []

    async def main() -> bytes:
        got = bytearray()
        try:
            async for chunk in mic.chunks():
                sizes.append(len(chunk))
                stamps.append(time.monotonic())
                got += chunk
                if args.slow_ms:
                    await anyio.sleep(args.slow_ms / 1000)  # a consumer that falls behind
                if len(sizes) == 1:
                    print("listening", flush=True)  # a test may now pull the plug
                if len(sizes) >= args.chunks:
                    break
        except AudioError as exc:
            errors.append(str(exc))
        return bytes(got)

    Path(args.out).write_bytes(anyio.run(main))
    if errors:
        return {"error": errors[0], "chunks": len(sizes)}
    return {
        "name": mic.name,
        "device_rate": mic.device_rate,
        "sizes": sizes,
        "span_s": stamps[-1] - stamps[0] if stamps else 0.0,
        "dropped": mic.dropped_chunks,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(required=True)
    listing = commands.add_parser("list")
    listing.set_defaults(run=_list)
    finding = commands.add_parser("resolve")
    finding.add_argument("spec")
    finding.add_argument("kind", choices=["input", "output"])
    finding.set_defaults(run=_resolve)
    play = commands.add_parser("play")
    play.add_argument("spec")
    play.add_argument("--freq", type=float, default=1000.0)
    play.add_argument("--seconds", type=float, default=1.0)
    play.add_argument("--rate", type=int, default=24_000)
    play.set_defaults(run=_play)
    capture = commands.add_parser("capture")
    capture.add_argument("spec")
    capture.add_argument("out")
    capture.add_argument("--chunks", type=int, default=50)
    capture.add_argument("--rate", type=int, default=None)
    capture.add_argument("--queue", type=int, default=50)
    capture.add_argument("--slow-ms", type=int, default=0)
    capture.set_defaults(run=_capture)
    args = parser.parse_args()
    try:
        result = args.run(args)
    except AudioError as exc:
        result = {"error": str(exc)}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
