"""The per-call input stream of an input-consuming streaming tool."""

from __future__ import annotations

import fnmatch
import logging
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from live.requests import LiveRequest
from live.util.buffer import BufferStats, LatestWins

InputStats = BufferStats
AUDIO_CHUNKS_KEPT = 50
P = TypeVar("P")
# What one call takes of the realtime input its MIME types let in (``Tool.input_filter``).
InputFilter = Callable[[LiveRequest[Any]], bool]

log = logging.getLogger("lookout.input")


class InputStream(LatestWins[LiveRequest[P]], Generic[P]):
    """Bounded, latest-wins queue of realtime input for one tool call.

    Each call gets a fresh one, so a slow tool can only ever fall behind by
    ``maxsize`` items: older items are dropped (and counted) when a newer one
    arrives, and the tool always works on recent input. Only realtime requests
    whose MIME type matches ``accept`` get in — never the tool's own output,
    function responses or control messages — and of those, with ``wants``, only
    what it wants (the call's own camera, from its arguments): what another
    source sends never pushes this call's input out. ``P`` is the type of the
    percepts the requests carry: a tool declares ``stream: InputStream[Percept]``.
    """

    def __init__(
        self,
        *,
        maxsize: int = 1,
        accept: Sequence[str] = ("image/*",),
        after_seq: int = 0,
        wants: InputFilter | None = None,
    ) -> None:
        super().__init__(maxsize)
        # Requests with a sequence number at or below this predate the call.
        self.after_seq = after_seq
        self.accept = tuple(accept)
        self.wants = wants
        self._filter_failed = False

    @classmethod
    def taking(
        cls,
        accept: Sequence[str],
        maxsize: int,
        after_seq: int,
        wants: InputFilter | None = None,
    ) -> InputStream[P]:
        """A call's stream for ``accept``: audio is a sequence, not a latest state, so a
        stream that takes it keeps a second of 20 ms chunks rather than the newest only."""
        hears = any(pattern.startswith("audio/") for pattern in accept)
        return cls(maxsize=max(maxsize, AUDIO_CHUNKS_KEPT if hears else 1), accept=accept,
                   after_seq=after_seq, wants=wants)  # fmt: skip

    def accepts(self, request: LiveRequest[P]) -> bool:
        if not request.for_tools:
            return False
        mime = request.mime_type
        if not any(fnmatch.fnmatchcase(mime, pattern) for pattern in self.accept):
            return False
        return self.wants is None or self._wanted(request)

    def _wanted(self, request: LiveRequest[P]) -> bool:
        assert self.wants is not None
        try:
            return bool(self.wants(request))
        except Exception:
            # A broken filter must not stop the fan-out (every other call's input): this
            # call gets nothing from it, and the log says so once.
            if not self._filter_failed:
                self._filter_failed = True
                log.exception("an input stream's filter failed; the call gets no input")
            return False

    def offer(self, request: LiveRequest[P]) -> bool:
        """Put a request in if it is meant for this call's tool; never blocks."""
        if self.closed or request.seq <= self.after_seq or not self.accepts(request):
            return False
        self.put(request)
        return True


__all__ = ["InputFilter", "InputStats", "InputStream"]
