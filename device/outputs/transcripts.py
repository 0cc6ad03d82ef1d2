"""A transcript's fragments joined into sentences for people to read.

Gemini Live transcribes as it speaks and as it hears, a word or a piece of a word per
message (``"Thr"``, ``"ee people"``, ``" came in."``). The event log keeps every
fragment; the console and the page show a line per sentence, or what was said so far
when the turn ends or is interrupted.
"""

from __future__ import annotations

from live.events import Event, Interrupted, Transcript, TurnComplete

_SENTENCE_ENDS = (".", "!", "?", "…", "。", "？", "！")
# A sentence that never ends (no punctuation) is still shown once it is this long.
_MAX_CHARS = 200


class TranscriptLines:
    def __init__(self) -> None:
        self._pending: dict[str, str] = {}

    def lines(self, event: Event) -> list[tuple[str, str]]:
        """The ``(direction, text)`` lines this event completes (often none)."""
        if isinstance(event, Transcript):
            text = self._pending.get(event.direction, "") + event.text
            done = text.rstrip().endswith(_SENTENCE_ENDS) or len(text) >= _MAX_CHARS
            if not done:
                self._pending[event.direction] = text
                return []
            self._pending.pop(event.direction, None)
            return [(event.direction, text.strip())] if text.strip() else []
        if isinstance(event, TurnComplete | Interrupted):
            flushed = [(d, t.strip()) for d, t in self._pending.items() if t.strip()]
            self._pending.clear()
            return flushed
        return []


def label(direction: str, text: str) -> str:
    """How a line is shown: what the model said aloud, or what the microphone heard."""
    return f"model (spoken): {text}" if direction == "output" else f"heard: {text}"


__all__ = ["TranscriptLines", "label"]
