"""A throwaway PulseAudio server for the sound-device tests: a null sink is the
loudspeaker, a pipe source is the microphone.

How it runs, and why:

* ``pulseaudio`` is started as an ordinary process (no system daemon, no kernel module,
  no real sound card) with ``--daemonize=no --exit-idle-time=-1 --disallow-exit -n``
  and a small ``-F`` script: the native protocol on a socket in a temporary directory
  (``auth-anonymous=1``: no cookie to share), ``module-null-sink sink_name=speaker``,
  ``module-pipe-source source_name=mic`` (16 kHz mono s16le; the module makes the FIFO
  itself and refuses one that exists) and both set as the defaults.
* Its ``HOME``, ``XDG_RUNTIME_DIR`` and ``PULSE_RUNTIME_PATH`` are temporary
  directories, so it touches no user's configuration and no other server.
* As root: PulseAudio 16 in user mode only warns ("not intended to be run as root");
  it needs neither ``--system`` nor another user, so none is used. (An older build that
  refuses could be run under ``setpriv --reuid=nobody``; none here needs it.)
* Ready means ``pactl info`` answers on the socket, polled until a deadline.
* Clients get ``PULSE_SERVER=unix:<socket>`` and the temporary ``HOME``, whose
  ``.asoundrc`` points ALSA's default device at the pulse plugin (libasound2-plugins):
  that is how PortAudio reaches PulseAudio. Debian's own hook does the same when a
  server answers; the file makes it so on a system without that hook.
* PortAudio and ALSA read their devices and configuration once per process, so the code
  under test runs in a child process started with this environment
  (``tests/audio/sound_probe.py``): the test process never loads PortAudio, and a
  PortAudio hang is a child's time-out, not a stuck test run.
* Stopped by its PID: terminate, then kill.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

READY_S = 20.0
FEED_RATE = 16_000
_ASOUNDRC = "pcm.!default { type pulse }\nctl.!default { type pulse }\n"
_OWN_VARS = ("PULSE_SERVER", "PULSE_SINK", "PULSE_SOURCE", "PULSE_COOKIE", "ALSA_CONFIG_PATH")


@dataclass
class PulseServer:
    process: subprocess.Popen[bytes]
    root: Path
    socket: Path
    fifo: Path
    log: Path

    @property
    def env(self) -> dict[str, str]:
        """The environment a client (pactl, parec, the probe child) runs in."""
        return _environment(self.root, self.socket)

    def pactl(self, *args: str, timeout: float = 5.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["pactl", *args], env=self.env, capture_output=True, text=True, timeout=timeout
        )


def _environment(root: Path, socket: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _OWN_VARS}
    env.update(
        HOME=str(root / "home"),
        XDG_RUNTIME_DIR=str(root / "run"),
        PULSE_RUNTIME_PATH=str(root / "run" / "pulse"),
        PULSE_SERVER=f"unix:{socket}",
    )
    return env


def start_pulse() -> PulseServer:
    """A running server (``pytest.skip`` when pulseaudio is not installed)."""
    binary = shutil.which("pulseaudio")
    if binary is None:
        pytest.skip("pulseaudio is not installed (Debian: pulseaudio, pulseaudio-utils)")
    # Under /tmp, not pytest's tmp_path: a unix socket's path must stay under 108 bytes.
    root = Path(tempfile.mkdtemp(prefix="lookout-pulse-"))
    for sub in ("home", "run", "run/pulse"):
        (root / sub).mkdir(mode=0o700, exist_ok=True)
    (root / "home" / ".asoundrc").write_text(_ASOUNDRC)
    socket, fifo, log = root / "run" / "native", root / "mic.fifo", root / "pulse.log"
    script = root / "lookout.pa"
    script.write_text(
        f"load-module module-native-protocol-unix socket={socket} auth-anonymous=1\n"
        "load-module module-null-sink sink_name=speaker rate=48000 channels=2\n"
        f"load-module module-pipe-source source_name=mic file={fifo} "
        f"format=s16le rate={FEED_RATE} channels=1\n"
        "set-default-sink speaker\n"
        "set-default-source mic\n"
    )
    command = [
        binary,
        "--daemonize=no",
        "--exit-idle-time=-1",
        "--disallow-exit",
        "--use-pid-file=no",
        "--disable-shm",  # plain socket transfer: no shared memory between test processes
        "-n",
        "-F",
        str(script),
    ]
    server = PulseServer(
        process=subprocess.Popen(
            command,
            env={k: v for k, v in _environment(root, socket).items() if k != "PULSE_SERVER"},
            stdout=subprocess.DEVNULL,
            stderr=log.open("wb"),
            start_new_session=True,  # the test run's Ctrl-C is for pytest to handle
        ),
        root=root,
        socket=socket,
        fifo=fifo,
        log=log,
    )
    try:
        _wait_ready(server)
    except BaseException:
        stop_pulse(server)
        raise
    return server


def _wait_ready(server: PulseServer) -> None:
    deadline = time.monotonic() + READY_S
    while True:
        if server.process.poll() is not None:
            raise RuntimeError(f"pulseaudio exited ({server.process.returncode}): {_tail(server)}")
        if server.socket.exists() and server.fifo.exists():
            with contextlib.suppress(subprocess.TimeoutExpired):
                if server.pactl("info", timeout=2.0).returncode == 0:
                    return
        if time.monotonic() > deadline:
            raise RuntimeError(f"pulseaudio not ready in {READY_S:g} s: {_tail(server)}")
        time.sleep(0.05)


def _tail(server: PulseServer) -> str:
    try:
        lines = server.log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(lines[-5:])


def stop_pulse(server: PulseServer) -> None:
    process = server.process
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
    shutil.rmtree(server.root, ignore_errors=True)


@contextlib.contextmanager
def running_pulse() -> Iterator[PulseServer]:
    server = start_pulse()
    try:
        yield server
    finally:
        stop_pulse(server)


def tone(freq: float, seconds: float, rate: int, amplitude: int = 12_000) -> bytes:
    t = np.arange(round(seconds * rate)) / rate
    return bytes((np.sin(2 * np.pi * freq * t) * amplitude).astype("<i2").tobytes())


class Feeder:
    """Writes a tone into the pipe source's FIFO at real-time pace until stopped (a thread)."""

    def __init__(self, fifo: Path, freq: float = 1000.0, piece_ms: int = 20) -> None:
        self._piece = tone(freq, piece_ms / 1000, FEED_RATE)
        self._period = piece_ms / 1000
        self._fifo = fifo
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pulse-feeder", daemon=True)
        self.written = 0

    def __enter__(self) -> Feeder:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        # Non-blocking: should the server stop reading, the feeder drops pieces instead of
        # hanging the test's teardown on a full FIFO.
        fd = os.open(self._fifo, os.O_WRONLY | os.O_NONBLOCK)
        try:
            start = time.monotonic()
            n = 0
            while not self._stop.is_set():
                try:
                    self.written += os.write(fd, self._piece)
                except BlockingIOError:
                    pass
                except BrokenPipeError:  # the server is gone (a test that stops it)
                    return
                n += 1
                self._stop.wait(max(0.0, start + n * self._period - time.monotonic()))
        finally:
            os.close(fd)


class MonitorRecorder:
    """Records the null sink's monitor with parec (what was played) into a file."""

    def __init__(self, server: PulseServer, rate: int = 16_000) -> None:
        self.rate = rate
        self._server = server
        self._path = server.root / f"monitor-{time.monotonic_ns()}.raw"
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> MonitorRecorder:
        with self._path.open("wb") as out:
            self._process = subprocess.Popen(
                [
                    "parec",
                    "--device=speaker.monitor",
                    "--format=s16le",
                    f"--rate={self.rate}",
                    "--channels=1",
                    "--latency-msec=20",
                ],
                env=self._server.env,
                stdout=out,
                stderr=subprocess.DEVNULL,
            )
        return self

    def __exit__(self, *exc: object) -> None:
        process = self._process
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)

    def pcm(self) -> bytes:
        return self._path.read_bytes()


def dominant_hz(pcm: bytes, rate: int) -> float:
    """The strongest frequency in PCM16 mono (a tone's pitch, whatever its phase)."""
    x = np.frombuffer(pcm, dtype="<i2").astype(np.float64)
    spectrum = np.abs(np.fft.rfft(x * np.hanning(x.size)))
    spectrum[0] = 0.0
    return float(np.argmax(spectrum) * rate / x.size)


def rms(pcm: bytes) -> float:
    x = np.frombuffer(pcm, dtype="<i2").astype(np.float64)
    return float(np.sqrt(np.mean(x**2))) if x.size else 0.0
