"""One writer for the files the device writes whole (device/files/whole_file.py), on real files
and real processes: never through a link, never someone else's temporary, the owner and
mode kept, a killed writer's temporary not left forever, one edit at a time."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from device.files import whole_file
from device.files.whole_file import STALE_AFTER_S, Refused, locked, write_whole
from tests.datafiles import REPO_ROOT

NOBODY = 65534
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="changes owners: needs root")


def temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".partial"))


@pytest.fixture
def fixed_names(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The temporaries' random parts, in order, known to the test (to plant things there)."""
    names = ["aaaaaaaaaaaa", "bbbbbbbbbbbb", "cccccccccccc", "dddddddddddd"]
    given = iter(names)
    monkeypatch.setattr(whole_file.secrets, "token_hex", lambda n: next(given))
    yield names


def test_links_planted_at_the_temporary_names_redirect_nothing(
    tmp_path: Path, fixed_names: list[str]
) -> None:
    precious = tmp_path / "elsewhere" / "shadow"
    precious.parent.mkdir()
    precious.write_text("do not touch\n")
    precious.chmod(0o600)
    config = tmp_path / "cfg.toml"
    config.write_text("old\n")
    # Earlier versions' fixed name, and the next two names the writer will try.
    for name in (".cfg.toml.partial", f".cfg.toml.{fixed_names[0]}.partial"):
        (tmp_path / name).symlink_to(precious)
    (tmp_path / f".cfg.toml.{fixed_names[1]}.partial").write_text("someone else's\n")
    write_whole(config, b"new\n")
    assert precious.read_text() == "do not touch\n" and precious.stat().st_mode & 0o777 == 0o600
    assert config.read_text() == "new\n" and not config.is_symlink()
    assert (tmp_path / f".cfg.toml.{fixed_names[1]}.partial").read_text() == "someone else's\n"
    assert temporaries(tmp_path) == sorted(  # the planted ones are left alone
        [".cfg.toml.partial", f".cfg.toml.{fixed_names[0]}.partial",
         f".cfg.toml.{fixed_names[1]}.partial"]
    )  # fmt: skip


def test_a_link_or_a_hard_linked_file_at_the_name_is_refused_and_left_as_it_was(
    tmp_path: Path,
) -> None:
    target = tmp_path / "target"
    target.write_text("target\n")
    link = tmp_path / "token.json"
    link.symlink_to(target)
    with pytest.raises(Refused, match="symbolic link"):
        write_whole(link, b"secret\n", mode=0o600)
    assert link.is_symlink() and target.read_text() == "target\n"
    os.link(target, tmp_path / "second-name")
    with pytest.raises(Refused, match="2 names"):
        write_whole(target, b"new\n")
    assert (tmp_path / "second-name").read_text() == "target\n"
    assert temporaries(tmp_path) == []


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "cfg.toml"
    path.write_text("old\n")

    def refuse(written: Path) -> None:
        assert written.read_bytes() == b"new\n" and written.parent == tmp_path
        raise ValueError("it would not read back")

    with pytest.raises(ValueError, match="read back"):
        write_whole(path, b"new\n", check=refuse)
    assert path.read_text() == "old\n" and temporaries(tmp_path) == []


def test_only_one_of_two_exclusive_writers_wins(tmp_path: Path) -> None:
    path = tmp_path / "device-suffix"
    write_whole(path, b"first\n", exclusive=True)
    with pytest.raises(FileExistsError):
        write_whole(path, b"second\n", exclusive=True)
    assert path.read_text() == "first\n" and temporaries(tmp_path) == []


@as_root
def test_a_rewritten_file_keeps_its_owner_group_and_mode(tmp_path: Path) -> None:
    path = tmp_path / "lookout.toml"
    path.write_text("old\n")
    os.chown(path, NOBODY, NOBODY)
    path.chmod(0o640)
    write_whole(path, b"new\n", sync=True)
    st = path.stat()
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (NOBODY, NOBODY, 0o640)
    write_whole(path, b"token\n", mode=0o600)  # a mode given wins; the owner is kept
    assert (path.stat().st_uid, path.stat().st_mode & 0o777) == (NOBODY, 0o600)


@as_root
def test_an_owner_this_process_cannot_keep_is_refused_not_taken_over() -> None:
    # Where nobody can reach (pytest's own folders are root's only).
    with tempfile.TemporaryDirectory() as shared:
        _refused_to_nobody(Path(shared))


AS_NOBODY = (
    "import os, sys; from pathlib import Path; from device.files.whole_file import write_whole\n"
    f"os.setgid({NOBODY}); os.setuid({NOBODY})\n"
    "try: write_whole(Path(sys.argv[1]), b'nobody\\n')\n"
    "except OSError as exc: print(exc.strerror); sys.exit(3)\n"
)


def as_nobody(path: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", AS_NOBODY, str(path)], cwd=REPO_ROOT, capture_output=True,
        text=True, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    return done.stdout.strip()


def _refused_to_nobody(folder: Path) -> None:
    folder.chmod(0o777)
    path = folder / "lookout.toml"
    path.write_text("root's\n")
    path.chmod(0o666)
    assert as_nobody(path) == (
        "it belongs to root (group id 0), and this process (nobody) cannot give the new file "
        "that owner"
    )
    assert path.read_text() == "root's\n" and path.stat().st_uid == 0
    assert temporaries(folder) == []
    # Its own file, in a folder it cannot write in: said so, not "Permission denied".
    closed = folder / "closed"
    closed.mkdir(mode=0o755)
    own = closed / "lookout.toml"
    own.write_text("nobody's\n")
    os.chown(own, NOBODY, NOBODY)
    assert as_nobody(own) == (
        f"this process (nobody) cannot write in its folder {closed} (the file is replaced "
        "whole, by a new one made beside it)"
    )
    assert own.read_text() == "nobody's\n"


KILLED_MID_WRITE = """\
import os, sys
from pathlib import Path
from device.files.whole_file import write_whole
def hang(written):
    print(written.name, flush=True)
    sys.stdin.read()  # until killed
write_whole(Path(sys.argv[1]), b"half of it", check=hang)
"""


def test_a_temporary_left_by_a_killed_writer_goes_at_a_later_write_once_stale(
    tmp_path: Path,
) -> None:
    path = tmp_path / "cfg.toml"
    path.write_text("old\n")
    writer = subprocess.Popen(
        [sys.executable, "-c", KILLED_MID_WRITE, str(path)], cwd=REPO_ROOT,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert writer.stdout is not None and writer.stdin is not None
    orphan = writer.stdout.readline().strip()  # its temporary is written and named
    writer.send_signal(signal.SIGKILL)
    writer.wait(10)
    writer.stdin.close()
    writer.stdout.close()
    assert temporaries(tmp_path) == [orphan]
    other_user = tmp_path / ".notes.txt.0123456789ab.partial"  # our pattern, not our user's
    other_user.write_text("x")
    legacy_link = tmp_path / ".cfg.toml.partial"
    legacy_link.symlink_to(tmp_path / "nowhere")
    os.utime(other_user, (0, 0))
    os.utime(legacy_link, (0, 0), follow_symlinks=False)
    if os.geteuid() == 0:
        os.chown(other_user, NOBODY, NOBODY)
    now = os.stat(tmp_path / orphan).st_mtime
    write_whole(path, b"new\n", now=lambda: now + 1)  # a writer may still be at work
    assert orphan in temporaries(tmp_path)
    write_whole(path, b"newer\n", now=lambda: now + STALE_AFTER_S + 1)
    assert orphan not in temporaries(tmp_path) and path.read_text() == "newer\n"
    assert legacy_link.is_symlink()  # not a file of ours: left
    if os.geteuid() == 0:
        assert other_user.exists()


def test_an_edit_waits_for_the_lock_and_gives_up_saying_so(tmp_path: Path) -> None:
    path = tmp_path / "cfg.toml"
    path.write_text("old\n")
    t = [0.0]

    def sleep(s: float) -> None:
        t[0] += s

    with open(path, "rb") as other:  # another process's lock: flock is per open file
        fcntl.flock(other.fileno(), fcntl.LOCK_EX)
        with (
            pytest.raises(Refused, match="another process has been editing it for over 2 s"),
            locked(path, wait_s=2, clock=lambda: t[0], sleep=sleep),
        ):
            pass
        assert 2 <= t[0] < 2.1
    with locked(path, clock=lambda: t[0], sleep=sleep) as held:
        assert held.data == b"old\n"
        held.replace(b"new\n")
    assert path.read_text() == "new\n" and temporaries(tmp_path) == []


def test_a_file_over_the_edit_size_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "huge.toml"
    with open(path, "wb") as f:
        f.truncate(22 * 1024 * 1024)  # 22 MB, sparse: nothing to write
    with (
        pytest.raises(Refused, match=r"it is 23,068,672 bytes, and a file over 256 KiB"),
        locked(path),
    ):
        pass
    assert path.stat().st_size == 22 * 1024 * 1024
