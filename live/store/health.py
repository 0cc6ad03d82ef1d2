"""How a store's health is said: its snapshot, the kinds of problem, and who is told.

``StoreHealth`` is what consoles and probes read of a store. A problem is told
once when it starts and once when it ends (``ProblemListeners``: the
``on_problem`` callbacks and the ``lookout.store`` logger), never once per
write; what is counted and when a problem starts or ends is the ledger's
business (``live.store.ledger``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("lookout.store")

ProblemCallback = Callable[[str, str], None]
"""``on_problem(kind, message)``; kind is one of the ``PROBLEM_*`` constants."""

PROBLEM_STARTED = "degraded"  # writing fails; what is queued is kept in memory
PROBLEM_ENDED = "recovered"  # writing works again and the backlog has caught up
DATA_DROPPED = "dropped"  # the backlog overflowed: the oldest writes are being dropped
DATA_LOST = "lost"  # the store closed with writes it could not make
REOPENED = "reopened"  # the file left its name (renamed, moved, deleted): a new one is open

Notices = list[tuple[str, str]]  # (kind, message), told once the writer's lock is let go


@dataclass(frozen=True)
class StoreHealth:
    """A snapshot of a store (or of one kind of write in it) for consoles and probes."""

    path: str
    written: int  # rows committed since the store opened
    pending: int  # rows waiting in memory to be written
    dropped: int  # rows lost: backlog overflow, unwritable rows, closed while failing
    dropped_by_kind: Mapping[str, int]
    retries: int  # failed write attempts that were retried
    errors: int  # unexpected exceptions in the writer (each counted, reported, retried)
    last_error: str | None  # one line, no traceback
    degraded: bool  # writing is failing right now
    closed: bool
    problem_since: float | None = None  # on the store's clock: when the current problem began

    @property
    def complete(self) -> bool:
        """Nothing was dropped (and, once closed, nothing was left unwritten)."""
        return self.dropped == 0 and not (self.closed and self.pending)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "written": self.written,
            "pending": self.pending,
            "dropped": self.dropped,
            "dropped_by_kind": dict(self.dropped_by_kind),
            "retries": self.retries,
            "errors": self.errors,
            "last_error": self.last_error,
            "degraded": self.degraded,
            "closed": self.closed,
            "problem_since": self.problem_since,
            "complete": self.complete,
        }


class ProblemListeners:
    """Who is told of a store's problems: the ``on_problem`` callbacks and the log."""

    def __init__(self) -> None:
        self._listeners: list[ProblemCallback] = []
        self._lock = threading.Lock()

    def add(self, callback: ProblemCallback) -> None:
        with self._lock:
            self._listeners.append(callback)

    def remove(self, callback: ProblemCallback) -> None:
        with self._lock:
            if callback in self._listeners:
                self._listeners.remove(callback)

    def tell(self, notices: Iterable[tuple[str, str]]) -> None:
        """Log and call the listeners; never under the writer's lock (a listener may read stats)."""
        for kind, message in notices:
            # A warning for the end too: whoever saw the start should see it end.
            log.warning("%s", message)
            with self._lock:
                listeners = list(self._listeners)
            for callback in listeners:
                try:
                    callback(kind, message)
                except Exception:
                    log.exception("on_problem callback failed")


__all__ = [
    "DATA_DROPPED",
    "DATA_LOST",
    "PROBLEM_ENDED",
    "PROBLEM_STARTED",
    "REOPENED",
    "Notices",
    "ProblemCallback",
    "ProblemListeners",
    "StoreHealth",
]
