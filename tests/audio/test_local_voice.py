"""Offline, the local model speaks through espeak-ng on the loudspeaker (here a WAV)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import wave
from pathlib import Path

import numpy as np
import pytest

from tests.datafiles import REPO_ROOT, data_file

pytestmark = pytest.mark.slow


def run(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "device.cli",
            "run",
            "--model",
            "local",
            "--no-http",
            "--source",
            str(data_file("vtest.avi")),
            "--pace",
            "realtime",
            "--duration",
            "3",
            *args,
        ],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def seconds_and_loudness(path: Path) -> tuple[float, float]:
    with wave.open(str(path), "rb") as w:
        pcm = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float64)
        return pcm.size / w.getframerate(), float(np.sqrt(np.mean(pcm**2))) if pcm.size else 0.0


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng is not installed")
def test_the_local_model_says_its_sentences(tmp_path: Path) -> None:
    said = tmp_path / "said.wav"
    done = run(tmp_path, "--speaker", str(said))
    assert done.returncode == 0, done.stderr
    assert "count: 3" in done.stdout
    seconds, loudness = seconds_and_loudness(said)
    assert seconds >= 1.0 and loudness > 300  # a spoken sentence, not silence


def test_without_a_local_voice_it_prints_and_says_so_once(tmp_path: Path) -> None:
    said = tmp_path / "said.wav"
    # A PATH with the interpreter's folder only: no espeak-ng on it.
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}
    done = run(tmp_path, "--speaker", str(said), env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("no espeak-ng") == 1
    assert "count: 3" in done.stdout
    assert seconds_and_loudness(said)[0] == 0.0


def test_tts_off_keeps_the_local_model_quiet(tmp_path: Path) -> None:
    said = tmp_path / "said.wav"
    done = run(tmp_path, "--speaker", str(said), "--tts", "off")
    assert done.returncode == 0, done.stderr
    assert "no espeak-ng" not in done.stdout
    assert seconds_and_loudness(said)[0] == 0.0


def test_a_microphone_offline_is_said_not_pretended(tmp_path: Path) -> None:
    wav = tmp_path / "question.wav"
    with wave.open(str(wav), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(b"\0\0" * 16000)
    done = run(tmp_path, "--mic", str(wav))
    assert done.returncode == 0, done.stderr
    assert "the local model cannot understand speech" in done.stdout


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["--speaker", "/no/such/folder/said.wav"],
            "--speaker /no/such/folder/said.wav: cannot write",
        ),
        (["--mic", "/no/such/question.wav", "--model", "gemini-3.8-live"], "no such file"),
    ],
)
def test_a_wav_that_cannot_be_used_is_one_line_and_exit_2(
    tmp_path: Path, args: list[str], said: str
) -> None:
    env = {**os.environ, "GEMINI_API_KEY": "not-a-key"}
    done = run(tmp_path, *args, env=env)
    assert done.returncode == 2
    assert said in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr
