"""Files the device writes whole: one writer, never through a link, never half a file.

Every file Lookout writes whole (the scene written back into the configuration, event
pictures, ``lookout token --out``, the device id suffix) goes through here:

- the data goes to a temporary of its own beside the name (``.NAME.<12 hex>.partial``,
  created with ``O_CREAT|O_EXCL|O_NOFOLLOW``: a name someone planted, a link or not, is
  never opened), then is renamed over the name; a failure removes it. Two writers never
  share a temporary, and a reader never meets half a file.
- a symbolic link at the name is refused (never written through, never replaced: the
  link is someone's choice of where the data goes, and that is not ours to make). The
  configuration editor follows its own file's link on purpose (``device/config/scene/file.py``).
- a file with other hard links is refused: renaming over one name leaves the others
  with the old content, and writing in place would give up whole-or-nothing.
- the new file keeps the old one's owner, group and mode (a device running as root
  rewriting a file of ``nobody`` leaves it ``nobody``'s); where this process may not
  give it that owner the file is refused, not silently taken over.
- temporaries of ours left by a writer killed mid-write (kill -9, a power cut) are
  removed at a later write in the same folder once they are ``STALE_AFTER_S`` old and
  ours (our naming pattern, a plain file, our user): never anyone else's file.

``locked`` is for read-edit-write: an advisory ``flock`` on the file itself, held from
the read to the rename, so two processes editing one file take turns and each reads
what the other wrote.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import pwd
import re
import secrets
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from device.files.input_file import file_kind

# A configuration edited in place is at most this big: a maximal scene is under 64 KiB,
# and keeping comments costs tomlkit ~5 s a MiB here (more on a Pi) while the lock is held.
MAX_EDIT_BYTES = 256 * 1024
STALE_AFTER_S = 600.0  # a write takes well under a second: older temporaries are orphans
LOCK_WAIT_S = 20.0
_HEX = 12
_TEMP = re.compile(rf"\..+\.[0-9a-f]{{{_HEX}}}\.partial")
_NAME_KEPT = 100  # of the final name in a temporary's (a folder's name limit is 255)
_swept: dict[tuple[int, int], float] = {}  # folder -> when its temporaries were last swept


class Refused(OSError):
    """A file not written, and why (``strerror``: one line, without the file's name)."""


def _who(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _refuse_kind(st: os.stat_result, path: Path) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise Refused(errno.ELOOP, "it is a symbolic link: give the file it points to", str(path))
    kind = file_kind(st.st_mode)
    if kind is not None:
        raise Refused(errno.EINVAL, f"{kind}, not a regular file", str(path))
    if st.st_nlink > 1:
        raise Refused(
            errno.EMLINK,
            f"it has {st.st_nlink} names (hard links): replacing it would leave the others "
            "with the old content",
            str(path),
        )


def why_not(path: Path) -> str | None:
    """Why ``path`` would be refused as it is now (a link, not a file, hard-linked), or
    None: for a command to say so before it does work that would be lost."""
    try:
        _refuse_kind(os.lstat(path), path)
    except Refused as exc:
        return exc.strerror
    except OSError:
        return None  # not there (or not visible): the write itself will say
    return None


@dataclass
class _Folder:
    """A folder held open: every name is looked up in it, even if its path is moved."""

    path: Path
    fd: int
    now: Callable[[], float]

    @classmethod
    def open(cls, path: Path, now: Callable[[], float]) -> _Folder:
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
        return cls(path, os.open(path if str(path) else ".", flags), now)

    def close(self) -> None:
        os.close(self.fd)

    def existing(self, name: str) -> os.stat_result | None:
        """The file now under ``name`` (None: none), refused if it is not one to replace."""
        try:
            st = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        _refuse_kind(st, self.path / name)
        return st

    def sweep(self, name: str) -> None:
        """Remove our temporaries that a killed writer left (at most once in a while)."""
        key = os.fstat(self.fd)
        folder = (key.st_dev, key.st_ino)
        now = self.now()
        if now - _swept.get(folder, -STALE_AFTER_S) < STALE_AFTER_S:
            return
        _swept[folder] = now
        legacy = f".{name}.partial"  # the fixed name of earlier versions
        with contextlib.suppress(OSError), os.scandir(self.fd) as entries:
            for entry in entries:
                if _TEMP.fullmatch(entry.name) or entry.name == legacy:
                    self._remove_if_orphan(entry.name, now)

    def _remove_if_orphan(self, name: str, now: float) -> None:
        with contextlib.suppress(OSError):
            st = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
            mine = stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid()
            if mine and now - st.st_mtime >= STALE_AFTER_S:
                os.unlink(name, dir_fd=self.fd)

    def _temporary(self, name: str, mode: int) -> tuple[str, int]:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        for _ in range(100):
            temp = f".{name[:_NAME_KEPT]}.{secrets.token_hex(_HEX // 2)}.partial"
            try:
                return temp, os.open(temp, flags, mode, dir_fd=self.fd)
            except FileExistsError:
                continue  # planted, or another writer's: never opened
            except PermissionError:
                raise Refused(
                    errno.EACCES,
                    f"this process ({_who(os.geteuid())}) cannot write in its folder {self.path} "
                    "(the file is replaced whole, by a new one made beside it)",
                    str(self.path / name),
                ) from None
        raise Refused(errno.EEXIST, "no free temporary name beside it", str(self.path / name))

    def put(
        self,
        name: str,
        data: bytes,
        *,
        old: os.stat_result | None,
        mode: int | None = None,
        sync: bool = False,
        check: Callable[[Path], None] | None = None,
        exclusive: bool = False,
    ) -> None:
        """``data`` under ``name``, in place of ``old`` (what is there now): the owner and
        mode kept, ``check`` run on the written temporary before it takes the name."""
        self.sweep(name)
        private = mode is not None or old is not None
        temp, fd = self._temporary(name, 0o600 if private else 0o666)
        try:
            try:
                _write_all(fd, data)
                _keep_owner(fd, old, self.path / name)
                final = mode if mode is not None else old.st_mode & 0o7777 if old else None
                if final is not None:
                    os.fchmod(fd, final)  # after the chown, which clears set-id bits
                if sync:
                    os.fsync(fd)
            finally:
                os.close(fd)
            if check is not None:
                check(self.path / temp)
            if exclusive:
                self._link(temp, name)
            else:
                self._still(name, old)
                os.replace(temp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
            if sync:
                os.fsync(self.fd)  # the rename itself on the disk
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=self.fd)
            raise

    def _still(self, name: str, old: os.stat_result | None) -> None:
        """Refused when ``old`` was replaced meanwhile (by a program that took no lock)."""
        if old is None:
            return
        try:
            now = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            now = None
        if now is None or (now.st_dev, now.st_ino) != (old.st_dev, old.st_ino):
            raise Refused(
                errno.ESTALE,
                "it was replaced meanwhile by another program: not written over",
                str(self.path / name),
            )

    def _link(self, temp: str, name: str) -> None:
        """``temp`` under ``name`` only if nothing is there (the first writer wins)."""
        try:
            os.link(temp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd, follow_symlinks=False)
        except FileExistsError:
            raise
        except OSError:
            # A file system without hard links: as near as a rename can come.
            if self.existing(name) is not None:
                raise FileExistsError(errno.EEXIST, "it exists", str(self.path / name)) from None
            os.replace(temp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
            return
        os.unlink(temp, dir_fd=self.fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _keep_owner(fd: int, old: os.stat_result | None, path: Path) -> None:
    if old is None:
        return
    new = os.fstat(fd)
    if (new.st_uid, new.st_gid) == (old.st_uid, old.st_gid):
        return
    try:
        os.fchown(fd, old.st_uid, old.st_gid)
    except PermissionError:
        raise Refused(
            errno.EPERM,
            f"it belongs to {_who(old.st_uid)} (group id {old.st_gid}), and this process "
            f"({_who(os.geteuid())}) cannot give the new file that owner",
            str(path),
        ) from None


def write_whole(
    path: Path,
    data: bytes,
    *,
    mode: int | None = None,
    sync: bool = False,
    exclusive: bool = False,
    check: Callable[[Path], None] | None = None,
    now: Callable[[], float] = time.time,
) -> None:
    """``data`` under ``path``, whole. ``mode``: the file's permissions (default: the old
    file's, or as a new file gets them); ``sync``: on the disk before and after the
    rename, for a file whose loss in a power cut costs more than its write;
    ``exclusive``: only if no file is there (``FileExistsError`` otherwise); ``check``:
    run on the written temporary (a reader's test), its exception ends the write.
    Raises ``OSError`` (``Refused`` for a link, a hard-linked file, an owner that
    cannot be kept), with the old file as it was."""
    folder = _Folder.open(path.parent, now)
    try:
        old = folder.existing(path.name)
        if exclusive and old is not None:
            raise FileExistsError(errno.EEXIST, "it exists", str(path))
        folder.put(path.name, data, old=old, mode=mode, sync=sync, check=check, exclusive=exclusive)
    finally:
        folder.close()


@dataclass
class Held:
    """A file locked for an edit: its bytes as read under the lock, and how to replace it."""

    data: bytes
    _folder: _Folder
    _name: str
    _stat: os.stat_result

    def replace(self, data: bytes, *, check: Callable[[Path], None] | None = None) -> None:
        """``data`` in place of the file, its owner and mode kept, on the disk when done."""
        if len(data) > MAX_EDIT_BYTES:
            path = self._folder.path / self._name
            raise Refused(errno.EFBIG, _too_big("would be", len(data)), str(path))
        self._folder.put(self._name, data, old=self._stat, sync=True, check=check)


def _too_big(verb: str, size: int) -> str:
    return (
        f"it {verb} {size:,} bytes, and a file over {MAX_EDIT_BYTES // 1024} KiB is not "
        "edited (an edit would hold it for seconds)"
    )


@contextlib.contextmanager
def locked(
    path: Path,
    *,
    wait_s: float = LOCK_WAIT_S,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    now: Callable[[], float] = time.time,
) -> Iterator[Held]:
    """``path`` (a regular file, not a link) locked from its read to its replacement.

    The lock is ``flock`` on the file: released with its descriptor, so a killed
    process never leaves it held. A writer renames a new file over the name, so the
    lock taken may be on a file no longer under the name: then it is taken again on
    the one that is. Another process holding it for over ``wait_s`` refuses the edit.
    """
    folder = _Folder.open(path.parent, now)
    try:
        fd, st = _lock(folder, path.name, wait_s, clock, sleep)
        try:
            data = os.pread(fd, MAX_EDIT_BYTES + 1, 0) if st.st_size <= MAX_EDIT_BYTES else b""
            if st.st_size > MAX_EDIT_BYTES or len(data) > MAX_EDIT_BYTES:  # grown meanwhile
                raise Refused(errno.EFBIG, _too_big("is", max(st.st_size, len(data))), str(path))
            yield Held(data, folder, path.name, st)
        finally:
            os.close(fd)
    finally:
        folder.close()


def _lock(
    folder: _Folder,
    name: str,
    wait_s: float,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
) -> tuple[int, os.stat_result]:
    deadline = clock() + wait_s
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    while True:
        folder.existing(name)  # a link, a hard-linked file: refused with the reason
        fd = os.open(name, flags, dir_fd=folder.fd)
        try:
            st = os.fstat(fd)
            _refuse_kind(st, folder.path / name)
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if clock() >= deadline:
                        raise Refused(
                            errno.EBUSY,
                            f"another process has been editing it for over {wait_s:g} s",
                            str(folder.path / name),
                        ) from None
                    sleep(0.02)
            now = os.stat(name, dir_fd=folder.fd, follow_symlinks=False)
        except BaseException:
            os.close(fd)
            raise
        if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
            return fd, os.fstat(fd)
        os.close(fd)  # replaced while we waited: lock the one under the name now


__all__ = [
    "LOCK_WAIT_S",
    "MAX_EDIT_BYTES",
    "STALE_AFTER_S",
    "Held",
    "Refused",
    "locked",
    "write_whole",
]
