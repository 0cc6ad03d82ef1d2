"""What a command made before its run began, undone when it does not begin: ``Made``.

A run refused at start (a port in use, a detector that does not load) or interrupted
while starting must not leave an empty events file, a database holding only its schema,
or an empty snapshots folder: the user would take them for a run that logged nothing.
``Made.before(paths)`` notes which of the output paths do not exist yet; ``undo()``
removes those that exist now (a database with its journal files; a folder only if empty),
unless the run began meanwhile (``kept``). ``undo_all`` is for the command's entry, when a
signal arrives in a place the command itself cannot catch it (inside a native import).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

_SQLITE_SIDES = ("-wal", "-shm", "-journal")


def _never() -> bool:
    return False


@dataclass
class Made:
    new: list[Path] = field(default_factory=list)  # output paths absent before the start
    kept: Callable[[], bool] = _never  # the run began: what it made is its log

    @classmethod
    def before(cls, paths: Iterable[Path | None]) -> Made:
        new: list[Path] = []
        for path in paths:
            if path is None:
                continue
            for one in (path, *(path.with_name(path.name + side) for side in _SQLITE_SIDES)):
                if not one.exists() and not one.is_symlink():
                    new.append(one)
        made = cls(new)
        _pending.append(made)
        return made

    def undo(self) -> None:
        """Remove what was made since ``before`` (a folder only while it is empty)."""
        if self.kept():
            return
        for path in self.new:
            with contextlib.suppress(OSError):
                if path.is_dir() and not path.is_symlink():
                    path.rmdir()
                elif path.exists():
                    path.unlink()


_pending: list[Made] = []


def undo_all() -> None:
    """Undo what every command started in this process made (none began its run)."""
    for made in _pending:
        made.undo()


__all__ = ["Made", "undo_all"]
