"""Text from outside (a model, a tool's arguments, an error) made safe to show as a line.

A terminal obeys what it prints: ESC sequences clear the screen, move the cursor or
set the title, a CR or LF starts a line the text chooses (``[   99.9s] count: 0``
forged under the device's own lines), a bidi override turns the rest of the line
around. Shown to a person, such characters are written out as escapes (``\\x1b``,
``\\r``, ``\\n``, ``\\u202e``); the event logs keep the text exact (data, not display).
"""

from __future__ import annotations

import re

# C0 and C1 controls and DEL; lone surrogates (a terminal cannot encode them: print
# would raise); line and paragraph separators; the bidi embeddings, overrides and
# isolates and the marks that reorder text around them.
_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029\u200e\u200f\u061c\u202a-\u202e\u2066-\u2069]"
)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` as one line a terminal shows as it is: every control character escaped."""
    return _UNSAFE.sub(_escape, text)


def first_unsafe(text: str) -> tuple[int, str] | None:
    """Where the first character ``printable`` would escape is in ``text``, and that
    character (None: there is none). For settings that are refused rather than escaped:
    a device id or a URL is used as it is, so it must show as it is."""
    match = _UNSAFE.search(text)
    return None if match is None else (match.start(), match.group(0))


def printable_lines(text: str) -> str:
    """``text`` keeping its line breaks (CRLF becomes LF), everything else as ``printable``.

    For a block that is all the model's (``lookout ask``'s answer on stdout)."""
    return "\n".join(printable(line) for line in text.replace("\r\n", "\n").split("\n"))


__all__ = ["first_unsafe", "printable", "printable_lines"]
