"""A WAV file is checked before it is read: its type, its size, what its header says.

``--mic FILE.wav`` is converted whole at start; a header saying 1 Hz once had the
converter make 16,000 samples of each (3.85 GB from a 200 KB file), a named pipe
hung the start, a header of 0 channels was said as an unsupported format. And a
``--speaker`` file on a disk that fills is said, not a traceback, when it is closed.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from device.audio.ports import MIC_RATE, AudioError
from device.audio.wav_mic import read_wav
from tests.audio.wavs import encode, sine
from tests.cli import LOOKOUT
from tests.datafiles import REPO_ROOT, data_file


def wav_bytes(
    *,
    tag: int = 1,
    channels: int = 1,
    rate: int = 16_000,
    bits: int = 16,
    align: int | None = None,
    data: bytes = b"",
    data_size: int | None = None,
    extensible: int | None = None,
) -> bytes:
    """A RIFF/WAVE file with exactly the header fields given (true or not)."""
    width = bits // 8
    align = channels * width if align is None else align
    fmt = struct.pack("<HHIIHH", tag, channels, rate, rate * align, align, bits)
    if extensible is not None:
        # cbSize, valid bits, channel mask, then the sub-format GUID (its tag first).
        fmt += struct.pack("<HHI", 22, bits, 0) + struct.pack("<H", extensible) + bytes(14)
    size = len(data) if data_size is None else data_size
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt
    body += b"data" + struct.pack("<I", size) + data
    return b"RIFF" + struct.pack("<I", len(body)) + body


def refusal(path: Path) -> str:
    with pytest.raises(AudioError) as caught:
        read_wav(path, MIC_RATE)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path}: ")
    return message.removeprefix(f"{path}: ")


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"rate": 1}, "a broken WAV header: 1 Hz (8000 to 192000 Hz are read)"),
        ({"rate": 384_000}, "384000 Hz"),
        ({"channels": 0}, "a broken WAV header: 0 channels (1 to 8 are read)"),
        ({"channels": 9}, "9 channels"),
        ({"bits": 0}, "a broken WAV header: 0-bit samples"),
        ({"bits": 12}, "12-bit samples"),
        ({"align": 7}, "7 bytes a frame for 1 channels of 16 bits"),
    ],
)
def test_a_header_no_recording_has_is_said_for_what_it_is(
    tmp_path: Path, fields: dict[str, int], said: str
) -> None:
    path = tmp_path / "odd.wav"
    # Little data: were the header believed, this test must not be what fills the memory.
    path.write_bytes(wav_bytes(data=bytes(2000), **fields))
    message = refusal(path)
    assert said in message, message
    assert "format 0x0001" not in message  # integer PCM is the one format read


def test_a_truncated_header_is_said_truncated_not_an_unsupported_format(tmp_path: Path) -> None:
    whole = wav_bytes(data=bytes(100))
    for cut, said in ((30, "its format chunk is cut short"), (36, "no samples chunk")):
        path = tmp_path / f"cut{cut}.wav"
        path.write_bytes(whole[:cut])
        assert said in refusal(path)


def test_an_hour_and_more_is_refused_from_the_header_before_a_sample_is_read(
    tmp_path: Path,
) -> None:
    # Two hours of 8 kHz 8-bit mono: a sparse file, so nothing is written to the disk.
    path = tmp_path / "long.wav"
    samples = 2 * 3600 * 8000
    path.write_bytes(wav_bytes(rate=8000, bits=8, data_size=samples))
    os.truncate(path, path.stat().st_size + samples)
    assert refusal(path) == "120 minutes of audio, over the limit of 60 (cut it shorter)"


def test_a_header_that_claims_more_than_the_file_holds_reads_what_is_there(
    tmp_path: Path,
) -> None:
    """A recording cut short (its writer killed before it wrote the sizes)."""
    data = encode(sine(440, 16_000, 0.5), 2)
    path = tmp_path / "cut.wav"
    path.write_bytes(wav_bytes(data=data, data_size=0xFFFFFFFF))
    assert read_wav(path, MIC_RATE) == data


def test_extensible_pcm_is_read_and_extensible_float_named(tmp_path: Path) -> None:
    data = encode(sine(440, 16_000, 0.2), 2)
    pcm = tmp_path / "ext.wav"
    pcm.write_bytes(wav_bytes(tag=0xFFFE, extensible=1, data=data))
    assert read_wav(pcm, MIC_RATE) == data
    floats = tmp_path / "extfloat.wav"
    floats.write_bytes(wav_bytes(tag=0xFFFE, extensible=3, bits=32, data=bytes(64)))
    assert refusal(floats).startswith("32/64-bit float WAV is not supported")


def test_a_named_pipe_or_a_device_is_refused_at_once_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.wav"
    os.mkfifo(fifo)
    said: list[str] = []
    reader = threading.Thread(target=lambda: said.append(refusal(fifo)), daemon=True)
    reader.start()
    reader.join(timeout=10)
    if reader.is_alive():  # blocked in open(): a writer lets it go, and the test fails
        with open(fifo, "wb"):
            pass
        pytest.fail("reading a named pipe as a WAV waited for a writer")
    assert said == ["a named pipe, not a regular file"]
    assert refusal(Path("/dev/zero")) == "a device, not a regular file"


ADDRESS_SPACE = 2_000_000_000  # bytes: the whole CLI runs in well under this


def test_a_1_hz_header_is_refused_at_start_in_one_line_within_bounded_memory(
    tmp_path: Path,
) -> None:
    """The issue's case, through the CLI: a 200 KB file whose header says 1 Hz. Under an
    address-space cap of 2 GB, the conversion it once started fails to allocate."""
    wav = tmp_path / "1hz.wav"
    wav.write_bytes(wav_bytes(rate=1, data=bytes(200_000)))
    (tmp_path / "empty.toml").write_text("")

    def capped() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))

    env = {**os.environ, "GEMINI_API_KEY": "not-used-the-run-never-starts"}
    result = subprocess.run(
        [*LOOKOUT, "run", "--config", str(tmp_path / "empty.toml"), "--no-http",
         "--model", "gemini-3.8-live", "--source", str(data_file("vtest.avi")),
         "--mic", str(wav)],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60, check=False,
        preexec_fn=capped,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line == (
        f"lookout: --mic {wav}: a broken WAV header: 1 Hz (8000 to 192000 Hz are read); "
        "convert it with: ffmpeg -i IN -ac 1 -ar 16000 -c:a pcm_s16le OUT.wav"
    )


FULL_DISK = """
import resource, signal, sys
from pathlib import Path
from device.audio.ports import AudioError
from device.audio.wav_out import WavLoudspeaker

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail, as on a full disk
resource.setrlimit(resource.RLIMIT_FSIZE, (10_000, resource.RLIM_INFINITY))
out = WavLoudspeaker(Path(sys.argv[1]), rate=24_000)
out.open()
try:
    for _ in range(100):
        out.write(bytes(960))
except AudioError as exc:
    print("write:", exc)
try:
    out.close()
except AudioError as exc:
    print("close:", exc)
"""


def test_a_speaker_file_on_a_full_disk_is_closed_with_one_line_not_a_traceback(
    tmp_path: Path,
) -> None:
    said = tmp_path / "said.wav"
    result = subprocess.run(
        [sys.executable, "-c", FULL_DISK, str(said)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    write, close = result.stdout.splitlines()
    assert write.startswith(f"write: {said}: writing failed (")
    assert close.startswith(f"close: {said}: closing failed (")
