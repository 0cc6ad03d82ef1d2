"""A frame source's state and counters, as its reader and its owner see them."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from device.sources import SourceError
from live.util.redact import strip_credentials


class SourceState(enum.Enum):
    OPENING = "opening"
    RUNNING = "running"
    RECONNECTING = "reconnecting"
    ENDED = "ended"
    FAILED = "failed"


@dataclass(frozen=True)
class StateChange:
    state: SourceState
    reason: str
    attempt: int = 0  # consecutive failures so far (RECONNECTING, FAILED)
    # Whether it is said (logged, published): a camera that stays away is tried every
    # couple of seconds, and only the 1st, 10th, 100th... failure of a run, and the
    # first of each kind, are worth a line (``live/util/backoff.py:FailureRun``).
    said: bool = True


@dataclass
class SourceStats:
    frames_read: int = 0
    read_errors: int = 0  # reads that raised (or gave nothing on a live source)
    reopens: int = 0  # successful opens after the first one
    stalls: int = 0  # live reads abandoned by the watchdog
    skipped_unreadable: int = 0  # single undecodable images skipped
    resolution_changes: int = 0
    # Frames moved past without decoding them into pixels: nobody would have looked.
    frames_undecoded: int = 0
    decode_ms_total: float = 0.0  # decoding the frames that were read (frames_read)

    @property
    def decode_ms_mean(self) -> float:
        return self.decode_ms_total / self.frames_read if self.frames_read else 0.0


def describe(exc: BaseException) -> str:
    """A failure as a source state's reason says it: a driver's text may quote the URL
    it was given, which is shown as every source is (``safe_url``)."""
    if isinstance(exc, SourceError):
        return strip_credentials(str(exc))
    text = strip_credentials(" ".join(str(exc).split()))
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def size(shape: tuple[int, ...]) -> str:
    return f"{shape[1]}x{shape[0]}" if len(shape) >= 2 else str(shape)
