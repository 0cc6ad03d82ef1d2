"""A file written whole or not at all: beside its name first, then renamed over it.

A reader (the status page serving a snapshot, a device re-reading its token, the next
start reading the configuration) never meets half a file under the name, and a failed
write leaves the old file as it was and no partial one behind.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def write_whole(path: Path, data: bytes, *, mode: int | None = None, sync: bool = False) -> None:
    """``data`` under ``path``. ``mode``: the file's permissions (default: as a new file
    gets them); ``sync``: on the disk before the rename, for a file whose loss in a power
    cut would cost more than its write (a configuration, a token). Raises ``OSError``."""
    partial = path.with_name(f".{path.name}.partial")
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        fd = os.open(partial, flags, 0o666 if mode is None else mode)
        with os.fdopen(fd, "wb") as out:
            if mode is not None:
                os.fchmod(out.fileno(), mode)  # not narrowed by the umask
            out.write(data)
            if sync:
                out.flush()
                os.fsync(out.fileno())
        os.replace(partial, path)
    except OSError:
        with contextlib.suppress(OSError):
            partial.unlink()
        raise


__all__ = ["write_whole"]
