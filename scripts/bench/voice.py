"""The device's voice, measured: microphone to wire, model audio to loudspeaker, barge-in,
the CPU a voice session adds to counting, and what ``look`` costs next to ``--send-frames``.

    python scripts/bench/voice.py [--seconds 15] [--warmup 4] [--rounds 2] [--no-pulse]

Every row is a real ``lookout run`` process (vtest.avi at real-time pace, ``--loop``, the
Gemini model ``gemini-3.8-live``) talking through the real google-genai SDK to the TLS fake
Live server (``tests/fakelive``), which runs in a thread of this process. The fake answers
with audio: ``--speech`` s of it every ``--period`` s, in 40 ms pieces sent at the pace they
are spoken. The rows take turns round by round: without voice, then with ``--mic WAV
--speaker WAV``; the fake answers alike in both (a 3.x Live model answers in audio
whether or not the device plays it), so the CPU difference is the voice's own.

How the times are taken, and why they can be trusted: the process runs this file as a thin
launcher (``--child``) that records, then calls ``device.cli.main`` unchanged. It records
when ``WavMicrophone.chunks`` reads its start (chunk n is due at start + n * 20 ms, exactly
the schedule the microphone releases on), each ``Speaker.feed`` (model audio reaching the
loudspeaker's queue), ``Speaker.interrupt`` (the barge-in reaching it), each chunk
``Speaker._write`` hands to the loudspeaker, and ``SpeakerStats.record_latency``. All are
``time.monotonic()``, CLOCK_MONOTONIC, one clock for the whole machine, so they compare
directly with the fake's own arrival and send times (also ``time.monotonic()``). The device
runs in its own process: the fake's thread does not share its interpreter lock.

After the steady window of each voice row the fake speaks ``--barge`` long answers (3 s,
sent at once, faster than spoken, as Live does) and interrupts each after about 0.5 s.

With PulseAudio installed (``tests/audio/pulse.py``: a throwaway server, a null sink) one
more run plays through a real sound device (``--speaker default``, PortAudio).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import wave
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from machine import describe_cpu
from motion import cpu_seconds

from device.app.parts import sample_video

MODEL = "gemini-3.8-live"
MIC_CHUNK_S = 0.020
PIECE_S = 0.040  # one model audio message
MODEL_RATE = 24_000
LONG_ANSWER_S = 3.0
HERE = Path(__file__).resolve()
REPO = HERE.parents[2]


# ---------------------------------------------------------------------- the child


def child(record_path: Path, argv: list[str]) -> int:
    """``lookout run`` with its voice's moments recorded into ``record_path`` (JSON)."""
    import device.cli
    from device.audio.device_out import DeviceLoudspeaker
    from device.audio.speaker import Speaker, SpeakerStats
    from device.audio.wav_mic import WavMicrophone

    rec: dict[str, Any] = {
        "mic_start": [],
        "feeds": [],
        "interrupts": [],
        "writes": [],
        "latencies": [],
        "stats": [],
    }
    speakers: list[Speaker] = []
    chunks, feed, interrupt, write = (
        WavMicrophone.chunks,
        Speaker.feed,
        Speaker.interrupt,
        Speaker._write,
    )
    init, record_latency = Speaker.__init__, SpeakerStats.record_latency
    device_open = DeviceLoudspeaker.open

    def spied_open(self: DeviceLoudspeaker) -> None:
        device_open(self)
        # PortAudio's own estimate of its output latency: what is written sounds this late.
        rec["device_latency_s"] = float(self._stream.latency)

    class StartSpy:
        """The microphone's clock; the first reading in ``chunks`` is its start."""

        def __init__(self, real: Any) -> None:
            self.real = real

        def now(self) -> float:
            t: float = self.real.now()
            if len(rec["mic_start"]) < 1:
                rec["mic_start"].append(t)
            return t

        def __getattr__(self, name: str) -> Any:
            return getattr(self.real, name)

    def spied_chunks(self: WavMicrophone) -> Any:
        self._clock = StartSpy(self._clock)
        return chunks(self)

    def spied_init(self: Speaker, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        speakers.append(self)

    def spied_feed(self: Speaker, pcm: bytes, rate: int) -> None:
        rec["feeds"].append((time.monotonic(), len(pcm)))
        feed(self, pcm, rate)

    def spied_interrupt(self: Speaker) -> int:
        t, playing = time.monotonic(), self.playing
        dropped = interrupt(self)
        rec["interrupts"].append((t, dropped, playing))
        return dropped

    async def spied_write(self: Speaker, taken: tuple[bytes, list[float]]) -> None:
        t0 = time.monotonic()
        await write(self, taken)
        rec["writes"].append((t0, time.monotonic(), len(taken[0]), self._rate))

    def spied_latency(self: SpeakerStats, seconds: float) -> None:
        rec["latencies"].append((time.monotonic(), seconds))
        record_latency(self, seconds)

    WavMicrophone.chunks = spied_chunks  # type: ignore[method-assign]
    Speaker.__init__ = spied_init  # type: ignore[method-assign]
    Speaker.feed = spied_feed  # type: ignore[method-assign]
    Speaker.interrupt = spied_interrupt  # type: ignore[method-assign]
    Speaker._write = spied_write  # type: ignore[method-assign]
    SpeakerStats.record_latency = spied_latency  # type: ignore[method-assign]
    DeviceLoudspeaker.open = spied_open  # type: ignore[method-assign]
    exit_now = device.cli._exit_now_if_threads_linger

    def save_then_exit(code: int) -> int:
        """The CLI may leave with os._exit (a thread lingers): the record is saved first."""
        rec["lingering"] = [
            t.name
            for t in threading.enumerate()
            if t is not threading.main_thread() and not t.daemon
        ]
        save()
        return exit_now(code)

    def save() -> None:
        rec["stats"] = []
        for s in speakers:
            st = s.stats
            rec["stats"].append(
                {
                    "p50": st.latency_s(0.5),
                    "p95": st.latency_s(0.95),
                    "bytes_played": st.bytes_played,
                    "underruns": st.underruns,
                    "interruptions": st.interruptions,
                    "bytes_interrupted": st.bytes_interrupted,
                    "bytes_lost": st.bytes_lost,
                }
            )
        record_path.write_text(json.dumps(rec))

    device.cli._exit_now_if_threads_linger = save_then_exit
    try:
        return device.cli.main(argv)
    finally:
        save()


# ---------------------------------------------------------------------- the bench side


def speech(seconds: float, rate: int = MODEL_RATE) -> bytes:
    n = int(seconds * rate)
    return bytes(((np.arange(n) % 2000) - 1000).astype("<i2").tobytes())


def write_mic_wav(path: Path, seconds: float) -> None:
    rate = 16_000
    t = np.arange(int(seconds * rate)) / rate
    mono = (0.3 * np.sin(2 * np.pi * (300 + 20 * (t % 10)) * t) * 32767).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(mono.tobytes())


def pct(values: Sequence[float], q: float) -> float:
    """Nearest rank, as ``SpeakerStats.latency_s``; nan for none."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


@dataclass
class Session:
    name: str
    cpu_pct: float = math.nan
    mic_ms: list[float] = field(default_factory=list)  # chunk due -> the fake has it
    wire_audio_ms: list[float] = field(default_factory=list)  # fake sends -> device feed
    piece_ms: list[float] = field(default_factory=list)  # feed -> first sample written
    first_ms: list[float] = field(default_factory=list)  # an answer's first piece
    wire_interrupt_ms: list[float] = field(default_factory=list)
    stop_ms: list[float] = field(default_factory=list)  # interrupt -> old voice silent
    after_ms: list[float] = field(default_factory=list)  # audio written after the interrupt
    heard_stop_ms: list[float] = field(default_factory=list)  # a device: + its buffer
    device_ms: float = math.nan  # PortAudio's output latency (a device only)
    notes: list[str] = field(default_factory=list)


class Answers:
    """The fake model answering: ``speech_s`` of audio every ``period_s`` (a thread)."""

    def __init__(self, server: Any, conn: int, period_s: float, speech_s: float) -> None:
        self.server, self.conn = server, conn
        self.period_s, self.speech_s = period_s, speech_s
        self.starts: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="answers", daemon=True)

    def __enter__(self) -> Answers:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        piece = speech(PIECE_S)
        pieces = round(self.speech_s / PIECE_S)
        t0 = time.monotonic() + 0.2
        k = 0
        while not self._stop.is_set():
            start = t0 + k * self.period_s
            if self._stop.wait(max(0.0, start - time.monotonic())):
                return
            self.starts.append(time.monotonic())
            for n in range(pieces):
                if self._stop.wait(max(0.0, start + n * PIECE_S - time.monotonic())):
                    break  # the window is over: no burst of what is left
                self.server.send_server_content(audio=piece, connection=self.conn)
            self.server.send_server_content(turn_complete=True, connection=self.conn)
            k += 1


def barge_ins(server: Any, conn: int, count: int) -> list[float]:
    """``count`` long answers, each interrupted after about 0.5 s; when each began."""
    piece = speech(PIECE_S)
    began = []
    for k in range(count):
        time.sleep(0.8)
        began.append(time.monotonic())
        for _ in range(round(LONG_ANSWER_S / PIECE_S)):
            server.send_server_content(audio=piece, connection=conn)
        time.sleep(0.5 + 0.0037 * k)  # the interrupt lands at a different phase of a chunk
        server.send_server_content(interrupted=True, connection=conn)
    time.sleep(0.6)
    return began


def run_session(
    server: Any,
    name: str,
    video: Path,
    flags: list[str],
    *,
    env: dict[str, str],
    warmup: float,
    seconds: float,
    period: float,
    speech_s: float,
    barge: int,
    tmp: Path,
) -> Session:
    conn = len(server.connections())
    record = tmp / f"record-{conn}.json"
    command = [sys.executable, str(HERE), "--child", str(record), "--", "run"]
    command += ["--model", MODEL, "--no-http", "--source", str(video), "--pace", "realtime"]
    command += ["--loop", "--stdin", *flags]
    process = subprocess.Popen(
        command,
        cwd=REPO,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    session = Session(name)
    barge_start = math.inf
    try:
        server.wait_connection(conn + 1, timeout=90)
        server.wait_for(lambda: server.server.connection(conn).setup_completed, timeout=60)
        with Answers(server, conn, period, speech_s) as answers:
            time.sleep(warmup)
            cpu0, wall0 = cpu_seconds(process.pid), time.monotonic()
            time.sleep(seconds)
            cpu1, wall1 = cpu_seconds(process.pid), time.monotonic()
        session.cpu_pct = 100 * (cpu1 - cpu0) / (wall1 - wall0)
        if "--speaker" in flags and barge:
            barge_start = time.monotonic()
            barge_ins(server, conn, barge)
        _, err = process.communicate("quit\n", timeout=90)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    if process.returncode != 0:
        sys.exit(f"{name}: lookout run exited {process.returncode}: {err.strip()[-800:]}")
    rec = json.loads(record.read_text())
    fake = server.connection(conn)
    measure(session, rec, fake, answers.starts, barge_start)
    return session


def measure(
    session: Session, rec: dict[str, Any], fake: Any, starts: list[float], barge_start: float
) -> None:
    # 1. Microphone chunk n, due at start + n * 20 ms, to its arrival at the fake.
    audio_in = [r for r in fake.realtime_inputs() if (r.mime_type or "").startswith("audio/")]
    if rec["mic_start"] and audio_in:
        start = rec["mic_start"][0]
        session.mic_ms = [1000 * (r.t - (start + n * MIC_CHUNK_S)) for n, r in enumerate(audio_in)]
    # 2. The fake sends model audio -> the loudspeaker's queue has it (one feed per message).
    sent_audio = [m.t for m in fake.sent if "modelTurn" in (m.payload.get("serverContent") or {})]
    feeds = [t for t, _ in rec["feeds"]]
    if feeds:
        if len(feeds) == len(sent_audio):
            session.wire_audio_ms = [1000 * (f - s) for s, f in zip(sent_audio, feeds, strict=True)]
        else:
            session.notes.append(f"{len(sent_audio)} audio messages sent, {len(feeds)} fed")
    # 3. Fed -> first sample written, per piece (before the barge-ins: a 3 s burst queues).
    session.piece_ms = [1000 * s for t, s in rec["latencies"] if t - s < barge_start]
    fed_at = sorted(t - s for t, s in rec["latencies"])
    by_feed = {round(t - s, 6): s for t, s in rec["latencies"]}
    for a in starts:
        first = next((f for f in fed_at if f >= a), None)
        if first is not None and first < barge_start:
            session.first_ms.append(1000 * by_feed[round(first, 6)])
    # 4. Barge-in.
    sent_interrupts = [
        m.t for m in fake.sent if (m.payload.get("serverContent") or {}).get("interrupted")
    ]
    interrupts = [(t, dropped) for t, dropped, playing in rec["interrupts"] if playing]
    for s, (t, _) in zip(sent_interrupts, interrupts, strict=False):
        session.wire_interrupt_ms.append(1000 * (t - s))
    for t, _ in interrupts:
        # Writes of the old turn: none of the next answer comes within 0.5 s.
        old = [w for w in rec["writes"] if w[0] < t + 0.5]
        if not old:
            continue
        last = max(old, key=lambda w: w[1])
        sounding_until = last[1] + last[2] / 2 / last[3]
        session.stop_ms.append(max(0.0, 1000 * (sounding_until - t)))
        if "device_latency_s" in rec:
            heard_until = last[1] + rec["device_latency_s"]
            session.heard_stop_ms.append(max(0.0, 1000 * (heard_until - t)))
        after = sum(w[2] / 2 / w[3] for w in old if w[1] > t)
        session.after_ms.append(1000 * after)
    if "device_latency_s" in rec:
        session.device_ms = 1000 * rec["device_latency_s"]
    if rec.get("lingering"):
        session.notes.append(f"threads left at exit (os._exit): {', '.join(rec['lingering'])}")
    for st in rec["stats"]:
        if st["underruns"] or st["bytes_lost"]:
            session.notes.append(f"underruns {st['underruns']}, bytes lost {st['bytes_lost']}")


@contextlib.contextmanager
def maybe_pulse(wanted: bool) -> Iterator[Any]:
    """A throwaway PulseAudio server, or None (with why on stderr)."""
    if not wanted:
        yield None
        return
    if shutil.which("pulseaudio") is None:
        print("no pulseaudio: the sound-device row is skipped", file=sys.stderr)
        yield None
        return
    from tests.audio.pulse import running_pulse

    try:
        cm = running_pulse()
        server = cm.__enter__()
    except Exception as exc:  # a bench goes on without the row
        print(f"PulseAudio did not start ({exc}): the row is skipped", file=sys.stderr)
        yield None
        return
    try:
        yield server
    finally:
        cm.__exit__(None, None, None)


# ---------------------------------------------------------------------- look vs send-frames

LOW_TOKENS = 64  # media_resolution LOW, per image (the API reference's MediaResolution enum)


def tile_tokens(width: int, height: int) -> int:
    """Without media_resolution: <= 384 px both sides 258 tokens, else 768x768 tiles of 258."""
    if width <= 384 and height <= 384:
        return 258
    return math.ceil(width / 768) * math.ceil(height / 768) * 258


def look_images(video: Path) -> dict[str, Any]:
    """The JPEG the look tool makes of a real vtest frame (detector boxes drawn) and the one
    ``--send-frames`` sends of the same frame (resized to max_side, quality 80)."""
    import cv2

    from device.capture import resized
    from device.vision.frame import encode_jpeg
    from models.detector import PersonDetector
    from tests.percepts import make_percept
    from tools.look import picture

    capture = cv2.VideoCapture(str(video))
    sizes_look, sizes_frames = [], []
    try:
        detector = PersonDetector()
        for index in (40, 200, 400, 600):
            capture.set(cv2.CAP_PROP_POS_FRAMES, index)
            ok, image = capture.read()
            if not ok:
                continue
            boxes = detector.detect(image).boxes
            shot = picture(make_percept([list(b) for b in boxes], image=image))
            sizes_look.append(len(shot.jpeg))
            small = image if max(image.shape[:2]) <= 768 else resized(image, 768)
            sizes_frames.append(len(encode_jpeg(small, 80)))
            dims = (shot.width, shot.height), (small.shape[1], small.shape[0])
    finally:
        capture.release()
    return {"look": sizes_look, "frames": sizes_frames, "dims": dims}


# ---------------------------------------------------------------------- the report


def row(name: str, values: Sequence[float], target: str = "") -> str:
    return (
        f"{name:<52}{len(values):>5}{pct(values, 0.5):>8.1f}{pct(values, 0.95):>8.1f}"
        f"{max(values, default=math.nan):>8.1f}  {target}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15.0, help="steady CPU window per row")
    parser.add_argument("--warmup", type=float, default=4.0, help="seconds before the window")
    parser.add_argument("--rounds", type=int, default=2, help="times each row runs")
    parser.add_argument("--period", type=float, default=3.0, help="s between the model's answers")
    parser.add_argument("--speech", type=float, default=1.0, help="s of audio per answer")
    parser.add_argument("--barge", type=int, default=4, help="barge-ins after each voice row")
    parser.add_argument("--no-pulse", action="store_true", help="skip the sound-device row")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        sys.exit(child(args.child, args.rest))
    print(describe_cpu())
    video = sample_video()
    if video is None:
        sys.exit("sample video not found: run python3 scripts/fetch_sample_data.py")
    from tests.fakelive import FakeLiveServer

    plain: list[Session] = []
    voiced: list[Session] = []
    pulsed: list[Session] = []
    with tempfile.TemporaryDirectory(prefix="lookout-voice-") as tmp_name, \
            FakeLiveServer.run_in_thread() as server:  # fmt: skip
        tmp = Path(tmp_name)
        mic = tmp / "mic.wav"
        write_mic_wav(mic, args.warmup + args.seconds + 4 + args.barge * 1.4 + 20)
        env = server.subprocess_env()
        common: dict[str, Any] = dict(
            env=env, warmup=args.warmup, seconds=args.seconds, period=args.period,
            speech_s=args.speech, barge=args.barge, tmp=tmp,
        )  # fmt: skip
        for k in range(args.rounds):
            for name, flags, into in (
                ("counting, no voice", [], plain),
                ("counting + voice", ["--mic", str(mic), "--speaker", str(tmp / "o.wav")], voiced),
            ):
                s = run_session(server, name, video, flags, **common)
                into.append(s)
                print(f"  round {k + 1} {name}: {s.cpu_pct:.1f} % CPU", file=sys.stderr)
        with maybe_pulse(not args.no_pulse) as pulse:
            if pulse is not None:
                penv = dict(env)
                for key in ("PULSE_SERVER", "HOME", "XDG_RUNTIME_DIR", "PULSE_RUNTIME_PATH"):
                    penv[key] = pulse.env[key]
                s = run_session(
                    server, "PulseAudio", video, ["--speaker", "default"],
                    **{**common, "env": penv, "seconds": min(args.seconds, 8.0)},
                )  # fmt: skip
                pulsed.append(s)
    images = look_images(video)

    def cat(sessions: list[Session], attr: str) -> list[float]:
        return [v for s in sessions for v in getattr(s, attr)]

    print(
        f"lookout run --model {MODEL} --source {video.name} --loop --pace realtime --no-http, "
        f"against the TLS fake Live server; voice: --mic WAV --speaker WAV; the fake says "
        f"{args.speech:g} s every {args.period:g} s in {PIECE_S * 1000:.0f} ms pieces at "
        f"speaking pace; steady {args.seconds:g} s after {args.warmup:g} s, {args.rounds} rounds "
        f"taking turns, then {args.barge} barge-ins of a {LONG_ANSWER_S:g} s answer sent at once; "
        f"{os.cpu_count()} CPUs"
    )
    header = f"{'latency (ms)':<52}{'n':>5}{'p50':>8}{'p95':>8}{'max':>8}  target"
    print(header)
    print("-" * len(header))
    print(row("mic chunk due -> fake Live server has it", cat(voiced, "mic_ms")))
    print(row("fake sends model audio -> Speaker.feed", cat(voiced, "wire_audio_ms")))
    print(row("model audio fed -> first sample written (WAV)", cat(voiced, "piece_ms")))
    print(row("  an answer's first piece -> first sound (WAV)", cat(voiced, "first_ms")))
    print(row("fake sends interrupted -> Speaker.interrupt", cat(voiced, "wire_interrupt_ms")))
    print(row("barge-in: interrupt -> old voice silent (WAV)", cat(voiced, "stop_ms"), "<= 20"))
    print(row("barge-in: audio written after interrupt (WAV)", cat(voiced, "after_ms"), "<= 20"))
    if pulsed:
        for label, attr, target in (
            ("model audio fed -> first sample written (Pulse)", "piece_ms", ""),
            ("  an answer's first piece -> first write returns", "first_ms", ""),
            ("barge-in: interrupt -> last write + 20 ms (Pulse)", "stop_ms", "<= 20"),
            ("barge-in: audio written after interrupt (Pulse)", "after_ms", "<= 20"),
            ("barge-in: + device buffer: old voice silent", "heard_stop_ms", "<= 20"),
        ):
            print(row(label, cat(pulsed, attr), target))
        print(f"PortAudio output latency of the Pulse stream: {pulsed[0].device_ms:.1f} ms")
    else:
        print("(no PulseAudio row: --no-pulse, or pulseaudio / PortAudio missing)")
    for s in [*plain, *voiced, *pulsed]:
        for note in s.notes:
            print(f"note ({s.name}): {note}")
    print()
    header = f"{'CPU % of one core':<28}{'per round':>22}{'mean':>8}{'ratio':>8}"
    print(header)
    print("-" * len(header))
    base = sum(s.cpu_pct for s in plain) / len(plain)
    for name, sessions in (("counting, no voice", plain), ("counting + voice", voiced)):
        mean = sum(s.cpu_pct for s in sessions) / len(sessions)
        per = " / ".join(f"{s.cpu_pct:.1f}" for s in sessions)
        print(f"{name:<28}{per:>22}{mean:>8.1f}{mean / base:>7.2f}x")
    print()
    (lw, lh), (fw, fh) = images["dims"]
    look_kb = sum(images["look"]) / len(images["look"]) / 1024
    frame_kb = sum(images["frames"]) / len(images["frames"]) / 1024
    print(
        "image tokens: media_resolution LOW (Lookout's default) 64 tokens an image, whatever "
        "its size (API reference, MediaResolution); unset: 258 if both sides <= 384 px, else "
        "258 per 768x768 tile (Gemini token docs)"
    )
    header = f"{'images to the model':<36}{'/min':>6}{'px':>10}{'JPEG KiB':>10}{'tok LOW':>9}{'tok unset':>11}"  # noqa: E501
    print(header)
    print("-" * len(header))
    for name, per_min, (w, h), kb in (
        ("look, look_per_minute 4 (worst case)", 4, (lw, lh), look_kb),
        ("--send-frames at 1 fps", 60, (fw, fh), frame_kb),
    ):
        print(
            f"{name:<36}{per_min:>6}{f'{w}x{h}':>10}{kb:>10.1f}"
            f"{per_min * LOW_TOKENS:>9}{per_min * tile_tokens(w, h):>11}"
        )
    print(
        f"per image: look {look_kb:.1f} KiB (boxes drawn), a sent frame {frame_kb:.1f} KiB "
        f"(vtest frames 40/200/400/600); tokens a minute are per image x images a minute"
    )


if __name__ == "__main__":
    main()
