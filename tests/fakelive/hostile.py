"""Frames a broken or hostile Live endpoint may send, for tests that the device outlives them.

Each is something the SDK cannot turn into a server message: a frame that is not JSON, JSON
that is not an object, an object of the wrong shape, nesting deep enough to exhaust Python's
recursion limit, a message over the client's size limit. ``UNREADABLE`` names them for
parametrized tests; :func:`cycle` hands a different one to each new connection (the fake's
``after_setup``), so one run of the device meets them all.

``NEWER_PROTOCOL`` is the opposite case: a well-formed message of a kind this SDK does not
know (or one it reads as empty), which a client must skip rather than drop the connection
for. ``AWKWARD_TEXT`` is readable model text that is hard to show (a lone surrogate,
control characters, a 100 KB line).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .records import LiveConnection

Frame = Mapping[str, Any] | str | bytes

# The SDK's websocket refuses messages over 1 MiB (the websockets default) with close 1009.
OVERSIZED_BYTES = 2 * 2**20


def nested(size: int = 200_000, *, objects: bool = False) -> bytes:
    """``[[[...]]]`` (or ``{"a":{"a":...}}``) of about ``size`` bytes: valid JSON that no
    recursive decoder reads (Python's stops with RecursionError)."""
    if objects:
        depth = size // 6
        return ('{"a":' * depth + "1" + "}" * depth).encode()
    depth = size // 2
    return ("[" * depth + "]" * depth).encode()


def _text(text: str) -> dict[str, Any]:
    return {"serverContent": {"modelTurn": {"parts": [{"text": text}]}}}


UNREADABLE: dict[str, Frame] = {
    # Not an object: the SDK calls .get() on whatever json.loads gave (AttributeError).
    "binary JSON string": b'"str"',
    "binary JSON list": b"[1]",
    "text JSON list": "[1]",
    "JSON number": b"1",
    "JSON true": b"true",
    # Not JSON, or not text at all.
    "not JSON": "{not json",
    "invalid UTF-8": b"\xff\xfe{\x80",
    "NUL bytes": b"\x00" * 64,
    # Deep nesting: RecursionError inside json.loads.
    "nested arrays (200 KB)": nested(),
    "nested objects (200 KB)": nested(objects=True),
    # Objects of the wrong shape: pydantic refuses them (ValidationError).
    "serverContent a string": {"serverContent": "x"},
    "serverContent a list": {"serverContent": [1]},
    "modelTurn parts a string": {"serverContent": {"modelTurn": {"parts": "x"}}},
    "functionCalls a string": {"toolCall": {"functionCalls": "x"}},
    "function call args a list": {"toolCall": {"functionCalls": [{"name": "a", "args": [1]}]}},
    "function call id a number": {"toolCall": {"functionCalls": [{"name": "a", "id": 7}]}},
    "cancellation ids numbers": {"toolCallCancellation": {"ids": [1, 2]}},
    "goAway a string": {"goAway": "soon"},
    "timeLeft an object": {"goAway": {"timeLeft": {"x": 1}}},
    "token count a word": {"usageMetadata": {"totalTokenCount": "lots"}},
    "token count NaN": b'{"usageMetadata": {"totalTokenCount": NaN}}',
    "token count 5000 digits": b'{"usageMetadata": {"totalTokenCount": ' + b"9" * 5000 + b"}}",
    "resumption handle a number": {"sessionResumptionUpdate": {"newHandle": 5}},
    "audio not base64": {
        "serverContent": {
            "modelTurn": {"parts": [{"inlineData": {"data": "!!!", "mimeType": "audio/pcm"}}]}
        }
    },
    # Too big for the client at all.
    "oversized (2 MiB)": json.dumps(_text("x" * OVERSIZED_BYTES)).encode(),
}

# Well-formed, but of a kind this SDK does not know, or empty (the SDK reads null and an
# empty frame as an empty message): skipped, the connection stays.
NEWER_PROTOCOL: dict[str, Frame] = {
    "an unknown message": {"somethingNew": {"x": 1}},
    "an empty object": {},
    "JSON null": b"null",
    "an empty frame": b"",
}

# Readable, and awkward for whoever shows it: a lone surrogate, control characters, a long line.
AWKWARD_TEXT: dict[str, Frame] = {
    "a lone surrogate": b'{"serverContent": {"modelTurn": {"parts": [{"text": "a\\ud800b"}]}}}',
    "control characters": _text("a\x00b\x1b[2Jc\rd"),
    "a long line": _text("y" * 100_000),
}


def cycle(frames: Sequence[Frame]) -> Callable[[LiveConnection], Sequence[Frame]]:
    """For the fake's ``after_setup``: connection ``n`` gets ``frames[n % len(frames)]``."""

    def script(conn: LiveConnection) -> Sequence[Frame]:
        return [frames[conn.index % len(frames)]]

    return script


__all__ = ["AWKWARD_TEXT", "NEWER_PROTOCOL", "OVERSIZED_BYTES", "UNREADABLE", "cycle", "nested"]
