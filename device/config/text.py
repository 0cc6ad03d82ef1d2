"""Text a setting may hold: what is refused in a name, and how a refused character is said.

A device id, a model's name or a URL is used as it is (in MQTT topics, on the console,
the page and in logs), so a character a terminal or a browser would obey (a line break,
ESC, a bidi override: ``live.util.printable``) or one that is not text at all (a byte of the
command line that is not UTF-8, which Python keeps as a lone surrogate that no encoder
takes) is refused at start, in one line that says which character and where.
"""

from __future__ import annotations

import re
import unicodedata

# What may name an MQTT topic level and a Home Assistant discovery id ([a-zA-Z0-9_-]+).
TOPIC_SAFE = re.compile(r"[A-Za-z0-9_-]+")

# The names a person knows these by (unicodedata has none for control characters).
_CONTROL_NAMES = {
    "\0": "NUL",
    "\t": "a tab",
    "\n": "a line break",
    "\r": "a carriage return",
    "\x1b": "ESC",
    "\x7f": "DEL",
}


def describe(char: str) -> str:
    """One character as a message says it: escaped, and what it is."""
    from live.util.printable import printable

    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:
        # How Python reads a byte of argv or the environment that is not UTF-8.
        return f"the byte 0x{code - 0xDC00:02x} (not UTF-8)"
    if 0xD800 <= code <= 0xDFFF:
        return f"\\u{code:04x} (a lone surrogate, not text)"
    escaped = printable(char)
    if escaped == char:
        escaped = repr(char)
    name = _CONTROL_NAMES.get(char) or unicodedata.name(char, "") or "a control character"
    return f"{escaped} ({name})"


def unsafe(text: str) -> str | None:
    """Why ``text`` cannot be shown as it is (its first such character), or None."""
    from live.util.printable import first_unsafe

    found = first_unsafe(text)
    if found is None:
        return None
    position, char = found
    return f"has {describe(char)} at character {position + 1}"


def not_utf8(text: str) -> str | None:
    """Why ``text`` cannot be encoded as UTF-8 (what every library here sends), or None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"has {describe(text[exc.start])} at character {exc.start + 1}"
    return None


def mqtt_forbidden(char: str) -> bool:
    """A character an MQTT string must not hold (MQTT 3.1.1 section 1.5.3: U+0000, the
    control characters, the non-characters); Mosquitto closes the connection on one."""
    code = ord(char)
    return (
        code <= 0x1F
        or 0x7F <= code <= 0x9F
        or 0xFDD0 <= code <= 0xFDEF
        or code & 0xFFFE == 0xFFFE
        or 0xD800 <= code <= 0xDFFF
    )


__all__ = ["TOPIC_SAFE", "describe", "mqtt_forbidden", "not_utf8", "unsafe"]
