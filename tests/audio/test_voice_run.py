"""`lookout run` hears and speaks: the real CLI process, the real google-genai SDK, the
TLS fake Live server, a WAV as the microphone and a WAV as the loudspeaker."""

from __future__ import annotations

import itertools
import json
import signal
import subprocess
import sys
import threading
import urllib.request
import wave
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.datafiles import REPO_ROOT, data_file
from tests.fakelive import FakeLiveServer, ThreadedFakeLiveServer, get_field

pytestmark = pytest.mark.slow

MODEL = "gemini-3.8-live"
MIC_CHUNK = 640  # 20 ms of 16 kHz mono PCM16


@pytest.fixture
def server() -> Iterator[ThreadedFakeLiveServer]:
    with FakeLiveServer.run_in_thread() as srv:
        yield srv


def write_wav(path: Path, seconds: float, rate: int, channels: int) -> np.ndarray:
    """A voice-like test signal (a sweep), as ``channels`` identical channels."""
    t = np.arange(int(seconds * rate)) / rate
    mono = (0.3 * np.sin(2 * np.pi * (300 + 200 * t) * t) * 32767).astype(np.int16)
    frames = np.repeat(mono[:, None], channels, axis=1)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(frames.tobytes())
    return mono


def speech(seconds: float, rate: int = 24000) -> bytes:
    """What the fake model says: a recognisable PCM16 ramp pattern."""
    n = int(seconds * rate)
    return ((np.arange(n) % 2000) - 1000).astype("<i2").tobytes()


def start(
    server: ThreadedFakeLiveServer,
    tmp_path: Path,
    *args: str,
    model: str = MODEL,
    http: str | None = None,
) -> subprocess.Popen[str]:
    """``lookout run`` on the sample video against the fake (``http``: the page's address;
    none: no page)."""
    page = ["--http", http] if http is not None else ["--no-http"]
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "device.cli",
            "run",
            "--model",
            model,
            *page,
            "--source",
            str(data_file("vtest.avi")),
            "--pace",
            "realtime",
            "--loop",
            "--events",
            str(tmp_path / "events.jsonl"),
            "--stdin",
            *args,
        ],
        cwd=REPO_ROOT,
        env=server.subprocess_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def quit_and_finish(proc: subprocess.Popen[str], timeout: float = 60) -> tuple[str, str]:
    try:
        out, err = proc.communicate("quit\n", timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    return out, err


def audio_inputs(server: ThreadedFakeLiveServer | FakeLiveServer) -> list[Any]:
    """Every microphone chunk the fake received. Predicates given to ``wait_for`` run on the
    fake's own loop: they must read the server (``server.server``), not the threaded
    wrapper, which would wait for that same loop."""
    connections = (
        server.server.connections
        if isinstance(server, ThreadedFakeLiveServer)
        else server.connections
    )
    return [
        r
        for c in list(connections)
        for r in c.realtime_inputs()
        if r.kind == "audio" or (r.mime_type or "").startswith("audio/")
    ]


def connected(server: ThreadedFakeLiveServer) -> None:
    """Until the device's session is set up (the fake answered its setup): what the fake
    says before that would reach an SDK still waiting for ``setupComplete``."""
    server.wait_connection(1, timeout=30)
    server.wait_for(lambda: server.server.connection(0).setup_completed, timeout=30)


def answered(server: ThreadedFakeLiveServer, name: str) -> str:
    """Ask the device a question (a tool call) and wait for its answer: everything the
    fake sent before has then been read by the device (one ordered connection)."""
    (call_id,) = server.send_tool_call({"name": name, "args": {}})
    server.wait_function_response(call_id, timeout=30)
    return call_id


def read_wav(path: Path) -> tuple[int, bytes]:
    with wave.open(str(path), "rb") as w:
        assert w.getnchannels() == 1 and w.getsampwidth() == 2
        return w.getframerate(), w.readframes(w.getnframes())


def test_a_wav_is_spoken_to_the_model_at_real_time_pace(
    server: ThreadedFakeLiveServer, tmp_path: Path
) -> None:
    wav = tmp_path / "question.wav"
    write_wav(wav, 3.0, 44100, 2)  # any rate and channel count
    proc = start(server, tmp_path, "--mic", str(wav))
    connected(server)
    conn = server.connection(0)
    # What is heard is transcribed for the console, the page and the log.
    assert get_field(conn.setup, "input_audio_transcription") is not None
    # The whole WAV arrives (3 s of 16 kHz mono PCM16), as it would be spoken.
    server.wait_for(lambda: sum(len(r.data or b"") for r in audio_inputs(server)) >= 96000 - 640,
                    timeout=30)  # fmt: skip
    quit_and_finish(proc)
    chunks = audio_inputs(server)
    assert all(r.mime_type == "audio/pcm;rate=16000" for r in chunks)
    assert {len(r.data or b"") for r in chunks[:-1]} == {MIC_CHUNK}
    assert abs(sum(len(r.data or b"") for r in chunks) - 96000) <= MIC_CHUNK
    # Real-time pace, not a burst: the second half of the chunks (past whatever queued
    # while the connection was being set up) arrived over about the audio they carry. The
    # bounds are wide: a loaded machine delays deliveries, but a dump arrives at once.
    later = chunks[len(chunks) // 2 :]
    carried = sum(len(r.data or b"") for r in later[:-1]) / 32000  # s of 16 kHz PCM16
    span = later[-1].t - later[0].t
    assert carried * 0.8 <= span + 0.02 <= carried * 2.0, (span, carried)


def test_what_the_model_says_is_played_exactly(
    server: ThreadedFakeLiveServer, tmp_path: Path
) -> None:
    out_wav = tmp_path / "said.wav"
    proc = start(server, tmp_path, "--speaker", str(out_wav))
    connected(server)
    first, second = speech(0.5), speech(0.7)
    server.send_server_content(audio=first[: len(first) // 3])
    server.send_server_content(audio=first[len(first) // 3 :], turn_complete=True)
    server.send_server_content(audio=second, turn_complete=True)
    answered(server, "count_people_now")
    quit_and_finish(proc)  # the run ends once the loudspeaker has said it all
    rate, played = read_wav(out_wav)
    assert rate == 24000
    assert played == first + second


def test_a_barge_in_stops_the_loudspeaker_and_drops_what_was_queued(
    server: ThreadedFakeLiveServer, tmp_path: Path
) -> None:
    out_wav = tmp_path / "said.wav"
    proc = start(server, tmp_path, "--speaker", str(out_wav))
    connected(server)
    # A long answer (10 s, sent faster than it is spoken, as Live does), then the user
    # barges in: the fake says ``interrupted``; then the model's next, short answer.
    long_answer, next_answer = speech(10.0), speech(0.3)
    server.send_server_content(audio=long_answer)
    server.send_server_content(interrupted=True)
    server.send_server_content(audio=next_answer, turn_complete=True)
    answered(server, "count_people_now")
    quit_and_finish(proc)
    _, played = read_wav(out_wav)
    assert played.endswith(next_answer)
    cut = len(played) - len(next_answer)
    # Of the long answer, only what was played before the interruption arrived (the
    # 60 ms prebuffer and at most a chunk or two): the rest was never written.
    assert 0 <= cut <= int(0.2 * 24000) * 2, cut
    assert played[:cut] == long_answer[:cut]


def test_half_duplex_sends_no_microphone_audio_while_the_device_speaks(
    server: ThreadedFakeLiveServer, tmp_path: Path
) -> None:
    wav = tmp_path / "talk.wav"
    write_wav(wav, 4.0, 16000, 1)
    proc = start(
        server, tmp_path, "--mic", str(wav), "--speaker", str(tmp_path / "o.wav"), "--half-duplex"
    )
    connected(server)
    server.wait_for(lambda: len(audio_inputs(server)) >= 10, timeout=30)
    # The device answers for 1.5 s while it is still being spoken to.
    server.send_server_content(audio=speech(1.5), turn_complete=True)

    def spoken_to_the_end() -> bool:
        chunks = audio_inputs(server)
        return len(chunks) >= 20 and chunks[-1].t - chunks[0].t >= 3.5

    server.wait_for(spoken_to_the_end, timeout=30)
    quit_and_finish(proc)
    chunks = audio_inputs(server)
    heard = sum(len(r.data or b"") for r in chunks) / 32000
    gaps = [b.t - a.t for a, b in itertools.pairwise(chunks)]
    # 1.5 s of speech plus the echo tail were not sent, in one gap.
    assert heard <= 4.0 - 1.5, heard
    assert max(gaps) >= 1.5, max(gaps)


@pytest.mark.parametrize(
    ("model", "form"),
    [("gemini-3.8-live", "client_content"), ("gemini-3.1-flash-live-preview", "realtime_text")],
)
def test_typed_text_reaches_the_model_as_text(
    server: ThreadedFakeLiveServer, tmp_path: Path, model: str, form: str
) -> None:
    proc = start(server, tmp_path, model=model)
    assert proc.stdin is not None
    connected(server)
    question = "what is the man in red doing?"
    proc.stdin.write(question + "\n")
    proc.stdin.flush()

    def arrived() -> list[str]:
        conn = server.server.connection(0)
        if form == "client_content":
            return [t for c in conn.client_contents() for t in c.texts() if t == question]
        return [
            r.text or "" for r in conn.realtime_inputs() if r.kind == "text" and r.text == question
        ]

    server.wait_for(arrived, timeout=30)
    quit_and_finish(proc)
    conn = server.connection(0)
    if form == "realtime_text":
        assert conn.client_contents() == []  # 3.1 closes a session on mid-session content


def test_push_to_talk_sends_only_what_is_said_while_talk_is_held(
    server: ThreadedFakeLiveServer, tmp_path: Path
) -> None:
    wav = tmp_path / "talk.wav"
    write_wav(wav, 3.0, 16000, 1)
    proc = start(server, tmp_path, "--mic", str(wav), "--push-to-talk")
    assert proc.stdin is not None and proc.stdout is not None
    connected(server)
    # The model's own voice detection is off: the device marks speech itself.
    aad = get_field(get_field(server.connection(0).setup, "realtime_input_config"),
                    "automatic_activity_detection")  # fmt: skip
    assert get_field(aad, "disabled") is True
    proc.stdin.write("t\n")  # talk
    proc.stdin.flush()
    server.wait_for(lambda: len(audio_inputs(server)) >= 25, timeout=30)
    proc.stdin.write("t\n")  # end of talk
    proc.stdin.flush()
    # Until the WAV is done (the console says so); a device that never says it is killed
    # after a minute, which ends the read with a failure rather than a hang.
    guard = threading.Timer(60, proc.kill)
    guard.start()
    try:
        lines = iter(proc.stdout.readline, "")
        assert any("ended" in line and "microphone" in line for line in lines)
    finally:
        guard.cancel()
    quit_and_finish(proc)
    marks = [
        r.kind
        for r in server.connection(0).realtime_inputs()
        if r.kind in ("activity_start", "activity_end", "audio")
    ]
    assert marks[0] == "activity_start" and marks.count("activity_start") == 1
    end = marks.index("activity_end")
    assert set(marks[1:end]) == {"audio"} and end >= 26
    assert "audio" not in marks[end:]  # held: nothing said after talk ended


def test_the_pages_talk_button_is_push_to_talk(
    server: ThreadedFakeLiveServer, tmp_path: Path
) -> None:
    wav = tmp_path / "talk.wav"
    write_wav(wav, 3.0, 16000, 1)
    proc = start(server, tmp_path, "--mic", str(wav), "--push-to-talk", http="127.0.0.1:0")
    assert proc.stdout is not None
    guard = threading.Timer(60, proc.kill)
    guard.start()
    try:
        url = next(
            line.split("status page: ")[1].split()[0]
            for line in iter(proc.stdout.readline, "")
            if "status page: " in line
        )
    finally:
        guard.cancel()
    connected(server)

    def post(on: bool) -> dict[str, Any]:
        request = urllib.request.Request(
            url + "api/talk",
            data=json.dumps({"on": on}).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return dict(json.load(response))

    with urllib.request.urlopen(url + "api/state", timeout=10) as response:
        assert json.load(response)["push_to_talk"] is True  # the page shows the button
    assert post(True)["talking"] is True
    server.wait_for(lambda: len(audio_inputs(server)) >= 10, timeout=30)
    assert post(False)["talking"] is False

    def ended() -> bool:
        return any(r.kind == "activity_end" for r in server.server.connection(0).realtime_inputs())

    server.wait_for(ended, timeout=30)
    quit_and_finish(proc)
    kinds = [r.kind for r in server.connection(0).realtime_inputs()]
    assert kinds[0] == "activity_start" and kinds.count("audio") >= 10


def test_a_wav_loudspeaker_holds_all_that_was_said_even_when_a_signal_ends_the_run(
    server: ThreadedFakeLiveServer, tmp_path: Path
) -> None:
    out_wav = tmp_path / "said.wav"
    proc = start(server, tmp_path, "--speaker", str(out_wav))
    connected(server)
    said = speech(3.0)
    server.send_server_content(audio=said, turn_complete=True)
    answered(server, "count_people_now")  # the device has read it all
    proc.send_signal(signal.SIGTERM)  # long before 3 s of it could be played
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert read_wav(out_wav) == (24000, said)
