"""Every file a flag names is checked before it is read: a regular file, of a sane size.

``--config /dev/zero`` once filled the memory (2.5 GB in 5 s) and a named pipe hung the
start for ever. Each case is run through the real CLI (``device.cli.main``) in one
child process, under a cap on its address space and a time limit, so a regression is
a failed test rather than a machine out of memory or a hung suite.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.datafiles import REPO_ROOT, data_file
from tests.fifos import within

ADDRESS_SPACE = 3_000_000_000  # bytes; a refused start stays far below it

# Runs each case's command line through device.cli.main, and reads each token file as a
# running device does; prints what each said, as JSON.
CASES = """
import contextlib, io, json, os, sys
import anyio
from device.cli import main
from models.gemini.tokens import TokenFile, TokenUnavailable

os.environ.pop("GEMINI_API_KEY", None)
os.environ.pop("GOOGLE_API_KEY", None)
results = []
for case in json.loads(sys.argv[1]):
    if case[0] == "token-file":
        try:
            anyio.run(TokenFile(__import__("pathlib").Path(case[1])).token)
            results.append([0, "read"])
        except TokenUnavailable as exc:
            results.append([2, str(exc)])
        continue
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(case)
        except SystemExit as exc:
            code = exc.code
    results.append([code, err.getvalue()])
print(json.dumps(results))
"""


def run_cases(cases: list[list[str]], env: dict[str, str] | None = None) -> list[tuple[int, str]]:
    def capped() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))

    done = subprocess.run(
        [sys.executable, "-c", CASES, json.dumps(cases)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=False,
        preexec_fn=capped, env={**os.environ, **(env or {})},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return [(code, said) for code, said in json.loads(done.stdout)]


@pytest.fixture
def odd_files(tmp_path: Path) -> dict[str, Path]:
    """A named pipe nobody writes, a directory, and files too big for their kind."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    big_config = tmp_path / "big.toml"
    big_config.write_text("# a comment\n" * 100_000)  # 1.2 MB of valid TOML
    big_token = tmp_path / "big-token"
    big_token.write_text("auth_tokens/" + "x" * 20_000)
    return {"fifo": fifo, "dir": tmp_path, "big_config": big_config, "big_token": big_token}


def test_a_flag_naming_a_device_a_pipe_or_a_huge_file_is_refused_at_start_in_one_line(
    tmp_path: Path, odd_files: dict[str, Path]
) -> None:
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    video = str(data_file("vtest.avi"))
    run = ["run", "--no-http", "--model", "local", "--source", video, "--duration", "1"]
    fifo = str(odd_files["fifo"])
    expected = [
        (["--config", "/dev/zero"], "cannot read --config /dev/zero: a device, not a regular file"),
        (["--config", fifo], f"cannot read --config {fifo}: a named pipe, not a regular file"),
        (["--config", str(odd_files["big_config"])], "1.2 MB, over the limit of 1 MB"),
        (["--http-token-file", "/dev/zero"], "--http-token-file /dev/zero: a device, not a"),
        (["--http-token-file", fifo], f"--http-token-file {fifo}: a named pipe, not a regular"),
        (["--http-token-file", str(odd_files["big_token"])], "20 KB, over the limit of 16 KB"),
        (["--detector", fifo], f"--detector {fifo}: a named pipe, not a regular file"),
        (["--detector", str(odd_files["dir"])], "a directory, not a file"),
    ]
    cases = [
        [*run, *(args if args[0] == "--config" else ["--config", str(empty), *args])]
        for args, _ in expected
    ]
    gemini = ["run", "--no-http", "--config", str(empty), "--model", "gemini-3.8-live"]
    token_cases = [
        ("/dev/zero", "--token-file /dev/zero: a device, not a regular file"),
        (fifo, f"--token-file {fifo}: a named pipe, not a regular file"),
        (str(odd_files["big_token"]), "20 KB, over the limit of 16 KB"),
    ]
    cases += [[*gemini, "--token-file", path] for path, _ in token_cases]
    results = run_cases(cases)
    for (code, said), (args, wanted) in zip(results, [*expected, *token_cases], strict=True):
        assert code == 2, (args, said)
        lines = said.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("lookout: "), (args, said)
        assert wanted in lines[0], (args, said)


def test_a_token_file_swapped_while_running_is_refused_not_read_whole_nor_waited_on(
    tmp_path: Path, odd_files: dict[str, Path]
) -> None:
    """What a running device's reconnection reads: a token file that became /dev/zero,
    a named pipe or a huge file is one line (said as a failed connection, and retried)."""
    token = tmp_path / "token"
    token.write_text("auth_tokens/abc\n")
    swapped = tmp_path / "swapped"
    swapped.symlink_to("/dev/zero")
    cases = [
        ["token-file", str(token)],
        ["token-file", str(swapped)],
        ["token-file", str(odd_files["fifo"])],
        ["token-file", str(odd_files["big_token"])],
    ]
    assert run_cases(cases) == [
        (0, "read"),
        (2, f"--token-file {swapped}: a device, not a regular file"),
        (2, f"--token-file {odd_files['fifo']}: a named pipe, not a regular file"),
        (2, f"--token-file {odd_files['big_token']}: 20 KB, over the limit of 16 KB"),
    ]


def test_a_log_that_report_cannot_read_whole_is_refused_in_one_line(
    tmp_path: Path, odd_files: dict[str, Path]
) -> None:
    """``lookout report`` reads a JSON-lines log whole: a pipe, a device or a runaway file
    (300 MB here, sparse) is refused before a byte is read."""
    huge = tmp_path / "events.jsonl"
    huge.write_text('{"type":"run","t":0}\n')
    os.truncate(huge, 300_000_000)
    out = str(tmp_path / "report.html")
    fifo = odd_files["fifo"]
    results = run_cases([["report", str(p), "--out", out] for p in ("/dev/zero", fifo, huge)])
    assert results == [
        (2, "lookout: /dev/zero: a device, not a regular file\n"),
        (2, f"lookout: {fifo}: a named pipe, not a regular file\n"),
        (2, f"lookout: {huge}: 300 MB of JSON lines, over the limit of 256 MB\n"),
    ]


@pytest.mark.parametrize("credentials", ["/dev/zero", "fifo"])
def test_vertex_credentials_that_are_no_file_are_refused_before_google_auth_reads_them(
    tmp_path: Path, odd_files: dict[str, Path], credentials: str
) -> None:
    """google-auth reads GOOGLE_APPLICATION_CREDENTIALS whole: a named pipe hung the start."""
    named = str(odd_files["fifo"]) if credentials == "fifo" else credentials
    (tmp_path / "empty.toml").write_text("")
    vertex = {
        "GOOGLE_GENAI_USE_VERTEXAI": "true",
        "GOOGLE_CLOUD_PROJECT": "p",
        "GOOGLE_CLOUD_LOCATION": "us-central1",
        "GOOGLE_APPLICATION_CREDENTIALS": named,
    }
    run = ["run", "--no-http", "--config", str(tmp_path / "empty.toml"), "--model",
           "gemini-3.8-live", "--source", str(data_file("vtest.avi"))]  # fmt: skip
    ((code, said),) = run_cases([run], env=vertex)
    kind = "a device" if credentials == "/dev/zero" else "a named pipe"
    assert (code, said) == (
        2,
        f"lookout: GOOGLE_APPLICATION_CREDENTIALS {named}: {kind}, not a regular file\n",
    )


def test_files_read_while_running_refuse_a_pipe_at_once(tmp_path: Path) -> None:
    """The configuration read again to save the scene, a snapshot read back for the page,
    the device id kept between starts: each swapped for a named pipe."""
    from device.config.device_id import stored_suffix
    from device.config.scene.file import write_scene
    from device.outputs.pictures.files import read_picture

    config = tmp_path / "lookout.toml"
    os.mkfifo(config)

    def save() -> str:
        with pytest.raises(OSError) as caught:
            write_scene(config, {}, {})
        return str(caught.value.strerror)

    assert within(10, config, save) == "a named pipe, not a regular file"
    picture = "0123456789ab-12.50-count-cam.jpg"
    os.mkfifo(tmp_path / picture)
    assert within(10, tmp_path / picture, lambda: read_picture(tmp_path, picture)) is None
    os.mkfifo(tmp_path / "device-suffix")
    suffix = within(10, tmp_path / "device-suffix", lambda: stored_suffix(tmp_path))
    # Not waited on, and not replaced either (whole_file replaces only regular files): the
    # device id falls back to the machine's suffix.
    assert suffix is None
    assert stat.S_ISFIFO(os.lstat(tmp_path / "device-suffix").st_mode)


# Runs the command as its only child (stdin: /dev/zero); the last line is its exit status
# and its peak RSS in KB.
ZERO_STDIN = """
import resource, subprocess, sys
limit = 6_000_000_000  # a regression fails the run (MemoryError), not the machine
def capped():
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
with open("/dev/zero", "rb") as zero:
    code = subprocess.run(sys.argv[1:], stdin=zero, preexec_fn=capped).returncode
print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


@pytest.mark.slow
def test_stdin_that_never_ends_a_line_is_said_and_no_longer_read(tmp_path: Path) -> None:
    """``lookout run --stdin < /dev/zero`` once took 4 GB in 5 s, one line never ending."""
    (tmp_path / "empty.toml").write_text("")
    run = [sys.executable, "-m", "device.cli", "run", "--config", str(tmp_path / "empty.toml"),
           "--model", "local", "--no-http", "--source", str(data_file("vtest.avi")),
           "--duration", "2", "--stdin"]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", ZERO_STDIN, *run],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    *said, last = done.stdout.splitlines()
    code, peak_kb = (int(x) for x in last.split())
    assert code == 0, done.stderr[-3000:]
    assert peak_kb / 1024 < 1000, f"peak RSS {peak_kb / 1024:.0f} MB"
    assert any("stdin: a line over 4096 characters is no command" in x for x in said), said
    assert any("replayed 20 frames" in x for x in said), said[-5:]  # to its end
