"""The event log never silently stops: a locked database and a full disk, in the real app.

The SQLite log keeps what it cannot write in memory, retries, and catches up;
while it cannot write, /healthz says degraded and /metrics shows it; at the
end every event is in the database (the JSON-lines file of the same run is the
witness), or the exit code and the last line say how many were lost.
"""

from __future__ import annotations

import contextlib
import json
import resource
import signal
import sqlite3
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.cli import LOOKOUT, lookout, offline_env
from tests.datafiles import REPO_ROOT, data_file
from tests.ops.apprun import running_app
from tests.ops.support import free_port

pytestmark = [pytest.mark.slow]


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=3) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as error:
        return int(error.code), error.read().decode()
    except OSError:
        return 0, ""


def metric(text: str, name: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    return None


def db_events(db: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(db) as conn:
        return [
            json.loads(row[0]) for row in conn.execute("SELECT data FROM events ORDER BY rowid")
        ]


def jsonl_events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def same_events(db: list[dict[str, Any]], jsonl: list[dict[str, Any]]) -> None:
    kept = [e for e in jsonl if e["type"] != "model_audio"]
    assert [(e["type"], e["t"]) for e in db] == [(e["type"], e["t"]) for e in kept]


@pytest.mark.anyio
async def test_a_database_locked_for_8_s_is_said_and_then_caught_up(tmp_path: Path) -> None:
    db = tmp_path / "events.sqlite"
    async with running_app(tmp_path, db=db, loop=True) as run:
        base = run.url
        await anyio.to_thread.run_sync(_wait_healthy, base)
        locker = sqlite3.connect(db, timeout=1, isolation_level=None)
        locker.execute("BEGIN EXCLUSIVE")  # another process holds the write lock
        locked_at = time.monotonic()
        try:
            degraded = await anyio.to_thread.run_sync(_wait_degraded, base, 20)
            assert degraded["reason"] == "event log failing"  # /healthz: states only
            _, state = await anyio.to_thread.run_sync(get, base + "api/state")
            assert "database is locked" in json.loads(state)["health"]["reason"]
            _, text = await anyio.to_thread.run_sync(get, base + "metrics")
            assert metric(text, 'lookout_event_log_failing{log="db"}') == 1.0
            assert (metric(text, 'lookout_event_log_pending{log="db"}') or 0) > 0
            assert metric(text, "lookout_healthy") == 1.0  # it still counts
            # The scenario, not a wait for something: the lock is held 8 s, as a backup would.
            await anyio.sleep(max(0.0, locked_at + 8.0 - time.monotonic()))
        finally:
            locker.execute("ROLLBACK")
            locker.close()
        await anyio.to_thread.run_sync(_wait_caught_up, base, 30)
    assert run.exit_code == 0
    same_events(db_events(db), run.events())
    assert run.app.logs.db is not None and run.app.logs.db.complete


def _wait_healthy(base: str) -> None:
    deadline = time.monotonic() + 30
    while get(base + "healthz")[0] != 200:
        assert time.monotonic() < deadline, "never healthy"
        time.sleep(0.1)  # polling a running server


def _wait_degraded(base: str, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        status, body = get(base + "healthz")
        if status == 200 and json.loads(body)["status"] == "degraded":
            return dict(json.loads(body))
        assert time.monotonic() < deadline, body
        time.sleep(0.1)  # polling a running server


def _wait_caught_up(base: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        _, text = get(base + "metrics")
        if metric(text, 'lookout_event_log_failing{log="db"}') == 0.0 and (
            metric(text, 'lookout_event_log_pending{log="db"}') == 0.0
        ):
            return
        assert time.monotonic() < deadline, "never caught up"
        time.sleep(0.1)  # polling a running server


@pytest.mark.usefixtures("remembered_detections")
def test_a_full_disk_freed_again_loses_no_event(tmp_path: Path) -> None:
    """RLIMIT_FSIZE stands in for the disk: writes past it fail with EFBIG as a full
    disk fails with ENOSPC. The limit is raised on the running process (prlimit): the
    disk was freed."""
    db, events = tmp_path / "events.sqlite", tmp_path / "events.jsonl"
    port = free_port()
    (tmp_path / "empty.toml").write_text("")
    limit = 96 * 1024  # the database and its WAL pass it; the JSON-lines file does not

    def small_disk() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))

    with (tmp_path / "out.txt").open("w") as out, (tmp_path / "err.txt").open("w") as err:
        proc = subprocess.Popen(
            [*LOOKOUT, "run", "--config", str(tmp_path / "empty.toml"), "--model", "local",
             "--source", str(data_file("vtest.avi")), "--loop", "--pace", "fast",
             "--http", f"127.0.0.1:{port}", "--db", str(db), "--events", str(events)],
            cwd=REPO_ROOT, env=offline_env(), stdout=out, stderr=err, stdin=subprocess.DEVNULL,
            preexec_fn=small_disk,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}/"
    try:
        degraded = _wait_degraded(base, 60)
        assert "event log" in degraded["reason"], degraded
        resource.prlimit(
            proc.pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY)
        )
        _wait_caught_up(base, 60)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    stdout, stderr = (tmp_path / "out.txt").read_text(), (tmp_path / "err.txt").read_text()
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stdout + stderr
    assert any("warning: " in line and "event log" in line for line in stdout.splitlines())
    assert events.stat().st_size < limit  # the witness was never cut
    same_events(db_events(db), jsonl_events(events))


# ------------------------------------------- files rotated, renamed and deleted under a run


def start_run(tmp_path: Path, *args: str, preexec_fn: Any = None) -> subprocess.Popen[bytes]:
    """``lookout run`` on the sample video, looping as fast as it goes, in the background."""
    (tmp_path / "empty.toml").write_text("")
    out = (tmp_path / "out.txt").open("wb")
    err = (tmp_path / "err.txt").open("wb")
    with out, err:
        return subprocess.Popen(
            [*LOOKOUT, "run", "--config", str(tmp_path / "empty.toml"), "--model", "local",
             "--source", str(data_file("vtest.avi")), "--loop", "--pace", "fast", *args],
            cwd=REPO_ROOT, env=offline_env(), stdout=out, stderr=err, stdin=subprocess.DEVNULL,
            preexec_fn=preexec_fn,
        )  # fmt: skip


def stop_run(proc: subprocess.Popen[bytes], tmp_path: Path) -> tuple[int, str, str]:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    proc.wait(30)
    return proc.returncode, (tmp_path / "out.txt").read_text(), (tmp_path / "err.txt").read_text()


def wait_until(what: str, done: Any, timeout: float = 90.0, proc: Any = None) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert proc is None or proc.poll() is None, f"the run ended before {what}"
        assert time.monotonic() < deadline, f"never {what}"
        time.sleep(0.05)  # polling a running process's files


def event_rows(db: Path) -> int:
    """Events in a database another process writes (0 while there is none to read)."""
    if not db.exists():
        return 0
    try:
        with contextlib.closing(sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)) as conn:
            return int(conn.execute("SELECT count(*) FROM events").fetchone()[0])
    except sqlite3.Error:
        return 0


def lines_in(path: Path) -> int:
    """Whole lines in a file another process appends to (0 while there is none)."""
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


@pytest.mark.usefixtures("remembered_detections")
def test_copytruncate_then_a_full_disk_leaves_a_log_the_report_reads(tmp_path: Path) -> None:
    """logrotate's copytruncate empties the file under the running writer; then the disk
    fills (RLIMIT_FSIZE), and is freed. The file gets no NUL bytes, no line glued to a
    torn one, and ``lookout report`` reads it, saying the one line the disk cut."""
    events = tmp_path / "events.jsonl"
    limit = 8192

    def small_disk() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))

    proc = start_run(tmp_path, "--no-http", "--events", str(events), preexec_fn=small_disk)
    try:
        wait_until("3 KiB of events", lambda: size(events) > 3072, proc=proc)
        rotated = tmp_path / "events.jsonl.1"  # copytruncate: copy, then cut to 0 in place
        rotated.write_bytes(events.read_bytes())
        with events.open("r+b") as file:
            file.truncate(0)
        wait_until("the disk full", lambda: size(events) >= limit, proc=proc)
        resource.prlimit(
            proc.pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY)
        )
        wait_until("writing again", lambda: size(events) > limit + 2048, proc=proc)
    finally:
        code, stdout, stderr = stop_run(proc, tmp_path)
    assert code == 3, stderr  # lines were lost while the disk was full: said
    assert "Traceback" not in stdout + stderr
    raw = events.read_bytes()
    assert b"\0" not in raw
    result = lookout("report", str(events), "--out", str(tmp_path / "r.html"), timeout=60)
    assert result.returncode == 0, result.stderr
    torn = raw[limit - 1 : limit] != b"\n"  # unless a line happened to end at the limit
    line = raw[:limit].count(b"\n") + 1
    assert (
        result.stderr.strip().splitlines()
        == [
            f"lookout: warning: {events}: skipped 1 line that is not a whole event (torn or "
            f"corrupt: line {line}); the report is of the rest"
        ][: int(torn)]
    )
    assert lookout("report", str(rotated), "--out", str(tmp_path / "r1.html")).returncode == 0


@pytest.mark.usefixtures("remembered_detections")
def test_a_renamed_events_file_is_followed_by_a_new_one_at_its_name(tmp_path: Path) -> None:
    """logrotate's default (create mode) renames the file and makes an empty one at its
    name: the run goes on in the new file, said once; the renamed file is whole."""
    events = tmp_path / "events.jsonl"
    proc = start_run(tmp_path, "--no-http", "--events", str(events))
    try:
        wait_until("20 lines", lambda: lines_in(events) >= 20, proc=proc)
        rotated = tmp_path / "events.jsonl.1"
        events.rename(rotated)
        events.touch()
        wait_until("lines in the new file", lambda: lines_in(events) >= 20, proc=proc)
    finally:
        code, stdout, stderr = stop_run(proc, tmp_path)
    assert code == 0, stderr
    old, new = jsonl_events(rotated), jsonl_events(events)  # each line whole
    assert old[0]["type"] == "run" and new[-1]["type"] == "capture_stats"
    said = [line for line in stdout.splitlines() if "renamed or moved" in line]
    assert len(said) == 1 and str(events) in said[0], stdout


@pytest.mark.usefixtures("remembered_detections")
def test_a_deleted_database_is_said_made_again_and_the_exit_code_says_it(
    tmp_path: Path,
) -> None:
    db = tmp_path / "events.sqlite"
    port = free_port()
    proc = start_run(tmp_path, "--http", f"127.0.0.1:{port}", "--db", str(db))
    base = f"http://127.0.0.1:{port}/"
    try:
        _wait_healthy(base)
        wait_until("events in the database", lambda: event_rows(db) > 10, proc=proc)
        db.unlink()  # rm events.sqlite: its -wal and -shm stay
        degraded = _wait_degraded(base, 60)
        # /healthz says the state; the page's state says what and how many.
        assert degraded["reason"] == "event log failing", degraded
        reason = json.loads(get(base + "api/state")[1])["health"]["reason"]
        assert "events lost" in reason, reason
        wait_until("a new database", lambda: event_rows(db) > 10, proc=proc)
    finally:
        code, stdout, stderr = stop_run(proc, tmp_path)
    assert code == 3, stderr
    assert "Traceback" not in stdout + stderr
    err = stderr.strip().splitlines()
    assert len(err) == 1 and "the event log is incomplete" in err[0], stderr
    assert "deleted while open" in err[0], err
    said = [line for line in stdout.splitlines() if "deleted while open" in line]
    assert len(said) == 1 and "warning: " in said[0], stdout
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        gaps = conn.execute("SELECT kind, reason FROM store_gaps").fetchall()
    conn.close()
    assert [kind for kind, _ in gaps] == ["event"] and "deleted while open" in gaps[0][1]
    kinds = [e["type"] for e in db_events(db)]
    assert "capture_stats" in kinds  # the run went on into the new database to its end
